package uncertainty

import (
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
)

// maxCalibration bounds the number of calibration scores.
const maxCalibration = 1 << 52

// ConformalRank returns k = ⌈(n+1)(1−α)⌉, the rank (1-based, among n
// calibration scores sorted ascending) of the split-conformal quantile at
// miscoverage α (Vovk et al., 2005; Angelopoulos & Bates, 2023). Taking the
// k-th smallest score as the threshold gives sets that contain the true
// class with probability at least 1−α, and below 1−α+1/(n+1) when scores
// have no ties, whenever calibration and test data are exchangeable.
//
// The arithmetic is exact: α is read as the shortest decimal that
// identifies the float64 (so 0.1 means 1/10 and 0.3 means 3/10, although
// neither is exactly representable in binary), and k is computed in
// rational arithmetic, so that rounding never lowers the rank.
//
// When k > n the quantile does not exist and the calibration set is too
// small for α: the error is a *TooSmallError wrapping
// ErrCalibrationTooSmall, whose Need field is the smallest workable n,
// ⌈1/α⌉ − 1. α must lie in (0, 1).
func ConformalRank(n int, alpha float64) (int, error) {
	if err := checkAlpha(alpha); err != nil {
		return 0, err
	}
	if n < 0 || n > maxCalibration {
		return 0, invalid("n", -1, "%d calibration scores; need 0 to 2^52", n)
	}
	return conformalRank(n, alpha, decimal(alpha))
}

func conformalRank(n int, alpha float64, a *big.Rat) (int, error) {
	k := rank(n, a)
	if k > n {
		return 0, &TooSmallError{Class: -1, N: n, Need: minCalibration(a), Alpha: alpha}
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

// decimal returns α as the shortest decimal that round-trips to it.
func decimal(alpha float64) *big.Rat {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(alpha, 'g', -1, 64))
	if !ok {
		// FormatFloat of a finite float always parses; keep the exact
		// binary value as a fallback.
		r = new(big.Rat).SetFloat64(alpha)
	}
	return r
}

// rank returns ⌈(n+1)(1−α)⌉, at least 1, for α in (0, 1).
func rank(n int, a *big.Rat) int {
	x := new(big.Rat).Sub(big.NewRat(1, 1), a)
	x.Mul(x, new(big.Rat).SetInt64(int64(n)+1))
	return max(ceil(x), 1)
}

// minCalibration returns the smallest n with ⌈(n+1)(1−α)⌉ ≤ n, that is
// n ≥ (1−α)/α, at least 1 (capped at 2^52).
func minCalibration(a *big.Rat) int {
	x := new(big.Rat).Sub(big.NewRat(1, 1), a)
	x.Quo(x, a)
	if x.Cmp(new(big.Rat).SetInt64(maxCalibration)) > 0 {
		return maxCalibration
	}
	return max(ceil(x), 1)
}

// ceil returns ⌈x⌉ for 0 ≤ x ≤ 2^53.
func ceil(x *big.Rat) int {
	q, r := new(big.Int).QuoRem(x.Num(), x.Denom(), new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, big.NewInt(1))
	}
	return int(q.Int64())
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
