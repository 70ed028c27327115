package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// maxElicitURL bounds the URL of a URL-mode elicitation the proxy reads.
const maxElicitURL = 8 << 10

// ParseOrigin reads one entry of the URL-elicitation allow-list
// (RelayOptions.URLOrigins): "https://" and a host, with an optional
// port, nothing else (no user, path, query or fragment; a lone "/" is
// allowed). It returns the origin as URLs are compared with it: scheme
// and host in lower case, the default port 443 left out. A host outside
// ASCII is written in punycode ("https://xn--bcher-kva.example"): the
// proxy compares bytes, it does not map Unicode.
func ParseOrigin(s string) (string, error) {
	u, origin, err := parseHTTPS(s)
	if err != nil {
		return "", fmt.Errorf("origin %q: %w", s, err)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return "", fmt.Errorf("origin %q: an origin is https://host[:port], without a path, query or fragment", s)
	}
	return origin, nil
}

// elicitOrigin returns the origin of a URL-mode elicitation's URL, or
// why the proxy refuses it.
func elicitOrigin(raw string) (string, error) {
	_, origin, err := parseHTTPS(raw)
	return origin, err
}

// parseHTTPS reads an https URL the way the allow-list compares it. It
// refuses what a person could read as another host than the one a
// browser opens: user information ("https://good.example@evil.example"),
// backslashes, percent-encoded hosts, whitespace, control and non-ASCII
// bytes.
func parseHTTPS(raw string) (*url.URL, string, error) {
	if raw == "" {
		return nil, "", errors.New("no URL")
	}
	if len(raw) > maxElicitURL {
		return nil, "", fmt.Errorf("a URL of %d bytes, more than %d", len(raw), maxElicitURL)
	}
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; {
		case c <= ' ' || c >= 0x7f:
			return nil, "", errors.New("a URL with whitespace, a control or a non-ASCII byte (write an IDN host in punycode)")
		case c == '\\':
			return nil, "", errors.New("a URL with a backslash")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, "", fmt.Errorf("not a URL: %w", err)
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return nil, "", fmt.Errorf("scheme %q: only https URLs are relayed", u.Scheme)
	}
	if u.Opaque != "" || !strings.HasPrefix(strings.ToLower(raw), "https://") {
		return nil, "", errors.New("not https://host/…")
	}
	authority := raw[len("https://"):]
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	switch {
	case u.User != nil || strings.Contains(authority, "@"):
		return nil, "", errors.New("a URL with user information (user@host)")
	case strings.Contains(authority, "%"):
		return nil, "", errors.New("a URL whose host is percent-encoded")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return nil, "", errors.New("a URL without a host")
	}
	port := u.Port()
	if strings.HasSuffix(authority, ":") {
		return nil, "", errors.New("a URL with an empty port")
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return nil, "", fmt.Errorf("port %q is not one of 1 to 65535", port)
		}
		if n == 443 {
			port = ""
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	origin := "https://" + host
	if port != "" {
		origin += ":" + port
	}
	return u, origin, nil
}
