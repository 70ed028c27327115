package upstream_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/gateway"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/upstream"
	"github.com/verity-go/verity/trace"
)

var ctx = context.Background()

// The resources of the tests: the gateway the agents call, and the
// remote upstream behind it.
const (
	gatewayResource  = "https://gateway.example/mcp"
	upstreamResource = "https://tickets.example/mcp"
)

// seen is one request a test upstream received.
type seen struct {
	Method, Authorization, McpMethod, McpName, Version string
}

// recorder records the requests an upstream receives.
type recorder struct {
	mu   sync.Mutex
	reqs []seen
}

func (rc *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, seen{Method: r.Method, Authorization: r.Header.Get("Authorization"),
			McpMethod: r.Header.Get("Mcp-Method"), McpName: r.Header.Get("Mcp-Name"), Version: r.Header.Get("Mcp-Protocol-Version")})
		rc.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (rc *recorder) all() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]seen(nil), rc.reqs...)
}

// calls are the tools/call requests received, by Mcp-Name.
func (rc *recorder) calls(tool string) []seen {
	var out []seen
	for _, s := range rc.all() {
		if s.McpMethod == "tools/call" && s.McpName == tool {
			out = append(out, s)
		}
	}
	return out
}

// remote is a streamable HTTP MCP server over TLS that accepts only
// tokens of is for upstreamResource, with a tool "whoami" answering the
// token's subject; its CA is in a PEM file.
type remote struct {
	url    string
	caFile string
	rec    *recorder
	runs   *atomic.Int64
}

// remoteOpts: the scopes the remote requires, and whether it keeps
// sessions (and so speaks 2025-11-25 only: the SDK's server accepts
// 2026-07-28 requests when stateless).
type remoteOpts struct {
	scopes   []string
	stateful bool
}

func newRemote(t *testing.T, is *testissuer.Issuer, o remoteOpts) *remote {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "tickets", Version: "v1"}, nil)
	runs := &atomic.Int64{}
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami"}, func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		runs.Add(1)
		who := "anonymous"
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			who = req.Extra.TokenInfo.UserID
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: who}}}, nil, nil
	})
	ks, err := bearer.StaticKeys(is.JWKS())
	require.NoError(t, err)
	v, err := bearer.NewVerifier(bearer.Config{Issuer: is.URL, Audience: upstreamResource, Keys: ks})
	require.NoError(t, err)
	h, err := bearer.Protect(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: !o.stateful}), v,
		bearer.Resource{URL: upstreamResource, AuthorizationServers: []string{is.URL}, Scopes: o.scopes})
	require.NoError(t, err)
	rc := &recorder{}
	ts := httptest.NewTLSServer(rc.wrap(h))
	t.Cleanup(ts.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600))
	return &remote{url: ts.URL, caFile: ca, rec: rc, runs: runs}
}

// secretFile writes a client secret into dir.
func secretFile(t *testing.T, dir, name, secret string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(secret+"\n"), 0o600))
}

// exchanging is the gateway.Server of r with token exchange at is.
func exchanging(t *testing.T, is *testissuer.Issuer, r *remote) (gateway.Server, string) {
	dir := t.TempDir()
	secretFile(t, dir, "gw.secret", "gw-secret")
	is.AddClient("gateway", "gw-secret")
	return gateway.Server{Name: "tickets", URL: r.url, CAFile: r.caFile, Auth: &gateway.Auth{
		Kind: "token_exchange", TokenURL: is.TokenURL, ClientID: "gateway",
		ClientSecret: &gateway.Secret{File: "gw.secret"}, Audience: upstreamResource,
	}}, dir
}

// bearerClient sends token on every request, over base
// (http.DefaultTransport when nil).
type bearerClient struct {
	token string
	base  http.RoundTripper
}

func (b bearerClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if b.base == nil {
		return http.DefaultTransport.RoundTrip(r)
	}
	return b.base.RoundTrip(r)
}

// caTransport trusts the CA in the PEM file caFile.
func caTransport(t *testing.T, caFile string) http.RoundTripper {
	b, err := os.ReadFile(caFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(b))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return tr
}

// gatewayed is an agent's session to a gateway: a streamable HTTP MCP
// server that requires tokens of is for gatewayResource (bearer.Protect
// around upstream.KeepToken), a Guard and a Proxy forwarding to a
// remote upstream over NewHTTPClient, the caller's token put in the
// upstream call's context by upstream.CallContext.
type gatewayed struct {
	log  *trace.Log
	gate *toolgate.Gate
	url  string
}

func newGatewayed(t *testing.T, is *testissuer.Issuer, s gateway.Server, dir string) *gatewayed {
	t.Helper()
	log := trace.NewMemoryLog()
	pol := toolgate.Policy{Budget: 100 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{{Match: "whoami", Cost: kernel.Unit}}}
	comp, err := pol.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, comp)
	require.NoError(t, err)
	p := gatemcp.NewProxy(nil)
	gd, err := gatemcp.New(g, gatemcp.Options{Listed: p.Listed})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: "v1"}, p.ServerOptions(nil))
	// The forward point: the Proxy calls the upstream in the context its
	// middleware is given.
	forwardWithCaller := func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			return next(upstream.CallContext(ctx, req), method, req)
		}
	}
	srv.AddReceivingMiddleware(gd.Middleware(), forwardWithCaller, p.Middleware())

	hc, err := upstream.NewHTTPClient(s, dir, upstream.Options{})
	require.NoError(t, err)
	client := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "v1"}, p.ClientOptions())
	client.AddReceivingMiddleware(p.RelayMiddleware())
	up, err := client.Connect(ctx, p.Transport(&sdk.StreamableClientTransport{Endpoint: s.URL, HTTPClient: hc}), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = up.Close() })
	_, err = p.Attach(ctx, srv, up)
	require.NoError(t, err)

	ks, err := bearer.StaticKeys(is.JWKS())
	require.NoError(t, err)
	v, err := bearer.NewVerifier(bearer.Config{Issuer: is.URL, Audience: gatewayResource, Keys: ks})
	require.NoError(t, err)
	h, err := bearer.Protect(upstream.KeepToken(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)), v,
		bearer.Resource{URL: gatewayResource, AuthorizationServers: []string{is.URL}})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &gatewayed{log: log, gate: g, url: ts.URL}
}

// agent connects to the gateway with token.
func (gw *gatewayed) agent(t *testing.T, token string) *sdk.ClientSession {
	t.Helper()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: gw.url, HTTPClient: &http.Client{Transport: bearerClient{token: token}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// charged is what the gate's log charged, in all.
func (gw *gatewayed) charged(t *testing.T) kernel.Cost {
	var sum kernel.Cost
	for e, err := range gw.log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindResult {
			var r gatelog.Result
			require.NoError(t, json.Unmarshal(e.Payload, &r))
			sum += r.Charged
		}
	}
	return sum
}

func textOf(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func whoami(t *testing.T, cs *sdk.ClientSession) *sdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
	require.NoError(t, err)
	return res
}

// TestUpstreamSeesOnlyTheExchangedToken: an agent calls the gateway with
// its own token; the remote upstream behind it is called with a token
// exchanged for it (RFC 8693: the agent's subject, the upstream's
// audience, the gateway as actor), never with the agent's, and the
// call's Mcp-Method and Mcp-Name headers match its body. The exchanged
// token is reused while fresh (one exchange for two calls), another
// agent gets its own, and the gateway's own requests (discovery, the
// tools/list) carry its client credentials token.
func TestUpstreamSeesOnlyTheExchangedToken(t *testing.T) {
	is := testissuer.New(t, gatewayResource)
	r := newRemote(t, is, remoteOpts{})
	s, dir := exchanging(t, is, r)
	gw := newGatewayed(t, is, s, dir)

	alice := is.Token(t, "ES256", "alice", "tickets")
	bob := is.Token(t, "EdDSA", "bob", "tickets")
	cs := gw.agent(t, alice)
	for range 2 {
		res := whoami(t, cs)
		require.False(t, res.IsError, textOf(res))
		require.Equal(t, "alice", textOf(res), "the upstream acted for the agent's subject")
	}
	res := whoami(t, gw.agent(t, bob))
	require.Equal(t, "bob", textOf(res))

	exchanged := map[string]string{} // subject token → the token issued for it
	own := map[string]bool{}
	for _, g := range is.Given() {
		switch g.Type {
		case testissuer.GrantTokenExchange:
			require.NotContains(t, exchanged, g.SubjectToken, "one exchange per caller while the token is fresh")
			require.Equal(t, upstreamResource, g.Audience)
			require.Equal(t, "gateway", g.ClientID)
			exchanged[g.SubjectToken] = g.Token
		case testissuer.GrantClientCredentials:
			own[g.Token] = true
		}
	}
	require.Len(t, exchanged, 2)
	require.Contains(t, exchanged, alice)
	require.Contains(t, exchanged, bob)

	calls := r.rec.calls("whoami")
	require.Len(t, calls, 3)
	for i, c := range calls {
		want := exchanged[alice]
		if i == 2 {
			want = exchanged[bob]
		}
		require.Equal(t, "Bearer "+want, c.Authorization, "call %d", i)
	}
	for _, c := range r.rec.all() {
		require.NotContains(t, c.Authorization, alice, "the agent's token never reaches the upstream")
		require.NotContains(t, c.Authorization, bob)
		tok := strings.TrimPrefix(c.Authorization, "Bearer ")
		if c.McpMethod != "tools/call" {
			require.True(t, own[tok], "%s %s: the gateway's own requests carry its own token", c.Method, c.McpMethod)
		}
	}
	require.Equal(t, 3*kernel.Unit, gw.charged(t))
}

// TestRefusedExchangeRefusesTheCallUncharged: when the authorization
// server refuses the exchange, the call is refused with its error and
// description, naming the upstream; the upstream is never called and
// nothing is charged. Once it grants again, calls go through.
func TestRefusedExchangeRefusesTheCallUncharged(t *testing.T) {
	is := testissuer.New(t, gatewayResource)
	r := newRemote(t, is, remoteOpts{})
	s, dir := exchanging(t, is, r)
	gw := newGatewayed(t, is, s, dir)
	cs := gw.agent(t, is.Token(t, "RS256", "carol", "tickets"))

	is.Refuse("invalid_grant", "subject carol is suspended")
	res := whoami(t, cs)
	require.True(t, res.IsError)
	msg := textOf(res)
	require.Contains(t, msg, `upstream "tickets"`)
	require.Contains(t, msg, "token exchange")
	require.Contains(t, msg, "invalid_grant: subject carol is suspended")
	require.Empty(t, r.rec.calls("whoami"), "never sent")
	require.Equal(t, kernel.Cost(0), gw.charged(t), "a call that never reached the upstream is not charged")

	is.Refuse("", "")
	res = whoami(t, cs)
	require.False(t, res.IsError, textOf(res))
	require.Equal(t, "carol", textOf(res))
	require.Equal(t, kernel.Unit, gw.charged(t))
}

// TestOneCallersRefusalLeavesTheSessionToOthers: the upstream refuses
// one caller's exchanged token (403, a scope the caller lacks): that
// call is refused with the upstream's challenge, naming it, and is not
// charged, while the upstream session the gateway shares between
// callers goes on serving the others (the SDK's client would close it
// on a POST's 403: the RoundTripper makes the refusal the request's
// error instead).
func TestOneCallersRefusalLeavesTheSessionToOthers(t *testing.T) {
	is := testissuer.New(t, gatewayResource)
	r := newRemote(t, is, remoteOpts{scopes: []string{"tickets"}})
	s, dir := exchanging(t, is, r)
	s.Auth.Scopes = []string{"tickets"}
	gw := newGatewayed(t, is, s, dir)
	alice := gw.agent(t, is.Token(t, "RS256", "alice", "tickets"))
	mallory := gw.agent(t, is.Token(t, "RS256", "mallory", "other"))

	require.Equal(t, "alice", textOf(whoami(t, alice)))
	res := whoami(t, mallory)
	require.True(t, res.IsError)
	require.Contains(t, textOf(res), `upstream "tickets" refused the credentials of tools/call: HTTP 403 Forbidden (Bearer error="insufficient_scope"`)
	for range 2 {
		res = whoami(t, alice)
		require.False(t, res.IsError, "the session survives another caller's refusal: %s", textOf(res))
		require.Equal(t, "alice", textOf(res))
	}
	require.EqualValues(t, 3, r.runs.Load())
	require.Equal(t, 3*kernel.Unit, gw.charged(t), "the refused call is not charged")
}

// TestMCPHeadersOnBothEras: the SDK's client sets Mcp-Method and
// Mcp-Name itself on 2026-07-28 requests only; after it falls back to
// 2025-11-25 (a stateful upstream) it sets none, and NewHTTPClient's
// RoundTripper sets them from the body. A client credentials upstream
// serves the whole session with the gateway's one token.
func TestMCPHeadersOnBothEras(t *testing.T) {
	is := testissuer.New(t, gatewayResource)
	is.AddClient("gateway", "gw-secret")
	dir := t.TempDir()
	secretFile(t, dir, "gw.secret", "gw-secret")
	for _, c := range []struct {
		stateful bool
		version  string
	}{{false, "2026-07-28"}, {true, "2025-11-25"}} {
		r := newRemote(t, is, remoteOpts{stateful: c.stateful})
		s := gateway.Server{Name: "tickets", URL: r.url, CAFile: r.caFile, Auth: &gateway.Auth{
			Kind: "client_credentials", TokenURL: is.TokenURL, ClientID: "gateway",
			ClientSecret: &gateway.Secret{File: "gw.secret"}, Audience: upstreamResource}}
		hc, err := upstream.NewHTTPClient(s, dir, upstream.Options{})
		require.NoError(t, err)

		// The SDK's own headers: a client with only a bearer token (the
		// gateway's, fetched above), no RoundTripper of this package.
		resp, err := hc.Post(r.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		require.NoError(t, err)
		_ = resp.Body.Close()
		own := strings.TrimPrefix(r.rec.all()[0].Authorization, "Bearer ")
		plain, err := sdk.NewClient(&sdk.Implementation{Name: "plain", Version: "v1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: bearerClient{token: own, base: caTransport(t, r.caFile)}}}, nil)
		require.NoError(t, err)
		_, err = plain.CallTool(ctx, &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.NoError(t, plain.Close())
		sdkSet := r.rec.calls("whoami")
		if c.stateful {
			require.Empty(t, sdkSet, "the SDK sets no Mcp-Method on %s", c.version)
		} else {
			require.Len(t, sdkSet, 1, "the SDK sets Mcp-Method and Mcp-Name on %s", c.version)
		}

		cs, err := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "v1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: r.url, HTTPClient: hc}, nil)
		require.NoError(t, err)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.Equal(t, "gateway", textOf(res), "the gateway's own client credentials")
		require.NoError(t, cs.Close())
		calls := r.rec.calls("whoami")
		require.Len(t, calls, len(sdkSet)+1, "the RoundTripper sets them on %s", c.version)
		require.Equal(t, c.version, calls[len(calls)-1].Version)
		require.Equal(t, "Bearer "+own, calls[len(calls)-1].Authorization, "one token for the session")
	}
	require.EqualValues(t, 2, is.Grants.Load(), "one grant per client")
}
