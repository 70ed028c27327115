package upstream_test

import (
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/verity-go/verity/kernel/toolgate/gateway"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/upstream"
)

// exampleT is what testissuer needs of a test, in an example.
type exampleT struct{ cleanups []func() }

func (*exampleT) Helper()            {}
func (*exampleT) Fatal(args ...any)  { panic(fmt.Sprint(args...)) }
func (e *exampleT) Cleanup(f func()) { e.cleanups = append(e.cleanups, f) }
func (e *exampleT) done() {
	for _, f := range e.cleanups {
		f()
	}
}

// A remote upstream behind token exchange: the gateway calls it with a
// token the authorization server issued for the caller and the
// upstream's audience, never with the caller's own; when the exchange
// is refused, nothing is sent and the error says why.
func ExampleNewHTTPClient() {
	et := &exampleT{}
	defer et.done()
	is := testissuer.New(et, "https://gateway.example/mcp")
	is.AddClient("gateway", "gw-secret")

	// The upstream: it prints the subject of the token it receives.
	remote := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		claims := jwt.MapClaims{}
		_, _, _ = jwt.NewParser().ParseUnverified(tok, claims)
		fmt.Printf("upstream: %s called by %v for %v\n", r.Header.Get("Mcp-Name"), claims["sub"], claims["aud"])
	}))
	defer remote.Close()
	dir, _ := os.MkdirTemp("", "gateway")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "ca.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: remote.Certificate().Raw}), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "gateway.secret"), []byte("gw-secret\n"), 0o600)

	hc, err := upstream.NewHTTPClient(gateway.Server{
		Name: "tickets", URL: remote.URL, CAFile: "ca.pem",
		Auth: &gateway.Auth{Kind: "token_exchange", TokenURL: is.TokenURL, ClientID: "gateway",
			ClientSecret: &gateway.Secret{File: "gateway.secret"}, Audience: "https://tickets.example/mcp"},
	}, dir, upstream.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	call := func(callerToken string) error {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue","arguments":{}}}`
		req, _ := http.NewRequestWithContext(upstream.WithCallerToken(ctx, callerToken), http.MethodPost, remote.URL, strings.NewReader(body))
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}

	alice := is.Sign(et, "ES256", is.Claims("alice", "tickets"))
	_ = call(alice)
	is.Refuse("invalid_grant", "alice may not act on tickets")
	err = call(is.Sign(et, "ES256", is.Claims("alice", "tickets")))
	var ce *upstream.CredentialError
	if errors.As(err, &ce) {
		fmt.Printf("refused before sending (%v): server %s, %s, %s: %s\n", errors.Is(err, upstream.ErrCredential), ce.Server, ce.Kind, ce.Code, ce.Description)
	}
	// Output:
	// upstream: create_issue called by alice for https://tickets.example/mcp
	// refused before sending (true): server tickets, token_exchange, invalid_grant: alice may not act on tickets
}
