package hamt

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// tiny spreads three bits of the key over the trie: bit 0 decides the
// first level, bit 1 the fourth and bit 2 the last (bits 60–63 of the
// hash), so keys collide on every level, reach the bottom of the trie, and
// keys equal modulo 8 have equal full hashes and share a chain.
type tiny struct{}

func (tiny) Hash(k int) uint64 {
	return uint64(k&1) | uint64(k>>1&1)<<15 | uint64(k>>2&1)<<60
}

// two puts every key in one of two hashes: everything is a chain.
type two struct{}

func (two) Hash(k int) uint64 { return uint64(k & 1) }

type model = map[int]int

// machine runs random changes on a Map and on a plain Go map, copying the
// model at every step and keeping every version of both.
type machine[H Hasher[int]] struct {
	keys     *rapid.Generator[int]
	cur      Map[int, int, H]
	model    model
	versions []Map[int, int, H]
	models   []model
}

func (m *machine[H]) record(next Map[int, int, H], nm model) {
	m.versions, m.models = append(m.versions, m.cur), append(m.models, m.model)
	m.cur, m.model = next, nm
}

func (m *machine[H]) Set(t *rapid.T) {
	k, v := m.keys.Draw(t, "key"), rapid.Int().Draw(t, "val")
	nm := maps.Clone(m.model)
	nm[k] = v
	m.record(m.cur.Set(k, v), nm)
}

func (m *machine[H]) Delete(t *rapid.T) {
	k := m.keys.Draw(t, "key")
	nm := maps.Clone(m.model)
	delete(nm, k)
	next := m.cur.Delete(k)
	if _, had := m.model[k]; !had && next != m.cur {
		t.Fatalf("deleting absent key %d changed the map", k)
	}
	m.record(next, nm)
}

// Build makes a series of changes with one Builder, handing out a Map
// between some of them and recording each.
func (m *machine[H]) Build(t *rapid.T) {
	b := m.cur.Builder()
	b.Grow(rapid.IntRange(0, 8).Draw(t, "grow"))
	nm := maps.Clone(m.model)
	for range rapid.IntRange(1, 40).Draw(t, "changes") {
		k := m.keys.Draw(t, "key")
		want, had := nm[k]
		var old int
		var found bool
		if rapid.IntRange(0, 2).Draw(t, "op") == 0 {
			old, found = b.Delete(k)
			delete(nm, k)
		} else {
			v := rapid.Int().Draw(t, "val")
			old, found = b.Set(k, v)
			nm[k] = v
		}
		if found != had || old != want {
			t.Fatalf("builder change of %d returned (%d, %v), model (%d, %v)", k, old, found, want, had)
		}
		if b.Len() != len(nm) {
			t.Fatalf("builder len %d, model %d", b.Len(), len(nm))
		}
		if rapid.IntRange(0, 5).Draw(t, "publish") == 0 {
			m.record(b.Map(), nm)
			nm = maps.Clone(nm)
		}
	}
	m.record(b.Map(), nm)
}

// Check runs after every step.
func (m *machine[H]) Check(t *rapid.T) {
	checkEqual(t, m.cur, m.model)
	if !sameShape(fresh[H](m.model).root, m.cur.root) {
		t.Fatalf("the shape depends on the history")
	}
}

// Old checks a random older version.
func (m *machine[H]) Old(t *rapid.T) {
	if len(m.versions) == 0 {
		t.Skip("no older version")
	}
	i := rapid.IntRange(0, len(m.versions)-1).Draw(t, "version")
	checkEqual(t, m.versions[i], m.models[i])
}

// checkAll checks that every version still matches the model it had when
// it was made.
func (m *machine[H]) checkAll(t *rapid.T) {
	for i, v := range m.versions {
		checkEqual(t, v, m.models[i])
	}
}

func fresh[H Hasher[int]](want model) Map[int, int, H] {
	var m Map[int, int, H]
	for _, k := range slices.Sorted(maps.Keys(want)) {
		m = m.Set(k, want[k])
	}
	return m
}

// Diff compares the current Map with a random older version.
func (m *machine[H]) Diff(t *rapid.T) {
	if len(m.versions) == 0 {
		t.Skip("no older version")
	}
	i := rapid.IntRange(0, len(m.versions)-1).Draw(t, "version")
	a, ma := m.versions[i], m.models[i]
	seen := map[int]bool{}
	Diff(a, m.cur, func(k int, va, vb *int) {
		if seen[k] {
			t.Fatalf("Diff reported %d twice", k)
		}
		seen[k] = true
		if !samePtr(va, ma, k) || !samePtr(vb, m.model, k) {
			t.Fatalf("Diff reported %d with values that are not the maps'", k)
		}
	})
	for k := range keysOf(ma, m.model) {
		va, ina := ma[k]
		vb, inb := m.model[k]
		if (ina != inb || va != vb) && !seen[k] {
			t.Fatalf("Diff missed %d", k)
		}
	}
}

func samePtr(p *int, m model, k int) bool {
	v, ok := m[k]
	return (p == nil && !ok) || (p != nil && ok && *p == v)
}

func keysOf(a, b model) map[int]bool {
	out := map[int]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func checkEqual[H Hasher[int]](t *rapid.T, m Map[int, int, H], want model) {
	t.Helper()
	if m.Len() != len(want) {
		t.Fatalf("len %d, model %d", m.Len(), len(want))
	}
	got := model{}
	for k, v := range m.All() {
		if _, dup := got[k]; dup {
			t.Fatalf("All yields %d twice", k)
		}
		got[k] = v
	}
	if !maps.Equal(got, want) {
		t.Fatalf("All yields %v, model %v", got, want)
	}
	for k := range 70 {
		v, ok := m.Get(k)
		w, wok := want[k]
		if ok != wok || v != w {
			t.Fatalf("Get(%d) = %d %v, model %d %v", k, v, ok, w, wok)
		}
	}
}

// sameShape compares two tries node by node; entries sharing a chain are
// compared as a set, since their order is the order they were first set.
func sameShape(a, b *node[int, int]) bool {
	if a == nil || b == nil {
		return (a == nil || len(a.slots) == 0) && (b == nil || len(b.slots) == 0)
	}
	if a.bitmap != b.bitmap || len(a.slots) != len(b.slots) {
		return false
	}
	for i := range a.slots {
		sa, sb := a.slots[i], b.slots[i]
		if (sa.node == nil) != (sb.node == nil) {
			return false
		}
		if sa.node != nil {
			if !sameShape(sa.node, sb.node) {
				return false
			}
			continue
		}
		var ka, kb []int
		for e := sa.leaf; e != nil; e = e.next {
			ka = append(ka, e.key)
		}
		for e := sb.leaf; e != nil; e = e.next {
			kb = append(kb, e.key)
		}
		slices.Sort(ka)
		slices.Sort(kb)
		if !slices.Equal(ka, kb) {
			return false
		}
	}
	return true
}

func runMachine[H Hasher[int]](t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := &machine[H]{keys: rapid.IntRange(0, 63), model: model{}}
		t.Repeat(rapid.StateMachineActions(m))
		m.checkAll(t)
	})
}

// TestPersistentAgainstGoMap: every version of a Map, made by Set, Delete
// or a Builder, keeps answering as the copied Go map of its time does
// (Get, Len, All), Diff reports exactly the keys that differ, and the
// shape of a Map is that of a fresh build from its contents.
func TestPersistentAgainstGoMap(t *testing.T) {
	t.Run("seeded", runMachine[Seeded[int]])
	t.Run("tiny hash space", runMachine[tiny])
	t.Run("two hashes", runMachine[two])
}

// FuzzCollidingHashes drives a Map whose keys have one of eight hashes
// (see tiny) with a byte string of changes — two bytes each: the key and
// whether to delete — and checks it against a Go map after each change.
func FuzzCollidingHashes(f *testing.F) {
	f.Add([]byte{0, 1, 8, 1, 16, 1, 8, 0, 0, 0, 4, 1, 12, 1, 4, 0})
	f.Add([]byte{1, 1, 3, 1, 5, 1, 7, 1, 1, 0, 3, 0, 5, 0, 7, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var m Map[int, int, tiny]
		b := m.Builder()
		want := model{}
		for i := 0; i+1 < len(ops); i += 2 {
			k := int(ops[i] % 64)
			if ops[i+1]&1 == 0 {
				m = m.Delete(k)
				b.Delete(k)
				delete(want, k)
			} else {
				m = m.Set(k, i)
				b.Set(k, i)
				want[k] = i
			}
			if ops[i+1]&2 != 0 {
				b.Map()
			}
			for _, got := range []Map[int, int, tiny]{m, b.Map()} {
				if got.Len() != len(want) {
					t.Fatalf("len %d, want %d", got.Len(), len(want))
				}
				for k := range 64 {
					v, ok := got.Get(k)
					if w, wok := want[k]; ok != wok || v != w {
						t.Fatalf("Get(%d) = %d %v, want %d %v", k, v, ok, w, wok)
					}
				}
			}
		}
	})
}

// TestZeroMap: the zero Map is empty and ready to use.
func TestZeroMap(t *testing.T) {
	var m Map[string, int, Seeded[string]]
	if _, ok := m.Get("a"); ok || m.Len() != 0 {
		t.Fatal("the zero Map is not empty")
	}
	for range m.All() {
		t.Fatal("the zero Map yields an entry")
	}
	if m.Delete("a") != m {
		t.Fatal("deleting from the zero Map changed it")
	}
	m2 := m.Set("a", 1)
	if v, ok := m2.Get("a"); !ok || v != 1 || m.Len() != 0 {
		t.Fatal("Set on the zero Map")
	}
}

// TestAllStopsEarly: All stops when the loop body breaks.
func TestAllStopsEarly(t *testing.T) {
	var m Map[int, int, two]
	for k := range 10 {
		m = m.Set(k, k)
	}
	n := 0
	for range m.All() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d iterations after break", n)
	}
}
