package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
	upcred "github.com/verity-go/verity/kernel/toolgate/mcp/upstream"
)

// TestVerifiedTokenIsKeptForTheExchange: behind -jwks, a request's
// verified token is kept for the upstream call (upstream.KeepToken in
// protect), so that a token_exchange upstream is called with the token
// exchanged for it and never with the caller's own; without a verified
// token nothing is kept and the call is refused before it is sent.
func TestVerifiedTokenIsKeptForTheExchange(t *testing.T) {
	is := testissuer.New(t, testResource)
	is.AddClient("gateway", "gw-secret")
	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	require.NoError(t, os.WriteFile(jwks, is.JWKS(), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secret"), []byte("gw-secret\n"), 0o600))

	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
	}))
	defer up.Close()
	hc, err := upcred.NewHTTPClient(gateway.Server{Name: "tickets", URL: up.URL, Auth: &gateway.Auth{
		Kind: "token_exchange", TokenURL: is.TokenURL, ClientID: "gateway", ClientSecret: &gateway.Secret{File: "secret"},
		Audience: "https://tickets.example/mcp"}}, dir, upcred.Options{})
	require.NoError(t, err)

	// The MCP handler's stand-in: the SDK gives each request of the HTTP
	// request its TokenInfo (RequestExtra); the tool forwards in
	// CallContext.
	forward := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := &sdk.CallToolRequest{Extra: &sdk.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context())}}
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue"}}`
		out, _ := http.NewRequestWithContext(upcred.CallContext(r.Context(), req), http.MethodPost, up.URL, strings.NewReader(body))
		resp, err := hc.Do(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		_ = resp.Body.Close()
	})

	a := authConfig{jwks: jwks, issuer: is.URL, resource: testResource, groupsClaim: "groups", leeway: 30 * time.Second, jwksRefresh: 5 * time.Minute}
	require.NoError(t, a.load(context.Background(), "127.0.0.1:0", slog.New(slog.DiscardHandler)))
	h, err := a.protect(forward)
	require.NoError(t, err)
	gw := httptest.NewServer(h)
	defer gw.Close()

	alice := is.Token(t, "RS256", "alice", "")
	resp, err := (&http.Client{Transport: withToken{token: alice, next: http.DefaultTransport}}).Post(gw.URL, "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	g := is.Given()
	require.Len(t, g, 1)
	require.Equal(t, alice, g[0].SubjectToken)
	require.Equal(t, "alice", g[0].Subject)
	require.Equal(t, []string{"Bearer " + g[0].Token}, seen, "the upstream saw the exchanged token only")

	// Without -jwks nothing is verified, nothing kept: the call is
	// refused before it is sent.
	h, err = authConfig{}.protect(forward)
	require.NoError(t, err)
	open := httptest.NewServer(h)
	defer open.Close()
	resp, err = (&http.Client{Transport: withToken{token: alice, next: http.DefaultTransport}}).Post(open.URL, "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Len(t, seen, 1)
}
