package upstream

import (
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The caller's token travels from the gateway's HTTP server to the
// upstream's RoundTripper in two hops:
//
//  1. KeepToken, inside the server's bearer check, adds the token it
//     verified to the request's auth.TokenInfo, which the SDK's
//     streamable server hands every request of that HTTP request as
//     RequestExtra.TokenInfo (go-sdk v1.8.0, mcp/streamable.go:
//     "jreq.Extra = &RequestExtra{TokenInfo: tokenInfo, Header:
//     req.Header}"). The handler's context does not carry the HTTP
//     request's values, so the token rides on TokenInfo.
//  2. CallContext puts it in the context of the upstream call: the SDK's
//     client writes a request with the context of the call that sends it
//     (internal/jsonrpc2 Connection.Call passes its ctx to Write, and
//     streamableClientConn.Write makes its POST with
//     http.NewRequestWithContext(ctx, …)), so the RoundTripper of
//     NewHTTPClient reads it from http.Request.Context.

// tokenInfoKey is the TokenInfo.Extra member KeepToken sets.
const tokenInfoKey = "verity.upstream.caller_token"

// verifiedToken is a caller's token kept in TokenInfo.Extra. Printed,
// logged or marshalled, it shows nothing of the token.
type verifiedToken struct{ s string }

func (verifiedToken) String() string               { return "[caller token]" }
func (verifiedToken) GoString() string             { return "[caller token]" }
func (verifiedToken) LogValue() slog.Value         { return slog.StringValue("[caller token]") }
func (verifiedToken) MarshalJSON() ([]byte, error) { return []byte(`"[caller token]"`), nil }

// KeepToken wraps h, the handler behind a bearer-token check
// (auth.RequireBearerToken or bearer.Protect, which put the verified
// token's auth.TokenInfo in the request's context; bearer.Protect also
// refuses a request with two Authorization headers): for a request
// whose token was verified, it keeps the bearer token of its
// Authorization header in the TokenInfo, for CallContext. A request
// without a verified token, or with two Authorization headers, is passed
// on unchanged, and nothing is kept for it. It sets a member of the
// TokenInfo's Extra, so the verifier must return a TokenInfo of its own
// for each request (bearer.Verifier does).
func KeepToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ti := auth.TokenInfoFromContext(r.Context())
		// The token the SDK verified: read as auth.RequireBearerToken
		// reads it (auth/auth.go verify: strings.Fields of the header,
		// "bearer" in any case, then the token).
		fields := strings.Fields(r.Header.Get("Authorization"))
		if ti != nil && len(fields) == 2 && strings.EqualFold(fields[0], "bearer") && len(r.Header.Values("Authorization")) == 1 {
			if ti.Extra == nil {
				ti.Extra = map[string]any{}
			}
			ti.Extra[tokenInfoKey] = verifiedToken{s: fields[1]}
		}
		h.ServeHTTP(w, r)
	})
}

// callerKey is the context key of the caller's token.
type callerKey struct{}

// WithCallerToken returns ctx carrying the caller's own bearer token,
// the subject_token of a token_exchange upstream's exchange; "" makes a
// context without one, whatever ctx carried.
func WithCallerToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, callerKey{}, verifiedToken{s: token})
}

// callerToken is the caller's token ctx carries, "" when none.
func callerToken(ctx context.Context) string {
	t, _ := ctx.Value(callerKey{}).(verifiedToken)
	return t.s
}

// CallContext is the context to forward req to an upstream in: ctx with
// the caller's token that KeepToken kept for req's HTTP request, or
// with none (an unauthenticated client, stdio) — never a token from an
// earlier hop. Call it where a server's request becomes the upstream
// call:
//
//	res, err := up.CallTool(upstream.CallContext(ctx, req), params)
func CallContext(ctx context.Context, req sdk.Request) context.Context {
	var tok string
	if req != nil && !reflect.ValueOf(req).IsNil() {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			if v, ok := ex.TokenInfo.Extra[tokenInfoKey].(verifiedToken); ok {
				tok = v.s
			}
		}
	}
	return WithCallerToken(ctx, tok)
}
