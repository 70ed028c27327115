package uncertainty

import (
	"fmt"
	"math"

	"github.com/verity-go/verity/claims"
)

// MaxBins bounds the number of bins of a histogram or an ECE estimate.
const MaxBins = 10000

// Calibrator maps a model's stated confidence to a calibrated probability
// of being correct. Both lie in [0, 1].
type Calibrator interface {
	// Calibrate maps a confidence in [0, 1] to a probability in [0, 1].
	// Inputs outside [0, 1] are clamped into it; NaN gives NaN.
	Calibrate(confidence float64) float64
	// Method names the calibration method for interpretations and logs.
	Method() string
}

// Histogram is histogram-binning calibration (Zadrozny & Elkan, 2001): the
// unit interval is cut into equal-width bins and a confidence is replaced by
// the accuracy observed, on the fitting data, in its bin. A bin that held no
// fitting data leaves the confidence unchanged. Build one with FitHistogram.
type Histogram struct {
	acc   []float64 // observed accuracy per bin
	count []int     // fitting examples per bin
}

// FitHistogram fits histogram binning with the given number of equal-width
// bins on labelled data: conf[i] is the stated confidence of prediction i
// and correct[i] whether it was right.
func FitHistogram(conf []float64, correct []bool, bins int) (Histogram, error) {
	if err := checkLabelled(conf, correct); err != nil {
		return Histogram{}, err
	}
	if err := checkBins(bins); err != nil {
		return Histogram{}, err
	}
	h := Histogram{acc: make([]float64, bins), count: make([]int, bins)}
	for i, c := range conf {
		b := binOf(c, bins)
		h.count[b]++
		if correct[i] {
			h.acc[b]++
		}
	}
	for b, n := range h.count {
		if n > 0 {
			h.acc[b] /= float64(n)
		}
	}
	return h, nil
}

// Calibrate returns the fitted accuracy of c's bin, or c itself when the bin
// was empty (or the Histogram is the zero value).
func (h Histogram) Calibrate(c float64) float64 {
	c = clampConf(c)
	if len(h.acc) == 0 || math.IsNaN(c) {
		return c
	}
	b := binOf(c, len(h.acc))
	if h.count[b] == 0 {
		return c
	}
	return h.acc[b]
}

// Method returns "histogram binning".
func (h Histogram) Method() string { return "histogram binning" }

// Bins returns the number of bins.
func (h Histogram) Bins() int { return len(h.acc) }

// BinAccuracy returns the fitted accuracy of each bin and how many fitting
// examples it held (fresh slices).
func (h Histogram) BinAccuracy() (acc []float64, count []int) {
	return append([]float64(nil), h.acc...), append([]int(nil), h.count...)
}

// Platt is Platt scaling (Platt, 1999) of a confidence p:
//
//	calibrated = σ(A·logit(p) + B),  σ(z) = 1/(1+e^−z).
//
// A = 1, B = 0 is the identity; B = 0 and A = 1/T is temperature scaling
// with temperature T. Confidences are clipped to [1e−12, 1−1e−12] before the
// logit. Fit one with FitPlatt or set A and B directly.
type Platt struct {
	A, B float64
}

const logitClip = 1e-12

// Calibrate returns σ(A·logit(c) + B).
func (p Platt) Calibrate(c float64) float64 {
	return sigmoid(p.A*logit(clampConf(c)) + p.B)
}

// Method returns "Platt scaling".
func (p Platt) Method() string { return "Platt scaling" }

// FitPlatt fits Platt scaling to labelled data by minimising the
// cross-entropy with Newton's method and a backtracking line search, using
// Platt's smoothed targets (N₊+1)/(N₊+2) and 1/(N₋+2) so that separable
// data still gives finite parameters (Lin, Lin & Weng, 2007). The fit is
// deterministic.
func FitPlatt(conf []float64, correct []bool) (Platt, error) {
	if err := checkLabelled(conf, correct); err != nil {
		return Platt{}, err
	}
	var pos, neg float64
	for _, y := range correct {
		if y {
			pos++
		} else {
			neg++
		}
	}
	hi, lo := (pos+1)/(pos+2), 1/(neg+2)
	f := make([]float64, len(conf))
	t := make([]float64, len(conf))
	for i, c := range conf {
		f[i] = logit(clampConf(c))
		t[i] = lo
		if correct[i] {
			t[i] = hi
		}
	}
	loss := func(a, b float64) float64 {
		var s float64
		for i := range f {
			z := a*f[i] + b
			s += t[i]*softplus(-z) + (1-t[i])*softplus(z)
		}
		return s
	}
	a, b := 1.0, 0.0
	cur := loss(a, b)
	for iter := 0; iter < 100; iter++ {
		var ga, gb, haa, hab, hbb float64
		for i := range f {
			p := sigmoid(a*f[i] + b)
			d := p - t[i]
			ga += d * f[i]
			gb += d
			w := p * (1 - p)
			haa += w * f[i] * f[i]
			hab += w * f[i]
			hbb += w
		}
		if math.Abs(ga) < 1e-9*float64(len(f)) && math.Abs(gb) < 1e-9*float64(len(f)) {
			break
		}
		reg := 1e-12 * (1 + haa + hbb)
		haa += reg
		hbb += reg
		det := haa*hbb - hab*hab
		if det <= 0 || math.IsNaN(det) {
			break
		}
		da := -(hbb*ga - hab*gb) / det
		db := -(haa*gb - hab*ga) / det
		slope := ga*da + gb*db
		step := 1.0
		improved := false
		for step >= 1e-10 {
			na, nb := a+step*da, b+step*db
			if l := loss(na, nb); l <= cur+1e-4*step*slope {
				a, b, cur = na, nb, l
				improved = true
				break
			}
			step /= 2
		}
		if !improved {
			break
		}
	}
	return Platt{A: a, B: b}, nil
}

// ECE returns the expected calibration error of confidences against
// outcomes with equal-width bins (Guo et al., 2017):
//
//	ECE = Σ_b (|B_b|/n) · |acc(B_b) − conf(B_b)|,
//
// where bin b holds the confidences in [b/B, (b+1)/B) (the last bin also
// holds 1), acc is the share of correct predictions and conf the mean
// confidence in the bin. It lies in [0, 1]; 0 is perfect calibration.
func ECE(conf []float64, correct []bool, bins int) (float64, error) {
	if err := checkLabelled(conf, correct); err != nil {
		return 0, err
	}
	if err := checkBins(bins); err != nil {
		return 0, err
	}
	return ece(conf, correct, bins), nil
}

func ece(conf []float64, correct []bool, bins int) float64 {
	sumConf := make([]float64, bins)
	sumAcc := make([]float64, bins)
	count := make([]int, bins)
	for i, c := range conf {
		b := binOf(c, bins)
		count[b]++
		sumConf[b] += c
		if correct[i] {
			sumAcc[b]++
		}
	}
	var e float64
	for b, n := range count {
		if n > 0 {
			e += math.Abs(sumAcc[b]-sumConf[b]) / float64(len(conf))
		}
	}
	return clamp(e, 0, 1)
}

// CalibrationReport compares a calibrator's ECE with the raw confidences'
// on labelled data.
type CalibrationReport struct {
	Method     string  // the calibrator's Method
	N          int     // number of labelled examples
	Bins       int     // number of ECE bins
	Raw        float64 // ECE of the raw confidences
	Calibrated float64 // ECE of the calibrated confidences
}

// EvaluateCalibration measures c on labelled data: the ECE of the raw and of
// the calibrated confidences, with the given number of bins. Use held-out
// data (not the data c was fitted on) for an honest figure.
func EvaluateCalibration(c Calibrator, conf []float64, correct []bool, bins int) (CalibrationReport, error) {
	if c == nil {
		return CalibrationReport{}, invalid("calibrator", -1, "nil Calibrator")
	}
	if err := checkLabelled(conf, correct); err != nil {
		return CalibrationReport{}, err
	}
	if err := checkBins(bins); err != nil {
		return CalibrationReport{}, err
	}
	cal := make([]float64, len(conf))
	for i, p := range conf {
		q := c.Calibrate(p)
		if err := checkUnit("calibrated", i, q); err != nil {
			return CalibrationReport{}, err
		}
		cal[i] = q
	}
	return CalibrationReport{
		Method:     c.Method(),
		N:          len(conf),
		Bins:       bins,
		Raw:        ece(conf, correct, bins),
		Calibrated: ece(cal, correct, bins),
	}, nil
}

// ConfidenceOptions configure ConfidenceScore.
type ConfidenceOptions struct {
	// Calibrator, when set, maps the stated confidence to a calibrated
	// probability first.
	Calibrator Calibrator
	// Report, when set, is the calibration's measured ECE; it is quoted in
	// the interpretation so that the claim carries how trustworthy the
	// number is.
	Report *CalibrationReport
	// Thresholds map the uncertainty to a recommendation; nil means
	// DefaultThresholds().
	Thresholds *Thresholds
}

// ConfidenceScore turns a model's stated confidence in [0, 1] into an
// uncertainty value 1 − confidence, after the optional calibration step.
// It is the specification's baseline: model-dependent and often
// overconfident, which is what calibration and the ECE report are for.
func ConfidenceScore(confidence float64, opts ConfidenceOptions) (claims.Uncertainty, error) {
	if err := checkUnit("confidence", -1, confidence); err != nil {
		return claims.Uncertainty{}, err
	}
	th, err := resolve(opts.Thresholds)
	if err != nil {
		return claims.Uncertainty{}, err
	}
	p := confidence
	text := fmt.Sprintf("stated confidence %.3f, uncalibrated", confidence)
	if opts.Calibrator != nil {
		p = opts.Calibrator.Calibrate(confidence)
		if err := checkUnit("calibrated confidence", -1, p); err != nil {
			return claims.Uncertainty{}, err
		}
		text = fmt.Sprintf("stated confidence %.3f, %.3f after %s", confidence, p, opts.Calibrator.Method())
	}
	if r := opts.Report; r != nil {
		text += fmt.Sprintf("; ECE %.3f raw, %.3f calibrated (%d labelled examples, %d bins)", r.Raw, r.Calibrated, r.N, r.Bins)
	}
	v := clamp(1-p, 0, 1)
	return claims.Uncertainty{
		Method:             claims.MethodConfidenceScore,
		Value:              v,
		Interpretation:     text,
		GateRecommendation: recommend(v, th),
	}, nil
}

func checkLabelled(conf []float64, correct []bool) error {
	if len(conf) != len(correct) {
		return invalid("correct", -1, "%d outcomes for %d confidences", len(correct), len(conf))
	}
	if len(conf) == 0 {
		return invalid("conf", -1, "no labelled examples")
	}
	for i, c := range conf {
		if err := checkUnit("conf", i, c); err != nil {
			return err
		}
	}
	return nil
}

func checkBins(bins int) error {
	if bins < 1 || bins > MaxBins {
		return invalid("bins", -1, "%d bins; need 1 to %d", bins, MaxBins)
	}
	return nil
}

// binOf returns the equal-width bin of c in [0, 1]: ⌊c·bins⌋, with 1 in the
// last bin.
func binOf(c float64, bins int) int {
	b := int(c * float64(bins))
	return min(max(b, 0), bins-1)
}

// clampConf clamps c into [0, 1]; NaN stays NaN.
func clampConf(c float64) float64 {
	if math.IsNaN(c) {
		return c
	}
	return clamp(c, 0, 1)
}

func logit(p float64) float64 {
	p = clamp(p, logitClip, 1-logitClip)
	return math.Log(p) - math.Log1p(-p)
}

// sigmoid returns 1/(1+e^−z). The one formula, unlike the e^z/(1+e^z)
// often used for z < 0, is monotone in floating point too (each step rounds
// monotonically), so Platt scaling with A > 0 never reverses two
// confidences; for z < −709 e^−z overflows to +Inf and the result is 0.
func sigmoid(z float64) float64 {
	return 1 / (1 + math.Exp(-z))
}

// softplus returns ln(1 + e^x) without overflow.
func softplus(x float64) float64 {
	return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
}
