package belief

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"math/bits"
	"slices"
	"sync"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// space is the immutable hypothesis space of a session: the declared ids
// sorted by code point (byte order of UTF-8), their positions, and their
// canonical JSON encodings laid end to end so that a run of consecutive
// survivors is hashed with a single write.
type space struct {
	ids   []string
	index map[string]int32
	enc   []byte  // `,"id0",` ... each id as `,"<canonical string>"`
	off   []int32 // off[i] is where id i starts in enc; off[len(ids)] = len(enc)
}

// newSpace builds the space of the given ids (valid UTF-8, not empty),
// removing duplicates.
func newSpace(ids []string) *space {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	sp := &space{
		ids:   sorted,
		index: make(map[string]int32, len(sorted)),
		off:   make([]int32, len(sorted)+1),
	}
	size := 0
	for _, id := range sorted {
		size += len(id) + 3
	}
	sp.enc = make([]byte, 0, size)
	for i, id := range sorted {
		sp.index[id] = int32(i)
		sp.off[i] = int32(len(sp.enc))
		sp.enc = append(sp.enc, ',')
		sp.enc = canon.AppendString(sp.enc, id)
	}
	sp.off[len(sorted)] = int32(len(sp.enc))
	return sp
}

// bitset helpers over a survivors bitmap of n bits (bits ≥ n are zero).

func newFullSet(n int) []uint64 {
	words := make([]uint64, (n+63)/64)
	for i := range words {
		words[i] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		words[len(words)-1] = (uint64(1) << r) - 1
	}
	return words
}

func has(set []uint64, i int32) bool { return set[i>>6]&(1<<(uint(i)&63)) != 0 }

// nextSet returns the first member ≥ i, or n.
func nextSet(set []uint64, i, n int) int {
	if i >= n {
		return n
	}
	w := i >> 6
	word := set[w] & (^uint64(0) << (uint(i) & 63))
	for word == 0 {
		w++
		if w >= len(set) {
			return n
		}
		word = set[w]
	}
	return min(w<<6+bits.TrailingZeros64(word), n)
}

// nextClear returns the first non-member ≥ i, or n.
func nextClear(set []uint64, i, n int) int {
	if i >= n {
		return n
	}
	w := i >> 6
	word := ^set[w] & (^uint64(0) << (uint(i) & 63))
	for word == 0 {
		w++
		if w >= len(set) {
			return n
		}
		word = ^set[w]
	}
	return min(w<<6+bits.TrailingZeros64(word), n)
}

// survivorsHash is SHA-256 over the canonical JSON object
//
//	{"prev_event_hash":"<64 hex>","session_id":<string>,"survivors":[<ids sorted by code point>]}
//
// Canonical JSON (RFC 8785) is an injective encoding, so two different
// (survivors, session id, previous hash) triples never share the hashed
// bytes whatever characters the ids contain.
func survivorsHash(sp *space, set []uint64, sessionID string, prev trace.Hash) trace.Hash {
	sh := survivorsHashers.Get().(*survivorsHasher)
	sh.h.Reset()
	sh.buf = writeSurvivors(sh.h, sh.buf[:0], sp, set, sessionID, prev)
	var out trace.Hash
	sh.buf = sh.h.Sum(sh.buf[:0]) // into the pooled buffer: out would escape
	copy(out[:], sh.buf)
	if cap(sh.buf) <= 1024 { // keep only small prefix buffers
		survivorsHashers.Put(sh)
	}
	return out
}

// survivorsHasher is the reusable state of one survivors hash: the digest
// and the buffer of the object's prefix. Pooled, so that a hash allocates
// nothing; the pool holds no session data beyond one call.
type survivorsHasher struct {
	h   hash.Hash
	buf []byte
}

var survivorsHashers = sync.Pool{New: func() any { return &survivorsHasher{h: sha256.New(), buf: make([]byte, 0, 256)} }}

// writeSurvivors writes the canonical survivors object to h, building its
// prefix in buf, which it returns for reuse.
func writeSurvivors(h hash.Hash, buf []byte, sp *space, set []uint64, sessionID string, prev trace.Hash) []byte {
	buf = append(buf, `{"prev_event_hash":"`...)
	buf = hex.AppendEncode(buf, prev[:])
	buf = append(buf, `","session_id":`...)
	buf = canon.AppendString(buf, sessionID)
	buf = append(buf, `,"survivors":[`...)
	h.Write(buf)
	n := len(sp.ids)
	first := true
	for i := nextSet(set, 0, n); i < n; {
		j := nextClear(set, i, n)
		chunk := sp.enc[sp.off[i]:sp.off[j]]
		if first {
			chunk = chunk[1:]
			first = false
		}
		h.Write(chunk)
		i = nextSet(set, j, n)
	}
	buf = append(buf[:0], "]}"...)
	h.Write(buf)
	return buf
}

// SurvivorsHash computes the survivors hash of §1.1 for an arbitrary list
// of survivors (sorted and de-duplicated here), a session id and the hash
// of the previous event. It is the reference a verifier in another
// language reproduces: SHA-256 over the canonical JSON object with members
// prev_event_hash (64 lower-case hex digits), session_id and survivors.
func SurvivorsHash(survivors []string, sessionID string, prev trace.Hash) trace.Hash {
	sp := newSpace(survivors)
	return survivorsHash(sp, newFullSet(len(sp.ids)), sessionID, prev)
}
