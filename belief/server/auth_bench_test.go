package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/verity-go/verity/belief"
)

// BenchmarkAuthenticatedSnapshot is GET /v1/sessions/{id} through the
// Handler (no network) without an Authenticator and with a TokenFile of
// 1 and 100 tokens: the difference is the added cost of authentication
// and the ownership check per request.
func BenchmarkAuthenticatedSnapshot(b *testing.B) {
	for _, n := range []int{0, 1, 100} {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			bs, err := belief.NewServer(context.Background(), belief.NewMemoryStorage())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { bs.Close() })
			var opts []Option
			token := ""
			if n > 0 {
				var file strings.Builder
				for i := range n {
					file.WriteString(digestLine(fmt.Sprintf("token-%d", i), fmt.Sprintf("p%d", i)) + "\n")
				}
				tf, err := ParseTokenFile(strings.NewReader(file.String()))
				if err != nil {
					b.Fatal(err)
				}
				opts = append(opts, WithAuthenticator(tf))
				token = fmt.Sprintf("token-%d", n-1)
			}
			h := New(bs, opts...)
			req := func(method, path, body string) *http.Request {
				r := httptest.NewRequest(method, path, strings.NewReader(body))
				if token != "" {
					r.Header.Set("Authorization", "Bearer "+token)
				}
				return r
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req("POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":["a","b","c"]}`))
			if rec.Code != 201 {
				b.Fatal(rec.Body.String())
			}
			var out DeclareResponse
			if err := decodeJSON(rec.Body, &out); err != nil {
				b.Fatal(err)
			}
			r := req("GET", "/v1/sessions/"+out.SessionID, "")
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

// BenchmarkTokenFileAuthenticate is TokenFile.Authenticate alone: one
// SHA-256 and a constant-time comparison with every digest.
func BenchmarkTokenFileAuthenticate(b *testing.B) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("tokens=%d", n), func(b *testing.B) {
			var file strings.Builder
			for i := range n {
				file.WriteString(digestLine(fmt.Sprintf("token-%d", i), fmt.Sprintf("p%d", i)) + "\n")
			}
			tf, err := ParseTokenFile(strings.NewReader(file.String()))
			if err != nil {
				b.Fatal(err)
			}
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Authorization", "Bearer token-0")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tf.Authenticate(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
