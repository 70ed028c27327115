package bearer_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

// The fuzz target's fixed world: keys that do not change between runs
// (so the committed seeds of valid tokens stay valid), and a fixed clock.
const (
	fuzzIssuer = "https://id.example"
	fuzzAud    = "https://mcp.example/mcp"
)

var fuzzNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func fuzzKeys(f *testing.F) map[string]crypto.Signer {
	b, err := os.ReadFile("testdata/fuzz-rsa.pem")
	if err != nil {
		f.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	rk, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		f.Fatal(err)
	}
	ek, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), []byte(strings.Repeat("e", 32)))
	if err != nil {
		f.Fatal(err)
	}
	return map[string]crypto.Signer{
		"RS256": rk.(crypto.Signer),
		"ES256": ek,
		"EdDSA": ed25519.NewKeyFromSeed([]byte(strings.Repeat("d", 32))),
	}
}

// FuzzVerifyToken: Verify never panics, refuses with an *Error, and
// accepts only a token of at most MaxTokenBytes whose header names the
// algorithm of the key it names and whose claims, decoded independently
// here, have the issuer, the audience, a subject, and exp and nbf that
// hold at the fixed clock within the leeway.
func FuzzVerifyToken(f *testing.F) {
	keys := fuzzKeys(f)
	ks, err := bearer.StaticKeys(testissuer.JWKSOf(keys))
	if err != nil {
		f.Fatal(err)
	}
	v, err := bearer.NewVerifier(bearer.Config{Issuer: fuzzIssuer, Audience: fuzzAud, Keys: ks, GroupsClaim: "groups",
		Now: func() time.Time { return fuzzNow }})
	if err != nil {
		f.Fatal(err)
	}
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": fuzzIssuer, "aud": []string{fuzzAud, "other"}, "sub": "alice", "scope": "a b",
			"groups": []string{"eng"}, "nbf": fuzzNow.Add(-time.Hour).Unix(), "exp": fuzzNow.Add(time.Hour).Unix()}
	}
	for _, alg := range testissuer.Algs {
		tok := testissuer.SignWith(f, alg, testissuer.Kid(alg), keys[alg], claims())
		if _, err := v.Verify(context.Background(), tok); err != nil {
			f.Fatalf("the valid %s seed: %v", alg, err)
		}
		f.Add(tok)
	}
	f.Add(testissuer.Unsigned(f, testissuer.Kid("RS256"), claims()))
	f.Add(testissuer.SignWith(f, "HS256", testissuer.Kid("RS256"), []byte("secret"), claims()))
	f.Add("")
	f.Add("..")
	f.Add("eyJhbGciOiJub25lIn0.e30.")

	f.Fuzz(func(t *testing.T, token string) {
		ti, err := v.Verify(context.Background(), token)
		if err != nil {
			var e *bearer.Error
			if !errors.As(err, &e) || ti != nil {
				t.Fatalf("refused with %T %v and %v", err, err, ti)
			}
			return
		}
		if len(token) > bearer.MaxTokenBytes {
			t.Fatalf("accepted a token of %d bytes", len(token))
		}
		parts := strings.Split(token, ".")
		if len(parts) != 3 {
			t.Fatalf("accepted %d segments", len(parts))
		}
		var hdr struct{ Alg, Kid string }
		var c struct {
			Iss, Sub string
			Aud      any
			Exp, Nbf *float64
		}
		if !decode(parts[0], &hdr) || !decode(parts[1], &c) {
			t.Fatalf("accepted an undecodable token %q", token)
		}
		if !slices.Contains(testissuer.Algs, hdr.Alg) || hdr.Kid != testissuer.Kid(hdr.Alg) {
			t.Fatalf("accepted alg %q under kid %q", hdr.Alg, hdr.Kid)
		}
		auds, _ := c.Aud.([]any)
		if s, ok := c.Aud.(string); ok {
			auds = []any{s}
		}
		leeway := bearer.DefaultLeeway.Seconds()
		now := float64(fuzzNow.Unix())
		switch {
		case c.Iss != fuzzIssuer, c.Sub == "", !slices.Contains(auds, any(fuzzAud)),
			c.Exp == nil, *c.Exp+leeway < now, c.Nbf != nil && *c.Nbf-leeway > now:
			t.Fatalf("accepted claims %+v", c)
		}
		if ti.UserID != c.Sub || ti.Extra["iss"] != fuzzIssuer {
			t.Fatalf("token info %+v for claims %+v", ti, c)
		}
	})
}

func decode(seg string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	return err == nil && json.Unmarshal(b, v) == nil
}
