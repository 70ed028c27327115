package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKeepTokenKeepsOnlyTheVerifiedToken: KeepToken keeps the token of
// a request whose token was verified (a TokenInfo in its context) and
// which has one Authorization header, read as the SDK reads it; for any
// other request CallContext gives no token, and a context that had one
// loses it. A kept token prints as a placeholder.
func TestKeepTokenKeepsOnlyTheVerifiedToken(t *testing.T) {
	// The SDK's bearer check, with a verifier that accepts a request
	// marked X-Verified.
	check := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		if r.Header.Get("X-Verified") == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "u", Expiration: time.Now().Add(time.Hour)}, nil
	}, nil)
	verified := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Verified") == "" {
				h.ServeHTTP(w, r) // no check: no TokenInfo
				return
			}
			check(h).ServeHTTP(w, r)
		})
	}
	for _, c := range []struct {
		name     string
		headers  []string
		verified bool
		want     string
	}{
		{"verified", []string{"Bearer abc.def"}, true, "abc.def"},
		{"any case, extra spaces", []string{"  bEaReR   abc.def "}, true, "abc.def"},
		{"not verified", []string{"Bearer abc.def"}, false, ""},
		{"two headers", []string{"Bearer abc.def", "Bearer other"}, true, ""},
		{"another scheme", []string{"Basic abc"}, true, ""},
		{"three fields", []string{"Bearer a b"}, true, ""},
	} {
		var got string
		h := verified(KeepToken(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			req := &sdk.CallToolRequest{Extra: &sdk.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context())}}
			got = callerToken(CallContext(WithCallerToken(r.Context(), "stale"), req))
		})))
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		for _, v := range c.headers {
			r.Header.Add("Authorization", v)
		}
		if c.verified {
			r.Header.Set("X-Verified", "1")
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got != c.want {
			t.Errorf("%s: kept %q, want %q", c.name, got, c.want)
		}
	}
	if got := callerToken(CallContext(WithCallerToken(context.Background(), "stale"), (*sdk.CallToolRequest)(nil))); got != "" {
		t.Errorf("a nil request: %q", got)
	}

	v := verifiedToken{s: "secret-token"}
	b, _ := json.Marshal(map[string]any{"t": v})
	var sb strings.Builder
	slog.New(slog.NewTextHandler(&sb, nil)).Info("x", "t", v)
	for _, s := range []string{fmt.Sprint(v), fmt.Sprintf("%#v %+v %s", v, v, v), string(b), sb.String()} {
		if strings.Contains(s, "secret-token") {
			t.Errorf("the token shows in %q", s)
		}
	}
}
