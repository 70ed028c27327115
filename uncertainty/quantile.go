package uncertainty

import (
	"math"
	"math/bits"
	"slices"
)

// rankTolerance absorbs the rounding of (n+1)(1−α) in floating point: a
// product within rankTolerance·⌈r⌉ above an integer is taken as that
// integer, so that α written as a decimal (0.1, 0.3) gives the textbook
// rank rather than one more (1 − 0.3 is not exactly 0.7 in binary).
const rankTolerance = 1e-11

// maxCalibration bounds the sizes the rank arithmetic is exact for.
const maxCalibration = 1 << 52

// ConformalRank returns k = ⌈(n+1)(1−α)⌉, the rank (1-based, among n
// calibration scores sorted ascending) of the split-conformal quantile at
// miscoverage α (Vovk et al., 2005; Angelopoulos & Bates, 2023). Taking the
// k-th smallest score as the threshold gives sets that contain the true
// class with probability at least 1−α, and below 1−α+1/(n+1) when scores
// have no ties, whenever calibration and test data are exchangeable.
//
// When k > n the quantile does not exist and the calibration set is too
// small for α: the error is a *TooSmallError wrapping
// ErrCalibrationTooSmall, whose Need field is the smallest workable n
// (⌈1/α⌉ − 1). α must lie in (0, 1).
func ConformalRank(n int, alpha float64) (int, error) {
	if err := checkAlpha(alpha); err != nil {
		return 0, err
	}
	if n < 0 || n > maxCalibration {
		return 0, invalid("n", -1, "%d calibration scores; need 0 to 2^52", n)
	}
	k := rank(n, alpha)
	if k > n {
		return 0, &TooSmallError{Class: -1, N: n, Need: minCalibration(alpha), Alpha: alpha}
	}
	return k, nil
}

// ConformalQuantile returns the ConformalRank(len(scores), α)-th smallest
// of scores: the threshold q̂ of split conformal prediction. Scores are
// conformity scores of the calibration examples (larger = less conforming);
// NaN is rejected. scores is not modified. It runs in expected linear time.
func ConformalQuantile(scores []float64, alpha float64) (float64, error) {
	for i, s := range scores {
		if math.IsNaN(s) {
			return 0, invalid("scores", i, "NaN")
		}
	}
	k, err := ConformalRank(len(scores), alpha)
	if err != nil {
		return 0, err
	}
	return kthSmallest(slices.Clone(scores), k-1), nil
}

func checkAlpha(alpha float64) error {
	if math.IsNaN(alpha) || alpha <= 0 || alpha >= 1 {
		return invalid("alpha", -1, "%v is not in (0, 1)", alpha)
	}
	return nil
}

// rank computes ⌈(n+1)(1−α)⌉ with the tolerance described at rankTolerance;
// at least 1.
func rank(n int, alpha float64) int {
	r := float64(n+1) * (1 - alpha)
	c := math.Ceil(r)
	if r-(c-1) <= rankTolerance*c {
		c--
	}
	return max(int(c), 1)
}

// minCalibration returns the smallest n with rank(n, α) ≤ n.
func minCalibration(alpha float64) int {
	x := 1/alpha - 1
	if x >= maxCalibration {
		return maxCalibration
	}
	n := max(int(math.Ceil(x)), 1)
	for n < maxCalibration && rank(n, alpha) > n {
		n++
	}
	for n > 1 && rank(n-1, alpha) <= n-1 {
		n--
	}
	return n
}

// kthSmallest returns the k-th smallest (0-based) element of a, reordering
// a. It is quickselect with a median-of-three pivot and Hoare partitioning,
// falling back to sorting after 2·log₂ n rounds, so its worst case is
// O(n log n). a must not contain NaN.
func kthSmallest(a []float64, k int) float64 {
	lo, hi := 0, len(a)-1
	depth := 2 * bits.Len(uint(len(a)))
	for hi > lo {
		if depth == 0 {
			slices.Sort(a[lo : hi+1])
			return a[k]
		}
		depth--
		mid := lo + (hi-lo)/2
		if a[mid] < a[lo] {
			a[mid], a[lo] = a[lo], a[mid]
		}
		if a[hi] < a[lo] {
			a[hi], a[lo] = a[lo], a[hi]
		}
		if a[hi] < a[mid] {
			a[hi], a[mid] = a[mid], a[hi]
		}
		pivot := a[mid]
		i, j := lo, hi
		for i <= j {
			for a[i] < pivot {
				i++
			}
			for a[j] > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return a[k]
		}
	}
	return a[k]
}
