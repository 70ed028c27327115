package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/belief/server"
)

// ExampleWithAuthenticator serves sessions to the principals of a token
// file: alice declares a session, bob cannot see it, and a request
// without a token is refused.
func ExampleWithAuthenticator() {
	line := func(token, principal string) string {
		d := sha256.Sum256([]byte(token))
		return "sha256:" + hex.EncodeToString(d[:]) + " " + principal + "\n"
	}
	tokens, err := server.ParseTokenFile(strings.NewReader(
		"# principal tokens\n" + line("alice-token", "alice ops") + line("bob-token", "bob")))
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := belief.NewServer(context.Background(), belief.NewMemoryStorage())
	defer b.Close()
	ts := httptest.NewServer(server.New(b, server.WithAuthenticator(tokens)))
	defer ts.Close()

	call := func(token, method, path, body string) *http.Response {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		return resp
	}
	resp := call("alice-token", "POST", "/v1/sessions",
		`{"ontology":{"hypothesis_space_id":"hs","hypothesis_version":"v1","causal_graph_ref":"g","causal_graph_version":"v1"},"hypotheses":["disk","network"]}`)
	session := resp.Header.Get("Location")
	fmt.Println("alice declares:", resp.StatusCode)
	fmt.Println("alice reads:", call("alice-token", "GET", session, "").StatusCode)
	fmt.Println("bob reads:", call("bob-token", "GET", session, "").StatusCode)
	resp = call("", "GET", session, "")
	fmt.Println("no token:", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	// Output:
	// alice declares: 201
	// alice reads: 200
	// bob reads: 404
	// no token: 401 Bearer realm="verity"
}
