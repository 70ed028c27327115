package bearer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"sync"
	"time"

	"github.com/verity-go/verity/internal/osfile"
)

// Bounds on a key set document.
const (
	// MaxJWKSBytes is the largest JWKS document read, from a file or a URL.
	MaxJWKSBytes = 1 << 20
	// MaxKeys is the most keys a JWKS may hold.
	MaxKeys = 64
	// MinRSABits is the smallest RSA modulus accepted.
	MinRSABits = 2048
)

// Key is one verification key of a JWKS: its public key and the one JWS
// algorithm its kty (and crv) implies — RSA is RS256, EC P-256 is ES256,
// OKP Ed25519 is EdDSA. A token signed with any other algorithm is not
// verified with it.
type Key struct {
	ID     string
	Alg    string
	Public crypto.PublicKey
}

type jwk struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	Crv string `json:"crv"`
	N   string `json:"n"`
	E   string `json:"e"`
	X   string `json:"x"`
	Y   string `json:"y"`
	D   string `json:"d"`
	K   string `json:"k"`
}

// ParseJWKS decodes a JSON Web Key Set (RFC 7517 §5) into its keys.
// It is strict: a key that is not an RSA (at least MinRSABits), EC P-256
// or OKP Ed25519 public signing key, a private or symmetric key, a key
// whose "alg" is not the one its type implies, a repeated kid or more
// than MaxKeys keys make the whole set an error, so that a malformed set
// is found when it is loaded rather than when a token fails.
func ParseJWKS(data []byte) ([]Key, error) {
	if len(data) > MaxJWKSBytes {
		return nil, fmt.Errorf("jwks: larger than %d bytes", MaxJWKSBytes)
	}
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	if doc.Keys == nil {
		return nil, errors.New(`jwks: no "keys" array`)
	}
	if len(doc.Keys) == 0 {
		return nil, errors.New("jwks: no keys")
	}
	if len(doc.Keys) > MaxKeys {
		return nil, fmt.Errorf("jwks: %d keys, at most %d", len(doc.Keys), MaxKeys)
	}
	keys := make([]Key, 0, len(doc.Keys))
	seen := map[string]bool{}
	for i, j := range doc.Keys {
		k, err := parseJWK(j)
		if err != nil {
			return nil, fmt.Errorf("jwks: key %d (kid %q): %w", i, j.Kid, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("jwks: key %d: kid %q repeated", i, j.Kid)
		}
		seen[k.ID] = true
		keys = append(keys, k)
	}
	return keys, nil
}

func b64(field, s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("%q missing", field)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%q: not base64url without padding", field)
	}
	return b, nil
}

func parseJWK(j jwk) (Key, error) {
	if j.D != "" || j.K != "" {
		return Key{}, errors.New("a private or symmetric key; a JWKS for verification holds public keys only")
	}
	if j.Use != "" && j.Use != "sig" {
		return Key{}, fmt.Errorf("use %q, not sig", j.Use)
	}
	k := Key{ID: j.Kid}
	switch {
	case j.Kty == "RSA":
		k.Alg = "RS256"
		n, err := b64("n", j.N)
		if err != nil {
			return Key{}, err
		}
		e, err := b64("e", j.E)
		if err != nil {
			return Key{}, err
		}
		if len(e) == 0 || len(e) > 4 {
			return Key{}, errors.New(`"e" out of range`)
		}
		ev := new(big.Int).SetBytes(e)
		if !ev.IsInt64() || ev.Int64() < 3 || ev.Int64()%2 == 0 {
			return Key{}, errors.New(`"e" is not an odd exponent above 2`)
		}
		pub := &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(ev.Int64())}
		if pub.N.BitLen() < MinRSABits {
			return Key{}, fmt.Errorf("RSA modulus of %d bits, at least %d", pub.N.BitLen(), MinRSABits)
		}
		k.Public = pub
	case j.Kty == "EC" && j.Crv == "P-256":
		k.Alg = "ES256"
		x, err := b64("x", j.X)
		if err != nil {
			return Key{}, err
		}
		y, err := b64("y", j.Y)
		if err != nil {
			return Key{}, err
		}
		if len(x) != 32 || len(y) != 32 {
			return Key{}, errors.New("P-256 coordinates must be 32 bytes each")
		}
		// ecdsa.ParseUncompressedPublicKey (Go 1.25) checks that the point
		// is on the curve.
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return Key{}, fmt.Errorf("not a P-256 point: %w", err)
		}
		k.Public = pub
	case j.Kty == "OKP" && j.Crv == "Ed25519":
		k.Alg = "EdDSA"
		x, err := b64("x", j.X)
		if err != nil {
			return Key{}, err
		}
		if len(x) != ed25519.PublicKeySize {
			return Key{}, fmt.Errorf("Ed25519 key must be %d bytes", ed25519.PublicKeySize)
		}
		k.Public = ed25519.PublicKey(x)
	case j.Kty == "":
		return Key{}, errors.New(`"kty" missing`)
	default:
		return Key{}, fmt.Errorf("kty %q crv %q: only RSA, EC P-256 and OKP Ed25519 are accepted", j.Kty, j.Crv)
	}
	if j.Alg != "" && j.Alg != k.Alg {
		return Key{}, fmt.Errorf("alg %q, but a %s key signs %s only", j.Alg, j.Kty, k.Alg)
	}
	return k, nil
}

// KeySet is the keys tokens are verified with: fixed (StaticKeys), or
// fetched from a JWKS URL (RemoteKeys) and fetched again periodically
// and when a token names a kid the set does not hold — at most once per
// minimum interval, so that tokens with made-up kids cannot make the
// resource hammer its issuer. It is safe for concurrent use.
type KeySet struct {
	mu   sync.RWMutex
	keys map[string]Key

	// remote only
	fetch       func(context.Context) ([]byte, error)
	minInterval time.Duration
	fetchMu     sync.Mutex // one fetch at a time
	lastFetch   time.Time
	logger      *slog.Logger
	now         func() time.Time
}

func newSet(keys []Key) *KeySet {
	m := make(map[string]Key, len(keys))
	for _, k := range keys {
		m[k.ID] = k
	}
	return &KeySet{keys: m, now: time.Now}
}

// StaticKeys returns the set of the JWKS in data.
func StaticKeys(data []byte) (*KeySet, error) {
	keys, err := ParseJWKS(data)
	if err != nil {
		return nil, err
	}
	return newSet(keys), nil
}

// LoadFile reads the JWKS file at path, a regular file of at most
// MaxJWKSBytes: a FIFO or a device is refused without waiting on it,
// a larger file without reading it whole.
func LoadFile(path string) (*KeySet, error) {
	data, err := osfile.ReadFile(path, MaxJWKSBytes)
	if err != nil {
		return nil, err
	}
	ks, err := StaticKeys(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ks, nil
}

// RemoteOptions configures RemoteKeys.
type RemoteOptions struct {
	// Client fetches the JWKS; http.DefaultClient with a 10 s timeout when nil.
	Client *http.Client
	// Refresh is how often the set is fetched again (default 5 minutes).
	Refresh time.Duration
	// MinInterval is the least time between two fetches, whatever asks
	// for them (default 10 s).
	MinInterval time.Duration
	// Logger receives failed refreshes (the previous keys stay in use).
	Logger *slog.Logger
}

// RemoteKeys fetches the JWKS at url once — an error if that fails or
// the set is malformed — then again every opts.Refresh until ctx ends,
// and when Lookup meets an unknown kid, never more often than
// opts.MinInterval. A refresh that fails or returns a malformed set
// keeps the keys in use.
func RemoteKeys(ctx context.Context, url string, opts RemoteOptions) (*KeySet, error) {
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Minute
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = 10 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fetch := func(ctx context.Context) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	}
	data, err := fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	keys, err := ParseJWKS(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	ks := newSet(keys)
	ks.fetch, ks.minInterval, ks.logger = fetch, opts.MinInterval, logger
	ks.lastFetch = ks.now()
	go func() {
		t := time.NewTicker(opts.Refresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				ks.refresh(ctx)
			}
		}
	}()
	return ks, nil
}

// refresh fetches the set again unless it was fetched less than
// minInterval ago; it reports whether it did.
func (ks *KeySet) refresh(ctx context.Context) bool {
	ks.fetchMu.Lock()
	defer ks.fetchMu.Unlock()
	if ks.now().Sub(ks.lastFetch) < ks.minInterval {
		return false
	}
	ks.lastFetch = ks.now()
	data, err := ks.fetch(ctx)
	if err == nil {
		var keys []Key
		if keys, err = ParseJWKS(data); err == nil {
			m := make(map[string]Key, len(keys))
			for _, k := range keys {
				m[k.ID] = k
			}
			ks.mu.Lock()
			ks.keys = m
			ks.mu.Unlock()
			return true
		}
	}
	ks.logger.Warn("jwks refresh failed; the previous keys stay in use", "err", err)
	return false
}

// Lookup returns the key named kid. A token without a kid ("") is
// verified with the set's only key when it has exactly one. A remote
// set that does not hold kid is fetched again first (within its
// minimum interval).
func (ks *KeySet) Lookup(ctx context.Context, kid string) (Key, bool) {
	if k, ok := ks.get(kid); ok {
		return k, true
	}
	if ks.fetch == nil || !ks.refresh(ctx) {
		return Key{}, false
	}
	return ks.get(kid)
}

func (ks *KeySet) get(kid string) (Key, bool) {
	ks.mu.RLock()
	defer ks.mu.RUnlock()
	if kid == "" && len(ks.keys) == 1 {
		for _, k := range ks.keys {
			return k, true
		}
	}
	k, ok := ks.keys[kid]
	return k, ok
}
