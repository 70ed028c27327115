package upstream_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/upstream"
)

// echo is an HTTPS server that records each request's headers and
// answers with status (200 when 0).
type echo struct {
	url, caFile string
	status      atomic.Int64
	mu          sync.Mutex
	headers     []http.Header
}

func newEcho(t *testing.T, configure func(*httptest.Server)) *echo {
	t.Helper()
	e := &echo{}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.headers = append(e.headers, r.Header.Clone())
		e.mu.Unlock()
		if s := e.status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	if configure != nil {
		configure(ts)
	}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	e.url = ts.URL
	e.caFile = filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(e.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
	return e
}

func (e *echo) last() http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.headers) == 0 {
		return nil
	}
	return e.headers[len(e.headers)-1]
}

func (e *echo) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.headers)
}

// post sends body to url with hc, with the inbound client's
// Authorization header set, as a careless caller might.
func post(t *testing.T, hc *http.Client, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer the-callers-own-token")
	resp, err := hc.Do(req)
	if resp != nil {
		_ = resp.Body.Close()
	}
	return resp, err
}

const callBody = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue","arguments":{"title":"x"}}}`

// TestTLSIsVerified: the server's certificate is checked against the
// ca_file alone when named, else the system's roots; TLS below 1.2 is
// refused; a bad CA file fails at once, and a failed handshake at the
// request, each naming the server.
func TestTLSIsVerified(t *testing.T) {
	e := newEcho(t, nil)
	dir := t.TempDir()
	otherCA := filepath.Join(dir, "other.pem")
	require.NoError(t, os.WriteFile(otherCA, selfSigned(t), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junk.pem"), []byte("not a certificate\n"), 0o600))

	hc, err := upstream.NewHTTPClient(gateway.Server{Name: "forge", URL: e.url, CAFile: e.caFile}, dir, upstream.Options{})
	require.NoError(t, err)
	resp, err := post(t, hc, e.url, callBody)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, e.last().Get("Authorization"), "the caller's Authorization header is never sent on")

	for name, s := range map[string]gateway.Server{
		"system roots":   {Name: "forge", URL: e.url},
		"another CA":     {Name: "forge", URL: e.url, CAFile: otherCA},
		"hostname wrong": {Name: "forge", URL: strings.Replace(e.url, "127.0.0.1", "localhost", 1), CAFile: e.caFile},
	} {
		hc, err := upstream.NewHTTPClient(s, dir, upstream.Options{})
		require.NoError(t, err, name)
		_, err = post(t, hc, s.URL, callBody)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `upstream "forge": TLS with `, name)
	}

	old := newEcho(t, func(ts *httptest.Server) {
		ts.TLS = &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}
	})
	hc, err = upstream.NewHTTPClient(gateway.Server{Name: "legacy", URL: old.url, CAFile: old.caFile}, dir, upstream.Options{})
	require.NoError(t, err)
	_, err = post(t, hc, old.url, callBody)
	require.Error(t, err, "TLS 1.1 is refused")
	require.Contains(t, err.Error(), `upstream "legacy": TLS with `)
	require.Zero(t, old.count())

	for file, want := range map[string]string{
		"junk.pem":    `upstream "forge": ca_file ` + filepath.Join(dir, "junk.pem") + ": no PEM certificate in it",
		"missing.pem": `upstream "forge": ca_file: open ` + filepath.Join(dir, "missing.pem"),
	} {
		_, err := upstream.NewHTTPClient(gateway.Server{Name: "forge", URL: e.url, CAFile: file}, dir, upstream.Options{})
		require.Error(t, err)
		require.Contains(t, err.Error(), want)
	}
}

// TestBadServerIsRefusedAtOnce: what NewHTTPClient refuses, each with
// one line naming the server.
func TestBadServerIsRefusedAtOnce(t *testing.T) {
	dir := t.TempDir()
	secretFile(t, dir, "s", "x")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "twolines"), []byte("a\nb\n"), 0o600))
	ok := "https://mcp.example/mcp"
	for want, s := range map[string]gateway.Server{
		"url: none":                             {},
		"http is accepted to a loopback host":   {URL: "http://mcp.example/mcp"},
		`scheme "ftp"`:                          {URL: "ftp://mcp.example/"},
		"without user or fragment":              {URL: "https://u:p@mcp.example/"},
		`auth: kind "basic"`:                    {URL: ok, Auth: &gateway.Auth{Kind: "basic"}},
		"auth: value: no secret named":          {URL: ok, Auth: &gateway.Auth{Kind: "header"}},
		"auth: header Content-Length":           {URL: ok, Auth: &gateway.Auth{Kind: "header", Header: "content-length", Value: &gateway.Secret{File: "s"}}},
		`auth: header "X Key" is not a header`:  {URL: ok, Auth: &gateway.Auth{Kind: "header", Header: "X Key", Value: &gateway.Secret{File: "s"}}},
		"auth: value: open":                     {URL: ok, Auth: &gateway.Auth{Kind: "header", Value: &gateway.Secret{File: "absent"}}},
		"holds a control character":             {URL: ok, Auth: &gateway.Auth{Kind: "header", Value: &gateway.Secret{File: "twolines"}}},
		"$VERITY_TEST_UNSET is not set":         {URL: ok, Auth: &gateway.Auth{Kind: "header", Value: &gateway.Secret{Env: "VERITY_TEST_UNSET"}}},
		"names a file and a variable":           {URL: ok, Auth: &gateway.Auth{Kind: "header", Value: &gateway.Secret{File: "s", Env: "X"}}},
		"auth: token_url: none":                 {URL: ok, Auth: &gateway.Auth{Kind: "client_credentials", ClientID: "c", ClientSecret: &gateway.Secret{File: "s"}}},
		"auth: client_credentials needs a clie": {URL: ok, Auth: &gateway.Auth{Kind: "client_credentials", TokenURL: ok}},
		"auth: client_secret: no secret named":  {URL: ok, Auth: &gateway.Auth{Kind: "token_exchange", TokenURL: ok, ClientID: "c"}},
	} {
		s.Name = "forge"
		_, err := upstream.NewHTTPClient(s, dir, upstream.Options{Getenv: func(string) (string, bool) { return "", false }})
		require.Error(t, err, want)
		require.Contains(t, err.Error(), want)
		require.True(t, strings.HasPrefix(err.Error(), `upstream "forge": `), err.Error())
		require.NotContains(t, err.Error(), "\n")
	}
}

// TestStaticHeaderFromSecret: a header kind sets the secret's value, from
// a file (its last line ending dropped) or a variable, replacing the
// caller's Authorization.
func TestStaticHeaderFromSecret(t *testing.T) {
	e := newEcho(t, nil)
	dir := t.TempDir()
	secretFile(t, dir, "key", "k-123")
	env := func(name string) (string, bool) {
		return map[string]string{"FORGE_TOKEN": "Bearer pat-9"}[name], name == "FORGE_TOKEN"
	}

	hc, err := upstream.NewHTTPClient(gateway.Server{Name: "forge", URL: e.url, CAFile: e.caFile,
		Auth: &gateway.Auth{Kind: "header", Header: "x-api-key", Value: &gateway.Secret{File: "key"}}}, dir, upstream.Options{})
	require.NoError(t, err)
	_, err = post(t, hc, e.url, callBody)
	require.NoError(t, err)
	require.Equal(t, "k-123", e.last().Get("X-Api-Key"))
	require.Empty(t, e.last().Values("Authorization"))

	hc, err = upstream.NewHTTPClient(gateway.Server{Name: "forge", URL: e.url, CAFile: e.caFile,
		Auth: &gateway.Auth{Kind: "header", Value: &gateway.Secret{Env: "FORGE_TOKEN"}}}, dir, upstream.Options{Getenv: env})
	require.NoError(t, err)
	_, err = post(t, hc, e.url, callBody)
	require.NoError(t, err)
	require.Equal(t, []string{"Bearer pat-9"}, e.last().Values("Authorization"))
}

// TestMCPHeadersFromTheBody: Mcp-Method and Mcp-Name are set from a
// POSTed single message, replacing whatever the request had; not for a
// batch, a response or a GET.
func TestMCPHeadersFromTheBody(t *testing.T) {
	e := newEcho(t, nil)
	hc, err := upstream.NewHTTPClient(gateway.Server{Name: "forge", URL: e.url, CAFile: e.caFile}, "", upstream.Options{})
	require.NoError(t, err)
	for _, c := range []struct{ body, method, name string }{
		{callBody, "tools/call", "create_issue"},
		{`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a b"}}`, "resources/read", "file:///a b"},
		{`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p"}}`, "prompts/get", "p"},
		{`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, "tools/list", ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "notifications/initialized", ""},
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"a\nb"}}`, "tools/call", ""},
		{`[{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x"}}]`, "", ""},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "", ""},
		{`not json`, "", ""},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(c.body))
		require.NoError(t, err)
		req.Header.Set("Mcp-Method", "tools/list") // a wrong value the body overrides
		req.Header.Set("Mcp-Name", "innocent")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		h := e.last()
		if c.method == "" {
			// Not a single message: left as the request had it.
			require.Equal(t, "tools/list", h.Get("Mcp-Method"), c.body)
			continue
		}
		require.Equal(t, c.method, h.Get("Mcp-Method"), c.body)
		require.Equal(t, c.name, h.Get("Mcp-Name"), c.body)
	}
	resp, err := hc.Get(e.url)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Empty(t, e.last().Get("Mcp-Method"))
}

// TestRedirectsAreNotFollowed: a redirect is answered as an error, so
// that no credential goes to another URL.
func TestRedirectsAreNotFollowed(t *testing.T) {
	e := newEcho(t, nil)
	redirector := httptest.NewTLSServer(http.RedirectHandler(e.url, http.StatusTemporaryRedirect))
	defer redirector.Close()
	hc, err := upstream.NewHTTPClient(gateway.Server{Name: "forge", URL: redirector.URL, CAFile: writeCA(t, redirector)}, "", upstream.Options{})
	require.NoError(t, err)
	_, err = post(t, hc, redirector.URL, callBody)
	require.Error(t, err)
	require.Contains(t, err.Error(), `upstream "forge": redirected to `+e.url)
	require.Zero(t, e.count())
}

// selfSigned is a new self-signed CA certificate for 127.0.0.1, PEM.
func selfSigned(t *testing.T) []byte {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeCA(t *testing.T, ts *httptest.Server) string {
	p := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
	return p
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestClientCredentialsAreCachedUntilShortlyBeforeExpiry: one grant
// serves requests until 30 s before its expiry; a refused grant refuses
// the request before it is sent, with the authorization server's words;
// an upstream's 401 makes the next request fetch a new token.
func TestClientCredentialsAreCachedUntilShortlyBeforeExpiry(t *testing.T) {
	is := testissuer.New(t, "unused")
	is.AddClient("gw client", "s3cr:t+/")
	is.SetLifetime(2 * time.Minute)
	e := newEcho(t, nil)
	dir := t.TempDir()
	secretFile(t, dir, "secret", "s3cr:t+/")
	clk := &clock{now: time.Now()}
	hc, err := upstream.NewHTTPClient(gateway.Server{Name: "cloud", URL: e.url, CAFile: e.caFile, Auth: &gateway.Auth{
		Kind: "client_credentials", TokenURL: is.TokenURL, ClientID: "gw client", ClientSecret: &gateway.Secret{File: "secret"},
		Scopes: []string{"read", "write"}, Audience: "https://cloud.example", Resource: "https://cloud.example/mcp",
	}}, dir, upstream.Options{Now: clk.Now})
	require.NoError(t, err)

	send := func() (*http.Response, error) { return post(t, hc, e.url, callBody) }
	_, err = send()
	require.NoError(t, err)
	first := e.last().Get("Authorization")
	g := is.Given()
	require.Len(t, g, 1)
	require.Equal(t, testissuer.Grant{Type: "client_credentials", ClientID: "gw client", Subject: "gw client",
		Audience: "https://cloud.example", Resource: "https://cloud.example/mcp", Scope: "read write", Token: g[0].Token}, g[0])
	require.Equal(t, "Bearer "+g[0].Token, first)

	clk.add(89 * time.Second)
	_, err = send()
	require.NoError(t, err)
	require.Equal(t, first, e.last().Get("Authorization"), "fresh until 30 s before expiry")
	require.EqualValues(t, 1, is.Grants.Load())

	clk.add(2 * time.Second)
	_, err = send()
	require.NoError(t, err)
	require.EqualValues(t, 2, is.Grants.Load(), "refreshed shortly before expiry")
	second := e.last().Get("Authorization")
	require.NotEqual(t, first, second)

	e.status.Store(http.StatusUnauthorized)
	_, err = send()
	require.ErrorIs(t, err, upstream.ErrCredential)
	require.Contains(t, err.Error(), `upstream "cloud" refused the credentials of tools/call: HTTP 401 Unauthorized`)
	e.status.Store(0)
	_, err = send()
	require.NoError(t, err)
	require.EqualValues(t, 3, is.Grants.Load(), "a token the upstream refused is not used again")

	is.Refuse("unauthorized_client", "client \"gw client\"\nmay not use this grant")
	clk.add(time.Hour)
	n := e.count()
	_, err = send()
	require.Error(t, err)
	require.ErrorIs(t, err, upstream.ErrCredential)
	var ce *upstream.CredentialError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, upstream.CredentialError{Server: "cloud", Kind: "client_credentials", TokenURL: is.TokenURL, Status: 400,
		Code: "unauthorized_client", Description: `client "gw client"?may not use this grant`}, *ce)
	require.Contains(t, err.Error(), `upstream "cloud": the client credentials grant at `+is.TokenURL+` was refused: unauthorized_client: client "gw client"?may not use this grant`)
	require.Equal(t, n, e.count(), "never sent")

	is.AddClient("gw client", "another")
	is.Refuse("", "")
	_, err = send()
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "invalid_client", ce.Code, "a wrong client secret: %v", err)
}

// TestExchangeNeedsTheCallersToken: a token_exchange upstream's tools/call
// without a caller's token is refused before it is sent; the gateway's
// own requests use its client credentials; concurrent requests of one
// caller make one exchange.
func TestExchangeNeedsTheCallersToken(t *testing.T) {
	is := testissuer.New(t, gatewayResource)
	e := newEcho(t, nil)
	dir := t.TempDir()
	secretFile(t, dir, "gw.secret", "gw-secret")
	is.AddClient("gateway", "gw-secret")
	hc, err := upstream.NewHTTPClient(gateway.Server{Name: "tickets", URL: e.url, CAFile: e.caFile, Auth: &gateway.Auth{
		Kind: "token_exchange", TokenURL: is.TokenURL, ClientID: "gateway", ClientSecret: &gateway.Secret{File: "gw.secret"},
		Audience: upstreamResource, Resource: upstreamResource,
	}}, dir, upstream.Options{})
	require.NoError(t, err)

	_, err = post(t, hc, e.url, callBody)
	require.ErrorIs(t, err, upstream.ErrCredential)
	require.Contains(t, err.Error(), `upstream "tickets": the token exchange at `+is.TokenURL+` failed: the request carries no caller token`)
	require.Zero(t, e.count())
	require.Zero(t, is.Grants.Load())

	for _, body := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, // a batch
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[],"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"jsonrpc":"2.0","id":1,"method":7}`,
		`not json`,
	} {
		_, err = post(t, hc, e.url, body)
		require.ErrorIs(t, err, upstream.ErrCredential, "%s: a body it cannot read is not the gateway's own", body)
	}
	require.Zero(t, e.count())

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[1]}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":4,"result":{"roots":[]}}`,
	} {
		_, err = post(t, hc, e.url, body)
		require.NoError(t, err, "%s: the gateway's own", body)
	}
	require.Equal(t, testissuer.GrantClientCredentials, is.Given()[0].Type)
	require.EqualValues(t, 1, is.Grants.Load())

	is.SetDelay(100 * time.Millisecond)
	alice := is.Token(t, "RS256", "alice", "")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(upstream.WithCallerToken(ctx, alice), http.MethodPost, e.url, strings.NewReader(callBody))
			resp, err := hc.Do(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	g := is.Given()
	require.Len(t, g, 2, "one exchange for sixteen concurrent calls")
	require.Equal(t, testissuer.Grant{Type: testissuer.GrantTokenExchange, ClientID: "gateway", Subject: "alice", SubjectToken: alice,
		Audience: upstreamResource, Resource: upstreamResource, Token: g[1].Token}, g[1])
	require.Equal(t, "Bearer "+g[1].Token, e.last().Get("Authorization"))

	// An expired caller token is refused by the authorization server.
	claims := is.Claims("dave", "")
	claims["exp"] = time.Now().Add(-time.Minute).Unix()
	req, _ := http.NewRequestWithContext(upstream.WithCallerToken(ctx, is.Sign(t, "RS256", claims)), http.MethodPost, e.url, strings.NewReader(callBody))
	_, err = hc.Do(req)
	var ce *upstream.CredentialError
	require.ErrorAs(t, err, &ce)
	require.Equal(t, "invalid_grant", ce.Code)
	require.Contains(t, ce.Description, "subject token")
}

// TestHostileTokenEndpoint: a token endpoint that answers too much, not
// a token, a token that would break a header, a redirect, or nothing in
// time fails the request before it is sent, naming the server and the
// endpoint.
func TestHostileTokenEndpoint(t *testing.T) {
	e := newEcho(t, nil)
	dir := t.TempDir()
	secretFile(t, dir, "secret", "s")
	hang := make(chan struct{})
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/huge":
			_, _ = w.Write([]byte(`{"access_token":"` + strings.Repeat("a", 70<<10) + `","token_type":"Bearer"}`))
		case "/html":
			_, _ = w.Write([]byte(`<html>hello</html>`))
		case "/inject":
			_, _ = w.Write([]byte(`{"access_token":"t\r\nX-Admin: 1","token_type":"Bearer"}`))
		case "/redirect":
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		case "/hang":
			<-hang
		}
	}))
	defer as.Close()
	defer close(hang) // before Close, which waits for the hanging handler
	for path, want := range map[string]string{
		"/huge":     "an answer over 65536 bytes",
		"/html":     "not a token response",
		"/inject":   "access_token has a character other than visible ASCII",
		"/redirect": "the token endpoint redirected: not followed",
		"/hang":     "Client.Timeout exceeded",
	} {
		tc := &http.Client{Timeout: 200 * time.Millisecond, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("the token endpoint redirected: not followed")
		}}
		hc, err := upstream.NewHTTPClient(gateway.Server{Name: "cloud", URL: e.url, CAFile: e.caFile, Auth: &gateway.Auth{
			Kind: "client_credentials", TokenURL: as.URL + path, ClientID: "c", ClientSecret: &gateway.Secret{File: "secret"}}},
			dir, upstream.Options{TokenClient: tc})
		require.NoError(t, err)
		_, err = post(t, hc, e.url, callBody)
		require.ErrorIs(t, err, upstream.ErrCredential, path)
		require.Contains(t, err.Error(), `upstream "cloud": the client credentials grant at `+as.URL+path+" failed: ", path)
		require.Contains(t, err.Error(), want, path)
		require.NotContains(t, err.Error(), "\n")
	}
	require.Zero(t, e.count(), "nothing sent")
}
