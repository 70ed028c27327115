package kernel

import (
	"hash/maphash"
	"math/bits"
)

// This file holds the persistent map under State and the budget ledger
// (which puts its recent entries in a short tail first, see ledger): a
// hash array mapped trie (Bagwell) with path copying. An update copies the
// nodes on one root-to-leaf path — O(log₃₂ n) of them — and shares the rest
// with the previous version, so old versions stay valid and unchanged. The
// shape depends only on the key set (a node left with a single leaf is
// collapsed into its parent), never on the order of updates. A builder
// making many changes at once (building a State, applying several effects)
// holds an edit token and changes the nodes it created itself in place, as
// Clojure's transients do; it gives the token up before handing out a
// State, so published nodes never change.

var hashSeed = maphash.MakeSeed()

func keyHash(k string) uint64 { return maphash.String(hashSeed, k) }

const (
	hamtBits = 5
	hamtMask = 1<<hamtBits - 1
)

type hleaf[V any] struct {
	hash uint64
	key  string
	val  V
	next *hleaf[V] // other keys with the same full hash, ordered by key
}

type hslot[V any] struct {
	node *hnode[V]
	leaf *hleaf[V]
}

type hnode[V any] struct {
	bitmap uint32
	slots  []hslot[V]
	// owner is the edit token of the builder that created the node and may
	// still change it in place (nil: immutable). A builder drops its token
	// when it hands out a State, so nodes reachable from any State are
	// never changed again.
	owner *byte
}

func (n *hnode[V]) index(bit uint32) int { return bits.OnesCount32(n.bitmap & (bit - 1)) }

// newNode allocates a node and its n slots in one allocation, rounding the
// slot array up to a size class (the spare capacity lets an owning builder
// insert in place).
func newNode[V any](bitmap uint32, n int, owner *byte) *hnode[V] {
	var h *hnode[V]
	switch {
	case n <= 1:
		x := new(struct {
			h hnode[V]
			a [1]hslot[V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 2:
		x := new(struct {
			h hnode[V]
			a [2]hslot[V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 4:
		x := new(struct {
			h hnode[V]
			a [4]hslot[V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 8:
		x := new(struct {
			h hnode[V]
			a [8]hslot[V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 16:
		x := new(struct {
			h hnode[V]
			a [16]hslot[V]
		})
		h = &x.h
		h.slots = x.a[:n]
	default:
		x := new(struct {
			h hnode[V]
			a [32]hslot[V]
		})
		h = &x.h
		h.slots = x.a[:n]
	}
	h.bitmap, h.owner = bitmap, owner
	return h
}

func hamtGet[V any](n *hnode[V], h uint64, key string) *hleaf[V] {
	for shift := uint(0); n != nil; shift += hamtBits {
		bit := uint32(1) << ((h >> shift) & hamtMask)
		if n.bitmap&bit == 0 {
			return nil
		}
		s := n.slots[n.index(bit)]
		if s.node != nil {
			n = s.node
			continue
		}
		for l := s.leaf; l != nil; l = l.next {
			if l.hash == h && l.key == key {
				return l
			}
		}
		return nil
	}
	return nil
}

// hamtPut returns a new root with key set to val, and the leaf it replaced
// (nil if the key was absent). Nodes whose owner is the non-nil token
// owner are changed in place; all others are copied.
func hamtPut[V any](n *hnode[V], h uint64, key string, val V, owner *byte) (*hnode[V], *hleaf[V]) {
	if n == nil {
		n = newNode[V](0, 0, owner)
	}
	return hamtPutAt(n, 0, &hleaf[V]{hash: h, key: key, val: val}, owner)
}

// hamtPutLeaf is hamtPut with the new leaf (fresh, next nil) supplied.
func hamtPutLeaf[V any](n *hnode[V], nl *hleaf[V], owner *byte) (*hnode[V], *hleaf[V]) {
	if n == nil {
		n = newNode[V](0, 0, owner)
	}
	return hamtPutAt(n, 0, nl, owner)
}

func hamtPutAt[V any](n *hnode[V], shift uint, nl *hleaf[V], owner *byte) (*hnode[V], *hleaf[V]) {
	bit := uint32(1) << ((nl.hash >> shift) & hamtMask)
	i := n.index(bit)
	mine := owner != nil && n.owner == owner
	if n.bitmap&bit == 0 {
		if mine && len(n.slots) < cap(n.slots) {
			n.slots = n.slots[:len(n.slots)+1]
			copy(n.slots[i+1:], n.slots[i:len(n.slots)-1])
			n.slots[i] = hslot[V]{leaf: nl}
			n.bitmap |= bit
			return n, nil
		}
		nn := newNode[V](n.bitmap|bit, len(n.slots)+1, owner)
		copy(nn.slots, n.slots[:i])
		nn.slots[i] = hslot[V]{leaf: nl}
		copy(nn.slots[i+1:], n.slots[i:])
		return nn, nil
	}
	s := n.slots[i]
	var ns hslot[V]
	var old *hleaf[V]
	switch {
	case s.node != nil:
		child, o := hamtPutAt(s.node, shift+hamtBits, nl, owner)
		ns, old = hslot[V]{node: child}, o
	case s.leaf.hash == nl.hash:
		chain, o := chainPut(s.leaf, nl)
		ns, old = hslot[V]{leaf: chain}, o
	default:
		ns = hslot[V]{node: split(s.leaf, nl, shift+hamtBits, owner)}
	}
	if mine {
		n.slots[i] = ns
		return n, old
	}
	nn := newNode[V](n.bitmap, len(n.slots), owner)
	copy(nn.slots, n.slots)
	nn.slots[i] = ns
	return nn, old
}

// split builds the subtree holding two leaves whose hashes differ.
func split[V any](a, b *hleaf[V], shift uint, owner *byte) *hnode[V] {
	ia, ib := (a.hash>>shift)&hamtMask, (b.hash>>shift)&hamtMask
	if ia == ib {
		n := newNode[V](1<<ia, 1, owner)
		n.slots[0] = hslot[V]{node: split(a, b, shift+hamtBits, owner)}
		return n
	}
	if ia > ib {
		a, b, ia, ib = b, a, ib, ia
	}
	n := newNode[V](1<<ia|1<<ib, 2, owner)
	n.slots[0], n.slots[1] = hslot[V]{leaf: a}, hslot[V]{leaf: b}
	return n
}

// chainPut puts nl (a fresh leaf the caller hands over) into a collision
// chain whose leaves all share nl.hash.
func chainPut[V any](c *hleaf[V], nl *hleaf[V]) (*hleaf[V], *hleaf[V]) {
	if c == nil || nl.key < c.key {
		nl.next = c
		return nl, nil
	}
	if c.key == nl.key {
		nl.next = c.next
		return nl, c
	}
	rest, old := chainPut(c.next, nl)
	return &hleaf[V]{hash: c.hash, key: c.key, val: c.val, next: rest}, old
}

func chainDel[V any](c *hleaf[V], key string) (*hleaf[V], *hleaf[V]) {
	if c == nil {
		return nil, nil
	}
	if c.key == key {
		return c.next, c
	}
	rest, old := chainDel(c.next, key)
	if old == nil {
		return c, nil
	}
	return &hleaf[V]{hash: c.hash, key: c.key, val: c.val, next: rest}, old
}

// hamtDel returns a new root without key and the removed leaf (nil if the
// key was absent, in which case the root is returned unchanged).
func hamtDel[V any](n *hnode[V], h uint64, key string) (*hnode[V], *hleaf[V]) {
	if n == nil {
		return nil, nil
	}
	s, old := hamtDelAt(n, 0, h, key)
	if old == nil {
		return n, nil
	}
	switch {
	case s.node != nil:
		return s.node, old
	case s.leaf != nil:
		// The root collapsed to one leaf: keep a root node above it.
		root := newNode[V](1<<(s.leaf.hash&hamtMask), 1, nil)
		root.slots[0] = s
		return root, old
	default:
		return nil, old
	}
}

// hamtDelAt returns the slot that replaces n (node, single leaf, or empty).
func hamtDelAt[V any](n *hnode[V], shift uint, h uint64, key string) (hslot[V], *hleaf[V]) {
	bit := uint32(1) << ((h >> shift) & hamtMask)
	if n.bitmap&bit == 0 {
		return hslot[V]{node: n}, nil
	}
	i := n.index(bit)
	s := n.slots[i]
	var ns hslot[V]
	var old *hleaf[V]
	if s.node != nil {
		ns, old = hamtDelAt(s.node, shift+hamtBits, h, key)
	} else {
		if s.leaf.hash != h {
			return hslot[V]{node: n}, nil
		}
		var chain *hleaf[V]
		chain, old = chainDel(s.leaf, key)
		ns = hslot[V]{leaf: chain}
	}
	if old == nil {
		return hslot[V]{node: n}, nil
	}
	if ns.node == nil && ns.leaf == nil {
		// Remove the slot.
		if len(n.slots) == 1 {
			return hslot[V]{}, old
		}
		if len(n.slots) == 2 {
			other := n.slots[1-i]
			if other.leaf != nil {
				return other, old // collapse: a lone leaf moves up
			}
		}
		nn := newNode[V](n.bitmap&^bit, len(n.slots)-1, nil)
		copy(nn.slots, n.slots[:i])
		copy(nn.slots[i:], n.slots[i+1:])
		return hslot[V]{node: nn}, old
	}
	if ns.leaf != nil && len(n.slots) == 1 {
		return ns, old // collapse a node that now holds a single leaf chain
	}
	nn := newNode[V](n.bitmap, len(n.slots), nil)
	copy(nn.slots, n.slots)
	nn.slots[i] = ns
	return hslot[V]{node: nn}, old
}

// hamtEach calls f for every leaf until f returns false.
func hamtEach[V any](n *hnode[V], f func(*hleaf[V]) bool) bool {
	if n == nil {
		return true
	}
	for _, s := range n.slots {
		if s.node != nil {
			if !hamtEach(s.node, f) {
				return false
			}
			continue
		}
		for l := s.leaf; l != nil; l = l.next {
			if !f(l) {
				return false
			}
		}
	}
	return true
}

// hamtDiff calls f(key, a-leaf, b-leaf) for every key whose leaf differs
// between the two tries (a leaf is nil where the key is absent). Shared
// subtrees are skipped, so the cost is proportional to the changed paths.
func hamtDiff[V any](a, b *hnode[V], f func(key string, la, lb *hleaf[V])) {
	if a == b {
		return
	}
	if a == nil || b == nil {
		diffLeaves(collect(a), collect(b), f)
		return
	}
	for bitpos := uint(0); bitpos < 32; bitpos++ {
		bit := uint32(1) << bitpos
		var sa, sb hslot[V]
		if a.bitmap&bit != 0 {
			sa = a.slots[a.index(bit)]
		}
		if b.bitmap&bit != 0 {
			sb = b.slots[b.index(bit)]
		}
		if sa == sb {
			continue
		}
		if sa.node != nil && sb.node != nil {
			hamtDiff(sa.node, sb.node, f)
			continue
		}
		diffLeaves(slotLeaves(sa), slotLeaves(sb), f)
	}
}

func slotLeaves[V any](s hslot[V]) []*hleaf[V] {
	if s.node != nil {
		return collect(s.node)
	}
	var out []*hleaf[V]
	for l := s.leaf; l != nil; l = l.next {
		out = append(out, l)
	}
	return out
}

func collect[V any](n *hnode[V]) []*hleaf[V] {
	var out []*hleaf[V]
	hamtEach(n, func(l *hleaf[V]) bool { out = append(out, l); return true })
	return out
}

func diffLeaves[V any](as, bs []*hleaf[V], f func(string, *hleaf[V], *hleaf[V])) {
	inB := make(map[string]*hleaf[V], len(bs))
	for _, l := range bs {
		inB[l.key] = l
	}
	for _, la := range as {
		lb := inB[la.key]
		delete(inB, la.key)
		if la != lb {
			f(la.key, la, lb)
		}
	}
	for _, lb := range bs {
		if _, ok := inB[lb.key]; ok {
			f(lb.key, nil, lb)
		}
	}
}
