package belief

// obsKey is the idempotence key of ELIMINATE: the pair (source id,
// observation id), compared field by field and never concatenated.
type obsKey struct {
	source, observation string
}

// obsRecord is what the first ELIMINATE with a key produced.
type obsRecord struct {
	key         obsKey
	fingerprint Hash // of the request body (eliminated set + justification)
	applied     []string
	ignored     []string
	eventID     string
}

// obsMap is a persistent (immutable, path-copying) hash array mapped trie
// from obsKey to obsRecord. Insertion returns a new map sharing all
// untouched nodes, so a session value can be extended in O(log n) while
// every older value stays valid: the order-independence and replay
// properties compare such branches.
type obsMap struct {
	root *hamtNode
	size int
}

type hamtNode struct {
	bitmap uint32
	slots  []hamtSlot
}

// hamtSlot is either a child node or a leaf holding the records whose
// 64-bit key hashes are all equal (more than one only on a full
// collision). It is two pointers wide, so copying a node on insertion
// stays cheap.
type hamtSlot struct {
	child *hamtNode
	leaf  *hamtLeaf
}

type hamtLeaf struct {
	hash uint64
	recs []obsRecord
}

func keyHash(k obsKey) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	mix := func(s string) {
		n := len(s)
		for i := 0; i < 8; i++ {
			h ^= uint64(byte(n >> (8 * i)))
			h *= prime
		}
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
	}
	mix(k.source)
	mix(k.observation)
	return h
}

func (m obsMap) get(k obsKey) (obsRecord, bool) {
	h := keyHash(k)
	n := m.root
	for shift := uint(0); n != nil; shift += 5 {
		bit := uint32(1) << ((h >> shift) & 31)
		if n.bitmap&bit == 0 {
			return obsRecord{}, false
		}
		s := &n.slots[popBelow(n.bitmap, bit)]
		if s.child == nil {
			if s.leaf.hash != h {
				return obsRecord{}, false
			}
			for _, r := range s.leaf.recs {
				if r.key == k {
					return r, true
				}
			}
			return obsRecord{}, false
		}
		n = s.child
	}
	return obsRecord{}, false
}

// put returns a map with r added; r.key must not be present yet.
func (m obsMap) put(r obsRecord) obsMap {
	return obsMap{root: insert(m.root, keyHash(r.key), 0, r), size: m.size + 1}
}

func popBelow(bitmap, bit uint32) int {
	x := bitmap & (bit - 1)
	c := 0
	for x != 0 {
		x &= x - 1
		c++
	}
	return c
}

// newNode returns a node whose slots (length 0, capacity at least n)
// share its allocation: one allocation per copied node instead of two.
func newNode(bitmap uint32, n int) *hamtNode {
	var out *hamtNode
	switch {
	case n <= 1:
		x := &struct {
			hamtNode
			a [1]hamtSlot
		}{}
		out = &x.hamtNode
		out.slots = x.a[:0]
	case n <= 2:
		x := &struct {
			hamtNode
			a [2]hamtSlot
		}{}
		out = &x.hamtNode
		out.slots = x.a[:0]
	case n <= 4:
		x := &struct {
			hamtNode
			a [4]hamtSlot
		}{}
		out = &x.hamtNode
		out.slots = x.a[:0]
	case n <= 8:
		x := &struct {
			hamtNode
			a [8]hamtSlot
		}{}
		out = &x.hamtNode
		out.slots = x.a[:0]
	case n <= 16:
		x := &struct {
			hamtNode
			a [16]hamtSlot
		}{}
		out = &x.hamtNode
		out.slots = x.a[:0]
	default:
		x := &struct {
			hamtNode
			a [32]hamtSlot
		}{}
		out = &x.hamtNode
		out.slots = x.a[:0]
	}
	out.bitmap = bitmap
	return out
}

// newLeaf returns a leaf holding r alone, in one allocation.
func newLeaf(h uint64, r obsRecord) *hamtLeaf {
	x := &struct {
		hamtLeaf
		a [1]obsRecord
	}{}
	x.a[0] = r
	x.hash, x.recs = h, x.a[:]
	return &x.hamtLeaf
}

func insert(n *hamtNode, h uint64, shift uint, r obsRecord) *hamtNode {
	if n == nil {
		n = &hamtNode{}
	}
	bit := uint32(1) << ((h >> shift) & 31)
	pos := popBelow(n.bitmap, bit)
	if n.bitmap&bit == 0 {
		out := newNode(n.bitmap|bit, len(n.slots)+1)
		out.slots = append(out.slots, n.slots[:pos]...)
		out.slots = append(out.slots, hamtSlot{leaf: newLeaf(h, r)})
		out.slots = append(out.slots, n.slots[pos:]...)
		return out
	}
	out := newNode(n.bitmap|bit, len(n.slots))
	out.slots = append(out.slots, n.slots...)
	s := n.slots[pos]
	switch {
	case s.child != nil:
		out.slots[pos] = hamtSlot{child: insert(s.child, h, shift+5, r)}
	case s.leaf.hash == h:
		recs := make([]obsRecord, len(s.leaf.recs), len(s.leaf.recs)+1)
		copy(recs, s.leaf.recs)
		out.slots[pos] = hamtSlot{leaf: &hamtLeaf{hash: h, recs: append(recs, r)}}
	default:
		child := &hamtNode{}
		for _, old := range s.leaf.recs {
			child = insert(child, s.leaf.hash, shift+5, old)
		}
		out.slots[pos] = hamtSlot{child: insert(child, h, shift+5, r)}
	}
	return out
}
