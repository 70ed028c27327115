/*
This file checks the hints digest (the vectors are in DESIGN.md):

	stable, with independently computed vectors           TestExperimentHintsDigestVectors
	independent of the order of every list                TestDigestOrderIndependent
	different hints, different digests                    TestDigestCollisionSafe, TestDigestKeepsPriorSuggestionsWhole
	kept through the JSON form, which says speculative    TestDigestSurvivesJSON, TestExperimentHintsJSON
*/

package speculative

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/trace"
)

// sampleHintsDigest is the digest of sampleHints, checked independently of
// this code (Python: json.dumps(sort_keys=True, separators=(",", ":"),
// ensure_ascii=False) over the documented layout, then hashlib.sha256).
const sampleHintsDigest = "4fa8abe0135263e8807b1bfc433e2856b7e811ceb99992deb4e479662725939c"

// TestExperimentHintsDigestVectors pins the digest layout; the same
// vectors are in the package documentation.
func TestExperimentHintsDigestVectors(t *testing.T) {
	for _, tc := range []struct {
		hints    ExperimentHints
		doc, sha string
	}{
		{ExperimentHints{},
			`{"candidate_mechanisms":[],"claim_id":"","discriminative_predictions":[],"epistemic_status":"speculative","falsification_criteria":[],"prior_suggestions":[],"sensitivity_axes":[]}`,
			"28abc2ce8a93feb6b0334332a51f50ec357148c0806769645e37666eba7588b1"},
		{ExperimentHints{ClaimID: "c1"},
			`{"candidate_mechanisms":[],"claim_id":"c1","discriminative_predictions":[],"epistemic_status":"speculative","falsification_criteria":[],"prior_suggestions":[],"sensitivity_axes":[]}`,
			"807468ae6d62a3fe376c3fe125f35211398ed9915421f58c7a0c0a734e825e6e"},
		{sampleHints(),
			`{"candidate_mechanisms":["convection","impurities"],"claim_id":"c1","discriminative_predictions":["shift with salinity"],"epistemic_status":"speculative","falsification_criteria":["no shift with pressure"],"prior_suggestions":[{"distribution":"normal","parameter":"pressure","params":{"mu":101.3,"sigma":2},"source":"meteorology"},{"distribution":"uniform","parameter":"salinity","params":{"high":35,"low":0}}],"sensitivity_axes":["pressure","salinity"]}`,
			sampleHintsDigest},
		{ExperimentHints{ClaimID: "c2", CandidateMechanisms: []string{"😀", "ｚ", "é", "a", "a"}, SensitivityAxes: []string{"x"},
			PriorSuggestions: []PriorSuggestion{{Parameter: "k", Distribution: "beta", Params: map[string]float64{"a": 0.5, "b": 2.5}, Rationale: `small "n"`}}},
			`{"candidate_mechanisms":["a","a","é","ｚ","😀"],"claim_id":"c2","discriminative_predictions":[],"epistemic_status":"speculative","falsification_criteria":[],"prior_suggestions":[{"distribution":"beta","parameter":"k","params":{"a":0.5,"b":2.5},"rationale":"small \"n\""}],"sensitivity_axes":["x"]}`,
			"13b0790ea9d3597fd11d5f41457f63aa2b76da669a75c27f795d9d8df68316b9"},
	} {
		doc, err := tc.hints.digestDocument()
		require.NoError(t, err)
		assert.Equal(t, tc.doc, string(doc))
		d, err := tc.hints.Digest()
		require.NoError(t, err)
		assert.Equal(t, tc.sha, d.String())
	}
}

// TestDigestKeepsPriorSuggestionsWhole: suggestions that share a parameter
// but differ in any other field give different digests.
func TestDigestKeepsPriorSuggestionsWhole(t *testing.T) {
	base := ExperimentHints{ClaimID: "c", PriorSuggestions: []PriorSuggestion{{Parameter: "p", Distribution: "normal", Params: map[string]float64{"mu": 0}}}}
	variants := []PriorSuggestion{
		{Parameter: "p", Distribution: "normal", Params: map[string]float64{"mu": 1}},
		{Parameter: "p", Distribution: "lognormal", Params: map[string]float64{"mu": 0}},
		{Parameter: "p", Distribution: "normal", Params: map[string]float64{"mu": 0}, Source: "s"},
		{Parameter: "p", Distribution: "normal", Params: map[string]float64{"mu": 0}, Rationale: "r"},
		{Parameter: "p", Distribution: "normal"},
	}
	seen := map[trace.Hash]bool{}
	d, err := base.Digest()
	require.NoError(t, err)
	seen[d] = true
	for _, v := range variants {
		h := base
		h.PriorSuggestions = []PriorSuggestion{v}
		d, err := h.Digest()
		require.NoError(t, err)
		assert.False(t, seen[d], "%+v collides", v)
		seen[d] = true
	}
}

func TestDigestRejectsUnencodable(t *testing.T) {
	_, err := ExperimentHints{ClaimID: "\xff"}.Digest()
	require.ErrorIs(t, err, ErrMalformed)
	_, err = ExperimentHints{PriorSuggestions: []PriorSuggestion{{Params: map[string]float64{"x": math.NaN()}}}}.Digest()
	require.ErrorIs(t, err, ErrMalformed)
}

func TestExperimentHintsJSON(t *testing.T) {
	b, err := json.Marshal(sampleHints())
	require.NoError(t, err)
	assert.Contains(t, string(b), `"epistemic_status":"speculative"`)
	assert.True(t, isSpeculative(json.RawMessage(b)), "hints are always caught")
	var back ExperimentHints
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sampleHints(), back)
	require.ErrorIs(t, json.Unmarshal([]byte(`{"claim_id":"c","epistemic_status":"proven"}`), &back), ErrMalformed)
	require.ErrorIs(t, json.Unmarshal([]byte(`{"claim_id":"c","extra":1}`), &back), ErrMalformed)
	require.NoError(t, json.Unmarshal([]byte(`{"claim_id":"c"}`), &back))
}

func genHints(t *rapid.T) ExperimentHints {
	str := rapid.StringMatching(`[a-c é"]{0,3}`)
	list := rapid.SliceOfN(str, 0, 3)
	return ExperimentHints{
		ClaimID:                   str.Draw(t, "claim"),
		CandidateMechanisms:       list.Draw(t, "cm"),
		DiscriminativePredictions: list.Draw(t, "dp"),
		SensitivityAxes:           list.Draw(t, "ax"),
		FalsificationCriteria:     list.Draw(t, "fc"),
		PriorSuggestions: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) PriorSuggestion {
			p := PriorSuggestion{Parameter: str.Draw(t, "p"), Distribution: str.Draw(t, "d"), Source: str.Draw(t, "s"), Rationale: str.Draw(t, "r")}
			if rapid.Bool().Draw(t, "hasParams") {
				p.Params = rapid.MapOfN(str, rapid.Float64Range(-2, 2), 0, 2).Draw(t, "params")
			}
			return p
		}), 0, 3).Draw(t, "ps"),
	}
}

func shuffled[T any](t *rapid.T, s []T, label string) []T {
	out := slices.Clone(s)
	for i := len(out) - 1; i > 0; i-- {
		j := rapid.IntRange(0, i).Draw(t, label)
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// TestDigestOrderIndependent: permuting any list leaves the digest alone.
func TestDigestOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHints(t)
		p := h
		p.CandidateMechanisms = shuffled(t, h.CandidateMechanisms, "cm")
		p.DiscriminativePredictions = shuffled(t, h.DiscriminativePredictions, "dp")
		p.SensitivityAxes = shuffled(t, h.SensitivityAxes, "ax")
		p.FalsificationCriteria = shuffled(t, h.FalsificationCriteria, "fc")
		p.PriorSuggestions = shuffled(t, h.PriorSuggestions, "ps")
		d1, err1 := h.Digest()
		d2, err2 := p.Digest()
		if err1 != nil || err2 != nil || d1 != d2 {
			t.Fatalf("digest changed under permutation: %v %v", err1, err2)
		}
	})
}

// sortedHints is a naive reference for "the same hints": every list sorted
// by its JSON encoding.
func sortedHints(h ExperimentHints) string {
	w := h.sorted(true)
	ps := make([]string, len(w.PriorSuggestions))
	for i, p := range w.PriorSuggestions {
		b, _ := json.Marshal(p)
		ps[i] = string(b)
	}
	slices.Sort(ps)
	w.PriorSuggestions = nil
	b, _ := json.Marshal(w)
	return string(b) + "|" + string(must(json.Marshal(ps)))
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDigestCollisionSafe: two hints share a digest only when they are the
// same hints up to the order of their lists.
func TestDigestCollisionSafe(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genHints(t), genHints(t)
		da, _ := a.digestDocument()
		db, _ := b.digestDocument()
		same := sortedHints(a) == sortedHints(b)
		if same != (string(da) == string(db)) {
			t.Fatalf("digest documents %s / %s, same=%v", da, db, same)
		}
	})
}

// TestDigestSurvivesJSON: hints that travel as JSON keep their digest.
func TestDigestSurvivesJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := genHints(t)
		b, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		var back ExperimentHints
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		d1, err1 := h.Digest()
		d2, err2 := back.Digest()
		if err1 != nil || err2 != nil || d1 != d2 {
			t.Fatalf("digest changed through JSON %s: %v %v", b, err1, err2)
		}
	})
}
