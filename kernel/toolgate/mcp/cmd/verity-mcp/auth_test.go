package main

// The authenticated and the unauthenticated -http:
//
//   - With -jwks, every request but the metadata's needs a valid bearer
//     token; each kind of bad token is answered 401 with the challenge
//     naming the metadata and nothing more; a token without the required
//     scope is answered 403 insufficient_scope; each principal is one
//     caller with one budget, whatever its sessions:
//     TestBearerTokensOnHTTP.
//   - Without -jwks, -http serves loopback addresses only unless
//     -insecure-no-auth says otherwise, and every session is one caller
//     unless -caller-per-session: TestUnauthenticatedHTTPDefaults,
//     TestAuthUsage.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

const testResource = "https://mcp.example/mcp"

// withToken adds a bearer token to every request.
type withToken struct {
	token string
	next  http.RoundTripper
}

func (b withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func stopHTTPProxy(t *testing.T, p *proxy) {
	t.Helper()
	_ = p.cs.Close()
	p.cancel()
	select {
	case code := <-p.done:
		assert.Equal(t, 0, code, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the proxy did not stop\n%s", p.stderr.String())
	}
}

func TestBearerTokensOnHTTP(t *testing.T) {
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	pol := writePolicy(t, "2.5", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0",
		"-jwks", is.JWKSURL, "-issuer", is.URL, "-resource", testResource, "-scopes", "tools:call", "--"}, up.argv()...), nil)
	base := "http://" + httpAddr(t, p)
	metaURL := "https://mcp.example/.well-known/oauth-protected-resource/mcp"

	// The metadata document, at both well-known paths, without a token.
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		var meta map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&meta))
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, map[string]any{
			"resource":                 testResource,
			"authorization_servers":    []any{is.URL},
			"scopes_supported":         []any{"tools:call"},
			"bearer_methods_supported": []any{"header"},
		}, meta)
	}

	post := func(auth string) (int, string, string) {
		req, err := http.NewRequest("POST", base+"/", strings.NewReader(initializeBody))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), string(body)
	}

	// Refused tokens: 401, the challenge names the metadata, the body
	// says only that the token is invalid.
	now := time.Now()
	claims := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := is.Claims("alice", "tools:call")
		edit(c)
		return c
	}
	bad := map[string]string{
		"expired":        is.Sign(t, "ES256", claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"not yet valid":  is.Sign(t, "EdDSA", claims(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() })),
		"wrong audience": is.Sign(t, "RS256", claims(func(c jwt.MapClaims) { c["aud"] = "https://other.example/mcp" })),
		"wrong issuer":   is.Sign(t, "RS256", claims(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })),
		"wrong key":      testissuer.SignWith(t, "ES256", testissuer.Kid("ES256"), testissuer.OtherKey(t, "ES256"), is.Claims("alice", "tools:call")),
		"unsigned":       testissuer.Unsigned(t, testissuer.Kid("RS256"), is.Claims("alice", "tools:call")),
		"HMAC":           is.HMACWithPublicKey(t, is.Claims("alice", "tools:call"))[0],
		"oversized":      is.Sign(t, "EdDSA", claims(func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", bearer.MaxTokenBytes) })),
	}
	for name, tok := range bad {
		status, challenge, body := post("Bearer " + tok)
		assert.Equal(t, http.StatusUnauthorized, status, name)
		assert.Equal(t, `Bearer error="invalid_token", resource_metadata="`+metaURL+`"`, challenge, name)
		assert.Equal(t, "invalid token\n", body, name)
	}
	status, challenge, _ := post("")
	assert.Equal(t, http.StatusUnauthorized, status, "no token")
	assert.Equal(t, `Bearer resource_metadata="`+metaURL+`"`, challenge)
	status, challenge, _ = post("Basic YWxpY2U6cHc=")
	assert.Equal(t, http.StatusUnauthorized, status, "not a bearer token")
	assert.Equal(t, `Bearer resource_metadata="`+metaURL+`"`, challenge, "no bearer token: no error code")

	// A valid token without the required scope: 403 insufficient_scope.
	status, challenge, body := post("Bearer " + is.Token(t, "ES256", "alice", "repo:read"))
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, `Bearer error="insufficient_scope", scope="tools:call", resource_metadata="`+metaURL+`"`, challenge)
	assert.Equal(t, "insufficient_scope\n", body)

	// Each principal has one budget, whatever its sessions.
	connect := func(token string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "web-agent", Version: "v1"}, nil).
			Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base,
				HTTPClient: &http.Client{Transport: withToken{token, http.DefaultTransport}}}, nil)
		require.NoError(t, err, p.stderr.String())
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	search := func(cs *sdk.ClientSession) *sdk.CallToolResult {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err)
		return res
	}
	a1 := connect(is.Token(t, "RS256", "alice", "tools:call"))
	a2 := connect(is.Token(t, "EdDSA", "alice", "tools:call repo:read")) // another token, another key, same principal
	assert.False(t, search(a1).IsError)
	assert.False(t, search(a2).IsError)
	require.NoError(t, a1.Close())
	require.NoError(t, a2.Close())
	res := search(connect(is.Token(t, "ES256", "alice", "tools:call")))
	assert.True(t, res.IsError, "a new session of the same principal draws on the same budget")
	assert.Contains(t, text(res), "remaining 0.5")
	assert.False(t, search(connect(is.Token(t, "ES256", "bob", "tools:call"))).IsError, "another principal has its own budget")
	assert.Equal(t, 3, up.ran(t, "search"))

	stopHTTPProxy(t, p)
	alice := toolgate.Principal{Issuer: is.URL, Subject: "alice"}
	checkLog(t, p.stderr.String(), logPath, pol, alice.Key(), 2*kernel.Unit)
}

// TestTokenLeewayOnHTTP: the running proxy holds a token's exp to
// -token-leeway (30s by default), as documented: a token that expired a
// second ago is served, one that expired past the leeway is answered
// 401. The JWKS is a file (-jwks FILE).
func TestTokenLeewayOnHTTP(t *testing.T) {
	is := testissuer.New(t, testResource)
	jwks := filepath.Join(t.TempDir(), "jwks.json")
	require.NoError(t, os.WriteFile(jwks, is.JWKS(), 0o600))
	up := newUpstream(t)
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0",
		"-jwks", jwks, "-issuer", is.URL, "-resource", testResource, "--"}, up.argv()...), nil)
	base := "http://" + httpAddr(t, p)
	initialize := func(expired time.Duration) int {
		c := is.Claims("alice", "")
		c["exp"] = time.Now().Add(-expired).Unix()
		req, err := http.NewRequest("POST", base+"/", strings.NewReader(initializeBody))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+is.Sign(t, "ES256", c))
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, initialize(time.Second), "expired 1s ago, within the leeway")
	assert.Equal(t, http.StatusUnauthorized, initialize(45*time.Second), "expired 45s ago, past the leeway")
	stopHTTPProxy(t, p)
}

// TestUnauthenticatedHTTPDefaults: without -jwks every HTTP session is
// the one caller DefaultHTTPCaller, so a new session resets nothing;
// -caller-per-session gives each its own budget, as asked.
func TestUnauthenticatedHTTPDefaults(t *testing.T) {
	for _, perSession := range []bool{false, true} {
		up := newUpstream(t)
		pol := writePolicy(t, "1.5", "")
		logPath := filepath.Join(t.TempDir(), "trace.log")
		args := []string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0"}
		if perSession {
			args = append(args, "-caller-per-session")
		}
		p := startProxy(t, append(append(args, "--"), up.argv()...), nil)
		addr := httpAddr(t, p)
		var ids []string
		for range 3 {
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "web-agent", Version: "v1"}, nil).
				Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + addr}, &sdk.ClientSessionOptions{ProtocolVersion: legacyProtocol})
			require.NoError(t, err)
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
			require.NoError(t, err)
			ids = append(ids, cs.ID())
			_ = cs.Close()
			if perSession {
				assert.False(t, res.IsError, "each session has its own budget")
			} else {
				assert.Equal(t, len(ids) > 1, res.IsError, "one budget for all sessions: %s", text(res))
			}
		}
		stopHTTPProxy(t, p)
		if perSession {
			assert.Equal(t, 3, up.ran(t, "search"))
			checkLog(t, p.stderr.String(), logPath, pol, ids[2], kernel.Unit)
		} else {
			assert.Equal(t, 1, up.ran(t, "search"))
			checkLog(t, p.stderr.String(), logPath, pol, DefaultHTTPCaller, kernel.Unit)
		}
	}
}

// TestAuthUsage: a non-loopback -http without -jwks, a malformed JWKS
// and inconsistent authentication flags exit 2 before anything starts;
// -insecure-no-auth serves every interface, as it says.
func TestAuthUsage(t *testing.T) {
	is := testissuer.New(t, testResource)
	pol := writePolicy(t, "10", "")
	dir := t.TempDir()
	good := filepath.Join(dir, "jwks.json")
	require.NoError(t, os.WriteFile(good, is.JWKS(), 0o600))
	malformed := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(malformed, []byte(`{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}`), 0o600))
	log := func() string { return filepath.Join(t.TempDir(), "l") }
	auth := func(jwks string) []string {
		return []string{"-jwks", jwks, "-issuer", is.URL, "-resource", testResource}
	}
	cases := map[string][]string{
		"every interface":             {"-http", ":0"},
		"0.0.0.0":                     {"-http", "0.0.0.0:0"},
		"a host name":                 {"-http", "example.com:0"},
		"a non-loopback IP":           {"-http", "192.0.2.1:0"},
		"malformed JWKS file":         append([]string{"-http", ":0"}, auth(malformed)...),
		"missing JWKS file":           append([]string{"-http", ":0"}, auth(filepath.Join(dir, "none"))...),
		"malformed JWKS URL":          append([]string{"-http", ":0"}, auth(is.URL+"/missing-and-404")...),
		"-jwks without -issuer":       {"-http", ":0", "-jwks", good, "-resource", testResource},
		"-jwks without -http":         auth(good),
		"-jwks and -http-caller":      append([]string{"-http", ":0", "-http-caller", "web"}, auth(good)...),
		"-jwks and -insecure-no-auth": append([]string{"-http", ":0", "-insecure-no-auth"}, auth(good)...),
		"bad -resource":               {"-http", ":0", "-jwks", good, "-issuer", is.URL, "-resource", "mcp.example"},
		"http JWKS elsewhere":         append([]string{"-http", ":0"}, auth("http://idp.example/jwks")...),
		"-issuer without -jwks":       {"-http", "127.0.0.1:0", "-issuer", is.URL},
		"per session and one caller":  {"-http", "127.0.0.1:0", "-caller-per-session", "-http-caller", "web"},
		"per session without -http":   {"-caller-per-session"},
	}
	for name, extra := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append(append([]string{"-policy", pol, "-log", log()}, extra...), "--", "true")
			code := run(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
			assert.Equal(t, 2, code, stderr.String())
			assert.Contains(t, stderr.String(), "usage: verity-mcp")
		})
	}
	var stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, strings.NewReader(""), io.Discard, &stderr))
	for _, f := range []string{"-jwks", "-insecure-no-auth", "-caller-per-session", "-groups-claim", "-scopes", "loopback"} {
		assert.Contains(t, stderr.String(), f)
	}

	// -insecure-no-auth on every interface, and -jwks on every interface,
	// start.
	for _, extra := range [][]string{{"-http", ":0", "-insecure-no-auth"}, append([]string{"-http", ":0"}, auth(good)...)} {
		up := newUpstream(t)
		p := startProxy(t, append(append([]string{"-policy", pol, "-log", log()}, extra...), append([]string{"--"}, up.argv()...)...), nil)
		httpAddr(t, p)
		stopHTTPProxy(t, p)
		if slices.Contains(extra, "-insecure-no-auth") {
			assert.Contains(t, p.stderr.String(), "anyone who reaches -http may call the tools")
		} else {
			assert.Contains(t, p.stderr.String(), "bearer tokens required")
		}
	}
}

// TestAuthenticatedApproversNeedNoApproverFlag: with -jwks the policy's
// approvers are principals and groups that only a token can show, so a
// policy whose DELETE approvers are a group starts without -approver
// naming one of them (the default "human" approves nothing there).
func TestAuthenticatedApproversNeedNoApproverFlag(t *testing.T) {
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	pol := writeInboxPolicy(t, `"group:ops"`, "10m")
	p := startProxy(t, append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "trace.log"), "-http", "127.0.0.1:0",
		"-jwks", is.JWKSURL, "-issuer", is.URL, "-resource", testResource, "--"}, up.argv()...), nil)
	httpAddr(t, p)
	stopHTTPProxy(t, p)

	var stderr bytes.Buffer
	code := run(context.Background(), []string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "l"), "--", "true"},
		strings.NewReader(""), io.Discard, &stderr)
	assert.Equal(t, 2, code, "without -jwks, -approver must approve something: %s", stderr.String())
}
