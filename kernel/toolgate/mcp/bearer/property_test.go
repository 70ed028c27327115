package bearer_test

import (
	"context"
	"crypto"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate/mcp/bearer"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

// TestTokenAcceptedOnlyWhenEveryCheckHolds: over tokens whose key, kid,
// issuer, audience, subject, exp and nbf each vary, Verify accepts
// exactly those a naive model accepts — the issuer's key for the kid's
// algorithm, the issuer, the audience among "aud", a subject, now before
// exp plus the leeway, and nbf (when present) no later than now plus the
// leeway.
func TestTokenAcceptedOnlyWhenEveryCheckHolds(t *testing.T) {
	is := testissuer.New(t, resource)
	ks, err := bearer.StaticKeys(is.JWKS())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_900_000_000, 0)
	const leeway = 30
	v, err := bearer.NewVerifier(bearer.Config{Issuer: is.URL, Audience: resource, Keys: ks, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]crypto.Signer{}
	for _, alg := range testissuer.Algs {
		others[alg] = testissuer.OtherKey(t, alg)
	}
	accepted := 0
	rapid.Check(t, func(t *rapid.T) {
		// Each check holds more often than not, so that about a third of
		// the tokens pass them all.
		likely := func(name string) bool { return rapid.IntRange(0, 9).Draw(t, name) > 0 }
		alg := rapid.SampledFrom(testissuer.Algs).Draw(t, "alg")
		kidAlg := alg
		if !likely("kidMatches") {
			kidAlg = rapid.SampledFrom(testissuer.Algs).Draw(t, "kidAlg")
		}
		ownKey := likely("ownKey")
		issOK := likely("issOK")
		audKind := 0 // 0 ours, 1 another, 2 a list with ours, 3 none
		if !likely("audOK") {
			audKind = rapid.IntRange(0, 3).Draw(t, "aud")
		}
		hasSub := likely("sub")
		hasExp := likely("hasExp")
		exp := rapid.Int64Range(-120, 120).Draw(t, "exp")
		hasNbf := rapid.Bool().Draw(t, "hasNbf")
		nbf := rapid.Int64Range(-120, 120).Draw(t, "nbf")

		c := jwt.MapClaims{"iss": is.URL, "scope": "s"}
		if !issOK {
			c["iss"] = is.URL + "x"
		}
		switch audKind {
		case 0:
			c["aud"] = resource
		case 1:
			c["aud"] = resource + "x"
		case 2:
			c["aud"] = []string{"https://a.example", resource}
		}
		if hasSub {
			c["sub"] = "alice"
		}
		if hasExp {
			c["exp"] = now.Unix() + exp
		}
		if hasNbf {
			c["nbf"] = now.Unix() + nbf
		}
		key := others[alg]
		if ownKey {
			key = is.Key(alg)
		}
		tok := testissuer.SignWith(t, alg, testissuer.Kid(kidAlg), key, c)
		want := ownKey && kidAlg == alg && issOK && (audKind == 0 || audKind == 2) && hasSub &&
			hasExp && exp+leeway > 0 && (!hasNbf || nbf-leeway <= 0)
		_, err := v.Verify(context.Background(), tok)
		if want {
			accepted++
		}
		if (err == nil) != want {
			t.Fatalf("accepted %v, the model says %v (%v) for %v", err == nil, want, err, c)
		}
	})
	t.Logf("%d tokens the model accepts", accepted)
}
