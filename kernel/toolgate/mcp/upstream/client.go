//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

package upstream

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
)

// Options configures NewHTTPClient. The zero value is ready to use.
type Options struct {
	// TokenClient is the HTTP client token requests are made with; when
	// nil, one that verifies TLS (1.2 or later) against the system's
	// roots, follows no redirect and gives up after 30 s.
	TokenClient *http.Client
	// CacheSize bounds the exchanged tokens kept (DefaultCacheSize when
	// 0 or less).
	CacheSize int
	// Now is the clock tokens expire by; time.Now when nil.
	Now func() time.Time
	// Getenv reads the environment variables secrets name; os.LookupEnv
	// when nil.
	Getenv func(string) (string, bool)
}

// NewHTTPClient returns the HTTP client of s, a streamable HTTP upstream
// (s.URL), to hand the MCP SDK's client transport:
//
//	type StreamableClientTransport struct {                  // go-sdk v1.8.0, mcp/streamable.go
//		Endpoint   string
//		HTTPClient *http.Client
//		…
//	}
//
// whose every request — each POSTed JSON-RPC message, the SSE GET, the
// session's DELETE — goes through it. It:
//
//   - verifies the server's certificate, TLS 1.2 or later, against the
//     PEM CAs of s.CAFile (relative to dir) alone when named, else the
//     system's roots; an http URL is accepted to a loopback host only;
//   - removes any Authorization header and sets the upstream's own
//     credentials (s.Auth): a header from a secret, a client credentials
//     token, or the caller's token exchanged (see the package doc);
//   - sets Mcp-Method and Mcp-Name from the body of a POSTed single
//     JSON-RPC message (see the package doc);
//   - follows no redirect, so that no credential reaches another URL.
//
// Secrets are read now, once: a missing secret file is an error here,
// naming the server. A failure to get a credential later is a
// *CredentialError (wrapping ErrCredential) returned by the client's
// Do, before anything is sent; a TLS failure is an error naming the
// server. The client sets no overall timeout (an SSE stream lasts as
// long as its session); each request is bounded by its context.
func NewHTTPClient(s gateway.Server, dir string, opts Options) (*http.Client, error) {
	fail := func(format string, args ...any) (*http.Client, error) {
		return nil, fmt.Errorf("upstream %q: "+format, append([]any{s.Name}, args...)...)
	}
	u, err := checkURL(s.URL)
	if err != nil {
		return fail("url: %v", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		path := resolve(dir, s.CAFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return fail("ca_file: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return fail("ca_file %s: no PEM certificate in it", path)
		}
		tc.RootCAs = pool
	}
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CacheSize <= 0 {
		opts.CacheSize = DefaultCacheSize
	}
	cred, err := newCredentials(s, dir, opts)
	if err != nil {
		return fail("auth: %v", err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = tc
	rt := &transport{server: s.Name, host: u.Host, base: base, cred: cred}
	return &http.Client{
		Transport: rt,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("upstream %q: redirected to %s: not followed", s.Name, req.URL.Redacted())
		},
	}, nil
}

// checkURL accepts an https URL, or an http one to a loopback host.
func checkURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("none: a remote upstream needs one")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	switch {
	case u.Host == "" || u.User != nil || u.Fragment != "":
		return nil, fmt.Errorf("%q is not an absolute URL without user or fragment", u.Redacted())
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
	case u.Scheme == "http":
		return nil, fmt.Errorf("%s: http is accepted to a loopback host only; use https", u.Redacted())
	default:
		return nil, fmt.Errorf("%s: scheme %q, want https", u.Redacted(), u.Scheme)
	}
	return u, nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func resolve(dir, path string) string {
	if filepath.IsAbs(path) || dir == "" {
		return path
	}
	return filepath.Join(dir, path)
}

// readSecret reads a secret: a file's content without one trailing line
// ending, or an environment variable's value; either must be 1 to 16 KiB
// of printable characters (it becomes a header value or a client
// secret).
func readSecret(sec *gateway.Secret, dir, what string, getenv func(string) (string, bool)) (string, error) {
	if sec == nil {
		return "", fmt.Errorf("%s: no secret named", what)
	}
	var v, from string
	switch {
	case sec.File != "" && sec.Env != "":
		return "", fmt.Errorf("%s: a secret names a file and a variable; name one", what)
	case sec.File != "":
		from = resolve(dir, sec.File)
		b, err := os.ReadFile(from)
		if err != nil {
			return "", fmt.Errorf("%s: %v", what, err)
		}
		v = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	case sec.Env != "":
		from = "$" + sec.Env
		var ok bool
		if v, ok = getenv(sec.Env); !ok {
			return "", fmt.Errorf("%s: %s is not set", what, from)
		}
	default:
		return "", fmt.Errorf("%s: a secret names neither a file nor a variable", what)
	}
	switch {
	case v == "" || len(v) > maxAccessToken:
		return "", fmt.Errorf("%s: %s holds %d bytes, want 1 to %d", what, from, len(v), maxAccessToken)
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("%s: %s holds a control character (a line break?)", what, from)
	}
	return v, nil
}

// reservedHeaders may not carry a static credential: the transport's
// and MCP's own.
var reservedHeaders = []string{"Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection", "Accept",
	"Mcp-Session-Id", "Mcp-Protocol-Version", "Mcp-Method", "Mcp-Name", "Last-Event-Id"}

func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// transport is an upstream's RoundTripper.
type transport struct {
	server string // the upstream's name
	host   string
	base   http.RoundTripper
	cred   *credentials
}

// RoundTrip sends r with the upstream's credentials and MCP headers. It
// never modifies r (http.RoundTripper's contract): it sends a clone.
func (t *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	out := r.Clone(r.Context())
	out.Header.Del("Authorization")
	out.Header.Del("Proxy-Authorization")
	method := ""
	if r.Method == http.MethodPost && r.Body != nil && r.Body != http.NoBody {
		body, err := bodyOf(r)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: reading the request: %w", t.server, err)
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		var name string
		var ok bool
		if method, name, ok = methodOf(body); ok {
			setMCPHeaders(out.Header, method, name)
		}
	}
	use, err := t.cred.apply(r.Context(), out.Header, method)
	if err != nil {
		closeBody(r)
		return nil, err
	}
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		if tlsFailure(err) {
			return nil, fmt.Errorf("upstream %q: TLS with %s failed: %w", t.server, t.host, err)
		}
		return nil, fmt.Errorf("upstream %q: %w", t.server, err)
	}
	if resp.StatusCode == http.StatusUnauthorized && use != nil {
		use() // the upstream refused the token: fetch a new one next time
	}
	if r.Method == http.MethodPost && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		// The SDK's client fails the whole connection on a POST's 4xx
		// without a JSON-RPC error in the body (streamableClientConn's
		// checkResponse), and one caller's refused token must not end
		// the session the others share. An error from the HTTP client is
		// a request that did not reach the server (Write wraps it in
		// jsonrpc2.ErrRejected): the call fails alone, uncharged.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return nil, &refusedError{server: t.server, method: method, status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate")}
	}
	return resp, nil
}

// refusedError is an upstream's 401 or 403 to a POST.
type refusedError struct {
	server, method, challenge string
	status                    int
}

func (e *refusedError) Error() string {
	s := fmt.Sprintf("upstream %q refused the credentials", e.server)
	if e.method != "" && e.method != notRequest {
		s += " of " + e.method
	}
	s += fmt.Sprintf(": HTTP %d %s", e.status, http.StatusText(e.status))
	if e.challenge != "" {
		s += " (" + printable(e.challenge) + ")"
	}
	return s
}

func (e *refusedError) Unwrap() error { return ErrCredential }

// closeBody closes a request's body that will not be sent, as a
// RoundTripper must.
func closeBody(r *http.Request) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
}

// bodyOf reads r's body without consuming it: through GetBody when the
// request has one (the SDK's POSTs do), else by reading it.
func bodyOf(r *http.Request) ([]byte, error) {
	rc := r.Body
	if r.GetBody != nil {
		b, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		rc = b
		defer closeBody(r)
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// tlsFailure reports whether err is a failed TLS handshake or
// certificate check.
func tlsFailure(err error) bool {
	var (
		verr *tls.CertificateVerificationError
		uerr x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
		rerr tls.RecordHeaderError
		aerr tls.AlertError
	)
	if errors.As(err, &verr) || errors.As(err, &uerr) || errors.As(err, &herr) || errors.As(err, &cerr) ||
		errors.As(err, &rerr) || errors.As(err, &aerr) {
		return true
	}
	// crypto/tls reports an alert as a *net.OpError "remote error" or
	// "local error" around its unexported alert type.
	var oerr *net.OpError
	return errors.As(err, &oerr) && (oerr.Op == "remote error" || oerr.Op == "local error") && strings.HasPrefix(oerr.Err.Error(), "tls: ")
}

// The MCP 2026-07-28 request headers (the SDK's methodHeader and
// nameHeader, mcp/streamable_headers.go).
const (
	headerMethod = "Mcp-Method"
	headerName   = "Mcp-Name"
)

// notRequest is methodOf's method of a POST body that is not one
// JSON-RPC request or notification the RoundTripper can read (a batch,
// another shape, not JSON): never one of the gateway's own requests.
const notRequest = "?"

// methodOf reads a POSTed body: for a single JSON-RPC request or
// notification, its method and, for the methods whose target the spec
// puts in Mcp-Name, the target — tools/call's and prompts/get's
// params.name, resources/read's params.uri — with ok true; for a
// response (the client's answer to a server's request), "" and ok
// false; for anything else — including a body topLevel does not read as
// strict JSON — notRequest and ok false.
func methodOf(body []byte) (method, name string, ok bool) {
	m, ok := topLevel(body)
	if !ok {
		return notRequest, "", false
	}
	if m.Method == nil {
		if m.Result != nil || m.Error != nil {
			return "", "", false
		}
		return notRequest, "", false
	}
	if json.Unmarshal(m.Method, &method) != nil || method == "" {
		return notRequest, "", false
	}
	var p struct {
		Name json.RawMessage `json:"name"`
		URI  json.RawMessage `json:"uri"`
	}
	_ = json.Unmarshal(m.Params, &p) // params that are not an object name nothing
	var target json.RawMessage
	switch method {
	case "tools/call", "prompts/get":
		target = p.Name
	case "resources/read":
		target = p.URI
	}
	if target != nil && json.Unmarshal(target, &name) != nil {
		name = ""
	}
	return method, name, true
}

// message is the members of a JSON-RPC message methodOf reads.
type message struct {
	Method json.RawMessage `json:"method,optional"`
	Params json.RawMessage `json:"params,optional"`
	Result json.RawMessage `json:"result,optional"`
	Error  json.RawMessage `json:"error,optional"`
}

// topLevel reads a JSON object's members method, params, result and
// error, with internal/strictjson: ok is false for anything but one
// strict JSON object — a member twice anywhere (which readers resolve
// differently), invalid UTF-8, an integer a double would round — and
// such a body is then neither given MCP headers nor taken for one of
// the gateway's own requests.
func topLevel(body []byte) (message, bool) {
	var m message
	if err := (strictjson.Options{AllowUnknown: true}).Unmarshal(body, &m); err != nil {
		return message{}, false
	}
	return m, true
}

// setMCPHeaders sets Mcp-Method, and Mcp-Name when name is given, to
// what the body says, replacing what was there: the upstream refuses a
// mismatch (-32020), and the body is what it acts on. A value a header
// cannot carry (a control character) is not set; the upstream then
// refuses the request for the header missing.
func setMCPHeaders(h http.Header, method, name string) {
	h.Del(headerMethod)
	h.Del(headerName)
	if headerValue(method) {
		h.Set(headerMethod, method)
	}
	if name != "" && headerValue(name) {
		h.Set(headerName, name)
	}
}

func headerValue(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
