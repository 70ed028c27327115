package kernel

import (
	"errors"
	"strconv"
	"strings"

	"github.com/verity-go/verity/internal/oneline"
)

// Explain returns one short line that names each failed check, meant to
// be handed back to a model as a tool error and read by a human: ""
// when the action is allowed, otherwise
//
//	action "delete" rejected: budget: cost 1, remaining 0.5; invariant at-most-3-deletes: deletes would be 4, at most 3 (ask a human)
//
// Each failed check reads "<check>: <why>"; an invariant's adds its name,
// its Explain of the violating state (or "violated", "predicate
// panicked", "predicate ran past its time limit 10ms") and its Suggestion
// in parentheses. The wording is stable: hosts and tests may rely on it.
func (v Verdict) Explain() string {
	if v.allowed {
		return ""
	}
	var b strings.Builder
	b.WriteString("action ")
	b.WriteString(strconv.Quote(v.action.ID))
	b.WriteString(" rejected")
	sep := ": "
	for _, c := range v.checks {
		if c.Status != StatusFailed {
			continue
		}
		b.WriteString(sep)
		sep = "; "
		b.WriteString(explainCheck(c))
	}
	// Names, suggestions and details come from users and policy files:
	// whatever they hold, the explanation stays one line.
	return oneline.String(b.String())
}

// explainCheck is one failed check in the words of Verdict.Explain.
func explainCheck(c CheckResult) string {
	var iv *InvariantViolation
	if errors.As(c.Err, &iv) {
		why := "violated"
		switch {
		case iv.Panic != nil:
			why = "predicate panicked"
		case iv.TimedOut > 0:
			why = "predicate ran past its time limit " + iv.TimedOut.String()
		case iv.Detail != "":
			why = iv.Detail
		}
		s := "invariant " + iv.Name + ": " + why
		if iv.Suggestion != "" {
			s += " (" + iv.Suggestion + ")"
		}
		return s
	}
	var pe *preconditionError
	if errors.As(c.Err, &pe) {
		if pe.Panic != nil {
			return "precondition " + pe.Name + ": predicate panicked"
		}
		return "precondition " + pe.Name + ": failed"
	}
	why := unprefixed(c.Reason)
	for _, s := range []error{CheckMinCost, CheckBudget, CheckStepLimit} {
		why = strings.TrimPrefix(why, unprefixed(s.Error())+": ")
	}
	return string(c.Check) + ": " + why
}
