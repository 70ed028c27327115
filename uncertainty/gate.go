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
// The zero Thresholds stands for DefaultThresholds. No value alone leads to
// REFUSE; only conformal prediction recommends it, for a claim that its
// prediction set excludes (see PredictionSet.Uncertainty).
type Thresholds struct {
	Execute float64
	Explain float64
}

// DefaultThresholds are the claim gate's defaults: ≤ 0.50 EXECUTE,
// ≤ 0.75 EXPLAIN, above DEFER.
var DefaultThresholds = Thresholds{Execute: 0.50, Explain: 0.75}

// Validate checks 0 ≤ Execute ≤ Explain ≤ 1 (the zero value is valid and
// means DefaultThresholds).
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

func (t Thresholds) orDefault() Thresholds {
	if t == (Thresholds{}) {
		return DefaultThresholds
	}
	return t
}

// Recommend maps an uncertainty value to a gate recommendation with the
// thresholds t (zero t: DefaultThresholds). The value must lie in [0, 1].
func Recommend(value float64, t Thresholds) (claims.GateRecommendation, error) {
	if err := checkUnit("value", -1, value); err != nil {
		return "", err
	}
	if err := t.Validate(); err != nil {
		return "", err
	}
	return recommend(value, t.orDefault()), nil
}

func recommend(value float64, t Thresholds) claims.GateRecommendation {
	switch {
	case value <= t.Execute:
		return claims.Execute
	case value <= t.Explain:
		return claims.Explain
	default:
		return claims.Defer
	}
}

// checkUnit rejects NaN and values outside [0, 1].
func checkUnit(arg string, index int, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return invalid(arg, index, "%v is not a probability in [0, 1]", v)
	}
	return nil
}
