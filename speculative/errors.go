package speculative

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/verity-go/verity/internal/violation"
)

// prefix starts every error message of the package, exactly once.
const prefix = "speculative: "

// Sentinel errors. Every error the package returns wraps at least one of
// them; test with errors.Is.
var (
	// ErrSpeculative: a value carries a speculative marker where grounded
	// content is required (Guard 1, the no-residue rule).
	ErrSpeculative = errors.New(prefix + "speculative content where grounded content is required")
	// ErrLimit: a value is too deep, too large or encoded too many times to
	// be checked. It is a rejection: an unchecked value never passes.
	ErrLimit = errors.New(prefix + "value exceeds the detection limits")
	// ErrMissingClaimID: validation evidence without a usable claim id
	// (Guard 2).
	ErrMissingClaimID = errors.New(prefix + "validation evidence has no claim id")
	// ErrMalformed: input that is not the JSON shape the operation needs.
	ErrMalformed = errors.New(prefix + "malformed input")
	// ErrResidue: an ExperimentSpec carries speculative residue.
	ErrResidue = errors.New(prefix + "speculative residue in experiment spec")
	// ErrInvalidSpec: an ExperimentSpec breaks one of its field rules.
	ErrInvalidSpec = errors.New(prefix + "invalid experiment spec")
	// ErrUnknownStatus: a string that names none of the five statuses.
	ErrUnknownStatus = errors.New(prefix + "unknown epistemic status")
	// ErrPromotion: the promotion policy refuses a status transition.
	ErrPromotion = errors.New(prefix + "status transition refused")
	// ErrNotSteward: a write that did not come from a Steward.
	ErrNotSteward = errors.New(prefix + "write not issued by a steward")
	// ErrIntent: an unknown write intent, or one in the wrong state.
	ErrIntent = errors.New(prefix + "write intent cannot be used")
	// ErrSession: a speculative hypothesis without a session.
	ErrSession = errors.New(prefix + "speculative hypothesis needs a session")
	// ErrNoProposition: a backend has no proposition for a claim id.
	ErrNoProposition = errors.New(prefix + "no such proposition")
)

// Violation is one broken rule: where (an RFC 6901 JSON Pointer, "" for
// the whole value), which rule, and a sentence for people. It is the
// library's one Violation type.
type Violation = violation.Violation

// ValidationError carries every violation found in one value (Subject
// says which: "validation evidence", "experiment spec", "promotion"),
// sorted by path, then rule, then message. errors.Is matches the sentinel
// of every violation; errors.As finds the *SpeculativeError or *LimitError
// behind a Guard 1 violation. It is the library's one ValidationError type.
type ValidationError = violation.ValidationError

// violations collects the violations of one value and the errors they
// stand for.
type violations struct {
	list  []Violation
	wraps []error
}

func (vs *violations) add(path, rule string, err error, format string, args ...any) {
	vs.list = append(vs.list, Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
	vs.wraps = append(vs.wraps, err)
}

// err returns the *ValidationError of the violations, or nil when there
// are none. A violation reported twice is kept once.
func (vs *violations) err(subject string) error {
	e := violation.New("speculative", subject, vs.list, vs.wraps...)
	if e == nil {
		return nil
	}
	e.Violations = slices.Compact(e.Violations)
	return e
}

// detail is err's message without the package prefix, for quoting an
// error inside another message of the package.
func detail(err error) string { return strings.TrimPrefix(err.Error(), prefix) }

// wrapped is an error of the package around other errors: its message
// carries the package prefix once, whatever the errors it wraps say.
type wrapped struct {
	msg  string
	errs []error
}

func (e *wrapped) Error() string   { return e.msg }
func (e *wrapped) Unwrap() []error { return e.errs }

// wrap adds context to err: "speculative: context: err".
func wrap(context string, err error) error {
	return &wrapped{msg: prefix + context + ": " + detail(err), errs: []error{err}}
}

// SpeculativeError reports where a speculative marker was found.
type SpeculativeError struct {
	Finding Finding
}

func (e *SpeculativeError) Error() string {
	return ErrSpeculative.Error() + ": " + e.Finding.String()
}

func (e *SpeculativeError) Unwrap() error { return ErrSpeculative }

// LimitError reports which detection limit a value exceeded and where.
type LimitError struct {
	Limit string // "depth", "work" or "encodings"
	Path  string // where the limit was hit: a JSON Pointer ("" for the whole value)
	Max   int    // the limit's value
}

func (e *LimitError) Error() string { return ErrLimit.Error() + ": " + e.detail() }

// detail says which limit was exceeded where, without the prefix.
func (e *LimitError) detail() string {
	where := e.Path
	if where == "" {
		where = "the top level"
	}
	return fmt.Sprintf("%s over %d at %s", e.Limit, e.Max, where)
}

func (e *LimitError) Unwrap() error { return ErrLimit }
