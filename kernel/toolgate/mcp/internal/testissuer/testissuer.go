// Package testissuer is an OAuth authorization server for tests: it
// holds an RSA, an EC P-256 and an Ed25519 signing key, serves their
// JWKS over HTTP, and signs tokens with any of them — or forged ones.
// Its token endpoint (TokenURL, token.go) grants client credentials
// (RFC 6749 §4.4) and token exchanges (RFC 8693) to the clients it is
// told of, counts the grants, and refuses them when told to.
package testissuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TB is what signing needs of a test (testing.TB, rapid.T).
type TB interface {
	Helper()
	Fatal(args ...any)
}

// Algs are the algorithms the issuer signs with, one key each.
var Algs = []string{"RS256", "ES256", "EdDSA"}

// Issuer is a test authorization server.
type Issuer struct {
	URL      string // its issuer identifier (the JWKS server's URL)
	JWKSURL  string
	Fetches  atomic.Int64 // JWKS requests served
	keys     map[string]crypto.Signer
	extra    atomic.Pointer[[]byte] // a JWKS to serve instead, when set
	Audience string

	tokenEndpoint // token.go
}

// New starts an issuer whose tokens name audience.
func New(t interface {
	TB
	Cleanup(func())
}, audience string) *Issuer {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, dk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{keys: map[string]crypto.Signer{"RS256": rk, "ES256": ek, "EdDSA": dk}, Audience: audience}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == tokenPath {
			is.serveToken(w, r)
			return
		}
		if r.URL.Path != "/jwks.json" {
			http.NotFound(w, r)
			return
		}
		is.Fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if p := is.extra.Load(); p != nil {
			_, _ = w.Write(*p)
			return
		}
		_, _ = w.Write(is.JWKS())
	}))
	t.Cleanup(srv.Close)
	is.URL, is.JWKSURL, is.TokenURL = srv.URL, srv.URL+"/jwks.json", srv.URL+tokenPath
	return is
}

// Serve makes the JWKS server answer doc from now on (nil: its own keys).
func (is *Issuer) Serve(doc []byte) {
	if doc == nil {
		is.extra.Store(nil)
		return
	}
	is.extra.Store(&doc)
}

// Key is the issuer's signing key for alg.
func (is *Issuer) Key(alg string) crypto.Signer { return is.keys[alg] }

// Kid is the key id of the key for alg.
func Kid(alg string) string { return "k-" + alg }

// JWKS is the issuer's public keys as a JWK Set.
func (is *Issuer) JWKS() []byte { return JWKSOf(is.keys) }

// JWKSOf is the JWK Set of the public halves of keys (by alg).
func JWKSOf(keys map[string]crypto.Signer) []byte {
	b64 := base64.RawURLEncoding.EncodeToString
	var out []map[string]string
	for _, alg := range Algs {
		k, ok := keys[alg]
		if !ok {
			continue
		}
		switch pub := k.Public().(type) {
		case *rsa.PublicKey:
			out = append(out, map[string]string{"kty": "RSA", "kid": Kid(alg), "use": "sig", "alg": alg,
				"n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())})
		case *ecdsa.PublicKey:
			b, _ := pub.Bytes()
			out = append(out, map[string]string{"kty": "EC", "kid": Kid(alg), "crv": "P-256", "x": b64(b[1:33]), "y": b64(b[33:])})
		case ed25519.PublicKey:
			out = append(out, map[string]string{"kty": "OKP", "kid": Kid(alg), "crv": "Ed25519", "x": b64(pub)})
		}
	}
	b, _ := json.Marshal(map[string]any{"keys": out})
	return b
}

// Claims are a valid token's claims for sub, with scopes, expiring in an
// hour.
func (is *Issuer) Claims(sub string, scopes string) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": is.URL, "aud": is.Audience, "sub": sub, "scope": scopes,
		"iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(time.Hour).Unix()}
}

// Sign signs claims with the issuer's key for alg, naming its kid.
func (is *Issuer) Sign(t TB, alg string, claims jwt.MapClaims) string {
	t.Helper()
	return SignWith(t, alg, Kid(alg), is.keys[alg], claims)
}

// Token is a valid token for sub with scopes, signed with alg.
func (is *Issuer) Token(t TB, alg, sub, scopes string) string {
	return is.Sign(t, alg, is.Claims(sub, scopes))
}

// SignWith signs claims with key under alg and kid.
func SignWith(t TB, alg, kid string, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SignHeader is claims signed by key with alg, under kid, with the
// extra protected header members of header (such as "crit").
func SignHeader(t TB, alg, kid string, key any, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	tok.Header["kid"] = kid
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Unsigned is claims as an "alg": "none" token naming kid.
func Unsigned(t TB, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, claims)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// HMACWithPublicKey is claims signed HS256 with the issuer's RSA public
// key (DER, and its JWKS modulus) as the secret, naming the RSA key's
// kid: the algorithm-confusion forgery.
func (is *Issuer) HMACWithPublicKey(t testing.TB, claims jwt.MapClaims) []string {
	t.Helper()
	pub := is.keys["RS256"].Public().(*rsa.PublicKey)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, secret := range [][]byte{der, pub.N.Bytes(), is.JWKS()} {
		out = append(out, SignWith(t, "HS256", Kid("RS256"), secret, claims))
	}
	return out
}

// OtherKey is a fresh key for alg the issuer does not publish.
func OtherKey(t testing.TB, alg string) crypto.Signer {
	t.Helper()
	var k crypto.Signer
	var err error
	switch alg {
	case "RS256":
		k, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES256":
		k, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	default:
		_, k, err = ed25519.GenerateKey(rand.Reader)
	}
	if err != nil {
		t.Fatal(err)
	}
	return k
}
