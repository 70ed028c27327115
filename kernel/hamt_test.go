package kernel

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPersistentMapAgainstGoMap runs random puts and deletes on the
// persistent map and on a naive copied Go map, keeping every old version,
// and checks that every version still matches its model (persistence),
// that the fingerprint equals one computed from scratch (incrementality),
// and that the shape is canonical (equal key sets give equal shapes).
func TestPersistentMapAgainstGoMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys := rapid.SliceOfNDistinct(rapid.String(), 1, 60, rapid.ID).Draw(t, "keys")
		var versions []State
		var models []map[string]int64
		cur := State{}
		model := map[string]int64{}
		for i := range rapid.IntRange(1, 120).Draw(t, "ops") {
			k := rapid.SampledFrom(keys).Draw(t, "key")
			if rapid.IntRange(0, 3).Draw(t, "del") == 0 {
				cur = cur.Without(k)
				model = maps.Clone(model)
				delete(model, k)
			} else {
				v := rapid.Int64Range(-3, 3).Draw(t, "v")
				var err error
				if cur, err = cur.With(k, Int(v)); err != nil {
					t.Fatal(err)
				}
				model = maps.Clone(model)
				model[k] = v
			}
			versions = append(versions, cur)
			models = append(models, model)
			_ = i
		}
		for i, s := range versions {
			m := models[i]
			if s.Len() != len(m) {
				t.Fatalf("version %d: len %d, model %d", i, s.Len(), len(m))
			}
			for _, k := range keys {
				v, ok := s.Get(k)
				mv, mok := m[k]
				if ok != mok || (ok && !v.Equal(Int(mv))) {
					t.Fatalf("version %d key %q: got %v %v, model %v %v", i, k, v, ok, mv, mok)
				}
			}
			fresh, err := NewState(toAny(m))
			if err != nil {
				t.Fatal(err)
			}
			if fresh.Fingerprint() != s.Fingerprint() {
				t.Fatalf("version %d: incremental fingerprint differs from a fresh build", i)
			}
			if !fresh.Equal(s) || !s.Equal(fresh) {
				t.Fatalf("version %d: Equal disagrees with the model", i)
			}
			if !sameShape(fresh.root(), s.root()) {
				t.Fatalf("version %d: shape depends on history", i)
			}
			if !slices.Equal(s.Keys(), slices.Sorted(maps.Keys(m))) {
				t.Fatalf("version %d: keys", i)
			}
		}
	})
}

func (s State) root() *hnode[stateVal] {
	if s.d == nil {
		return nil
	}
	return s.d.root
}

func toAny(m map[string]int64) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func sameShape(a, b *hnode[stateVal]) bool {
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
		for la, lb := sa.leaf, sb.leaf; la != nil || lb != nil; la, lb = la.next, lb.next {
			if la == nil || lb == nil || la.key != lb.key {
				return false
			}
		}
	}
	return true
}

// TestHashCollisionsChain forces full 64-bit hash collisions through the
// internal functions and checks puts, gets and deletes on the chain.
func TestHashCollisionsChain(t *testing.T) {
	var root *hnode[int]
	const h = 0xdeadbeef
	for i, k := range []string{"b", "a", "c"} {
		root, _ = hamtPut(root, h, k, i, nil)
	}
	root, _ = hamtPut(root, 0xdeadbeef^(1<<40), "d", 9, nil)
	for i, k := range []string{"b", "a", "c"} {
		l := hamtGet(root, h, k)
		if l == nil || l.val != i {
			t.Fatalf("get %q: %v", k, l)
		}
	}
	root, old := hamtDel(root, h, "a")
	if old == nil || old.val != 1 || hamtGet(root, h, "a") != nil || hamtGet(root, h, "c") == nil {
		t.Fatal("delete from a collision chain")
	}
	root, old = hamtPut(root, h, "c", 7, nil)
	if old == nil || old.val != 2 || hamtGet(root, h, "c").val != 7 {
		t.Fatal("replace in a collision chain")
	}
	n := 0
	hamtEach(root, func(*hleaf[int]) bool { n++; return true })
	if n != 3 {
		t.Fatalf("%d leaves, want 3", n)
	}
}

// TestOwnedBuildersNeverChangePublishedStates: builders that change their
// own nodes in place (NewState, multi-effect application) never change a
// State that was handed out, including the one they start from and
// siblings built from the same base.
func TestOwnedBuildersNeverChangePublishedStates(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys := rapid.SliceOfNDistinct(rapid.StringN(0, 3, 3), 1, 80, rapid.ID).Draw(t, "keys")
		base := map[string]int64{}
		for _, k := range rapid.SliceOf(rapid.SampledFrom(keys)).Draw(t, "base keys") {
			base[k] = rapid.Int64Range(-5, 5).Draw(t, "v")
		}
		s, err := NewState(toAny(base))
		if err != nil {
			t.Fatal(err)
		}
		var results []State
		var models []map[string]int64
		for range rapid.IntRange(1, 3).Draw(t, "siblings") {
			model := maps.Clone(base)
			var effects []Effect
			for range rapid.IntRange(2, 60).Draw(t, "effects") {
				k := rapid.SampledFrom(keys).Draw(t, "key")
				if rapid.IntRange(0, 3).Draw(t, "del") == 0 {
					effects = append(effects, Delete(k))
					delete(model, k)
				} else {
					v := rapid.Int64Range(-5, 5).Draw(t, "v")
					effects = append(effects, Set(k, Int(v)))
					model[k] = v
				}
			}
			out, err := ApplyEffects(s, effects)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, out)
			models = append(models, model)
		}
		check := func(name string, st State, m map[string]int64) {
			fresh, err := NewState(toAny(m))
			if err != nil {
				t.Fatal(err)
			}
			if !st.Equal(fresh) || st.Fingerprint() != fresh.Fingerprint() || st.Len() != len(m) {
				t.Fatalf("%s differs from its model", name)
			}
			for k, v := range m {
				got, ok := st.Get(k)
				if !ok || !got.Equal(Int(v)) {
					t.Fatalf("%s: key %q", name, k)
				}
			}
		}
		check("base", s, base)
		for i := range results {
			check("result", results[i], models[i])
		}
	})
}
