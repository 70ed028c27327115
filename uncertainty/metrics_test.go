package uncertainty_test

// AUROC equals the pairwise (Mann–Whitney) definition, ties counting
// half: TestAUROCIsMannWhitney.

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/uncertainty"
)

func TestAUROCTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scores []float64
		pos    []bool
		want   float64
	}{
		{"perfect", []float64{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true}, 1},
		{"reversed", []float64{0.9, 0.8, 0.2, 0.1}, []bool{false, false, true, true}, 0},
		{"all tied", []float64{0.5, 0.5, 0.5, 0.5}, []bool{false, true, false, true}, 0.5},
		{"one inversion", []float64{0.1, 0.6, 0.5, 0.9}, []bool{false, false, true, true}, 0.75},
		{"tie across classes", []float64{0.1, 0.5, 0.5}, []bool{false, false, true}, 0.75},
		{"infinite scores", []float64{math.Inf(-1), 0, math.Inf(1)}, []bool{false, true, true}, 1},
	} {
		got, err := uncertainty.AUROC(tc.scores, tc.pos)
		require.NoError(t, err, tc.name)
		assert.InDelta(t, tc.want, got, 1e-15, tc.name)
	}
	for name, tc := range map[string]struct {
		scores []float64
		pos    []bool
	}{
		"mismatched":   {[]float64{1, 2}, []bool{true}},
		"no positives": {[]float64{1, 2}, []bool{false, false}},
		"no negatives": {[]float64{1, 2}, []bool{true, true}},
		"empty":        {nil, nil},
		"NaN":          {[]float64{1, math.NaN()}, []bool{true, false}},
	} {
		_, err := uncertainty.AUROC(tc.scores, tc.pos)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, name)
	}
}

// Guarantee: AUROC equals the pairwise definition P(s₊ > s₋) + ½P(s₊ = s₋),
// lies in [0, 1], and reversing the scores gives 1 − AUROC.
func TestAUROCIsMannWhitney(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 80).Draw(t, "n")
		scores := rapid.SliceOfN(rapid.IntRange(0, 10), n, n).Draw(t, "scores")
		pos := rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "positive")
		s := make([]float64, n)
		for i, v := range scores {
			s[i] = float64(v) / 10
		}
		var np, nn, wins float64
		for i := range s {
			if pos[i] {
				np++
			} else {
				nn++
			}
			for j := range s {
				if pos[i] && !pos[j] {
					switch {
					case s[i] > s[j]:
						wins++
					case s[i] == s[j]:
						wins += 0.5
					}
				}
			}
		}
		got, err := uncertainty.AUROC(s, pos)
		if np == 0 || nn == 0 {
			if err == nil {
				t.Fatalf("accepted one-class labels")
			}
			return
		}
		require.NoError(t, err)
		if math.Abs(got-wins/(np*nn)) > 1e-12 {
			t.Fatalf("AUROC %v, pairwise %v", got, wins/(np*nn))
		}
		neg := make([]float64, n)
		for i := range s {
			neg[i] = -s[i]
		}
		rev, err := uncertainty.AUROC(neg, pos)
		require.NoError(t, err)
		if math.Abs(rev-(1-got)) > 1e-12 {
			t.Fatalf("reversed %v, want %v", rev, 1-got)
		}
	})
}
