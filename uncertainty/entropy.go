package uncertainty

import (
	"math"
)

// ClusterEntropy returns the discrete semantic entropy of Farquhar, Kossen,
// Kuhn & Gal (Nature 630, 2024) for answers grouped into clusters of the
// given sizes: the Shannon entropy, in nats, of the empirical distribution
// over clusters,
//
//	SE = −Σ_c (n_c/k) ln(n_c/k),  k = Σ_c n_c.
//
// It lies in [0, ln k]: 0 when every answer means the same thing, ln k when
// no two do. Sizes must be non-negative with a positive sum; empty clusters
// contribute nothing. For example [5] → 0, [1,1,1,1,1] → ln 5,
// [4,1] → 0.500402, [2,2,1] → 1.054920.
func ClusterEntropy(sizes []int) (float64, error) {
	k, nonEmpty, err := checkSizes(sizes)
	if err != nil {
		return 0, err
	}
	return clusterEntropy(sizes, k, nonEmpty), nil
}

// NormalizedClusterEntropy returns ClusterEntropy divided by ln k, the
// largest value k answers can reach, so that the result lies in [0, 1]
// whatever k is. A single answer (k = 1) carries no evidence of
// disagreement and scores 0.
func NormalizedClusterEntropy(sizes []int) (float64, error) {
	k, nonEmpty, err := checkSizes(sizes)
	if err != nil {
		return 0, err
	}
	return normalize(clusterEntropy(sizes, k, nonEmpty), k), nil
}

func checkSizes(sizes []int) (k, nonEmpty int, err error) {
	if len(sizes) == 0 {
		return 0, 0, invalid("sizes", -1, "no clusters")
	}
	for i, n := range sizes {
		if n < 0 {
			return 0, 0, invalid("sizes", i, "negative cluster size %d", n)
		}
		if n > math.MaxInt-k {
			return 0, 0, invalid("sizes", i, "total size overflows")
		}
		k += n
		if n > 0 {
			nonEmpty++
		}
	}
	if k == 0 {
		return 0, 0, invalid("sizes", -1, "all clusters are empty")
	}
	return k, nonEmpty, nil
}

// clusterEntropy computes ln k − (1/k) Σ n_c ln n_c, which is the entropy
// rearranged so that k singletons give exactly ln k and one cluster exactly 0.
func clusterEntropy(sizes []int, k, nonEmpty int) float64 {
	if nonEmpty <= 1 {
		return 0
	}
	fk := float64(k)
	var s float64
	for _, n := range sizes {
		if n > 1 {
			fn := float64(n)
			s += fn * math.Log(fn)
		}
	}
	return clamp(math.Log(fk)-s/fk, 0, math.Log(fk))
}

// LikelihoodEntropy returns the likelihood-weighted semantic entropy of
// Farquhar et al. (their Rao–Blackwellised estimator): each answer's
// probability exp(logProbs[i]) is normalised over all k answers, summed
// within its cluster, and the entropy in nats of the resulting cluster
// distribution is returned:
//
//	p(c) = Σ_{i∈c} exp(ℓ_i) / Σ_j exp(ℓ_j),  SE = −Σ_c p(c) ln p(c).
//
// clusters[i] is the cluster of answer i (any non-negative ids; only
// equality matters). logProbs[i] is the answer's log-likelihood under the
// model: finite and ≤ 0. Farquhar et al. use the length-normalised
// (mean per-token) log-probability; the caller chooses. The result lies in
// [0, ln m] ⊆ [0, ln k], m being the number of distinct clusters.
func LikelihoodEntropy(clusters []int, logProbs []float64) (float64, error) {
	if err := checkLikelihood(clusters, logProbs); err != nil {
		return 0, err
	}
	return likelihoodEntropy(clusters, logProbs), nil
}

// NormalizedLikelihoodEntropy returns LikelihoodEntropy divided by ln k,
// k = len(logProbs), so that it lies in [0, 1] like NormalizedClusterEntropy.
func NormalizedLikelihoodEntropy(clusters []int, logProbs []float64) (float64, error) {
	if err := checkLikelihood(clusters, logProbs); err != nil {
		return 0, err
	}
	return normalize(likelihoodEntropy(clusters, logProbs), len(logProbs)), nil
}

func checkLikelihood(clusters []int, logProbs []float64) error {
	if len(clusters) != len(logProbs) {
		return invalid("logProbs", -1, "%d log-probabilities for %d cluster ids", len(logProbs), len(clusters))
	}
	if len(clusters) == 0 {
		return invalid("clusters", -1, "no answers")
	}
	for i, c := range clusters {
		if c < 0 {
			return invalid("clusters", i, "negative cluster id %d", c)
		}
	}
	for i, l := range logProbs {
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return invalid("logProbs", i, "not finite: %v", l)
		}
		if l > 0 {
			return invalid("logProbs", i, "log-probability %v > 0", l)
		}
	}
	return nil
}

func likelihoodEntropy(clusters []int, logProbs []float64) float64 {
	total := logSumExp(logProbs)
	// Group log-probabilities by cluster id in first-appearance order, so
	// that the sum is independent of how the ids are numbered.
	index := make(map[int]int, len(clusters))
	var groups [][]float64
	for i, c := range clusters {
		g, ok := index[c]
		if !ok {
			g = len(groups)
			index[c] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], logProbs[i]-total)
	}
	if len(groups) == 1 {
		return 0
	}
	var h float64
	for _, g := range groups {
		lp := math.Min(logSumExp(g), 0)
		h -= math.Exp(lp) * lp
	}
	return clamp(h, 0, math.Log(float64(len(groups))))
}

// logSumExp returns ln Σ exp(x_i) without overflow; xs must be non-empty
// and finite.
func logSumExp(xs []float64) float64 {
	m := xs[0]
	for _, x := range xs[1:] {
		m = math.Max(m, x)
	}
	var s float64
	for _, x := range xs {
		s += math.Exp(x - m)
	}
	return m + math.Log(s)
}

// Disagreement returns the pairwise disagreement of answers grouped into
// clusters of the given sizes: the probability that two different answers,
// drawn without replacement, fall into different clusters,
//
//	D = 1 − Σ_c n_c(n_c−1) / (k(k−1)).
//
// It is 0 when all answers agree and 1 when no two do. At least two answers
// are needed.
func Disagreement(sizes []int) (float64, error) {
	k, _, err := checkSizes(sizes)
	if err != nil {
		return 0, err
	}
	if k < 2 {
		return 0, invalid("sizes", -1, "disagreement needs at least two answers, got %d", k)
	}
	fk := float64(k)
	var same float64
	for _, n := range sizes {
		fn := float64(n)
		same += fn * (fn - 1)
	}
	return clamp(1-same/(fk*(fk-1)), 0, 1), nil
}

func normalize(h float64, k int) float64 {
	if k <= 1 {
		return 0
	}
	return clamp(h/math.Log(float64(k)), 0, 1)
}

func clamp(x, lo, hi float64) float64 {
	return math.Min(math.Max(x, lo), hi)
}
