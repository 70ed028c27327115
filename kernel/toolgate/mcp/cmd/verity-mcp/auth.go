package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
	upcred "github.com/verity-go/verity/kernel/toolgate/mcp/upstream" // main_test.go has a type upstream
)

// DefaultHTTPCaller is the one caller key every unauthenticated HTTP
// session is charged to, unless -http-caller or -caller-per-session
// says otherwise.
const DefaultHTTPCaller = "http"

// authConfig is -http's authentication: bearer tokens
// (kernel/toolgate/mcp/bearer) when -jwks is given.
type authConfig struct {
	jwks           string // a file, or an http(s) URL
	issuer         string
	resource       string
	scopes         string
	groupsClaim    string
	leeway         time.Duration
	jwksRefresh    time.Duration
	insecureNoAuth bool
	perSession     bool

	verifier *bearer.Verifier // after load
}

// addAuthFlags registers -http's authentication flags on fs.
func addAuthFlags(fs *flag.FlagSet, a *authConfig) {
	fs.StringVar(&a.jwks, "jwks", "", "HTTP: require OAuth bearer tokens (JWTs) signed by a key of this JWKS, a file or an https URL (refreshed)")
	fs.StringVar(&a.issuer, "issuer", "", "HTTP with -jwks: the authorization server; a token's iss must be exactly this")
	fs.StringVar(&a.resource, "resource", "", "HTTP with -jwks: this server's URL as clients reach it (https://host/path); a token's aud must name it")
	fs.StringVar(&a.scopes, "scopes", "", "HTTP with -jwks: scopes every request's token must carry, space- or comma-separated (403 insufficient_scope otherwise)")
	fs.StringVar(&a.groupsClaim, "groups-claim", "groups", "HTTP with -jwks: the token claim holding the principal's groups")
	fs.DurationVar(&a.leeway, "token-leeway", bearer.DefaultLeeway, "HTTP with -jwks: clock skew allowed on a token's exp and nbf (at most 5m)")
	fs.DurationVar(&a.jwksRefresh, "jwks-refresh", 5*time.Minute, "HTTP with a -jwks URL: how often the keys are fetched again (also on an unknown kid, at most every 10s)")
	fs.BoolVar(&a.insecureNoAuth, "insecure-no-auth", false, "HTTP: allow -http on a non-loopback address without -jwks, so anyone who reaches it may call the tools")
	fs.BoolVar(&a.perSession, "caller-per-session", false, "HTTP without -jwks: each session is its own caller with its own budget (a client resets it by opening a new session)")
}

func (a authConfig) enabled() bool { return a.jwks != "" }

func (a authConfig) scopeList() []string {
	return strings.FieldsFunc(a.scopes, func(r rune) bool { return r == ',' || r == ' ' })
}

// check reads the authentication flags against -http and -http-caller.
func (a authConfig) check(httpAddr, httpCaller string) error {
	if !a.enabled() {
		switch {
		case a.issuer != "" || a.resource != "" || a.scopes != "":
			return errors.New("-issuer, -resource and -scopes need -jwks")
		case a.perSession && httpCaller != "":
			return errors.New("-caller-per-session and -http-caller exclude each other")
		case (a.perSession || a.insecureNoAuth) && httpAddr == "":
			return errors.New("-caller-per-session and -insecure-no-auth need -http")
		case httpAddr != "" && !a.insecureNoAuth && !loopback(httpAddr):
			return fmt.Errorf("-http %s is not a loopback address: give -jwks (with -issuer and -resource) to require tokens, or -insecure-no-auth to serve anyone who reaches it", httpAddr)
		}
		return nil
	}
	switch {
	case httpAddr == "":
		return errors.New("-jwks needs -http")
	case a.issuer == "" || a.resource == "":
		return errors.New("-jwks needs -issuer and -resource")
	case httpCaller != "" || a.perSession:
		return errors.New("with -jwks each principal is its own caller: -http-caller and -caller-per-session do not apply")
	case a.insecureNoAuth:
		return errors.New("-insecure-no-auth and -jwks exclude each other")
	case a.leeway < 0 || a.leeway > 5*time.Minute:
		return fmt.Errorf("-token-leeway %v out of [0, 5m]", a.leeway)
	case a.jwksRefresh < 10*time.Second:
		return fmt.Errorf("-jwks-refresh %v is under 10s", a.jwksRefresh)
	}
	if _, err := (bearer.Resource{URL: a.resource, AuthorizationServers: []string{a.issuer}}).MetadataURL(); err != nil {
		return fmt.Errorf("-resource: %w", err)
	}
	if remote(a.jwks) {
		u, err := url.Parse(a.jwks)
		if err != nil {
			return fmt.Errorf("-jwks: %w", err)
		}
		if u.Scheme == "http" && !loopback(u.Host) {
			return errors.New("-jwks: an http URL is accepted on a loopback host only; use https")
		}
	}
	return nil
}

func remote(jwks string) bool {
	return strings.HasPrefix(jwks, "https://") || strings.HasPrefix(jwks, "http://")
}

// loopback reports whether addr (host:port) names only loopback
// interfaces: "localhost" or a loopback IP. An empty host (every
// interface) and any other name are not.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// load reads the keys (a malformed JWKS is a configuration error) and
// makes the verifier; a remote JWKS is refreshed until ctx ends.
func (a *authConfig) load(ctx context.Context, httpAddr string, logger *slog.Logger) error {
	if !a.enabled() {
		if httpAddr != "" && !loopback(httpAddr) {
			logger.Warn("-insecure-no-auth: anyone who reaches -http may call the tools", "http", httpAddr)
		}
		return nil
	}
	var ks *bearer.KeySet
	var err error
	if remote(a.jwks) {
		ks, err = bearer.RemoteKeys(ctx, a.jwks, bearer.RemoteOptions{Refresh: a.jwksRefresh, Logger: logger})
	} else {
		ks, err = bearer.LoadFile(a.jwks)
	}
	if err != nil {
		return fmt.Errorf("-jwks: %w", err)
	}
	a.verifier, err = bearer.NewVerifier(bearer.Config{
		Issuer: a.issuer, Audience: a.resource, Keys: ks,
		Leeway: a.leeway, GroupsClaim: a.groupsClaim, Logger: logger,
	})
	if err == nil {
		logger.Info("bearer tokens required", "issuer", a.issuer, "resource", a.resource, "jwks", a.jwks, "scopes", a.scopeList())
	}
	return err
}

// protect wraps the MCP handler: bearer.Protect with -jwks, else as is.
// Behind the check, upcred.KeepToken keeps each request's verified
// token in its TokenInfo, so that a remote upstream's token exchange
// (upcred.CallContext) has the caller's token to exchange; it is
// never forwarded itself.
func (a authConfig) protect(h http.Handler) (http.Handler, error) {
	if !a.enabled() {
		return h, nil
	}
	return bearer.Protect(upcred.KeepToken(h), a.verifier, bearer.Resource{
		URL: a.resource, AuthorizationServers: []string{a.issuer}, Scopes: a.scopeList(),
	})
}
