package kernel

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"github.com/verity-go/verity/internal/jsonvalue"
	"github.com/verity-go/verity/kernel/value"
	"iter"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/hamt"
)

// Fingerprint identifies a State: equal states have equal fingerprints, and
// a different state has a different one except with negligible probability
// for states that were not chosen to collide (see State.Fingerprint).
type Fingerprint [32]byte

// String returns the fingerprint in lower-case hex.
func (f Fingerprint) String() string { return hex.EncodeToString(f[:]) }

// MarshalText returns the lower-case hex form.
func (f Fingerprint) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText parses the hex form.
func (f *Fingerprint) UnmarshalText(b []byte) error {
	if len(b) != 64 {
		return fmt.Errorf("%w: fingerprint must be 64 hex digits", ErrDecode)
	}
	var out Fingerprint
	if _, err := hex.Decode(out[:], b); err != nil {
		return fmt.Errorf("%w: fingerprint: %v", ErrDecode, err)
	}
	*f = out
	return nil
}

// Domain-separation tags for the hashes the fingerprint is made of.
const (
	entryTag = "verity.kernel.state.entry.v1\x00"
	stateTag = "verity.kernel.state.v1\x00"
)

type stateVal struct {
	v  value.Value
	eh [32]byte // SHA-256 of the (key, value) entry, kept for O(1) removal from the sum
}

// stateMap is the persistent map under a State.
type stateMap = hamt.Map[string, stateVal, hamt.Seeded[string]]

type stateData struct {
	m   stateMap
	sum [4]uint64 // Σ entry hashes mod 2^256, little-endian limbs
	fp  Fingerprint
}

// State is an immutable map from variable names to Values: the world model
// the kernel reasons over. The zero State is empty and ready to use.
//
// States are persistent: With, Without and effect application return a new
// State that shares all untouched structure with the old one, so changing k
// variables of an n-variable State costs O(k log n) time and space, and the
// fingerprint is updated in O(k) hashing work.
type State struct{ d *stateData }

var emptyFingerprint = finishFingerprint(0, [4]uint64{})

// NewState builds a State from Go values (see value.Of).
func NewState(vars map[string]any) (State, error) {
	b := newBuilder(State{})
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return State{}, err
		}
		v, err := value.Of(vars[k])
		if err != nil {
			return State{}, within(err, "variable %q", k)
		}
		b.set(k, v)
	}
	return b.state(), nil
}

func checkKey(k string) error {
	if !utf8.ValidString(k) {
		return fmt.Errorf("%w: variable name is not valid UTF-8", value.ErrInvalidValue)
	}
	return nil
}

// Len returns the number of variables.
func (s State) Len() int {
	if s.d == nil {
		return 0
	}
	return s.d.m.Len()
}

// Get returns the value of a variable and whether it is present. A variable
// holding null is present.
func (s State) Get(key string) (value.Value, bool) {
	if s.d == nil {
		return value.Value{}, false
	}
	sv, ok := s.d.m.Get(key)
	return sv.v, ok
}

// Int returns the int a variable holds, and false if it is absent or
// holds anything else (a float included): an invariant is one line,
//
//	n, ok := s.Int("sent"); return !ok || n <= 3
func (s State) Int(key string) (int64, bool) {
	v, _ := s.Get(key)
	return v.AsInt()
}

// Float returns the float a variable holds, and false if it is absent or
// holds anything else (an int included).
func (s State) Float(key string) (float64, bool) {
	v, _ := s.Get(key)
	return v.AsFloat()
}

// Bool returns the bool a variable holds, and false if it is absent or
// holds anything else.
func (s State) Bool(key string) (value, ok bool) {
	v, _ := s.Get(key)
	return v.AsBool()
}

// Text returns the string a variable holds, and false if it is absent or
// holds anything else. (String is the State's own JSON form.)
func (s State) Text(key string) (string, bool) {
	v, _ := s.Get(key)
	return v.AsString()
}

// With returns a State in which key holds v. The receiver is unchanged.
func (s State) With(key string, v value.Value) (State, error) {
	if err := checkKey(key); err != nil {
		return s, err
	}
	if err := jv(v).Validate(0); err != nil {
		return s, within(err, "variable %q", key)
	}
	b := newBuilder(s)
	b.set(key, v)
	return b.state(), nil
}

// Without returns a State without key (the same State if key is absent).
func (s State) Without(key string) State {
	b := newBuilder(s)
	b.del(key)
	return b.state()
}

// keys returns the variable names in sorted (byte) order.
func (s State) keys() []string {
	keys := make([]string, 0, s.Len())
	if s.d != nil {
		for k := range s.d.m.All() {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// All iterates over the variables in sorted (byte) order.
func (s State) All() iter.Seq2[string, value.Value] {
	return func(yield func(string, value.Value) bool) {
		for _, k := range s.keys() {
			v, _ := s.Get(k)
			if !yield(k, v) {
				return
			}
		}
	}
}

// Map returns a fresh Go map of the variables (see value.Value.Go).
func (s State) Map() map[string]any {
	m := make(map[string]any, s.Len())
	if s.d != nil {
		for k, sv := range s.d.m.All() {
			m[k] = sv.v.Go()
		}
	}
	return m
}

// Fingerprint returns SHA-256 over a domain tag, the number of variables
// and the sum modulo 2^256 of one SHA-256 per (name, value) entry. The sum
// is a multiset hash: it is updated by subtracting the old entry's hash and
// adding the new one, so the fingerprint of a new State costs O(changed
// variables), not a rehash. It detects accidental mismatches (the use the
// kernel makes of it: rollback checks it is given the state an action
// produced); additive multiset hashes are not collision-resistant against
// an adversary who chooses very many entries, so it is not a commitment —
// the trace's hash chain (T6) is.
func (s State) Fingerprint() Fingerprint {
	if s.d == nil {
		return emptyFingerprint
	}
	return s.d.fp
}

func finishFingerprint(n int, sum [4]uint64) Fingerprint {
	var buf [len(stateTag) + 8 + 32]byte
	copy(buf[:], stateTag)
	binary.BigEndian.PutUint64(buf[len(stateTag):], uint64(n))
	for i := range 4 {
		binary.BigEndian.PutUint64(buf[len(stateTag)+8+8*i:], sum[3-i])
	}
	return sha256.Sum256(buf[:])
}

func entryHash(key string, v value.Value) [32]byte {
	var stack [192]byte
	buf := append(stack[:0], entryTag...)
	buf = binary.AppendUvarint(buf, uint64(len(key)))
	buf = append(buf, key...)
	buf = jv(v).AppendHashable(buf)
	return sha256.Sum256(buf)
}

func limbs(h *[32]byte) [4]uint64 {
	return [4]uint64{
		binary.BigEndian.Uint64(h[24:]), binary.BigEndian.Uint64(h[16:]),
		binary.BigEndian.Uint64(h[8:]), binary.BigEndian.Uint64(h[0:]),
	}
}

func addSum(s *[4]uint64, h *[32]byte) {
	l := limbs(h)
	var c uint64
	s[0], c = bits.Add64(s[0], l[0], 0)
	s[1], c = bits.Add64(s[1], l[1], c)
	s[2], c = bits.Add64(s[2], l[2], c)
	s[3], _ = bits.Add64(s[3], l[3], c)
}

func subSum(s *[4]uint64, h *[32]byte) {
	l := limbs(h)
	var b uint64
	s[0], b = bits.Sub64(s[0], l[0], 0)
	s[1], b = bits.Sub64(s[1], l[1], b)
	s[2], b = bits.Sub64(s[2], l[2], b)
	s[3], _ = bits.Sub64(s[3], l[3], b)
}

// Equal reports whether two States hold the same variables with strictly
// equal values (see value.Value.Equal).
func (s State) Equal(t State) bool {
	if s.d == t.d {
		return true
	}
	if s.Len() != t.Len() || s.Fingerprint() != t.Fingerprint() {
		return false
	}
	equal := true
	hamt.Diff(s.stateMap(), t.stateMap(), func(_ string, a, b *stateVal) {
		if a == nil || b == nil || !a.v.Equal(b.v) {
			equal = false
		}
	})
	return equal
}

func (s State) stateMap() stateMap {
	if s.d == nil {
		return stateMap{}
	}
	return s.d.m
}

// String returns the typed canonical JSON of the State.
func (s State) String() string { return string(s.appendJSON(nil)) }

// MarshalJSON returns the typed canonical JSON of the State: an RFC 8785
// object of variable → value (see value.Value.MarshalJSON).
func (s State) MarshalJSON() ([]byte, error) { return s.appendJSON(nil), nil }

// appendJSON appends the typed canonical JSON of the State to dst.
func (s State) appendJSON(dst []byte) []byte {
	keys := s.keys()
	return jsonvalue.AppendMembers(dst, keys, func(dst []byte, i int) []byte {
		v, _ := s.Get(keys[i])
		return jv(v).AppendJSON(dst)
	})
}

// builder applies a sequence of changes to a State, keeping the multiset
// sum up to date, and computes the fingerprint once at the end.
type builder struct {
	m     hamt.Builder[string, stateVal, hamt.Seeded[string]]
	sum   [4]uint64
	orig  *stateData
	dirty bool
}

// grow prepares the builder for at most k changes: the entries of k sets
// share one allocation.
func (b *builder) grow(k int) {
	if k > 1 {
		b.m.Grow(k)
	}
}

func newBuilder(s State) builder {
	if s.d == nil {
		return builder{}
	}
	return builder{m: s.d.m.Builder(), sum: s.d.sum, orig: s.d}
}

func (b *builder) get(key string) (value.Value, bool) {
	sv, ok := b.m.Get(key)
	return sv.v, ok
}

func (b *builder) set(key string, v value.Value) {
	eh := entryHash(key, v)
	if old, replaced := b.m.Set(key, stateVal{v: v, eh: eh}); replaced {
		subSum(&b.sum, &old.eh)
	}
	addSum(&b.sum, &eh)
	b.dirty = true
}

func (b *builder) del(key string) {
	old, deleted := b.m.Delete(key)
	if !deleted {
		return
	}
	subSum(&b.sum, &old.eh)
	b.dirty = true
}

func (b *builder) state() State {
	m := b.m.Map()
	if !b.dirty {
		if b.orig == nil {
			return State{}
		}
		return State{b.orig}
	}
	if m.Len() == 0 {
		return State{}
	}
	return State{&stateData{m: m, sum: b.sum, fp: finishFingerprint(m.Len(), b.sum)}}
}
