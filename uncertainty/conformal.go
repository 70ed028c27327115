package uncertainty

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/verity-go/verity/claims"
)

// Score selects the conformity score of split conformal classification.
// Larger scores mean the class conforms less to the model's prediction.
type Score int

// The conformity scores. The zero Score is none of them; in
// ConformalOptions it stands for ScoreLAC.
const (
	// ScoreLAC is LAC (least ambiguous set-valued classifier; Sadinle,
	// Lei & Wasserman, 2019): s(x, y) = 1 − p̂_y. Gives the smallest sets
	// on average; coverage is marginal, so hard inputs may be
	// under-covered.
	ScoreLAC Score = iota + 1
	// ScoreAPS is APS (adaptive prediction sets; Romano, Sesia & Candès,
	// 2020): the probability mass of the classes at least as likely as y,
	// s(x, y) = Σ_{j: p̂_j ≥ p̂_y} p̂_j. Sets grow with the model's
	// uncertainty about the input. With ConformalOptions.Randomized the
	// score is Σ_{j: p̂_j > p̂_y} p̂_j + u·p̂_y for a caller-supplied uniform
	// u in [0, 1]: the class at the set's boundary then enters with the
	// right probability rather than always, which gives smaller sets on
	// average (Romano et al.).
	ScoreAPS
)

// String returns "LAC" or "APS".
func (s Score) String() string {
	switch s {
	case ScoreLAC:
		return "LAC"
	case ScoreAPS:
		return "APS"
	}
	return fmt.Sprintf("Score(%d)", int(s))
}

// SumTolerance is how far the entries of a probability vector may sum from
// 1 (float32 softmax outputs over many classes drift by about 1e−5).
const SumTolerance = 1e-4

// ConformalOptions configure Calibrate.
type ConformalOptions struct {
	// Score is the conformity score; zero means ScoreLAC.
	Score Score
	// Alpha is the miscoverage: prediction sets contain the true class
	// with probability at least 1−Alpha. In (0, 1).
	Alpha float64
	// ClassConditional selects Mondrian (class-conditional) calibration
	// (Vovk et al., 2005): one threshold per class, each taken from the
	// calibration examples of that class, so that coverage ≥ 1−Alpha holds
	// for every class separately, not only on average. Every class needs
	// enough calibration examples of its own.
	ClassConditional bool
	// Randomized selects the randomised APS score; calibration then needs
	// CalibrationSet.U and prediction PredictRandomized. APS only.
	Randomized bool
}

// CalibrationSet is held-out labelled data, exchangeable with the inputs the
// predictor will see: the model's class probabilities for each example and
// its true class.
type CalibrationSet struct {
	// Probs[i] is the predicted probability of each class for example i.
	// Every row has the same number of classes K ≥ 2, entries in [0, 1]
	// summing to 1 within SumTolerance.
	Probs [][]float64
	// Labels[i] is the true class of example i, in [0, K).
	Labels []int
	// U[i] is a uniform random value in [0, 1] for example i, drawn by the
	// caller; only (and then always) with randomised APS.
	U []float64
}

// Predictor holds calibrated split-conformal thresholds. It is an immutable
// value; build it with Calibrate.
type Predictor struct {
	opts    ConformalOptions
	classes int
	n       int
	q       float64   // marginal threshold
	classQ  []float64 // per-class thresholds (ClassConditional)
	classN  []int     // per-class calibration counts (ClassConditional)
}

// Calibrate computes split-conformal thresholds from a calibration set: the
// conformity score of every example at its true class, then the
// ⌈(n+1)(1−α)⌉-th smallest (ConformalQuantile), either over all n examples
// or, with ClassConditional, per class. When a set is too small for α
// Calibrate refuses with a *TooSmallError (errors.Is
// ErrCalibrationTooSmall; with ClassConditional, one error naming every
// short class, in which errors.As finds each class's *TooSmallError).
// Malformed input is an *InputError.
func Calibrate(data CalibrationSet, opts ConformalOptions) (Predictor, error) {
	if opts.Score == 0 {
		opts.Score = ScoreLAC
	}
	if opts.Score != ScoreLAC && opts.Score != ScoreAPS {
		return Predictor{}, invalid("Score", -1, "unknown score %v", opts.Score)
	}
	if opts.Randomized && opts.Score != ScoreAPS {
		return Predictor{}, invalid("Randomized", -1, "randomisation applies to APS only")
	}
	if err := checkAlpha(opts.Alpha); err != nil {
		return Predictor{}, err
	}
	n := len(data.Probs)
	if len(data.Labels) != n {
		return Predictor{}, invalid("Labels", -1, "%d labels for %d probability rows", len(data.Labels), n)
	}
	if opts.Randomized != (len(data.U) > 0) || (opts.Randomized && len(data.U) != n) {
		return Predictor{}, invalid("U", -1, "%d random values for %d examples (randomised: %v)", len(data.U), n, opts.Randomized)
	}
	a := decimal(opts.Alpha)
	if n == 0 {
		return Predictor{}, &TooSmallError{Class: -1, N: 0, Need: minCalibration(a), Alpha: opts.Alpha}
	}
	if n > maxCalibration {
		return Predictor{}, invalid("Probs", -1, "too many examples")
	}
	k := len(data.Probs[0])
	if k < 2 {
		return Predictor{}, invalid("Probs", 0, "%d classes; need at least 2", k)
	}
	var sc scorer
	scores := make([]float64, n)
	for i, row := range data.Probs {
		if len(row) != k {
			return Predictor{}, invalid("Probs", i, "%d classes, the first row has %d", len(row), k)
		}
		if err := checkProbs("Probs", i, row); err != nil {
			return Predictor{}, err
		}
		y := data.Labels[i]
		if y < 0 || y >= k {
			return Predictor{}, invalid("Labels", i, "class %d outside [0, %d)", y, k)
		}
		u := 0.0
		if opts.Randomized {
			u = data.U[i]
			if err := checkUnit("U", i, u); err != nil {
				return Predictor{}, err
			}
		}
		scores[i] = sc.score(opts, row, y, u)
	}
	p := Predictor{opts: opts, classes: k, n: n}
	if !opts.ClassConditional {
		r, err := conformalRank(n, opts.Alpha, a)
		if err != nil {
			return Predictor{}, err
		}
		p.q = kthSmallest(scores, r-1)
		return p, nil
	}
	byClass := make([][]float64, k)
	for i, y := range data.Labels {
		byClass[y] = append(byClass[y], scores[i])
	}
	p.classQ = make([]float64, k)
	p.classN = make([]int, k)
	var short tooSmallErrors
	for y, s := range byClass {
		p.classN[y] = len(s)
		r, err := conformalRank(len(s), opts.Alpha, a)
		var ts *TooSmallError
		if errors.As(err, &ts) {
			ts.Class = y
			short = append(short, ts)
			continue
		}
		if err != nil {
			return Predictor{}, err
		}
		p.classQ[y] = kthSmallest(s, r-1)
	}
	if len(short) > 0 {
		return Predictor{}, short
	}
	// The marginal threshold of a Mondrian predictor is the largest class
	// threshold: the most permissive one any class uses.
	p.q = slices.Max(p.classQ)
	return p, nil
}

// Predict returns the prediction set for an input with class probabilities
// probs: every class y whose conformity score is at most the calibrated
// threshold (its class's threshold under ClassConditional). The set may be
// empty (no class is plausible at level α: the input is unlike the
// calibration data) or hold every class. Under exchangeability it contains
// the true class with probability at least 1−α.
func (p Predictor) Predict(probs []float64) (PredictionSet, error) {
	if p.opts.Randomized {
		return PredictionSet{}, invalid("u", -1, "randomised predictor: use PredictRandomized")
	}
	return p.predict(probs, 0)
}

// PredictRandomized is Predict for a predictor calibrated with randomised
// APS; u is a fresh uniform random value in [0, 1] drawn by the caller.
func (p Predictor) PredictRandomized(probs []float64, u float64) (PredictionSet, error) {
	if !p.opts.Randomized {
		return PredictionSet{}, invalid("u", -1, "deterministic predictor: use Predict")
	}
	if err := checkUnit("u", -1, u); err != nil {
		return PredictionSet{}, err
	}
	return p.predict(probs, u)
}

func (p Predictor) predict(probs []float64, u float64) (PredictionSet, error) {
	if p.classes == 0 {
		return PredictionSet{}, invalid("predictor", -1, "not calibrated (use Calibrate)")
	}
	if len(probs) != p.classes {
		return PredictionSet{}, invalid("probs", -1, "%d classes, calibrated for %d", len(probs), p.classes)
	}
	if err := checkProbs("probs", -1, probs); err != nil {
		return PredictionSet{}, err
	}
	threshold := func(y int) float64 {
		if p.classQ != nil {
			return p.classQ[y]
		}
		return p.q
	}
	var labels []int
	switch p.opts.Score {
	case ScoreLAC:
		n := 0
		for y, py := range probs {
			if 1-py <= threshold(y) {
				n++
			}
		}
		labels = make([]int, 0, n)
		for y, py := range probs {
			if 1-py <= threshold(y) {
				labels = append(labels, y)
			}
		}
	case ScoreAPS:
		var sc scorer
		labels = sc.apsSet(make([]int, 0, 8), probs, u, p.opts.Randomized, threshold, p.classQ == nil)
	}
	set := PredictionSet{Classes: p.classes, Alpha: p.opts.Alpha, Labels: labels}
	return set, nil
}

// Alpha returns the miscoverage the predictor was calibrated for.
func (p Predictor) Alpha() float64 { return p.opts.Alpha }

// Options returns the options the predictor was calibrated with (Score
// filled in).
func (p Predictor) Options() ConformalOptions { return p.opts }

// Classes returns the number of classes K.
func (p Predictor) Classes() int { return p.classes }

// N returns the number of calibration examples.
func (p Predictor) N() int { return p.n }

// Threshold returns the calibrated score threshold q̂ (for a
// class-conditional predictor, the largest class threshold).
func (p Predictor) Threshold() float64 { return p.q }

// ClassThresholds returns the per-class thresholds and calibration counts
// of a class-conditional predictor (fresh slices), or nil, nil.
func (p Predictor) ClassThresholds() (q []float64, n []int) {
	if p.classQ == nil {
		return nil, nil
	}
	return slices.Clone(p.classQ), slices.Clone(p.classN)
}

// scorer computes conformity scores, reusing its buffers.
type scorer struct {
	desc   []float64 // the probabilities sorted in decreasing order
	prefix []float64 // prefix[i] = desc[0] + … + desc[i−1], summed in that order
}

// score is the conformity score of class y. For APS it sums, in
// decreasing order, only the probabilities at or above p_y: the same
// sequence of additions as the prefix sums of sort, so the result is
// bit-identical to what prediction computes for the same row.
func (sc *scorer) score(opts ConformalOptions, probs []float64, y int, u float64) float64 {
	if opts.Score == ScoreLAC {
		return 1 - probs[y]
	}
	v := probs[y]
	top := sc.desc[:0]
	for _, p := range probs {
		if p > v || (p == v && !opts.Randomized) {
			top = append(top, p)
		}
	}
	sc.desc = top
	slices.Sort(top)
	slices.Reverse(top)
	var s float64
	for _, p := range top {
		s += p
	}
	if opts.Randomized {
		return s + u*v
	}
	return s
}

// sort fills desc and prefix for probs. The APS score of a class with
// probability v is read off prefix at the boundaries of v's group of equal
// values, so calibration and prediction compute bit-identical scores, and
// classes with equal probability share the deterministic score (the mass
// up to and including all of them).
func (sc *scorer) sort(probs []float64) {
	k := len(probs)
	if cap(sc.desc) < k {
		sc.desc = make([]float64, k)
		sc.prefix = make([]float64, k+1)
	}
	sc.desc, sc.prefix = sc.desc[:k], sc.prefix[:k+1]
	copy(sc.desc, probs)
	slices.Sort(sc.desc)
	slices.Reverse(sc.desc)
	sc.prefix[0] = 0
	for i, v := range sc.desc {
		sc.prefix[i+1] = sc.prefix[i] + v
	}
}

// group returns the half-open range [lo, hi) of desc holding the value v.
func (sc *scorer) group(v float64) (lo, hi int) {
	d := sc.desc
	lo, _ = slices.BinarySearchFunc(d, v, func(e, t float64) int { return cmp.Compare(t, e) })
	hi = lo
	for hi < len(d) && d[hi] == v {
		hi++
	}
	return lo, hi
}

// apsSet appends to labels the classes whose APS score is within their
// threshold, in ascending order.
func (sc *scorer) apsSet(labels []int, probs []float64, u float64, randomized bool, threshold func(int) float64, uniform bool) []int {
	sc.sort(probs)
	if uniform && !randomized {
		// One threshold and nested scores: the included classes are those
		// at or above the smallest probability whose group's cumulative
		// mass stays within it.
		q := threshold(0)
		tau, included := 0.0, false
		for i := 0; i < len(sc.desc); {
			j := i
			for j < len(sc.desc) && sc.desc[j] == sc.desc[i] {
				j++
			}
			if sc.prefix[j] > q {
				break
			}
			tau, included = sc.desc[i], true
			i = j
		}
		if !included {
			return labels
		}
		for y, p := range probs {
			if p >= tau {
				labels = append(labels, y)
			}
		}
		return labels
	}
	for y, p := range probs {
		lo, hi := sc.group(p)
		s := sc.prefix[hi]
		if randomized {
			s = sc.prefix[lo] + u*p
		}
		if s <= threshold(y) {
			labels = append(labels, y)
		}
	}
	return labels
}

// checkProbs checks a probability vector; row ≥ 0 names a row of Probs.
func checkProbs(arg string, row int, probs []float64) error {
	name := func() string {
		if row >= 0 {
			return fmt.Sprintf("%s[%d]", arg, row)
		}
		return arg
	}
	var sum float64
	for i, p := range probs {
		if math.IsNaN(p) || p < 0 || p > 1 {
			return invalid(name(), i, "%v is not a probability in [0, 1]", p)
		}
		sum += p
	}
	if math.Abs(sum-1) > SumTolerance {
		return invalid(name(), -1, "probabilities sum to %v, not 1", sum)
	}
	return nil
}

// PredictionSet is the output of conformal prediction: the classes that are
// plausible at miscoverage Alpha.
type PredictionSet struct {
	Labels  []int   // the classes in the set, ascending
	Classes int     // the number of classes K
	Alpha   float64 // the set covers the true class with probability ≥ 1−Alpha
}

// Size returns the number of classes in the set.
func (s PredictionSet) Size() int { return len(s.Labels) }

// Contains reports whether class y is in the set.
func (s PredictionSet) Contains(y int) bool {
	_, ok := slices.BinarySearch(s.Labels, y)
	return ok
}

func (s PredictionSet) check() error {
	if s.Classes < 2 {
		return invalid("Classes", -1, "%d classes; need at least 2", s.Classes)
	}
	if err := checkAlpha(s.Alpha); err != nil {
		return err
	}
	for i, y := range s.Labels {
		if y < 0 || y >= s.Classes {
			return invalid("Labels", i, "class %d outside [0, %d)", y, s.Classes)
		}
		if i > 0 && y <= s.Labels[i-1] {
			return invalid("Labels", i, "not strictly ascending")
		}
	}
	return nil
}

// Uncertainty maps the set to the claim-ready value. The mapping:
//
//   - value (|S| − 1)/(K − 1) for a non-empty set S of K classes: 0 for a
//     single class, 1 when every class remains possible;
//   - an empty set is maximal uncertainty: value 1 and recommendation
//     REFUSE, because no class is plausible at level α (the input is
//     unlike the calibration data) and nothing can be asserted;
//   - otherwise the recommendation comes from the thresholds t (use
//     DefaultThresholds() or ThresholdsFor(policy)).
func (s PredictionSet) Uncertainty(t Thresholds) (claims.Uncertainty, error) {
	if err := s.check(); err != nil {
		return claims.Uncertainty{}, err
	}
	if err := t.Validate(); err != nil {
		return claims.Uncertainty{}, err
	}
	return s.uncertainty(t, -1), nil
}

// UncertaintyFor maps the set to the value of a claim that asserts class y:
// as Uncertainty when y is in the set; when it is not, the claim is
// rejected by the conformal test at level α, and the value is 1 with
// recommendation REFUSE.
func (s PredictionSet) UncertaintyFor(y int, t Thresholds) (claims.Uncertainty, error) {
	if err := s.check(); err != nil {
		return claims.Uncertainty{}, err
	}
	if err := t.Validate(); err != nil {
		return claims.Uncertainty{}, err
	}
	if y < 0 || y >= s.Classes {
		return claims.Uncertainty{}, invalid("y", -1, "class %d outside [0, %d)", y, s.Classes)
	}
	return s.uncertainty(t, y), nil
}

func (s PredictionSet) uncertainty(t Thresholds, claimed int) claims.Uncertainty {
	cover := 100 * (1 - s.Alpha)
	u := claims.Uncertainty{Method: claims.MethodConformalSet}
	switch {
	case len(s.Labels) == 0:
		u.Value = 1
		u.GateRecommendation = claims.RecommendRefuse
		u.Interpretation = fmt.Sprintf("empty conformal set at %.4g%% coverage: no class of %d is plausible", cover, s.Classes)
	case claimed >= 0 && !s.Contains(claimed):
		u.Value = 1
		u.GateRecommendation = claims.RecommendRefuse
		u.Interpretation = fmt.Sprintf("class %d is outside the conformal set (%d of %d classes) at %.4g%% coverage",
			claimed, len(s.Labels), s.Classes, cover)
	default:
		u.Value = clamp(float64(len(s.Labels)-1)/float64(s.Classes-1), 0, 1)
		u.GateRecommendation = recommend(u.Value, t)
		u.Interpretation = fmt.Sprintf("conformal set of %d of %d classes at %.4g%% coverage",
			len(s.Labels), s.Classes, cover)
	}
	return u
}
