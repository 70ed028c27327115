package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestPrincipalFromBearerToken: over streamable HTTP behind the SDK's
// auth.RequireBearerToken, each call carries the principal of the token
// the verifier accepted (subject, scopes, issuer); a host's
// toolgate.WithPrincipal in the request's context comes first; a session
// without a token has the zero principal. The Guard here leaves the
// caller key empty, so the gate charges each call to the principal's key
// and the principal is found by its meter.
func TestPrincipalFromBearerToken(t *testing.T) {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "t-bob" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "bob", Scopes: []string{"repo:read"}, Expiration: time.Now().Add(time.Hour),
			Extra: map[string]any{"iss": "https://id.example", "groups": []string{"eng", "ops"}}}, nil
	}
	var seen []toolgate.Principal
	r := newRigWith(t, catalogue(10*kernel.Unit), gatemcp.Options{
		Caller: func(context.Context, *sdk.CallToolRequest) string { return "" },
		Principal: func(ctx context.Context, req *sdk.CallToolRequest) toolgate.Principal {
			p := gatemcp.DefaultPrincipal(ctx, req)
			seen = append(seen, p)
			return p
		},
	})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return r.srv }, nil)
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(handler))
	t.Cleanup(srv.Close)
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearer{"t-bob", http.DefaultTransport}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	assert.False(t, call(t, cs, "read_file", "/a").IsError)

	bob := toolgate.Principal{Issuer: "https://id.example", Subject: "bob", Scopes: []string{"repo:read"}, Groups: []string{"eng", "ops"}}
	require.Len(t, seen, 1)
	assert.Equal(t, bob, seen[0])
	m, ok := r.gate.Meter(bob.Key())
	require.True(t, ok, "the call was charged to %q", bob.Key())
	assert.Equal(t, kernel.Unit/10, m.Budget().Net())

	// Without a token the server refuses the request before any tool.
	_, err = sdk.NewClient(&sdk.Implementation{Name: "anon", Version: "v1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	require.Error(t, err)

	// In memory: no token, the zero principal; a host's principal in the
	// context comes first.
	mem, _ := r.connect(t, currentProtocol, nil, nil)
	assert.False(t, call(t, mem, "read_file", "/b").IsError)
	require.Len(t, seen, 2)
	assert.True(t, seen[1].IsZero(), "%+v", seen[1])
	carol := toolgate.Principal{Issuer: "https://id.example", Subject: "carol", Groups: []string{"eng"}}
	got := gatemcp.DefaultPrincipal(toolgate.WithPrincipal(ctx, carol),
		&sdk.CallToolRequest{Extra: &sdk.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: "bob"}}})
	assert.Equal(t, carol, got)
	assert.Equal(t, toolgate.Principal{}, gatemcp.DefaultPrincipal(ctx, nil))
	replays(t, r.log, r.gate, bob.Key())
}

// TestPrincipalsRuleSeesTheToken: a rule limited to a scope applies to
// the calls of a token that holds it and to no other: the principal the
// Guard passes is what the gate decides on.
func TestPrincipalsRuleSeesTheToken(t *testing.T) {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		info := &auth.TokenInfo{UserID: token, Expiration: time.Now().Add(time.Hour)}
		if token == "bob" {
			info.Scopes = []string{"files:read"}
		}
		return info, nil
	}
	cfg := catalogue(10 * kernel.Unit)
	cfg.Tools[0].Principals = &toolgate.PrincipalCondition{Scopes: []string{"files:read"}}
	r := newRigWith(t, cfg, gatemcp.Options{})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return r.srv }, nil)
	srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(handler))
	t.Cleanup(srv.Close)
	connect := func(token string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: token, Version: "v1"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
			Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	assert.False(t, call(t, connect("bob"), "read_file", "/a").IsError, "bob holds the scope")
	res := call(t, connect("eve"), "read_file", "/a")
	require.True(t, res.IsError, "eve does not")
	assert.Contains(t, res.Content[0].(*sdk.TextContent).Text, `tool "read_file": no rule admits the call: rule #0 (principals: the principal is not admitted)`)
	assert.Equal(t, 1, r.tools.count("read_file"))
}
