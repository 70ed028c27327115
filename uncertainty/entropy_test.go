package uncertainty_test

// The guarantees of the entropy and disagreement measures:
//
//   - Discrete semantic entropy matches the reference vectors:
//     TestSemanticEntropyVectors.
//   - 0 ≤ SE ≤ ln k, normalised SE in [0, 1], SE equals −Σ p ln p:
//     TestSemanticEntropyBounds.
//   - The likelihood-weighted SE lies in [0, ln m] and equals the discrete
//     SE when all likelihoods are equal: TestLikelihoodEntropyBounds.
//   - SE is invariant under permutation of the answers:
//     TestSemanticEntropyPermutationInvariance.
//   - Disagreement lies in [0, 1], is 0 iff all answers agree and 1 iff
//     none do: TestDisagreementBounds.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/uncertainty"
)

// The reference vectors of discrete semantic entropy over cluster sizes.
func TestSemanticEntropyVectors(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  float64
	}{
		{[]int{5}, 0},
		{[]int{1, 1, 1, 1, 1}, math.Log(5)},
		{[]int{4, 1}, 0.500402},
		{[]int{2, 2, 1}, 1.054920},
		{[]int{3, 2}, 0.673012},
		{[]int{1, 4}, 0.500402},
		{[]int{4, 0, 1}, 0.500402}, // an empty cluster contributes nothing
	} {
		t.Run(fmt.Sprint(tc.sizes), func(t *testing.T) {
			h, err := uncertainty.ClusterEntropy(tc.sizes)
			require.NoError(t, err)
			assert.InDelta(t, tc.want, h, 5e-7)
			n, err := uncertainty.NormalizedClusterEntropy(tc.sizes)
			require.NoError(t, err)
			assert.InDelta(t, tc.want/math.Log(5), n, 5e-7)
		})
	}
	// The extremes are exact, not merely close.
	h, _ := uncertainty.ClusterEntropy([]int{5})
	assert.Equal(t, 0.0, h)
	h, _ = uncertainty.ClusterEntropy([]int{1, 1, 1, 1, 1})
	assert.Equal(t, math.Log(5), h)
	n, _ := uncertainty.NormalizedClusterEntropy([]int{1, 1, 1, 1, 1})
	assert.Equal(t, 1.0, n)
}

func TestClusterEntropyRejectsBadSizes(t *testing.T) {
	for _, sizes := range [][]int{nil, {}, {0, 0}, {3, -1}, {math.MaxInt, 1}} {
		_, err := uncertainty.ClusterEntropy(sizes)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "%v", sizes)
		var ie *uncertainty.InputError
		assert.ErrorAs(t, err, &ie)
		_, err = uncertainty.NormalizedClusterEntropy(sizes)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "%v", sizes)
		_, err = uncertainty.Disagreement(sizes)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "%v", sizes)
	}
}

// naiveEntropy is the textbook formula, for comparison.
func naiveEntropy(sizes []int) float64 {
	var k float64
	for _, n := range sizes {
		k += float64(n)
	}
	var h float64
	for _, n := range sizes {
		if n > 0 {
			p := float64(n) / k
			h -= p * math.Log(p)
		}
	}
	return h
}

var sizesGen = rapid.SliceOfN(rapid.IntRange(0, 50), 1, 20).Filter(func(s []int) bool {
	for _, n := range s {
		if n > 0 {
			return true
		}
	}
	return false
})

// Guarantee: 0 ≤ SE ≤ ln k, the normalised value lies in [0, 1], and SE
// agrees with the textbook −Σ p ln p.
func TestSemanticEntropyBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sizes := sizesGen.Draw(t, "sizes")
		k := 0
		for _, n := range sizes {
			k += n
		}
		h, err := uncertainty.ClusterEntropy(sizes)
		require.NoError(t, err)
		if h < 0 || h > math.Log(float64(k)) {
			t.Fatalf("SE %v outside [0, ln %d]", h, k)
		}
		if d := math.Abs(h - naiveEntropy(sizes)); d > 1e-12 {
			t.Fatalf("SE %v differs from −Σ p ln p by %v", h, d)
		}
		n, err := uncertainty.NormalizedClusterEntropy(sizes)
		require.NoError(t, err)
		if n < 0 || n > 1 {
			t.Fatalf("normalised SE %v outside [0, 1]", n)
		}
	})
}

// Guarantee: the likelihood-weighted entropy lies in [0, ln m] for m
// clusters, its normalised value in [0, 1], and with equal likelihoods it
// equals the discrete entropy over cluster frequencies.
func TestLikelihoodEntropyBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 30).Draw(t, "k")
		clusters := rapid.SliceOfN(rapid.IntRange(0, 6), k, k).Draw(t, "clusters")
		lps := rapid.SliceOfN(rapid.Float64Range(-50, 0), k, k).Draw(t, "logProbs")
		h, err := uncertainty.LikelihoodEntropy(clusters, lps)
		require.NoError(t, err)
		m := map[int]int{}
		for _, c := range clusters {
			m[c]++
		}
		if h < 0 || h > math.Log(float64(len(m)))+1e-12 {
			t.Fatalf("likelihood SE %v outside [0, ln %d]", h, len(m))
		}
		n, err := uncertainty.NormalizedLikelihoodEntropy(clusters, lps)
		require.NoError(t, err)
		if n < 0 || n > 1 {
			t.Fatalf("normalised %v outside [0, 1]", n)
		}
		equal := make([]float64, k)
		c := rapid.Float64Range(-20, 0).Draw(t, "c")
		for i := range equal {
			equal[i] = c
		}
		he, err := uncertainty.LikelihoodEntropy(clusters, equal)
		require.NoError(t, err)
		var sizes []int
		for _, n := range m {
			sizes = append(sizes, n)
		}
		hd, err := uncertainty.ClusterEntropy(sizes)
		require.NoError(t, err)
		if math.Abs(he-hd) > 1e-9 {
			t.Fatalf("equal likelihoods: %v, discrete: %v", he, hd)
		}
	})
}

func TestLikelihoodEntropyWeighsByProbability(t *testing.T) {
	// Two clusters; the second answer's probability is e^{-ln 3} = 1/3 of
	// the first's, so p = (3/4, 1/4).
	h, err := uncertainty.LikelihoodEntropy([]int{0, 1}, []float64{-1, -1 - math.Log(3)})
	require.NoError(t, err)
	assert.InDelta(t, -(0.75*math.Log(0.75) + 0.25*math.Log(0.25)), h, 1e-12)
	// Cluster ids are labels only.
	h2, err := uncertainty.LikelihoodEntropy([]int{7, 2}, []float64{-1, -1 - math.Log(3)})
	require.NoError(t, err)
	assert.Equal(t, h, h2)
	// Very unlikely answers in a second cluster barely count.
	h, err = uncertainty.LikelihoodEntropy([]int{0, 0, 1}, []float64{-0.1, -0.2, -40})
	require.NoError(t, err)
	assert.Less(t, h, 1e-15)
}

func TestLikelihoodEntropyRejectsBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		clusters []int
		lps      []float64
	}{
		"mismatched lengths": {[]int{0, 1}, []float64{-1}},
		"empty":              {nil, nil},
		"negative id":        {[]int{0, -1}, []float64{-1, -1}},
		"NaN":                {[]int{0, 1}, []float64{-1, math.NaN()}},
		"-Inf":               {[]int{0, 1}, []float64{-1, math.Inf(-1)}},
		"positive":           {[]int{0, 1}, []float64{-1, 0.5}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := uncertainty.LikelihoodEntropy(tc.clusters, tc.lps)
			assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
			_, err = uncertainty.NormalizedLikelihoodEntropy(tc.clusters, tc.lps)
			assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
		})
	}
}

func TestDisagreementValues(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		want  float64
	}{
		{[]int{3}, 0},
		{[]int{2, 1}, 2.0 / 3},
		{[]int{1, 1, 1}, 1},
		{[]int{2, 2}, 2.0 / 3},
		{[]int{4, 1}, 0.4},
	} {
		d, err := uncertainty.Disagreement(tc.sizes)
		require.NoError(t, err)
		assert.InDelta(t, tc.want, d, 1e-15, "%v", tc.sizes)
	}
	_, err := uncertainty.Disagreement([]int{1})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
}

// Guarantee: disagreement lies in [0, 1], is 0 exactly when all answers
// agree and 1 exactly when none do.
func TestDisagreementBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sizes := sizesGen.Draw(t, "sizes")
		k, nonEmpty, maxSize := 0, 0, 0
		for _, n := range sizes {
			k += n
			if n > 0 {
				nonEmpty++
			}
			maxSize = max(maxSize, n)
		}
		if k < 2 {
			t.Skip("needs two answers")
		}
		d, err := uncertainty.Disagreement(sizes)
		require.NoError(t, err)
		if d < 0 || d > 1 {
			t.Fatalf("disagreement %v outside [0, 1]", d)
		}
		if (d == 0) != (nonEmpty == 1) {
			t.Fatalf("disagreement %v with %d non-empty clusters", d, nonEmpty)
		}
		if (d == 1) != (maxSize == 1) {
			t.Fatalf("disagreement %v with largest cluster %d", d, maxSize)
		}
	})
}

// Guarantee: semantic entropy does not depend on the order in which the
// answers were sampled (for a judge that is an equivalence relation).
func TestSemanticEntropyPermutationInvariance(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		meanings := rapid.SliceOfN(rapid.SampledFrom([]string{"paris", "lyon", "rome", "nice", "oslo"}), 2, 12).Draw(t, "meanings")
		answers := make([]uncertainty.Answer, len(meanings))
		for i, m := range meanings {
			answers[i] = uncertainty.Answer{Text: fmt.Sprintf("%s|phrasing %d", m, i), LogProb: -float64(i%4) - 0.5, HasLogProb: true}
		}
		perm := rapid.Permutation(answers).Draw(t, "permutation")
		likelihood := rapid.Bool().Draw(t, "likelihood")
		opts := uncertainty.SemanticEntropyOptions{Likelihood: likelihood}
		judge := uncertainty.Bidirectional(&meaningJudge{})
		a, err := uncertainty.SemanticEntropyOf(context.Background(), judge, "q", answers, opts)
		require.NoError(t, err)
		b, err := uncertainty.SemanticEntropyOf(context.Background(), judge, "q", perm, opts)
		require.NoError(t, err)
		if math.Abs(a.Entropy-b.Entropy) > 1e-12 || math.Abs(a.Normalized-b.Normalized) > 1e-12 {
			t.Fatalf("entropy %v / %v after permutation", a.Entropy, b.Entropy)
		}
		if a.Uncertainty.GateRecommendation != b.Uncertainty.GateRecommendation {
			t.Fatalf("recommendation changed under permutation")
		}
		if len(a.Clustering.Sizes) != len(b.Clustering.Sizes) {
			t.Fatalf("%d clusters, %d after permutation", len(a.Clustering.Sizes), len(b.Clustering.Sizes))
		}
	})
}

func TestErrorsAreTyped(t *testing.T) {
	_, err := uncertainty.ClusterEntropy([]int{-2})
	var ie *uncertainty.InputError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "sizes", ie.Arg)
	assert.Equal(t, 0, ie.Index)
	assert.True(t, errors.Is(err, uncertainty.ErrInvalidInput))
	assert.Contains(t, err.Error(), "uncertainty: invalid input: sizes[0]")
}
