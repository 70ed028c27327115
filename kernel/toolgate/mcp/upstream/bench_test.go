package upstream

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// nopTransport answers every request 200 without a network.
type nopTransport struct{}

func (nopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
}

// BenchmarkRoundTripExchangedCached is what the RoundTripper adds to a
// tools/call whose caller's exchanged token is cached: reading the
// body's method, hashing the caller's token, the cache lookup, the
// headers.
func BenchmarkRoundTripExchangedCached(b *testing.B) {
	c := &credentials{server: "s", kind: kindTokenExchange, ep: &endpoint{url: "https://as.example/token"},
		audience: "aud", own: newTokenCache(1, time.Now), exchanged: newTokenCache(DefaultCacheSize, time.Now)}
	caller := strings.Repeat("c", 800) // a JWT's length
	if _, err := c.exchanged.get(context.Background(), keyOf(caller, "aud"), func(context.Context) (token, error) {
		return token{value: strings.Repeat("x", 800), life: time.Hour}, nil
	}); err != nil {
		b.Fatal(err)
	}
	rt := &transport{server: "s", host: "up.example", base: nopTransport{}, cred: c}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_issue","arguments":{"title":"a bug","body":"` + strings.Repeat("b", 1000) + `"}},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`
	ctx := WithCallerToken(context.Background(), caller)
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "https://up.example/mcp", strings.NewReader(body))
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}
