// Package hamt is the persistent hash map under the kernel's State and
// budget ledger and the belief session's idempotence index: a hash array
// mapped trie (Bagwell) with path copying.
//
// An update copies the nodes on one root-to-leaf path — O(log₃₂ n) of them
// — and shares the rest with the previous version, so every older Map stays
// valid and unchanged. The shape depends only on the key set (a node left
// with a single entry is collapsed into its parent), never on the order of
// updates; the one exception is the order of keys whose full 64-bit hashes
// are equal, which share a chain in the order they were first set. So Diff
// can walk two maps node by node, skipping the subtrees they share.
//
// A Builder making many changes at once changes the nodes it created itself
// in place, as Clojure's transients do, and stops doing so once it hands
// out a Map, so nodes reachable from a Map never change.
//
// Iteration follows the trie, that is the key hashes: the order is fixed
// for a given Map but, with the Seeded hasher, differs between runs of a
// program. Callers that need an order sort.
package hamt

import (
	"hash/maphash"
	"iter"
	"math/bits"
	"sync/atomic"
)

// Hasher hashes keys: equal keys must have equal hashes. Its zero value is
// the one used, so a Hasher is normally an empty struct type.
type Hasher[K any] interface {
	Hash(K) uint64
}

var seed = maphash.MakeSeed()

// Seeded hashes any comparable key with hash/maphash and a seed chosen at
// random when the program starts, so no one can choose keys that collide
// in advance.
type Seeded[K comparable] struct{}

// Hash returns the hash of k.
func (Seeded[K]) Hash(k K) uint64 { return maphash.Comparable(seed, k) }

const (
	bitsPerLevel = 5
	levelMask    = 1<<bitsPerLevel - 1
)

type entry[K comparable, V any] struct {
	hash uint64
	key  K
	val  V
	next *entry[K, V] // other keys with the same full hash
}

// slot is either a child node or a chain of entries with one full hash.
type slot[K comparable, V any] struct {
	node *node[K, V]
	leaf *entry[K, V]
}

type node[K comparable, V any] struct {
	bitmap uint32
	// owner identifies the Builder that created the node and may still
	// change it in place (0: nobody). A Builder takes a new identity when
	// it hands out a Map, so nodes reachable from a Map never change.
	owner uint64
	slots []slot[K, V]
}

// owners hands out Builder identities; it is never read for anything but
// telling builders apart.
var owners atomic.Uint64

func (n *node[K, V]) index(bit uint32) int { return bits.OnesCount32(n.bitmap & (bit - 1)) }

// newNode allocates a node and its n slots in one allocation, rounding the
// slot array up to a size class (the spare capacity lets an owning Builder
// insert in place).
func newNode[K comparable, V any](bitmap uint32, n int, owner uint64) *node[K, V] {
	var h *node[K, V]
	switch {
	case n <= 1:
		x := new(struct {
			h node[K, V]
			a [1]slot[K, V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 2:
		x := new(struct {
			h node[K, V]
			a [2]slot[K, V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 4:
		x := new(struct {
			h node[K, V]
			a [4]slot[K, V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 8:
		x := new(struct {
			h node[K, V]
			a [8]slot[K, V]
		})
		h = &x.h
		h.slots = x.a[:n]
	case n <= 16:
		x := new(struct {
			h node[K, V]
			a [16]slot[K, V]
		})
		h = &x.h
		h.slots = x.a[:n]
	default:
		x := new(struct {
			h node[K, V]
			a [32]slot[K, V]
		})
		h = &x.h
		h.slots = x.a[:n]
	}
	h.bitmap, h.owner = bitmap, owner
	return h
}

func lookup[K comparable, V any](n *node[K, V], h uint64, key K) *entry[K, V] {
	for shift := uint(0); n != nil; shift += bitsPerLevel {
		bit := uint32(1) << ((h >> shift) & levelMask)
		if n.bitmap&bit == 0 {
			return nil
		}
		s := n.slots[n.index(bit)]
		if s.node != nil {
			n = s.node
			continue
		}
		for e := s.leaf; e != nil; e = e.next {
			if e.hash == h && e.key == key {
				return e
			}
		}
		return nil
	}
	return nil
}

// put returns a root holding ne (a fresh entry, next nil, handed over) and
// the entry it replaced (nil if its key was absent). Nodes whose owner is
// the non-zero owner are changed in place; all others are copied.
func put[K comparable, V any](n *node[K, V], ne *entry[K, V], owner uint64) (*node[K, V], *entry[K, V]) {
	if n == nil {
		n = newNode[K, V](0, 0, owner)
	}
	return putAt(n, 0, ne, owner)
}

func putAt[K comparable, V any](n *node[K, V], shift uint, ne *entry[K, V], owner uint64) (*node[K, V], *entry[K, V]) {
	bit := uint32(1) << ((ne.hash >> shift) & levelMask)
	i := n.index(bit)
	mine := owner != 0 && n.owner == owner
	if n.bitmap&bit == 0 {
		if mine && len(n.slots) < cap(n.slots) {
			n.slots = n.slots[:len(n.slots)+1]
			copy(n.slots[i+1:], n.slots[i:len(n.slots)-1])
			n.slots[i] = slot[K, V]{leaf: ne}
			n.bitmap |= bit
			return n, nil
		}
		nn := newNode[K, V](n.bitmap|bit, len(n.slots)+1, owner)
		copy(nn.slots, n.slots[:i])
		nn.slots[i] = slot[K, V]{leaf: ne}
		copy(nn.slots[i+1:], n.slots[i:])
		return nn, nil
	}
	s := n.slots[i]
	var ns slot[K, V]
	var old *entry[K, V]
	switch {
	case s.node != nil:
		child, o := putAt(s.node, shift+bitsPerLevel, ne, owner)
		ns, old = slot[K, V]{node: child}, o
	case s.leaf.hash == ne.hash:
		chain, o := chainPut(s.leaf, ne)
		ns, old = slot[K, V]{leaf: chain}, o
	default:
		ns = slot[K, V]{node: split(s.leaf, ne, shift+bitsPerLevel, owner)}
	}
	if mine {
		n.slots[i] = ns
		return n, old
	}
	nn := newNode[K, V](n.bitmap, len(n.slots), owner)
	copy(nn.slots, n.slots)
	nn.slots[i] = ns
	return nn, old
}

// split builds the subtree holding two chains whose hashes differ.
func split[K comparable, V any](a, b *entry[K, V], shift uint, owner uint64) *node[K, V] {
	ia, ib := (a.hash>>shift)&levelMask, (b.hash>>shift)&levelMask
	if ia == ib {
		n := newNode[K, V](1<<ia, 1, owner)
		n.slots[0] = slot[K, V]{node: split(a, b, shift+bitsPerLevel, owner)}
		return n
	}
	if ia > ib {
		a, b, ia, ib = b, a, ib, ia
	}
	n := newNode[K, V](1<<ia|1<<ib, 2, owner)
	n.slots[0], n.slots[1] = slot[K, V]{leaf: a}, slot[K, V]{leaf: b}
	return n
}

// chainPut puts ne into a chain whose entries all share ne.hash: in the
// place of the entry with its key, or else at the end. The entries before
// that place are copied; the chain itself may be published.
func chainPut[K comparable, V any](c, ne *entry[K, V]) (*entry[K, V], *entry[K, V]) {
	if c == nil {
		return ne, nil
	}
	if c.key == ne.key {
		ne.next = c.next
		return ne, c
	}
	rest, old := chainPut(c.next, ne)
	return &entry[K, V]{hash: c.hash, key: c.key, val: c.val, next: rest}, old
}

func chainDel[K comparable, V any](c *entry[K, V], key K) (*entry[K, V], *entry[K, V]) {
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
	return &entry[K, V]{hash: c.hash, key: c.key, val: c.val, next: rest}, old
}

// del returns a root without key and the removed entry (nil if the key was
// absent, in which case the root is returned unchanged). It copies every
// node it changes.
func del[K comparable, V any](n *node[K, V], h uint64, key K) (*node[K, V], *entry[K, V]) {
	if n == nil {
		return nil, nil
	}
	s, old := delAt(n, 0, h, key)
	switch {
	case old == nil:
		return n, nil
	case s.node != nil:
		return s.node, old
	case s.leaf != nil:
		// The root collapsed to one chain: keep a root node above it.
		root := newNode[K, V](1<<(s.leaf.hash&levelMask), 1, 0)
		root.slots[0] = s
		return root, old
	default:
		return nil, old
	}
}

// delAt returns the slot that replaces n (node, single chain, or empty).
func delAt[K comparable, V any](n *node[K, V], shift uint, h uint64, key K) (slot[K, V], *entry[K, V]) {
	bit := uint32(1) << ((h >> shift) & levelMask)
	if n.bitmap&bit == 0 {
		return slot[K, V]{node: n}, nil
	}
	i := n.index(bit)
	s := n.slots[i]
	var ns slot[K, V]
	var old *entry[K, V]
	if s.node != nil {
		ns, old = delAt(s.node, shift+bitsPerLevel, h, key)
	} else if s.leaf.hash == h {
		var chain *entry[K, V]
		chain, old = chainDel(s.leaf, key)
		ns = slot[K, V]{leaf: chain}
	}
	if old == nil {
		return slot[K, V]{node: n}, nil
	}
	if ns.node == nil && ns.leaf == nil {
		// Remove the slot.
		switch {
		case len(n.slots) == 1:
			return slot[K, V]{}, old
		case len(n.slots) == 2 && n.slots[1-i].leaf != nil:
			return n.slots[1-i], old // collapse: a lone chain moves up
		}
		nn := newNode[K, V](n.bitmap&^bit, len(n.slots)-1, 0)
		copy(nn.slots, n.slots[:i])
		copy(nn.slots[i:], n.slots[i+1:])
		return slot[K, V]{node: nn}, old
	}
	if ns.leaf != nil && len(n.slots) == 1 {
		return ns, old // collapse a node that now holds a single chain
	}
	nn := newNode[K, V](n.bitmap, len(n.slots), 0)
	copy(nn.slots, n.slots)
	nn.slots[i] = ns
	return slot[K, V]{node: nn}, old
}

// each calls f for every entry until f returns false.
func each[K comparable, V any](n *node[K, V], f func(*entry[K, V]) bool) bool {
	if n == nil {
		return true
	}
	for _, s := range n.slots {
		if s.node != nil {
			if !each(s.node, f) {
				return false
			}
			continue
		}
		for e := s.leaf; e != nil; e = e.next {
			if !f(e) {
				return false
			}
		}
	}
	return true
}

// diff calls f for every key whose entry differs between the two tries (a
// nil entry where the key is absent), skipping shared subtrees.
func diff[K comparable, V any](a, b *node[K, V], f func(key K, ea, eb *entry[K, V])) {
	if a == b {
		return
	}
	if a == nil || b == nil {
		diffEntries(collect(a), collect(b), f)
		return
	}
	for pos := range uint(1 << bitsPerLevel) {
		bit := uint32(1) << pos
		var sa, sb slot[K, V]
		if a.bitmap&bit != 0 {
			sa = a.slots[a.index(bit)]
		}
		if b.bitmap&bit != 0 {
			sb = b.slots[b.index(bit)]
		}
		switch {
		case sa == sb:
		case sa.node != nil && sb.node != nil:
			diff(sa.node, sb.node, f)
		default:
			diffEntries(slotEntries(sa), slotEntries(sb), f)
		}
	}
}

func slotEntries[K comparable, V any](s slot[K, V]) []*entry[K, V] {
	if s.node != nil {
		return collect(s.node)
	}
	var out []*entry[K, V]
	for e := s.leaf; e != nil; e = e.next {
		out = append(out, e)
	}
	return out
}

func collect[K comparable, V any](n *node[K, V]) []*entry[K, V] {
	var out []*entry[K, V]
	each(n, func(e *entry[K, V]) bool { out = append(out, e); return true })
	return out
}

func diffEntries[K comparable, V any](as, bs []*entry[K, V], f func(K, *entry[K, V], *entry[K, V])) {
	inB := make(map[K]*entry[K, V], len(bs))
	for _, e := range bs {
		inB[e.key] = e
	}
	for _, ea := range as {
		eb := inB[ea.key]
		delete(inB, ea.key)
		if ea != eb {
			f(ea.key, ea, eb)
		}
	}
	for _, eb := range bs {
		if _, ok := inB[eb.key]; ok {
			f(eb.key, nil, eb)
		}
	}
}

// Map is a persistent map from K to V, hashed with H. The zero Map is
// empty and ready to use. A Map is a value: Set and Delete return a new one
// and leave the receiver unchanged, and Maps may be read from any number
// of goroutines.
type Map[K comparable, V any, H Hasher[K]] struct {
	root *node[K, V]
	n    int
}

// Len returns the number of keys.
func (m Map[K, V, H]) Len() int { return m.n }

// Get returns the value of key and whether it is present.
func (m Map[K, V, H]) Get(key K) (V, bool) {
	var h H
	if e := lookup(m.root, h.Hash(key), key); e != nil {
		return e.val, true
	}
	var zero V
	return zero, false
}

// Set returns a Map in which key holds val.
func (m Map[K, V, H]) Set(key K, val V) Map[K, V, H] {
	var h H
	root, old := put(m.root, &entry[K, V]{hash: h.Hash(key), key: key, val: val}, 0)
	if old == nil {
		m.n++
	}
	m.root = root
	return m
}

// Delete returns a Map without key (the same Map if key is absent).
func (m Map[K, V, H]) Delete(key K) Map[K, V, H] {
	var h H
	root, old := del(m.root, h.Hash(key), key)
	if old != nil {
		m.root, m.n = root, m.n-1
	}
	return m
}

// All iterates over the keys and values in the order of the trie (see the
// package documentation).
func (m Map[K, V, H]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		each(m.root, func(e *entry[K, V]) bool { return yield(e.key, e.val) })
	}
}

// Diff calls f for every key whose entry differs between a and b, with a
// pointer to its value in each (nil where the key is absent). A key set
// again to an equal value counts as different; f compares values if that
// matters. Subtrees the two maps share are skipped, so the cost is
// proportional to the paths changed between them, not to their size. The
// order of the calls is unspecified, and f must not change the values.
func Diff[K comparable, V any, H Hasher[K]](a, b Map[K, V, H], f func(key K, va, vb *V)) {
	diff(a.root, b.root, func(key K, ea, eb *entry[K, V]) {
		var va, vb *V
		if ea != nil {
			va = &ea.val
		}
		if eb != nil {
			vb = &eb.val
		}
		f(key, va, vb)
	})
}

// Builder makes a series of changes to a Map, changing in place the nodes
// it created itself since it last handed out a Map, which saves copying
// the same path over and over. Make one with Map.Builder. A Builder is not
// safe for concurrent use and must not be copied once it has made a change
// (the copies would change each other's nodes).
type Builder[K comparable, V any, H Hasher[K]] struct {
	m     Map[K, V, H]
	owner uint64        // 0 until the first change after a Map was handed out
	spare []entry[K, V] // entries allocated ahead by Grow
}

// Builder returns a Builder starting from m. The receiver is unchanged.
func (m Map[K, V, H]) Builder() Builder[K, V, H] { return Builder[K, V, H]{m: m} }

// Grow allocates room for n more entries in one allocation, for a Builder
// about to set n keys.
func (b *Builder[K, V, H]) Grow(n int) {
	if n > len(b.spare) {
		b.spare = make([]entry[K, V], n)
	}
}

// Len returns the number of keys.
func (b *Builder[K, V, H]) Len() int { return b.m.n }

// Get returns the value of key and whether it is present.
func (b *Builder[K, V, H]) Get(key K) (V, bool) { return b.m.Get(key) }

// Set makes key hold val and returns the value it replaced, if any.
func (b *Builder[K, V, H]) Set(key K, val V) (old V, replaced bool) {
	var h H
	var ne *entry[K, V]
	if len(b.spare) > 0 {
		ne, b.spare = &b.spare[0], b.spare[1:]
		*ne = entry[K, V]{hash: h.Hash(key), key: key, val: val}
	} else {
		ne = &entry[K, V]{hash: h.Hash(key), key: key, val: val}
	}
	if b.owner == 0 {
		b.owner = owners.Add(1)
	}
	root, oe := put(b.m.root, ne, b.owner)
	b.m.root = root
	if oe == nil {
		b.m.n++
		return old, false
	}
	return oe.val, true
}

// Delete removes key and returns the value it held, if any.
func (b *Builder[K, V, H]) Delete(key K) (old V, deleted bool) {
	var h H
	root, oe := del(b.m.root, h.Hash(key), key)
	if oe == nil {
		return old, false
	}
	b.m.root, b.m.n = root, b.m.n-1
	return oe.val, true
}

// Map returns the map built so far. The Builder may go on; it no longer
// changes any node the returned Map holds.
func (b *Builder[K, V, H]) Map() Map[K, V, H] {
	b.owner = 0
	return b.m
}
