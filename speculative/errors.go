package speculative

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors. Every error the package returns wraps at least one of
// them; test with errors.Is.
var (
	// ErrSpeculative: a value carries a speculative marker where grounded
	// content is required (Guard 1, the no-residue rule).
	ErrSpeculative = errors.New("speculative: speculative content where grounded content is required")
	// ErrLimit: a value is too deep, too large or encoded too many times to
	// be checked. It is a rejection: an unchecked value never passes.
	ErrLimit = errors.New("speculative: value exceeds the detection limits")
	// ErrMissingClaimID: validation evidence without a usable claim id
	// (Guard 2).
	ErrMissingClaimID = errors.New("speculative: validation evidence has no claim id")
	// ErrMalformed: input that is not the JSON shape the operation needs.
	ErrMalformed = errors.New("speculative: malformed input")
	// ErrResidue: an ExperimentSpec carries speculative residue.
	ErrResidue = errors.New("speculative: speculative residue in experiment spec")
	// ErrInvalidSpec: an ExperimentSpec breaks one of its field rules.
	ErrInvalidSpec = errors.New("speculative: invalid experiment spec")
	// ErrUnknownStatus: a string that names none of the five statuses.
	ErrUnknownStatus = errors.New("speculative: unknown epistemic status")
	// ErrPromotion: the promotion policy refuses a status transition.
	ErrPromotion = errors.New("speculative: status transition refused")
	// ErrNotSteward: a write that did not come from a Steward.
	ErrNotSteward = errors.New("speculative: write not issued by a steward")
	// ErrIntent: an unknown write intent, or one in the wrong state.
	ErrIntent = errors.New("speculative: write intent cannot be used")
	// ErrSession: a speculative hypothesis without a session.
	ErrSession = errors.New("speculative: speculative hypothesis needs a session")
	// ErrNoProposition: a backend has no proposition for a claim id.
	ErrNoProposition = errors.New("speculative: no such proposition")
)

// Violation is one broken rule: where (a JSON path, "" for the whole
// value), which rule, and a sentence for humans.
type Violation struct {
	Path    string
	Rule    string
	Message string
	err     error // the sentinel this violation wraps
}

func (v Violation) String() string {
	if v.Path == "" {
		return fmt.Sprintf("%s: %s", v.Rule, v.Message)
	}
	return fmt.Sprintf("%s at %s: %s", v.Rule, v.Path, v.Message)
}

// Unwrap returns the sentinel error the violation stands for.
func (v Violation) Unwrap() error { return v.err }

// ValidationError carries every violation found in one value, sorted by
// path, then rule, then message. errors.Is matches the sentinels of all
// of them.
type ValidationError struct {
	What       string // "validation evidence", "experiment spec", "promotion"
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("speculative: invalid ")
	b.WriteString(e.What)
	for i, v := range e.Violations {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Unwrap returns the distinct sentinels of the violations, in order.
func (e *ValidationError) Unwrap() []error {
	var out []error
	for _, v := range e.Violations {
		if v.err != nil && !slices.Contains(out, v.err) {
			out = append(out, v.err)
		}
	}
	return out
}

func newValidationError(what string, vs []Violation) error {
	if len(vs) == 0 {
		return nil
	}
	vs = slices.Clone(vs)
	slices.SortStableFunc(vs, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
	vs = slices.CompactFunc(vs, func(a, b Violation) bool {
		return a.Path == b.Path && a.Rule == b.Rule && a.Message == b.Message
	})
	return &ValidationError{What: what, Violations: vs}
}

// SpeculativeError reports where a speculative marker was found.
type SpeculativeError struct {
	Finding Finding
}

func (e *SpeculativeError) Error() string {
	return "speculative: speculative content where grounded content is required: " + e.Finding.String()
}

func (e *SpeculativeError) Unwrap() error { return ErrSpeculative }

// LimitError reports which detection limit a value exceeded and where.
type LimitError struct {
	Limit string // "depth", "work", "encodings" or "unsupported"
	Path  string // where the limit was hit ("" for the whole value)
	Max   int    // the limit's value
}

func (e *LimitError) Error() string {
	where := e.Path
	if where == "" {
		where = "top level"
	}
	if e.Limit == "unsupported" {
		return fmt.Sprintf("speculative: value exceeds the detection limits: a Go value that cannot be encoded as JSON at %s", where)
	}
	return fmt.Sprintf("speculative: value exceeds the detection limits: %s over %d at %s", e.Limit, e.Max, where)
}

func (e *LimitError) Unwrap() error { return ErrLimit }
