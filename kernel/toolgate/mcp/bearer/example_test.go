package bearer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

// An MCP handler served as a protected resource: the metadata document
// is public, a request without a token is answered 401 naming it, and a
// token from the issuer reaches the handler with its principal.
func ExampleProtect() {
	tb := &exampleTB{}
	defer tb.cleanup()
	is := testissuer.New(tb, "https://mcp.example/mcp") // keys and a JWKS endpoint, as an issuer has
	keys, err := bearer.StaticKeys(is.JWKS())           // or bearer.RemoteKeys(ctx, jwksURL, …)
	if err != nil {
		panic(err)
	}
	v, err := bearer.NewVerifier(bearer.Config{Issuer: is.URL, Audience: "https://mcp.example/mcp", Keys: keys})
	if err != nil {
		panic(err)
	}
	mcpHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello") // the SDK's streamable handler, in a real server
	})
	h, err := bearer.Protect(mcpHandler, v, bearer.Resource{
		URL: "https://mcp.example/mcp", AuthorizationServers: []string{is.URL}, Scopes: []string{"tools:call"},
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	get := func(path, token string) {
		req, _ := http.NewRequestWithContext(context.Background(), "GET", srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("WWW-Authenticate"))))
	}
	get("/.well-known/oauth-protected-resource", "")
	get("/mcp", "")
	get("/mcp", "not-a-token")
	get("/mcp", is.Token(tb, "EdDSA", "alice", "repo:read"))
	get("/mcp", is.Token(tb, "EdDSA", "alice", "tools:call"))
	// Output:
	// 200
	// 401 Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"
	// 401 Bearer error="invalid_token", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"
	// 403 Bearer error="insufficient_scope", scope="tools:call", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"
	// 200
}

// exampleTB stands for a test in an example.
type exampleTB struct{ cleanups []func() }

func (*exampleTB) Helper()            {}
func (*exampleTB) Fatal(args ...any)  { panic(fmt.Sprint(args...)) }
func (e *exampleTB) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) cleanup() {
	for _, f := range e.cleanups {
		f()
	}
}
