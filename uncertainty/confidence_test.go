package uncertainty_test

// The guarantees of the confidence score and its calibrators:
//
//   - Calibrated confidences stay in [0, 1], Platt scaling is monotone,
//     in floating point too: TestCalibratorsStayInUnitInterval,
//     TestPlattMonotoneInFloatingPoint.
//   - Calibration reduces ECE on held-out data:
//     TestCalibrationReducesECEOnHeldOutData.

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/uncertainty"
)

func TestECEByHand(t *testing.T) {
	// Two bins. Bin 0 ([0, 0.5)): confidences 0.2, 0.4 (mean 0.3), one of
	// two correct (0.5): gap 0.2. Bin 1 ([0.5, 1]): 0.9, 1.0, 0.8, 0.5
	// (mean 0.8), three of four correct (0.75): gap 0.05.
	// ECE = 2/6·0.2 + 4/6·0.05 = 0.1.
	conf := []float64{0.2, 0.4, 0.9, 1.0, 0.8, 0.5}
	correct := []bool{true, false, true, true, false, true}
	e, err := uncertainty.ECE(conf, correct, 2)
	require.NoError(t, err)
	assert.InDelta(t, 0.1, e, 1e-15)
	// One bin: |mean confidence − accuracy| = |3.8/6 − 4/6|.
	e, err = uncertainty.ECE(conf, correct, 1)
	require.NoError(t, err)
	assert.InDelta(t, 0.2/6, e, 1e-15)
	// Perfectly confident and always right.
	e, err = uncertainty.ECE([]float64{1, 1}, []bool{true, true}, 10)
	require.NoError(t, err)
	assert.Equal(t, 0.0, e)
	// Always 1 and always wrong: the worst case.
	e, err = uncertainty.ECE([]float64{1, 1}, []bool{false, false}, 10)
	require.NoError(t, err)
	assert.Equal(t, 1.0, e)
}

func TestCalibrationRejectsBadInput(t *testing.T) {
	for name, tc := range map[string]struct {
		conf    []float64
		correct []bool
		bins    int
	}{
		"mismatched lengths": {[]float64{0.5, 0.6}, []bool{true}, 10},
		"empty":              {nil, nil, 10},
		"NaN":                {[]float64{0.5, math.NaN()}, []bool{true, false}, 10},
		"above 1":            {[]float64{0.5, 1.5}, []bool{true, false}, 10},
		"below 0":            {[]float64{-0.1, 0.5}, []bool{true, false}, 10},
		"zero bins":          {[]float64{0.5}, []bool{true}, 0},
		"too many bins":      {[]float64{0.5}, []bool{true}, uncertainty.MaxBins + 1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := uncertainty.ECE(tc.conf, tc.correct, tc.bins)
			assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
			_, err = uncertainty.FitHistogram(tc.conf, tc.correct, tc.bins)
			assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
			_, err = uncertainty.EvaluateCalibration(uncertainty.Platt{A: 1}, tc.conf, tc.correct, tc.bins)
			assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
			if tc.bins == 10 {
				_, err = uncertainty.FitPlatt(tc.conf, tc.correct)
				assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
			}
		})
	}
	_, err := uncertainty.EvaluateCalibration(nil, []float64{0.5}, []bool{true}, 1)
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	_, err = uncertainty.EvaluateCalibration(uncertainty.Platt{A: math.NaN()}, []float64{0.5}, []bool{true}, 1)
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "a calibrator producing NaN is caught")
}

func TestHistogramBinning(t *testing.T) {
	conf := []float64{0.05, 0.15, 0.15, 0.95, 0.92, 0.91, 0.99}
	correct := []bool{false, true, false, true, true, false, true}
	h, err := uncertainty.FitHistogram(conf, correct, 10)
	require.NoError(t, err)
	assert.Equal(t, 10, h.Bins())
	assert.Equal(t, "histogram binning", h.Method())
	assert.Equal(t, 0.0, h.Calibrate(0.01))
	assert.Equal(t, 0.5, h.Calibrate(0.1))
	assert.Equal(t, 0.75, h.Calibrate(1))
	assert.Equal(t, 0.75, h.Calibrate(2), "clamped into [0, 1]")
	assert.Equal(t, 0.55, h.Calibrate(0.55), "empty bin keeps the confidence")
	assert.True(t, math.IsNaN(h.Calibrate(math.NaN())))
	acc, count := h.BinAccuracy()
	assert.Equal(t, []int{1, 2, 0, 0, 0, 0, 0, 0, 0, 4}, count)
	acc[0] = 42
	acc2, _ := h.BinAccuracy()
	assert.Equal(t, 0.0, acc2[0], "BinAccuracy returns a copy")
	assert.Equal(t, 0.3, uncertainty.Histogram{}.Calibrate(0.3), "zero Histogram is the identity")
	// On its own fitting data, histogram binning has zero ECE with the
	// same bins.
	cal := make([]float64, len(conf))
	for i, c := range conf {
		cal[i] = h.Calibrate(c)
	}
	e, err := uncertainty.ECE(cal, correct, 10)
	require.NoError(t, err)
	assert.InDelta(t, 0, e, 1e-15)
}

// overconfident draws labelled data from a model whose stated confidence c
// is right only with probability c², a typical overconfident model.
func overconfident(r *rand.Rand, n int) ([]float64, []bool) {
	conf := make([]float64, n)
	correct := make([]bool, n)
	for i := range conf {
		conf[i] = 0.5 + 0.5*r.Float64()
		correct[i] = r.Float64() < conf[i]*conf[i]
	}
	return conf, correct
}

func TestCalibrationReducesECEOnHeldOutData(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 42))
	fitC, fitY := overconfident(r, 4000)
	testC, testY := overconfident(r, 4000)
	hist, err := uncertainty.FitHistogram(fitC, fitY, 15)
	require.NoError(t, err)
	platt, err := uncertainty.FitPlatt(fitC, fitY)
	require.NoError(t, err)
	for _, c := range []uncertainty.Calibrator{hist, platt} {
		rep, err := uncertainty.EvaluateCalibration(c, testC, testY, 15)
		require.NoError(t, err)
		t.Logf("%s: ECE %.4f raw → %.4f calibrated (A, B = %v)", rep.Method, rep.Raw, rep.Calibrated, platt)
		assert.Equal(t, 4000, rep.N)
		assert.Equal(t, 15, rep.Bins)
		assert.Greater(t, rep.Raw, 0.1, "the synthetic model is overconfident")
		assert.Less(t, rep.Calibrated, 0.04, "%s calibrates it", rep.Method)
	}
}

func TestPlattRecoversKnownParameters(t *testing.T) {
	// Data generated from σ(2·logit(c) − 0.5): the fit should find A ≈ 2,
	// B ≈ −0.5.
	r := rand.New(rand.NewPCG(5, 6))
	const n = 20000
	conf := make([]float64, n)
	correct := make([]bool, n)
	truth := uncertainty.Platt{A: 2, B: -0.5}
	for i := range conf {
		conf[i] = 0.02 + 0.96*r.Float64()
		correct[i] = r.Float64() < truth.Calibrate(conf[i])
	}
	p, err := uncertainty.FitPlatt(conf, correct)
	require.NoError(t, err)
	assert.InDelta(t, 2, p.A, 0.1)
	assert.InDelta(t, -0.5, p.B, 0.1)
	assert.Equal(t, "Platt scaling", p.Method())
	// Separable data still gives finite parameters.
	p, err = uncertainty.FitPlatt([]float64{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true})
	require.NoError(t, err)
	assert.False(t, math.IsNaN(p.A) || math.IsInf(p.A, 0) || math.IsNaN(p.B) || math.IsInf(p.B, 0), "%+v", p)
	// All equal confidences, single class.
	p, err = uncertainty.FitPlatt([]float64{0.7, 0.7, 0.7}, []bool{true, true, true})
	require.NoError(t, err)
	assert.InDelta(t, 0.8, p.Calibrate(0.7), 1e-6, "smoothed target (3+1)/(3+2)")
}

// Guarantee: calibrated confidences stay in [0, 1], Platt scaling with
// A > 0 is monotone, and the identity Platt{A: 1} changes nothing.
func TestCalibratorsStayInUnitInterval(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "n")
		conf := rapid.SliceOfN(rapid.Float64Range(0, 1), n, n).Draw(t, "conf")
		correct := rapid.SliceOfN(rapid.Bool(), n, n).Draw(t, "correct")
		bins := rapid.IntRange(1, 30).Draw(t, "bins")
		h, err := uncertainty.FitHistogram(conf, correct, bins)
		require.NoError(t, err)
		p, err := uncertainty.FitPlatt(conf, correct)
		require.NoError(t, err)
		x := rapid.Float64Range(0, 1).Draw(t, "x")
		y := rapid.Float64Range(x, 1).Draw(t, "y")
		for _, c := range []uncertainty.Calibrator{h, p} {
			if v := c.Calibrate(x); v < 0 || v > 1 || math.IsNaN(v) {
				t.Fatalf("%s(%v) = %v", c.Method(), x, v)
			}
		}
		if p.A > 0 && p.Calibrate(x) > p.Calibrate(y) {
			t.Fatalf("Platt %+v not monotone: f(%v)=%v > f(%v)=%v", p, x, p.Calibrate(x), y, p.Calibrate(y))
		}
		if d := math.Abs(uncertainty.Platt{A: 1}.Calibrate(x) - x); x > 1e-9 && x < 1-1e-9 && d > 1e-12 {
			t.Fatalf("identity Platt moved %v by %v", x, d)
		}
		e, err := uncertainty.ECE(conf, correct, bins)
		require.NoError(t, err)
		if e < 0 || e > 1 {
			t.Fatalf("ECE %v", e)
		}
	})
}

func TestConfidenceScore(t *testing.T) {
	u, err := uncertainty.ConfidenceScore(0.9, uncertainty.ConfidenceOptions{})
	require.NoError(t, err)
	assert.Equal(t, claims.MethodConfidenceScore, u.Method)
	assert.InDelta(t, 0.1, u.Value, 1e-15)
	assert.Equal(t, claims.RecommendExecute, u.GateRecommendation)
	assert.Contains(t, u.Interpretation, "uncalibrated")

	// An overconfident model's 0.9 is really 0.81 correct; the calibrator
	// (here Platt with known parameters) says so, and the recommendation
	// follows the calibrated value.
	rep := uncertainty.CalibrationReport{Method: "Platt scaling", N: 500, Bins: 10, Raw: 0.12, Calibrated: 0.02}
	u, err = uncertainty.ConfidenceScore(0.6, uncertainty.ConfidenceOptions{
		Calibrator: uncertainty.Platt{A: 1, B: -1},
		Report:     &rep,
	})
	require.NoError(t, err)
	want := 1 - uncertainty.Platt{A: 1, B: -1}.Calibrate(0.6)
	assert.InDelta(t, want, u.Value, 1e-15)
	assert.Equal(t, claims.RecommendExplain, u.GateRecommendation, "%v", u.Value)
	assert.Contains(t, u.Interpretation, "after Platt scaling")
	assert.Contains(t, u.Interpretation, "ECE 0.120 raw, 0.020 calibrated (500 labelled examples, 10 bins)")

	u, err = uncertainty.ConfidenceScore(0.1, uncertainty.ConfidenceOptions{})
	require.NoError(t, err)
	assert.Equal(t, claims.RecommendDefer, u.GateRecommendation)
	strict := uncertainty.Thresholds{Execute: 0, Explain: 0}
	u, err = uncertainty.ConfidenceScore(0.99, uncertainty.ConfidenceOptions{Thresholds: &strict})
	require.NoError(t, err)
	assert.Equal(t, claims.RecommendDefer, u.GateRecommendation, "zero thresholds defer anything above 0, as a zero claims.Policy does")

	for _, c := range []float64{math.NaN(), -0.01, 1.01, math.Inf(1)} {
		_, err := uncertainty.ConfidenceScore(c, uncertainty.ConfidenceOptions{})
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "%v", c)
	}
	_, err = uncertainty.ConfidenceScore(0.5, uncertainty.ConfidenceOptions{Calibrator: uncertainty.Platt{A: math.NaN()}})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	_, err = uncertainty.ConfidenceScore(0.5, uncertainty.ConfidenceOptions{Thresholds: &uncertainty.Thresholds{Execute: -1}})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
}

// TestPlattMonotoneInFloatingPoint: Platt scaling with A > 0 keeps the
// order of confidences in floating point too, down to an A so small that
// every output differs from σ(B) by a rounding error (a fit found such a
// Platt on all-wrong data, and e^z/(1+e^z) put f(0.25) one rounding above
// f(0.5)).
func TestPlattMonotoneInFloatingPoint(t *testing.T) {
	p := uncertainty.Platt{A: 1.0821448998558299e-16, B: -1.7917594692280523}
	assert.LessOrEqual(t, p.Calibrate(0.25), p.Calibrate(0.5))
	for _, a := range []float64{1e-17, 1e-16, 3e-16, 1e-15, 1e-10, 1, 40} {
		for b := -40.0; b <= 40; b += 0.37 {
			p := uncertainty.Platt{A: a, B: b}
			prev := p.Calibrate(0)
			for x := 0.001; x <= 1; x += 0.001 {
				v := p.Calibrate(x)
				if v < prev {
					t.Fatalf("Platt %+v: f(%v) = %v below f(%v) = %v", p, x, v, x-0.001, prev)
				}
				prev = v
			}
		}
	}
}
