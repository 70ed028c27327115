package speculative

import (
	"fmt"
	"slices"
	"strings"
)

// The templates Design chooses between.
const (
	// TemplateSensitivitySuite perturbs the claim's variables one at a
	// time; chosen when hints name sensitivity axes.
	TemplateSensitivitySuite = "sensitivity_suite@1.0.0"
	// TemplateNumericConsistency re-computes the claim's quantities under
	// the default settings; the default without hints.
	TemplateNumericConsistency = "numeric_consistency@1.0.0"
)

// Design defaults for the sensitivity suite.
const (
	sensitivityLevels       = 5
	sensitivityRelativeStep = 0.1
)

// Claim is a grounded claim as experiment design sees it.
type Claim struct {
	ID        string
	Statement string
	// Variables are the quantities the claim is about: the only
	// parameters a sensitivity suite may vary.
	Variables []string
}

// Design builds the ExperimentSpec for a claim — the one legal crossing
// point from the speculative lane to the grounded lane. Hints may be nil.
//
// Hints inform, they do not travel: with hints whose sensitivity axes
// name at least one of the claim's variables (compared as the detection
// vocabulary compares keys: case, camelCase and separators ignored), the
// template is TemplateSensitivitySuite with params.vary listing those
// claim variables, spelled as the claim spells them, over 5 levels with a
// relative step of 0.1; otherwise the template is
// TemplateNumericConsistency over all of the claim's variables. No string,
// number or digest of the hints appears in the spec. The spec is validated
// with the rules of DecodeExperimentSpec before it is returned, so a claim
// whose own text carries speculative residue is refused here.
func Design(claim Claim, hints *ExperimentHints, scopeLockID string) (ExperimentSpec, error) {
	if strings.TrimSpace(claim.ID) == "" {
		return ExperimentSpec{}, fmt.Errorf("%w: claim id is blank", ErrInvalidSpec)
	}
	if strings.TrimSpace(scopeLockID) == "" {
		return ExperimentSpec{}, fmt.Errorf("%w: scope_lock_id is blank", ErrInvalidSpec)
	}
	if hints != nil && hints.ClaimID != claim.ID {
		return ExperimentSpec{}, fmt.Errorf("%w: hints are for claim %q, not %q", ErrInvalidSpec, hints.ClaimID, claim.ID)
	}
	vars := slices.Clone(claim.Variables)
	slices.Sort(vars)
	vars = slices.Compact(vars)
	spec := ExperimentSpec{
		ClaimID:     claim.ID,
		ScopeLockID: scopeLockID,
		TemplateQID: TemplateNumericConsistency,
		Params:      map[string]any{"variables": toAny(vars)},
	}
	if hints != nil {
		var vary []string
		for _, v := range vars {
			if slices.ContainsFunc(hints.SensitivityAxes, func(axis string) bool { return sameName(axis, v) }) {
				vary = append(vary, v)
			}
		}
		if len(vary) > 0 {
			spec.TemplateQID = TemplateSensitivitySuite
			spec.Params = map[string]any{
				"vary":          toAny(vary),
				"levels":        sensitivityLevels,
				"relative_step": sensitivityRelativeStep,
			}
		}
	}
	if err := spec.validate(); err != nil {
		return ExperimentSpec{}, err
	}
	return spec, nil
}

// sameName compares two names the way the detection vocabulary compares
// keys.
func sameName(a, b string) bool {
	fa := foldString(normalizeKey(a))
	return fa != "" && fa == foldString(normalizeKey(b))
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
