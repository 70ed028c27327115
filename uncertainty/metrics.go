package uncertainty

import (
	"cmp"
	"math"
	"slices"
)

// AUROC returns the area under the ROC curve of scores as a detector of
// the positive cases: the probability that a randomly chosen positive
// scores higher than a randomly chosen negative, ties counting one half
// (the Mann–Whitney U statistic divided by n₊·n₋). 0.5 is chance, 1 a
// perfect detector.
//
// To evaluate an uncertainty method on your own labelled data, pass its
// values as scores and mark as positive the answers that were wrong: the
// specification quotes 0.78–0.81 for semantic entropy detecting
// confabulations (Farquhar et al., 2024); this is how to measure yours.
// Scores must not be NaN; both classes must be present. O(n log n).
func AUROC(scores []float64, positive []bool) (float64, error) {
	if len(scores) != len(positive) {
		return 0, invalid("positive", -1, "%d labels for %d scores", len(positive), len(scores))
	}
	var npos, nneg float64
	for i, s := range scores {
		if math.IsNaN(s) {
			return 0, invalid("scores", i, "NaN")
		}
		if positive[i] {
			npos++
		} else {
			nneg++
		}
	}
	if npos == 0 || nneg == 0 {
		return 0, invalid("positive", -1, "need both positive and negative cases (%v positive, %v negative)", npos, nneg)
	}
	type case_ struct {
		score    float64
		positive bool
	}
	cases := make([]case_, len(scores))
	for i, s := range scores {
		cases[i] = case_{s, positive[i]}
	}
	slices.SortFunc(cases, func(a, b case_) int { return cmp.Compare(a.score, b.score) })
	// Sum the (mid)ranks of the positives; tied scores share the mean of
	// their ranks.
	var rankSum float64
	for i := 0; i < len(cases); {
		j := i
		var pos float64
		for ; j < len(cases) && cases[j].score == cases[i].score; j++ {
			if cases[j].positive {
				pos++
			}
		}
		mid := float64(i+1+j) / 2 // mean of ranks i+1 … j
		rankSum += pos * mid
		i = j
	}
	u := rankSum - npos*(npos+1)/2
	return clamp(u/(npos*nneg), 0, 1), nil
}
