package bearer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

// TestParseJWKSRefusesMalformedSets: each malformed set is an error as a
// whole; the issuer's set parses to one key per algorithm.
func TestParseJWKSRefusesMalformedSets(t *testing.T) {
	is := testissuer.New(t, "https://r.example")
	keys, err := ParseJWKS(is.JWKS())
	require.NoError(t, err)
	var algs []string
	for _, k := range keys {
		algs = append(algs, k.Alg)
		assert.Equal(t, testissuer.Kid(k.Alg), k.ID)
	}
	assert.ElementsMatch(t, testissuer.Algs, algs)

	var doc struct{ Keys []map[string]string }
	require.NoError(t, json.Unmarshal(is.JWKS(), &doc))
	rsaK, ecK, edK := doc.Keys[0], doc.Keys[1], doc.Keys[2]
	edit := func(k map[string]string, kv ...string) string {
		c := map[string]string{}
		for a, b := range k {
			c[a] = b
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(c, kv[i])
			} else {
				c[kv[i]] = kv[i+1]
			}
		}
		b, _ := json.Marshal(map[string]any{"keys": []any{c}})
		return string(b)
	}
	cases := map[string]string{
		"not JSON":           `{"keys": [`,
		"no keys array":      `{}`,
		"empty":              `{"keys": []}`,
		"keys not an array":  `{"keys": {}}`,
		"symmetric":          `{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}`,
		"no kty":             edit(edK, "kty", "-"),
		"RSA private":        edit(rsaK, "d", "AQAB"),
		"RSA short":          edit(rsaK, "n", "AQAB"),
		"RSA even e":         edit(rsaK, "e", "Ag"),
		"RSA huge e":         edit(rsaK, "e", "AQABAQAB"),
		"RSA no n":           edit(rsaK, "n", "-"),
		"RSA bad base64":     edit(rsaK, "n", "***"),
		"RSA alg HS256":      edit(rsaK, "alg", "HS256"),
		"RSA alg PS256":      edit(rsaK, "alg", "PS256"),
		"RSA for encryption": edit(rsaK, "use", "enc"),
		"EC P-384":           edit(ecK, "crv", "P-384"),
		"EC off the curve":   edit(ecK, "y", strings.Repeat("A", 43)),
		"EC short x":         edit(ecK, "x", "AQAB"),
		"EC alg ES384":       edit(ecK, "alg", "ES384"),
		"Ed448":              edit(edK, "crv", "Ed448"),
		"Ed25519 short":      edit(edK, "x", "AQAB"),
		"X25519":             edit(edK, "crv", "X25519"),
		"repeated kid":       `{"keys": [` + edit(edK)[9:len(edit(edK))-2] + `,` + edit(edK)[9:len(edit(edK))-2] + `]}`,
		"too large":          `{"keys": [], "pad": "` + strings.Repeat("x", MaxJWKSBytes) + `"}`,
	}
	many := make([]map[string]string, MaxKeys+1)
	for i := range many {
		many[i] = map[string]string{"kty": "OKP", "crv": "Ed25519", "x": edK["x"], "kid": fmt.Sprint(i)}
	}
	b, _ := json.Marshal(map[string]any{"keys": many})
	cases["too many keys"] = string(b)
	b, _ = json.Marshal(map[string]any{"keys": many[:MaxKeys]})
	_, err = ParseJWKS(b)
	assert.NoError(t, err, "MaxKeys keys are fine")
	for name, doc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseJWKS([]byte(doc))
			assert.Error(t, err)
		})
	}
	// Each single key alone is fine (the edits above are what breaks).
	for _, k := range doc.Keys {
		_, err := ParseJWKS([]byte(edit(k)))
		assert.NoError(t, err)
	}
}

// TestRemoteKeysRefreshOnRotation: a key the issuer publishes after the
// set was fetched is found on the first token that names it; tokens
// naming kids nobody publishes fetch the set at most once per minimum
// interval; a refresh that fails keeps the keys in use.
func TestRemoteKeysRefreshOnRotation(t *testing.T) {
	is := testissuer.New(t, "https://r.example")
	var doc struct{ Keys []json.RawMessage }
	require.NoError(t, json.Unmarshal(is.JWKS(), &doc))
	onlyRSA, _ := json.Marshal(map[string]any{"keys": doc.Keys[:1]})
	is.Serve(onlyRSA)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ks, err := RemoteKeys(ctx, is.JWKSURL, RemoteOptions{Refresh: time.Hour, MinInterval: time.Minute})
	require.NoError(t, err)
	var mu sync.Mutex
	clock := time.Now()
	ks.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	assert.EqualValues(t, 1, is.Fetches.Load())

	_, ok := ks.Lookup(ctx, testissuer.Kid("RS256"))
	assert.True(t, ok)
	_, ok = ks.Lookup(ctx, testissuer.Kid("ES256"))
	assert.False(t, ok, "not published yet; within the minimum interval, not fetched")
	assert.EqualValues(t, 1, is.Fetches.Load())

	is.Serve(nil) // the issuer publishes its other keys
	advance(61 * time.Second)
	k, ok := ks.Lookup(ctx, testissuer.Kid("ES256"))
	require.True(t, ok, "an unknown kid fetches the set again")
	assert.Equal(t, "ES256", k.Alg)
	assert.EqualValues(t, 2, is.Fetches.Load())

	// A flood of made-up kids within the interval fetches nothing.
	for i := range 100 {
		_, ok := ks.Lookup(ctx, "made-up-"+string(rune('a'+i%26)))
		assert.False(t, ok)
	}
	assert.EqualValues(t, 2, is.Fetches.Load())
	advance(61 * time.Second)
	_, _ = ks.Lookup(ctx, "made-up")
	_, _ = ks.Lookup(ctx, "made-up-2")
	assert.EqualValues(t, 3, is.Fetches.Load(), "one fetch per interval")

	// A malformed set on refresh keeps the keys.
	is.Serve([]byte(`{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}`))
	advance(61 * time.Second)
	_, ok = ks.Lookup(ctx, "made-up")
	assert.False(t, ok)
	assert.EqualValues(t, 4, is.Fetches.Load())
	_, ok = ks.Lookup(ctx, testissuer.Kid("EdDSA"))
	assert.True(t, ok, "the previous keys stay")

	// A malformed set at start is an error.
	_, err = RemoteKeys(ctx, is.JWKSURL, RemoteOptions{})
	assert.Error(t, err)
	_, err = RemoteKeys(ctx, is.URL+"/missing", RemoteOptions{Client: nil})
	assert.Error(t, err)
}

// TestRemoteKeysRefreshPeriodically: the set is fetched again every
// Refresh without any token asking.
func TestRemoteKeysRefreshPeriodically(t *testing.T) {
	is := testissuer.New(t, "https://r.example")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := RemoteKeys(ctx, is.JWKSURL, RemoteOptions{Refresh: 20 * time.Millisecond, MinInterval: time.Millisecond})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return is.Fetches.Load() >= 3 }, 5*time.Second, 5*time.Millisecond)
	cancel()
	time.Sleep(50 * time.Millisecond)
	n := is.Fetches.Load()
	time.Sleep(100 * time.Millisecond)
	assert.Equal(t, n, is.Fetches.Load(), "no fetch once ctx ends")
}

// TestKeySetConcurrentLookups: lookups of known and unknown kids from
// many goroutines, while the set is refreshed, find the known keys
// every time (run with -race).
func TestKeySetConcurrentLookups(t *testing.T) {
	is := testissuer.New(t, "https://r.example")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ks, err := RemoteKeys(ctx, is.JWKSURL, RemoteOptions{Refresh: 5 * time.Millisecond, MinInterval: time.Millisecond})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			deadline := time.Now().Add(50 * time.Millisecond)
			for i := 0; i < 200 || time.Now().Before(deadline); i++ {
				if _, ok := ks.Lookup(ctx, testissuer.Kid(testissuer.Algs[(g+i)%3])); !ok {
					t.Errorf("a published key was not found")
					return
				}
				_, _ = ks.Lookup(ctx, fmt.Sprint("unknown-", g, i))
			}
		})
	}
	wg.Wait()
	assert.Greater(t, is.Fetches.Load(), int64(1))
}
