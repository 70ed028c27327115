package bearer_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

const resource = "https://mcp.example/mcp"

func newVerifier(t testing.TB, is *testissuer.Issuer) *bearer.Verifier {
	t.Helper()
	ks, err := bearer.StaticKeys(is.JWKS())
	require.NoError(t, err)
	v, err := bearer.NewVerifier(bearer.Config{Issuer: is.URL, Audience: resource, Keys: ks, GroupsClaim: "groups"})
	require.NoError(t, err)
	return v
}

// TestVerifyAcceptsEachAlgorithm: a token signed by each of the issuer's
// keys yields its subject, scopes, issuer and groups.
func TestVerifyAcceptsEachAlgorithm(t *testing.T) {
	is := testissuer.New(t, resource)
	v := newVerifier(t, is)
	for _, alg := range testissuer.Algs {
		t.Run(alg, func(t *testing.T) {
			c := is.Claims("alice", "tools:call repo:read")
			c["groups"] = []string{"eng", "oncall"}
			ti, err := v.Verify(context.Background(), is.Sign(t, alg, c))
			require.NoError(t, err)
			assert.Equal(t, "alice", ti.UserID)
			assert.Equal(t, []string{"tools:call", "repo:read"}, ti.Scopes)
			assert.Equal(t, is.URL, ti.Extra["iss"])
			assert.Equal(t, []string{"eng", "oncall"}, ti.Extra["groups"])
			assert.WithinDuration(t, time.Now().Add(time.Hour), ti.Expiration, 5*time.Second)
		})
	}
	// An "scp" array and a one-string groups claim are read too.
	c := is.Claims("bob", "")
	delete(c, "scope")
	c["scp"] = []string{"a", "b"}
	c["groups"] = "eng"
	ti, err := v.Verify(context.Background(), is.Sign(t, "ES256", c))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, ti.Scopes)
	assert.Equal(t, []string{"eng"}, ti.Extra["groups"])
}

// TestVerifyRefusesBadTokens: each kind of bad token is an *Error that
// is an auth.ErrInvalidToken, for each algorithm where it applies.
func TestVerifyRefusesBadTokens(t *testing.T) {
	is := testissuer.New(t, resource)
	v := newVerifier(t, is)
	now := time.Now()
	with := func(sub string, edit func(jwt.MapClaims)) jwt.MapClaims {
		c := is.Claims(sub, "s")
		edit(c)
		return c
	}
	bad := map[string]string{}
	for _, alg := range testissuer.Algs {
		bad[alg+" expired"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() }))
		bad[alg+" not yet valid"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() }))
		bad[alg+" wrong audience"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { c["aud"] = "https://other.example/mcp" }))
		bad[alg+" no audience"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { delete(c, "aud") }))
		bad[alg+" wrong issuer"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { c["iss"] = is.URL + "/evil" }))
		bad[alg+" no expiration"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { delete(c, "exp") }))
		bad[alg+" no subject"] = is.Sign(t, alg, with("", func(jwt.MapClaims) {}))
		bad[alg+" wrong key"] = testissuer.SignWith(t, alg, testissuer.Kid(alg), testissuer.OtherKey(t, alg), is.Claims("a", "s"))
		bad[alg+" unknown kid"] = testissuer.SignWith(t, alg, "k-unknown", testissuer.OtherKey(t, alg), is.Claims("a", "s"))
		bad[alg+" scope not a string"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { c["scope"] = []string{"s"} }))
		bad[alg+" groups not strings"] = is.Sign(t, alg, with("a", func(c jwt.MapClaims) { c["groups"] = []int{1} }))
	}
	// A key's algorithm is pinned by its type: an Ed25519 signature under
	// the EC key's kid, an ES256 one under the RSA key's.
	bad["EdDSA under the ES256 kid"] = testissuer.SignWith(t, "EdDSA", testissuer.Kid("ES256"), testissuer.OtherKey(t, "EdDSA"), is.Claims("a", "s"))
	bad["ES256 under the RS256 kid"] = testissuer.SignWith(t, "ES256", testissuer.Kid("RS256"), testissuer.OtherKey(t, "ES256"), is.Claims("a", "s"))
	// The issuer's own RSA key, but another RSA algorithm than RS256.
	bad["PS256 under the RS256 kid"] = testissuer.SignWith(t, "PS256", testissuer.Kid("RS256"), is.Key("RS256"), is.Claims("a", "s"))
	bad["RS512 under the RS256 kid"] = testissuer.SignWith(t, "RS512", testissuer.Kid("RS256"), is.Key("RS256"), is.Claims("a", "s"))
	bad["unsigned"] = testissuer.Unsigned(t, testissuer.Kid("RS256"), is.Claims("a", "s"))
	bad["unsigned without kid"] = testissuer.Unsigned(t, "", is.Claims("a", "s"))
	for i, tok := range is.HMACWithPublicKey(t, is.Claims("a", "s")) {
		bad["HMAC with the public key "+string(rune('0'+i))] = tok
	}
	bad["oversized"] = is.Sign(t, "EdDSA", with("a", func(c jwt.MapClaims) { c["pad"] = strings.Repeat("x", bearer.MaxTokenBytes) }))
	// Headers asking for what the verifier does not implement (RFC 7515
	// §4.1.11, RFC 7797), signed by the issuer's own key.
	for name, h := range map[string]map[string]any{
		"crit unknown":    {"crit": []string{"x-unknown"}, "x-unknown": true},
		"crit empty":      {"crit": []string{}},
		"crit not a list": {"crit": "exp"},
		"crit b64":        {"crit": []string{"b64"}, "b64": false},
		"b64 false":       {"b64": false},
		"crit registered": {"crit": []string{"exp"}},
	} {
		bad[name] = testissuer.SignHeader(t, "ES256", testissuer.Kid("ES256"), is.Key("ES256"), h, is.Claims("a", "s"))
	}
	bad["empty"] = ""
	bad["garbage"] = "a.b.c"
	// A valid token with its signature cut or its payload swapped.
	good := is.Token(t, "RS256", "a", "s")
	parts := strings.Split(good, ".")
	other := strings.Split(is.Token(t, "RS256", "mallory", "s"), ".")
	bad["no signature"] = parts[0] + "." + parts[1] + "."
	bad["swapped payload"] = parts[0] + "." + other[1] + "." + parts[2]

	_, err := v.Verify(context.Background(), good)
	require.NoError(t, err, "the control token verifies")
	for name, tok := range bad {
		t.Run(name, func(t *testing.T) {
			ti, err := v.Verify(context.Background(), tok)
			require.Error(t, err)
			assert.Nil(t, ti)
			var e *bearer.Error
			assert.True(t, errors.As(err, &e), "%T %v", err, err)
			assert.ErrorIs(t, err, auth.ErrInvalidToken)
			// The SDK-facing verifier says nothing more than "invalid token".
			_, err = v.TokenVerifier()(context.Background(), tok, nil)
			assert.Equal(t, auth.ErrInvalidToken, err)
		})
	}
}

// TestVerifyLeeway: exp and nbf are checked with the leeway, no more.
func TestVerifyLeeway(t *testing.T) {
	is := testissuer.New(t, resource)
	v := newVerifier(t, is)
	now := time.Now()
	c := is.Claims("a", "")
	c["exp"] = now.Add(-10 * time.Second).Unix()
	c["nbf"] = now.Add(10 * time.Second).Unix()
	_, err := v.Verify(context.Background(), is.Sign(t, "ES256", c))
	assert.NoError(t, err, "10 s of skew either way is within the default 30 s")
	c["exp"] = now.Add(-45 * time.Second).Unix()
	_, err = v.Verify(context.Background(), is.Sign(t, "ES256", c))
	assert.Error(t, err, "45 s past exp is not")
	c["exp"] = now.Add(time.Hour).Unix()
	c["nbf"] = now.Add(45 * time.Second).Unix()
	_, err = v.Verify(context.Background(), is.Sign(t, "ES256", c))
	assert.Error(t, err, "45 s before nbf is not")
}

// TestProtectHoldsExpToTheLeeway: through Protect, as a server sees a
// token, exp is held to the verifier's leeway, no more and no less: a
// token expired a second ago is served (the SDK's own exp check used to
// refuse it), one expired past the leeway is answered 401.
func TestProtectHoldsExpToTheLeeway(t *testing.T) {
	is := testissuer.New(t, resource)
	v := newVerifier(t, is)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h, err := bearer.Protect(ok, v, bearer.Resource{URL: resource, AuthorizationServers: []string{is.URL}})
	require.NoError(t, err)
	status := func(exp time.Duration) int {
		c := is.Claims("alice", "")
		c["exp"] = time.Now().Add(exp).Unix()
		req := httptest.NewRequest("POST", "/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+is.Sign(t, "ES256", c))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	assert.Equal(t, http.StatusNoContent, status(-time.Second), "expired 1 s ago, within the 30 s leeway")
	assert.Equal(t, http.StatusNoContent, status(-20*time.Second), "expired 20 s ago, within the 30 s leeway")
	assert.Equal(t, http.StatusUnauthorized, status(-45*time.Second), "expired 45 s ago, past the leeway")
}

// TestNewVerifierNeedsItsConfig: issuer, audience and keys are required
// and the leeway is bounded.
func TestNewVerifierNeedsItsConfig(t *testing.T) {
	is := testissuer.New(t, resource)
	ks, err := bearer.StaticKeys(is.JWKS())
	require.NoError(t, err)
	for name, cfg := range map[string]bearer.Config{
		"no issuer":   {Audience: resource, Keys: ks},
		"no audience": {Issuer: is.URL, Keys: ks},
		"no keys":     {Issuer: is.URL, Audience: resource},
		"leeway":      {Issuer: is.URL, Audience: resource, Keys: ks, Leeway: time.Hour},
	} {
		_, err := bearer.NewVerifier(cfg)
		assert.Error(t, err, name)
	}
}

func BenchmarkVerifyToken(b *testing.B) {
	is := testissuer.New(b, resource)
	v := newVerifier(b, is)
	ctx := context.Background()
	for _, alg := range testissuer.Algs {
		tok := is.Token(b, alg, "alice", "tools:call repo:read")
		b.Run(alg, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkProtectedRequest: one HTTP request through Protect with a
// valid token and cached keys, against the same handler unprotected —
// the added cost of authentication per request.
func BenchmarkProtectedRequest(b *testing.B) {
	is := testissuer.New(b, resource)
	v := newVerifier(b, is)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h, err := bearer.Protect(ok, v, bearer.Resource{URL: resource, AuthorizationServers: []string{is.URL}, Scopes: []string{"tools:call"}})
	require.NoError(b, err)
	run := func(b *testing.B, h http.Handler, token string) {
		req := httptest.NewRequest("POST", "/mcp", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusNoContent {
				b.Fatal(w.Code)
			}
		}
	}
	b.Run("unprotected", func(b *testing.B) { run(b, ok, "") })
	for _, alg := range testissuer.Algs {
		tok := is.Token(b, alg, "alice", "tools:call")
		b.Run(alg, func(b *testing.B) { run(b, h, tok) })
	}
}

// TestProtectRefusesTwoAuthorizationHeaders: a request with two
// Authorization headers is answered 400, whichever of them is valid, so
// that no component reads one credential while another reads the other.
func TestProtectRefusesTwoAuthorizationHeaders(t *testing.T) {
	is := testissuer.New(t, resource)
	v := newVerifier(t, is)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	h, err := bearer.Protect(ok, v, bearer.Resource{URL: resource, AuthorizationServers: []string{is.URL}})
	require.NoError(t, err)
	good := "Bearer " + is.Token(t, "ES256", "alice", "")
	status := func(values ...string) int {
		req := httptest.NewRequest("POST", "/mcp", nil)
		for _, v := range values {
			req.Header.Add("Authorization", v)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	assert.Equal(t, http.StatusNoContent, status(good), "the control: one valid token is served")
	assert.Equal(t, http.StatusBadRequest, status(good, good))
	assert.Equal(t, http.StatusBadRequest, status(good, "Bearer forged"))
	assert.Equal(t, http.StatusBadRequest, status("Bearer forged", good))
}

// TestVerifyAcceptsB64True: "b64": true is the default encoding, so a
// token naming it (and no "crit") verifies; only the other values refuse.
func TestVerifyAcceptsB64True(t *testing.T) {
	is := testissuer.New(t, resource)
	v := newVerifier(t, is)
	tok := testissuer.SignHeader(t, "ES256", testissuer.Kid("ES256"), is.Key("ES256"), map[string]any{"b64": true}, is.Claims("a", "s"))
	_, err := v.Verify(context.Background(), tok)
	require.NoError(t, err)
}
