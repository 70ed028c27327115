package kernel

import (
	"github.com/verity-go/verity/kernel/value"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestStatePersistentAgainstGoMap runs random puts and deletes on a State
// and on a naive copied Go map, keeping every old version, and checks that
// every version still matches its model (persistence) and that the
// fingerprint equals one computed from scratch (incrementality). The map
// under State has its own tests in internal/hamt.
func TestStatePersistentAgainstGoMap(t *testing.T) {
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
				if cur, err = cur.With(k, value.Int(v)); err != nil {
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
				if ok != mok || (ok && !v.Equal(value.Int(mv))) {
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
			if !slices.Equal(s.keys(), slices.Sorted(maps.Keys(m))) {
				t.Fatalf("version %d: keys", i)
			}
		}
	})
}

func toAny(m map[string]int64) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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
					effects = append(effects, Set(k, value.Int(v)))
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
				if !ok || !got.Equal(value.Int(v)) {
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
