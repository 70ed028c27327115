package bearer

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"testing"
)

// FuzzParseJWKS: ParseJWKS never panics, and a set it accepts holds at
// most MaxKeys keys with distinct kids, each a public key of the one
// type its algorithm names: RS256 an RSA key of at least MinRSABits,
// ES256 a P-256 key, EdDSA a 32-byte Ed25519 key.
func FuzzParseJWKS(f *testing.F) {
	for _, seed := range [][]byte{
		[]byte(`{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "a", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`),
		[]byte(`{"keys": [{"kty": "EC", "crv": "P-256", "kid": "e", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}]}`),
		[]byte(`{"keys": [{"kty": "RSA", "kid": "r", "e": "AQAB", "n": "` + rsaSeedN + `"}]}`),
	} {
		if _, err := ParseJWKS(seed); err != nil {
			f.Fatalf("a valid seed: %v", err)
		}
		f.Add(seed)
	}
	f.Add([]byte(`{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}`))
	f.Add([]byte(`{"keys": []}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := ParseJWKS(data)
		if err != nil {
			if keys != nil {
				t.Fatal("keys with an error")
			}
			return
		}
		if len(keys) == 0 || len(keys) > MaxKeys {
			t.Fatalf("%d keys", len(keys))
		}
		seen := map[string]bool{}
		for _, k := range keys {
			if seen[k.ID] {
				t.Fatalf("kid %q twice", k.ID)
			}
			seen[k.ID] = true
			switch pub := k.Public.(type) {
			case *rsa.PublicKey:
				if k.Alg != "RS256" || pub.N.BitLen() < MinRSABits || pub.E < 3 || pub.E%2 == 0 {
					t.Fatalf("RSA key %d bits e %d as %s", pub.N.BitLen(), pub.E, k.Alg)
				}
			case *ecdsa.PublicKey:
				if k.Alg != "ES256" || pub.Curve != elliptic.P256() {
					t.Fatalf("EC key as %s", k.Alg)
				}
			case ed25519.PublicKey:
				if k.Alg != "EdDSA" || len(pub) != ed25519.PublicKeySize {
					t.Fatalf("Ed25519 key of %d bytes as %s", len(pub), k.Alg)
				}
			default:
				t.Fatalf("a %T key", pub)
			}
		}
	})
}

// rsaSeedN is the modulus of testdata/fuzz-rsa.pem, base64url.
const rsaSeedN = "oAGyM2uaDVoQrogfhQXAItI2EqRvb_j-Y4LmFSnzbpll1TC5T5R5cB59x9fgQ3guV12lU1CTSC4vGlpSecaz60AyBwEsieYzdLKRMVwKM438N0_Gxlcgcac2geQD3txHqY97cpmLGsBDPgLvk-8oGpQn8gSVs5jUfabUgB4TWvP2MeNXz7Z8E6mUPvZIFoyw7TwHBUu6A6ojfYEpstyVQrCBNT1b__VamrXXfYCUT_hAKSyjKiyGSL7cpjdhdphAME0Wnp_CfLcgD6f4bldLASFeY6x7nZZPy8sabdNWIgBBb6aJZGbwU0GLaQ8_azFy9OAAX7tGCB77noESFaa_9w"
