package uncertainty

import (
	"math"

	"github.com/verity-go/verity/claims"
)

// Thresholds turn an uncertainty value in [0, 1] into a gate
// recommendation:
//
//	value ≤ Execute            → EXECUTE
//	Execute < value ≤ Explain  → EXPLAIN (proceed with a caveat)
//	value > Explain            → DEFER   (queue for a human)
//
// Both bounds are inclusive. No value alone leads to REFUSE; only conformal
// prediction recommends it, for an empty prediction set or a claim that its
// set excludes (see PredictionSet.Uncertainty and UncertaintyFor). The estimators' options take a
// *Thresholds, nil meaning DefaultThresholds.
type Thresholds struct {
	Execute float64
	Explain float64
}

// DefaultThresholds returns the claim gate's defaults: ≤ 0.50 EXECUTE,
// ≤ 0.75 EXPLAIN, above DEFER (claims.DefaultExecuteMax and
// claims.DefaultExplainMax: Verity's choice following the reference
// implementation, not stated by specification 000).
func DefaultThresholds() Thresholds {
	return Thresholds{Execute: claims.DefaultExecuteMax, Explain: claims.DefaultExplainMax}
}

// ThresholdsFor returns the thresholds of a claims.Policy, so that an
// estimator recommends what the policy's uncertainty gate will decide.
func ThresholdsFor(p claims.Policy) Thresholds {
	return Thresholds{Execute: p.ExecuteMax, Explain: p.ExplainMax}
}

// Validate checks 0 ≤ Execute ≤ Explain ≤ 1.
func (t Thresholds) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"thresholds.Execute", t.Execute}, {"thresholds.Explain", t.Explain}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return invalid(f.name, -1, "%v is not in [0, 1]", f.v)
		}
	}
	if t.Execute > t.Explain {
		return invalid("thresholds", -1, "Execute %v above Explain %v", t.Execute, t.Explain)
	}
	return nil
}

// resolve returns *t, checked, or DefaultThresholds when t is nil.
func resolve(t *Thresholds) (Thresholds, error) {
	if t == nil {
		return DefaultThresholds(), nil
	}
	return *t, t.Validate()
}

// Recommend maps an uncertainty value to a gate recommendation with the
// thresholds t. The value must lie in [0, 1].
func Recommend(value float64, t Thresholds) (claims.GateRecommendation, error) {
	if err := checkUnit("value", -1, value); err != nil {
		return "", err
	}
	if err := t.Validate(); err != nil {
		return "", err
	}
	return recommend(value, t), nil
}

func recommend(value float64, t Thresholds) claims.GateRecommendation {
	switch {
	case value <= t.Execute:
		return claims.RecommendExecute
	case value <= t.Explain:
		return claims.RecommendExplain
	default:
		return claims.RecommendDefer
	}
}

// checkUnit rejects NaN and values outside [0, 1].
func checkUnit(arg string, index int, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return invalid(arg, index, "%v is not a probability in [0, 1]", v)
	}
	return nil
}
