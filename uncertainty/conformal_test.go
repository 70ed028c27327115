package uncertainty_test

// The guarantees of split conformal prediction:
//
//   - The conformal rank is exactly ⌈(n+1)(1−α)⌉, and a too-small
//     calibration set is refused with the smallest workable size:
//     TestConformalRankIsFiniteSampleQuantile, TestCalibrationTooSmallRefuses,
//     TestMondrianRefusesShortClasses.
//   - The conformal quantile is the order statistic, duplicates included:
//     TestConformalQuantileIsOrderStatistic; it is monotone in α:
//     TestConformalQuantileMonotoneInAlpha; prediction sets are nested in
//     α: TestPredictionSetsNestedInAlpha.
//   - Prediction sets are exactly {y : s(x, y) ≤ q̂}, ties included:
//     TestPredictionSetMatchesScoreDefinition.
//   - Coverage ≥ 1 − α and ≤ 1 − α + 1/(n+1) (within binomial tolerance) on
//     synthetic exchangeable data, for LAC, APS and randomised APS:
//     TestConformalCoverage; per-class coverage under Mondrian calibration,
//     where marginal calibration under-covers a hard class:
//     TestMondrianClassConditionalCoverage.
//   - The set-to-value mapping, empty set = maximal uncertainty:
//     TestPredictionSetUncertaintyMapping.

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/uncertainty"
)

func TestConformalRankTable(t *testing.T) {
	for _, tc := range []struct {
		n     int
		alpha float64
		want  int
	}{
		{9, 0.1, 9},       // ⌈10·0.9⌉
		{99, 0.1, 90},     // ⌈100·0.9⌉
		{100, 0.1, 91},    // ⌈90.9⌉
		{9, 0.3, 7},       // ⌈7⌉, although 1 − 0.3 is not exactly 0.7 in binary
		{4, 0.2, 4},       // ⌈5·0.8⌉
		{19, 0.05, 19},    // ⌈20·0.95⌉
		{1, 0.5, 1},       // ⌈2·0.5⌉
		{10, 0.99, 1},     // ⌈0.11⌉
		{1000, 0.01, 991}, // ⌈990.99⌉
		{1_000_000_000_000, 0.1, 900_000_000_001}, // ⌈900000000000.9⌉, exact at any size
		{1 << 52, 0.5, 1<<51 + 1},                 // ⌈(2^52+1)/2⌉
		{99_999, 0.00001, 99_999},                 // ⌈100000·0.99999⌉
		{1 << 40, 0.3, 769_658_139_444},           // ⌈(2^40+1)·0.7⌉ = ⌈769658139443.9⌉
	} {
		got, err := uncertainty.ConformalRank(tc.n, tc.alpha)
		require.NoError(t, err, "n=%d α=%v", tc.n, tc.alpha)
		assert.Equal(t, tc.want, got, "n=%d α=%v", tc.n, tc.alpha)
	}
}

func TestCalibrationTooSmallRefuses(t *testing.T) {
	for _, tc := range []struct {
		n     int
		alpha float64
		need  int
	}{
		{8, 0.1, 9}, {0, 0.1, 9}, {18, 0.05, 19}, {3, 0.2, 4}, {98, 0.01, 99}, {2, 0.3, 3},
		{99_998, 0.00001, 99_999}, {1000, 1e-300, 1 << 52},
	} {
		_, err := uncertainty.ConformalRank(tc.n, tc.alpha)
		require.ErrorIs(t, err, uncertainty.ErrCalibrationTooSmall)
		var ts *uncertainty.TooSmallError
		require.ErrorAs(t, err, &ts)
		assert.Equal(t, tc.need, ts.Need, "n=%d α=%v", tc.n, tc.alpha)
		assert.Equal(t, tc.n, ts.N)
		assert.Equal(t, -1, ts.Class)
		if tc.need < 1<<52 {
			_, err = uncertainty.ConformalRank(ts.Need, tc.alpha)
			assert.NoError(t, err, "Need is enough")
		}

		scores := make([]float64, tc.n)
		_, err = uncertainty.ConformalQuantile(scores, tc.alpha)
		assert.ErrorIs(t, err, uncertainty.ErrCalibrationTooSmall)
	}
	// Calibrate refuses the same way.
	probs := [][]float64{{0.7, 0.3}, {0.4, 0.6}}
	_, err := uncertainty.Calibrate(uncertainty.CalibrationSet{Probs: probs, Labels: []int{0, 1}}, uncertainty.ConformalOptions{Alpha: 0.1})
	assert.ErrorIs(t, err, uncertainty.ErrCalibrationTooSmall)
	_, err = uncertainty.Calibrate(uncertainty.CalibrationSet{}, uncertainty.ConformalOptions{Alpha: 0.1})
	assert.ErrorIs(t, err, uncertainty.ErrCalibrationTooSmall)
}

// Guarantee: the rank is exactly ⌈(n+1)(1−α)⌉ for α given as a decimal
// (checked in integer arithmetic), and Need is the smallest workable n.
func TestConformalRankIsFiniteSampleQuantile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.IntRange(1, 999).Draw(t, "alpha×1000")
		n := rapid.IntRange(0, 1_000_000).Draw(t, "n")
		alpha := float64(m) / 1000
		exact := ((n+1)*(1000-m) + 999) / 1000 // ⌈(n+1)(1000−m)/1000⌉
		exact = max(exact, 1)
		got, err := uncertainty.ConformalRank(n, alpha)
		if exact > n {
			var ts *uncertainty.TooSmallError
			if !errors.As(err, &ts) {
				t.Fatalf("n=%d α=%v: want TooSmallError, got %v, %v", n, alpha, got, err)
			}
			need := (1000+m-1)/m - 1 // ⌈1/α⌉ − 1
			if ts.Need != max(need, 1) {
				t.Fatalf("α=%v: Need %d, want %d", alpha, ts.Need, need)
			}
			return
		}
		if err != nil || got != exact {
			t.Fatalf("n=%d α=%v: rank %d, %v; want %d", n, alpha, got, err, exact)
		}
	})
}

// Guarantee: the conformal quantile is monotone in α (a smaller α never
// gives a smaller threshold), and it is the ⌈(n+1)(1−α)⌉-th order
// statistic, without modifying the scores.
func TestConformalQuantileMonotoneInAlpha(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		scores := rapid.SliceOfN(rapid.Float64Range(-10, 10), 1, 300).Draw(t, "scores")
		a1 := rapid.Float64Range(0.001, 0.999).Draw(t, "alpha1")
		a2 := rapid.Float64Range(0.001, 0.999).Draw(t, "alpha2")
		if a1 > a2 {
			a1, a2 = a2, a1
		}
		orig := slices.Clone(scores)
		q1, err1 := uncertainty.ConformalQuantile(scores, a1)
		q2, err2 := uncertainty.ConformalQuantile(scores, a2)
		if !slices.Equal(orig, scores) {
			t.Fatalf("scores modified")
		}
		if err1 == nil && err2 != nil {
			t.Fatalf("α=%v works but larger α=%v fails: %v", a1, a2, err2)
		}
		if err2 == nil {
			r2, _ := uncertainty.ConformalRank(len(scores), a2)
			sorted := slices.Sorted(slices.Values(scores))
			if q2 != sorted[r2-1] {
				t.Fatalf("quantile %v is not order statistic %d (%v)", q2, r2, sorted[r2-1])
			}
		}
		if err1 == nil && q1 < q2 {
			t.Fatalf("q(α=%v)=%v < q(α=%v)=%v", a1, q1, a2, q2)
		}
	})
}

// The selection behind ConformalQuantile returns the order statistic for
// every rank, duplicates included.
func TestConformalQuantileIsOrderStatistic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3000).Draw(t, "n")
		distinct := rapid.IntRange(1, 50).Draw(t, "distinct values")
		seed := rapid.Uint64().Draw(t, "seed")
		r := rand.New(rand.NewPCG(seed, 0))
		scores := make([]float64, n)
		for i := range scores {
			scores[i] = float64(r.IntN(distinct))
		}
		m := rapid.IntRange(1, 999).Draw(t, "alpha×1000")
		alpha := float64(m) / 1000
		k, err := uncertainty.ConformalRank(n, alpha)
		if err != nil {
			t.Skip("too small")
		}
		q, err := uncertainty.ConformalQuantile(scores, alpha)
		require.NoError(t, err)
		if want := slices.Sorted(slices.Values(scores))[k-1]; q != want {
			t.Fatalf("rank %d of %d: got %v, want %v", k, n, q, want)
		}
	})
}

// Guarantee: prediction sets are nested: lowering α never removes a class.
func TestPredictionSetsNestedInAlpha(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, "seed"), 1))
		k := rapid.IntRange(2, 8).Draw(t, "classes")
		score := rapid.SampledFrom([]uncertainty.Score{uncertainty.ScoreLAC, uncertainty.ScoreAPS}).Draw(t, "score")
		cal := synthSet(r, k, 200)
		a1 := rapid.Float64Range(0.02, 0.5).Draw(t, "alpha1")
		a2 := rapid.Float64Range(a1, 0.9).Draw(t, "alpha2")
		p1, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Score: score, Alpha: a1})
		require.NoError(t, err)
		p2, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Score: score, Alpha: a2})
		require.NoError(t, err)
		for range 20 {
			probs, _ := synthExample(r, k)
			s1, err := p1.Predict(probs)
			require.NoError(t, err)
			s2, err := p2.Predict(probs)
			require.NoError(t, err)
			for _, y := range s2.Labels {
				if !s1.Contains(y) {
					t.Fatalf("class %d in the α=%v set %v but not in the α=%v set %v", y, a2, s2.Labels, a1, s1.Labels)
				}
			}
		}
	})
}

// synthExample draws one exchangeable example: a uniformly random true
// class y, model logits z_j ~ N(0, 1) with z_y raised by a class-dependent
// signal (class 0 easiest, class k−1 hardest), probabilities softmax(z).
func synthExample(r *rand.Rand, k int) ([]float64, int) {
	y := r.IntN(k)
	z := make([]float64, k)
	for j := range z {
		z[j] = r.NormFloat64()
	}
	z[y] += 3.5 - 3*float64(y)/float64(k-1)
	m := slices.Max(z)
	var s float64
	for j := range z {
		z[j] = math.Exp(z[j] - m)
		s += z[j]
	}
	for j := range z {
		z[j] /= s
	}
	return z, y
}

func synthSet(r *rand.Rand, k, n int) uncertainty.CalibrationSet {
	var c uncertainty.CalibrationSet
	for range n {
		p, y := synthExample(r, k)
		c.Probs = append(c.Probs, p)
		c.Labels = append(c.Labels, y)
	}
	return c
}

// Guarantee: split conformal sets cover the true class with probability at
// least 1−α, and (scores having no ties) at most 1−α+1/(n+1). Each trial
// calibrates on fresh exchangeable data and tests one fresh point, so the
// number of covered trials is binomial with p = ⌈(n+1)(1−α)⌉/(n+1); we
// allow four standard deviations.
func TestConformalCoverage(t *testing.T) {
	const (
		k      = 10
		n      = 99
		alpha  = 0.1
		trials = 6000
	)
	for _, tc := range []struct {
		score      uncertainty.Score
		randomized bool
	}{
		{uncertainty.ScoreLAC, false}, {uncertainty.ScoreAPS, false}, {uncertainty.ScoreAPS, true},
	} {
		name := tc.score.String()
		if tc.randomized {
			name += "-randomized"
		}
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(2024, uint64(tc.score)))
			covered, size := 0, 0
			for range trials {
				cal := synthSet(r, k, n)
				if tc.randomized {
					cal.U = make([]float64, n)
					for i := range cal.U {
						cal.U[i] = r.Float64()
					}
				}
				p, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Score: tc.score, Alpha: alpha, Randomized: tc.randomized})
				require.NoError(t, err)
				probs, y := synthExample(r, k)
				var set uncertainty.PredictionSet
				if tc.randomized {
					set, err = p.PredictRandomized(probs, r.Float64())
				} else {
					set, err = p.Predict(probs)
				}
				require.NoError(t, err)
				if set.Contains(y) {
					covered++
				}
				size += set.Size()
			}
			cov := float64(covered) / trials
			sd := math.Sqrt(alpha * (1 - alpha) / trials)
			lo, hi := 1-alpha-4*sd, 1-alpha+1.0/(n+1)+4*sd
			t.Logf("coverage %.4f (allowed [%.4f, %.4f]), mean set size %.2f of %d", cov, lo, hi, float64(size)/trials, k)
			assert.GreaterOrEqual(t, cov, lo, "under-coverage")
			assert.LessOrEqual(t, cov, hi, "over-coverage")
			assert.Less(t, float64(size)/trials, float64(k), "sets must be informative")
		})
	}
}

// Guarantee: class-conditional (Mondrian) calibration covers every class
// at ≥ 1−α, where marginal calibration under-covers the hardest class.
func TestMondrianClassConditionalCoverage(t *testing.T) {
	const (
		k      = 3
		n      = 150
		alpha  = 0.2
		trials = 6000
	)
	coverage := func(mondrian bool) []float64 {
		r := rand.New(rand.NewPCG(7, 11))
		var hit, seen [k]float64
		for range trials {
			cal := synthSet(r, k, n)
			p, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: alpha, ClassConditional: mondrian})
			require.NoError(t, err)
			probs, y := synthExample(r, k)
			set, err := p.Predict(probs)
			require.NoError(t, err)
			seen[y]++
			if set.Contains(y) {
				hit[y]++
			}
		}
		out := make([]float64, k)
		for y := range out {
			out[y] = hit[y] / seen[y]
		}
		return out
	}
	mondrian := coverage(true)
	marginal := coverage(false)
	t.Logf("per-class coverage: Mondrian %.3f, marginal %.3f", mondrian, marginal)
	sd := math.Sqrt(alpha * (1 - alpha) / (trials / k))
	for y, c := range mondrian {
		assert.GreaterOrEqual(t, c, 1-alpha-4*sd, "class %d under-covered", y)
		// each class has about n/k = 50 calibration points: ≤ 1−α+1/51
		assert.LessOrEqual(t, c, 1-alpha+1.0/40+4*sd, "class %d over-covered", y)
	}
	assert.Less(t, marginal[k-1], 1-alpha-4*sd, "the hardest class is under-covered without Mondrian calibration")
}

func TestMondrianRefusesShortClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cal := synthSet(r, 3, 40)
	// Relabel so that class 2 has only two examples and class 1 none.
	twos := 0
	for i := range cal.Labels {
		switch {
		case cal.Labels[i] == 2 && twos < 2:
			twos++
		default:
			cal.Labels[i] = 0
		}
	}
	_, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.1, ClassConditional: true})
	require.ErrorIs(t, err, uncertainty.ErrCalibrationTooSmall)
	var classes []int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ts *uncertainty.TooSmallError
		require.ErrorAs(t, e, &ts)
		classes = append(classes, ts.Class)
		assert.Equal(t, 9, ts.Need)
	}
	assert.Equal(t, []int{1, 2}, classes)
	assert.Contains(t, err.Error(), "class 1 has 0 calibration scores")
}

func TestPredictLACByHand(t *testing.T) {
	// Nine calibration examples whose true-class probabilities are
	// 0.95, 0.9, …, 0.55: LAC scores 0.05 … 0.45. At α = 0.2 the rank is
	// ⌈10·0.8⌉ = 8, so q̂ = 0.40 and a class is in the set when p ≥ 0.60.
	var cal uncertainty.CalibrationSet
	for i := range 9 {
		p := 0.95 - 0.05*float64(i)
		cal.Probs = append(cal.Probs, []float64{p, 1 - p})
		cal.Labels = append(cal.Labels, 0)
	}
	pred, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.2})
	require.NoError(t, err)
	assert.InDelta(t, 0.40, pred.Threshold(), 1e-12)
	assert.Equal(t, 9, pred.N())
	assert.Equal(t, 2, pred.Classes())
	assert.Equal(t, uncertainty.ScoreLAC, pred.Options().Score)
	for _, tc := range []struct {
		probs []float64
		want  []int
	}{
		{[]float64{0.7, 0.3}, []int{0}},
		{[]float64{0.3, 0.7}, []int{1}},
		{[]float64{0.5, 0.5}, []int{}},
		{[]float64{0.61, 0.39}, []int{0}},
	} {
		set, err := pred.Predict(tc.probs)
		require.NoError(t, err)
		assert.Equal(t, tc.want, set.Labels, "%v", tc.probs)
		assert.Equal(t, 0.2, set.Alpha)
	}
	// A lower α widens: at α = 0.1 the rank is 9, q̂ = 0.45, p ≥ 0.55.
	pred, err = uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.1})
	require.NoError(t, err)
	set, err := pred.Predict([]float64{0.44, 0.56})
	require.NoError(t, err)
	assert.Equal(t, []int{1}, set.Labels)
	set, err = pred.Predict([]float64{0.55, 0.45})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, set.Labels)
}

func TestAPSScoreAndTies(t *testing.T) {
	// One calibration example per score level: true class probability mass
	// "at least as likely" of 0.5, 0.8 and 1.0.
	cal := uncertainty.CalibrationSet{
		Probs:  [][]float64{{0.5, 0.3, 0.2}, {0.5, 0.3, 0.2}, {0.5, 0.3, 0.2}},
		Labels: []int{0, 1, 2},
	}
	pred, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Score: uncertainty.ScoreAPS, Alpha: 0.5})
	require.NoError(t, err)
	// ⌈4·0.5⌉ = 2nd smallest of {0.5, 0.8, 1.0}
	assert.InDelta(t, 0.8, pred.Threshold(), 1e-12)
	set, err := pred.Predict([]float64{0.6, 0.25, 0.15})
	require.NoError(t, err)
	assert.Equal(t, []int{0}, set.Labels, "0.6 ≤ 0.8 < 0.85")
	set, err = pred.Predict([]float64{0.15, 0.25, 0.6})
	require.NoError(t, err)
	assert.Equal(t, []int{2}, set.Labels, "class order does not matter")
	set, err = pred.Predict([]float64{0.4, 0.4, 0.2})
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, set.Labels, "tied classes share the score 0.8 and enter together")
	set, err = pred.Predict([]float64{0.45, 0.45, 0.1})
	require.NoError(t, err)
	assert.Equal(t, []int{}, set.Labels, "tied classes (0.9 > 0.8) stay out together")

	// Randomised: the score of the class is the mass above it plus u times
	// its own probability.
	cal.U = []float64{0, 0, 0}
	rp, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Score: uncertainty.ScoreAPS, Alpha: 0.5, Randomized: true})
	require.NoError(t, err)
	assert.InDelta(t, 0.5, rp.Threshold(), 1e-12) // scores 0, 0.5, 0.8
	set, err = rp.PredictRandomized([]float64{0.6, 0.3, 0.1}, 0.5)
	require.NoError(t, err)
	assert.Equal(t, []int{0}, set.Labels, "u·0.6 = 0.3 ≤ 0.5: class 0 in; 0.6 + u·0.3 = 0.75 > 0.5: class 1 out")
}

func TestPredictionSetUncertaintyMapping(t *testing.T) {
	th := uncertainty.DefaultThresholds()
	for _, tc := range []struct {
		name   string
		labels []int
		value  float64
		rec    claims.GateRecommendation
	}{
		{"singleton", []int{3}, 0, claims.RecommendExecute},
		{"half", []int{0, 1, 2, 3, 4, 5}, 0.5, claims.RecommendExecute},
		{"seven of eleven", []int{0, 1, 2, 3, 4, 5, 6}, 0.6, claims.RecommendExplain},
		{"all", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1, claims.RecommendDefer},
		{"empty is maximal", []int{}, 1, claims.RecommendRefuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := uncertainty.PredictionSet{Labels: tc.labels, Classes: 11, Alpha: 0.1}
			u, err := s.Uncertainty(th)
			require.NoError(t, err)
			assert.Equal(t, claims.MethodConformalSet, u.Method)
			assert.InDelta(t, tc.value, u.Value, 1e-15)
			assert.Equal(t, tc.rec, u.GateRecommendation)
			assert.Contains(t, u.Interpretation, "90% coverage")
		})
	}
	s := uncertainty.PredictionSet{Labels: []int{2, 5}, Classes: 11, Alpha: 0.1}
	u, err := s.UncertaintyFor(5, th)
	require.NoError(t, err)
	assert.Equal(t, claims.RecommendExecute, u.GateRecommendation)
	assert.InDelta(t, 0.1, u.Value, 1e-15)
	u, err = s.UncertaintyFor(4, th)
	require.NoError(t, err)
	assert.Equal(t, claims.RecommendRefuse, u.GateRecommendation, "a claim outside the set is rejected")
	assert.Equal(t, 1.0, u.Value)
	assert.Contains(t, u.Interpretation, "class 4 is outside")

	for _, bad := range []uncertainty.PredictionSet{
		{Labels: []int{1}, Classes: 1, Alpha: 0.1},
		{Labels: []int{1, 1}, Classes: 3, Alpha: 0.1},
		{Labels: []int{2, 1}, Classes: 3, Alpha: 0.1},
		{Labels: []int{3}, Classes: 3, Alpha: 0.1},
		{Labels: []int{0}, Classes: 3, Alpha: 0},
		{Labels: []int{0}, Classes: 3, Alpha: math.NaN()},
	} {
		_, err := bad.Uncertainty(th)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "%+v", bad)
	}
	_, err = s.UncertaintyFor(11, th)
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	_, err = s.Uncertainty(uncertainty.Thresholds{Execute: 2})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
}

func TestCalibrateRejectsBadInput(t *testing.T) {
	good := [][]float64{{0.6, 0.4}, {0.3, 0.7}, {0.5, 0.5}}
	labels := []int{0, 1, 0}
	for name, tc := range map[string]struct {
		data uncertainty.CalibrationSet
		opts uncertainty.ConformalOptions
	}{
		"alpha 0":             {uncertainty.CalibrationSet{Probs: good, Labels: labels}, uncertainty.ConformalOptions{Alpha: 0}},
		"alpha 1":             {uncertainty.CalibrationSet{Probs: good, Labels: labels}, uncertainty.ConformalOptions{Alpha: 1}},
		"alpha NaN":           {uncertainty.CalibrationSet{Probs: good, Labels: labels}, uncertainty.ConformalOptions{Alpha: math.NaN()}},
		"unknown score":       {uncertainty.CalibrationSet{Probs: good, Labels: labels}, uncertainty.ConformalOptions{Alpha: 0.5, Score: 9}},
		"randomised LAC":      {uncertainty.CalibrationSet{Probs: good, Labels: labels, U: []float64{0, 0, 0}}, uncertainty.ConformalOptions{Alpha: 0.5, Randomized: true}},
		"mismatched labels":   {uncertainty.CalibrationSet{Probs: good, Labels: labels[:2]}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"label out of range":  {uncertainty.CalibrationSet{Probs: good, Labels: []int{0, 2, 0}}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"negative label":      {uncertainty.CalibrationSet{Probs: good, Labels: []int{0, -1, 0}}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"ragged rows":         {uncertainty.CalibrationSet{Probs: [][]float64{{0.6, 0.4}, {0.2, 0.3, 0.5}, {1, 0}}, Labels: labels}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"one class":           {uncertainty.CalibrationSet{Probs: [][]float64{{1}, {1}, {1}}, Labels: []int{0, 0, 0}}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"NaN probability":     {uncertainty.CalibrationSet{Probs: [][]float64{{0.6, 0.4}, {math.NaN(), 0.7}, {0.5, 0.5}}, Labels: labels}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"negative prob":       {uncertainty.CalibrationSet{Probs: [][]float64{{1.2, -0.2}, {0.3, 0.7}, {0.5, 0.5}}, Labels: labels}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"not summing to 1":    {uncertainty.CalibrationSet{Probs: [][]float64{{0.6, 0.6}, {0.3, 0.7}, {0.5, 0.5}}, Labels: labels}, uncertainty.ConformalOptions{Alpha: 0.5}},
		"U without randomise": {uncertainty.CalibrationSet{Probs: good, Labels: labels, U: []float64{0, 0, 0}}, uncertainty.ConformalOptions{Alpha: 0.5, Score: uncertainty.ScoreAPS}},
		"U missing":           {uncertainty.CalibrationSet{Probs: good, Labels: labels}, uncertainty.ConformalOptions{Alpha: 0.5, Score: uncertainty.ScoreAPS, Randomized: true}},
		"U short":             {uncertainty.CalibrationSet{Probs: good, Labels: labels, U: []float64{0}}, uncertainty.ConformalOptions{Alpha: 0.5, Score: uncertainty.ScoreAPS, Randomized: true}},
		"U outside [0,1]":     {uncertainty.CalibrationSet{Probs: good, Labels: labels, U: []float64{0, 2, 0}}, uncertainty.ConformalOptions{Alpha: 0.5, Score: uncertainty.ScoreAPS, Randomized: true}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := uncertainty.Calibrate(tc.data, tc.opts)
			assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
			var ie *uncertainty.InputError
			assert.ErrorAs(t, err, &ie)
		})
	}
}

func TestPredictRejectsBadInput(t *testing.T) {
	cal := uncertainty.CalibrationSet{Probs: [][]float64{{0.6, 0.4}, {0.3, 0.7}, {0.5, 0.5}}, Labels: []int{0, 1, 0}}
	p, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.5})
	require.NoError(t, err)
	for _, probs := range [][]float64{nil, {1}, {0.2, 0.3, 0.5}, {math.NaN(), 0.5}, {0.5, math.Inf(1)}, {0.1, 0.1}} {
		_, err := p.Predict(probs)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "%v", probs)
	}
	_, err = p.PredictRandomized([]float64{0.5, 0.5}, 0.5)
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "deterministic predictor")
	_, err = uncertainty.Predictor{}.Predict([]float64{0.5, 0.5})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "zero Predictor")

	cal.U = []float64{0.1, 0.2, 0.3}
	rp, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.5, Score: uncertainty.ScoreAPS, Randomized: true})
	require.NoError(t, err)
	_, err = rp.Predict([]float64{0.5, 0.5})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "randomised predictor needs u")
	for _, u := range []float64{-0.1, 1.1, math.NaN()} {
		_, err = rp.PredictRandomized([]float64{0.5, 0.5}, u)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "u=%v", u)
	}
	_, err = uncertainty.ConformalQuantile([]float64{1, math.NaN(), 2}, 0.5)
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	for _, a := range []float64{0, 1, -0.5, 2, math.NaN(), math.Inf(1)} {
		_, err = uncertainty.ConformalRank(10, a)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "α=%v", a)
	}
	_, err = uncertainty.ConformalRank(-1, 0.1)
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
}

func TestPredictorIsImmutable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cal := synthSet(r, 3, 200)
	p, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.2, ClassConditional: true})
	require.NoError(t, err)
	q, n := p.ClassThresholds()
	require.Len(t, q, 3)
	assert.Equal(t, 200, n[0]+n[1]+n[2])
	assert.Equal(t, slices.Max(q), p.Threshold())
	q[0], n[0] = 99, 99
	q2, n2 := p.ClassThresholds()
	assert.NotEqual(t, 99.0, q2[0])
	assert.NotEqual(t, 99, n2[0])
	// Mutating the calibration data afterwards changes nothing.
	probs, _ := synthExample(r, 3)
	before, err := p.Predict(probs)
	require.NoError(t, err)
	for i := range cal.Probs {
		cal.Probs[i][0], cal.Labels[i] = 0, 0
	}
	after, err := p.Predict(probs)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	mq, mn := uncertainty.Predictor{}.ClassThresholds()
	assert.Nil(t, mq)
	assert.Nil(t, mn)
}

func ExampleScore_String() {
	fmt.Println(uncertainty.ScoreLAC, uncertainty.ScoreAPS, uncertainty.Score(7))
	// Output: LAC APS Score(7)
}

// naiveAPS is the definition of the APS score, summing the probabilities
// in decreasing order: Σ_{j: p_j ≥ p_y} p_j, or with randomisation
// Σ_{j: p_j > p_y} p_j + u·p_y.
func naiveAPS(probs []float64, y int, u float64, randomized bool) float64 {
	desc := slices.Sorted(slices.Values(probs))
	slices.Reverse(desc)
	var s float64
	for _, v := range desc {
		if v > probs[y] || (!randomized && v == probs[y]) {
			s += v
		}
	}
	if randomized {
		s += u * probs[y]
	}
	return s
}

// Guarantee: prediction sets are exactly {y : s(x, y) ≤ q̂} for the score's
// definition, ties included, for every score and calibration mode.
func TestPredictionSetMatchesScoreDefinition(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(2, 7).Draw(t, "classes")
		// Quantised probabilities so that ties are common.
		row := func(label string) []float64 {
			w := rapid.SliceOfN(rapid.IntRange(0, 4), k, k).Filter(func(w []int) bool {
				return slices.Max(w) > 0
			}).Draw(t, label)
			var sum float64
			for _, v := range w {
				sum += float64(v)
			}
			p := make([]float64, k)
			for i, v := range w {
				p[i] = float64(v) / sum
			}
			return p
		}
		score := rapid.SampledFrom([]uncertainty.Score{uncertainty.ScoreLAC, uncertainty.ScoreAPS}).Draw(t, "score")
		randomized := score == uncertainty.ScoreAPS && rapid.Bool().Draw(t, "randomized")
		mondrian := rapid.Bool().Draw(t, "mondrian")
		n := rapid.IntRange(30, 60).Draw(t, "n")
		var cal uncertainty.CalibrationSet
		for i := range n {
			cal.Probs = append(cal.Probs, row(fmt.Sprint("cal", i)))
			cal.Labels = append(cal.Labels, i%k)
			if randomized {
				cal.U = append(cal.U, rapid.Float64Range(0, 1).Draw(t, "u"))
			}
		}
		p, err := uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Score: score, Alpha: 0.5, Randomized: randomized, ClassConditional: mondrian})
		require.NoError(t, err)
		q, _ := p.ClassThresholds()
		probs := row("test")
		u := rapid.Float64Range(0, 1).Draw(t, "test u")
		var set uncertainty.PredictionSet
		if randomized {
			set, err = p.PredictRandomized(probs, u)
		} else {
			set, err = p.Predict(probs)
		}
		require.NoError(t, err)
		want := []int{}
		for y := range probs {
			s := 1 - probs[y]
			if score == uncertainty.ScoreAPS {
				s = naiveAPS(probs, y, u, randomized)
			}
			th := p.Threshold()
			if mondrian {
				th = q[y]
			}
			if s <= th {
				want = append(want, y)
			}
		}
		if !slices.Equal(set.Labels, want) {
			t.Fatalf("set %v, definition gives %v (probs %v)", set.Labels, want, probs)
		}
	})
}
