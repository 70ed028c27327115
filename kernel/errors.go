package kernel

import (
	"errors"
	"fmt"
	"github.com/verity-go/verity/internal/jsonvalue"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors. Every error the package returns wraps one of them or
// a CheckName (the failure of a check wraps the check's name: see
// CheckName.Error); test with errors.Is.
var (
	// ErrDecode: JSON input that cannot be decoded (the same error as
	// value.ErrDecode). A value that is not JSON is value.ErrInvalidValue.
	ErrDecode = jsonvalue.ErrDecode
	// ErrInvalidCost: a cost or budget that is negative, not finite, not a
	// whole number of thousandths, or out of range. Never rounded.
	ErrInvalidCost = errors.New("kernel: invalid cost")
	// ErrInvalidConfig: a kernel configuration that cannot give T1–T8
	// (minimum action cost not positive, negative budget, ...).
	ErrInvalidConfig = errors.New("kernel: invalid configuration")
	// ErrStaleVerdict: a value this kernel did not make for the call: a
	// Verdict made by another kernel or for another state or meter (Commit,
	// Reserve), or a Meter another kernel started (use Kernel.Start).
	ErrStaleVerdict = errors.New("kernel: verdict or meter does not belong to this kernel and state")

	// ErrRejected: Execute refused the action; the *RejectedError carries
	// the Verdict, and errors.Is also matches the CheckName of each
	// failed check.
	ErrRejected = errors.New("kernel: action rejected")
	// ErrTypeMismatch, ErrOverflow, ErrMissingVariable, ErrNotInList detail
	// a failure of CheckEffects (an *EffectError).
	ErrTypeMismatch    = errors.New("kernel: type mismatch")
	ErrOverflow        = errors.New("kernel: arithmetic overflow")
	ErrMissingVariable = errors.New("kernel: variable is absent")
	ErrNotInList       = errors.New("kernel: item not in list")

	// ErrFingerprintMismatch: Rollback was given a state other than the
	// one the action produced, or its inverse effects did not restore the
	// state the action started from (a forged or corrupted Record).
	ErrFingerprintMismatch = errors.New("kernel: state fingerprint does not match")
	// ErrUnknownExecution: no charge is recorded for the execution id.
	ErrUnknownExecution = errors.New("kernel: unknown execution")
	// ErrAlreadyRolledBack: the execution was already refunded.
	ErrAlreadyRolledBack = errors.New("kernel: execution already rolled back")
	// ErrRefundTooLarge: a refund beyond what the execution was charged.
	ErrRefundTooLarge = errors.New("kernel: refund exceeds the amount charged")
	// ErrNotReserved: Settle of an execution with no open reservation
	// (a fixed-cost execution, or one already settled or rolled back).
	ErrNotReserved = errors.New("kernel: no open reservation")
	// ErrReservationOpen: Refund of a reservation not yet settled (Settle
	// with a lower actual cost refunds it).
	ErrReservationOpen = errors.New("kernel: reservation not yet settled")
	// ErrOverrun: a settlement's actual cost exceeded the reservation.
	// The settlement is committed and recorded; the error reports what was
	// charged beyond the reservation and what was left unpaid.
	ErrOverrun = errors.New("kernel: actual cost exceeds the reservation")
	// ErrDuplicateExecution: an execution id charged twice.
	ErrDuplicateExecution = errors.New("kernel: execution id already charged")
	// ErrBeyondHorizon: Rollback, Refund or Settle of an execution the
	// Session no longer keeps: older than its last WithHorizon executions
	// and neither held nor an open reservation (see WithHorizon).
	ErrBeyondHorizon = errors.New("kernel: execution beyond the session's horizon")

	// ErrReplay: a log that does not replay to a consistent Session.
	ErrReplay = errors.New("kernel: replay failed")
)

// Error makes a check's name the error its failure wraps, worded as that
// failure, so that errors.Is(err, CheckBudget) holds for an action the
// budget check refused (T1), errors.Is(err, CheckWellFormed) for an action
// that is not well formed (empty id, unknown effect operation, ...), and
// so on for each check; a *RejectedError matches the name of every check
// that failed.
func (c CheckName) Error() string {
	switch c {
	case CheckWellFormed:
		return "kernel: invalid action"
	case CheckMinCost:
		return "kernel: cost below the minimum action cost"
	case CheckBudget:
		return "kernel: budget exceeded"
	case CheckStepLimit:
		return "kernel: step limit reached"
	case CheckEffects:
		return "kernel: effect does not apply"
	case CheckInvariant:
		return "kernel: invariant violated"
	case CheckPrecondition:
		return "kernel: precondition failed"
	case CheckSharedBudget:
		return "kernel: shared budget refused"
	}
	return "kernel: check " + strconv.Quote(string(c)) + " failed"
}

// prefix starts every error message of the package, exactly once.
const prefix = "kernel: "

// unprefixed returns msg without the package prefix.
func unprefixed(msg string) string { return strings.TrimPrefix(msg, prefix) }

// within wraps err with where it happened, keeping the package prefix at
// the front only: within(err, "effect %d", 2) reads "kernel: effect 2:
// invalid action: …", and errors.Is still finds err's sentinels.
func within(err error, format string, args ...any) error {
	return &contextError{where: fmt.Sprintf(format, args...), err: err}
}

type contextError struct {
	where string
	err   error
}

func (e *contextError) Error() string { return prefix + e.where + ": " + unprefixed(e.err.Error()) }
func (e *contextError) Unwrap() error { return e.err }

// joined is several errors reported together: "kernel: a; b; c".
type joined []error

func joinErrors(errs ...error) error {
	var j joined
	for _, e := range errs {
		if e != nil {
			j = append(j, e)
		}
	}
	switch len(j) {
	case 0:
		return nil
	case 1:
		return j[0]
	}
	return j
}

func (j joined) Error() string {
	var b strings.Builder
	b.WriteString(prefix)
	for i, e := range j {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(unprefixed(e.Error()))
	}
	return b.String()
}

func (j joined) Unwrap() []error { return j }

// EffectError reports the effect of an action that does not fit the state.
type EffectError struct {
	Index  int    // position in the action's effects
	Op     Op     // the operation
	Key    string // the variable
	Reason string // human-readable detail
	Err    error  // ErrTypeMismatch, ErrOverflow, ErrMissingVariable, ErrNotInList or value.ErrInvalidValue
}

func (e *EffectError) Error() string {
	return fmt.Sprintf("kernel: effect %d (%s %q): %s", e.Index, e.Op, e.Key, e.Reason)
}

// Unwrap returns CheckEffects and the detailed sentinel.
func (e *EffectError) Unwrap() []error { return []error{CheckEffects, e.Err} }

// InvariantViolation reports a violated (or panicking) invariant.
type InvariantViolation struct {
	Name        string
	Description string
	Suggestion  string
	Enforcement Enforcement
	Panic       any           // the recovered panic value, if the predicate panicked
	TimedOut    time.Duration // the time limit, if the predicate ran past it
	Detail      string        // the invariant's Explain of the violating state
}

func (e *InvariantViolation) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel: invariant %q violated", e.Name)
	if e.Panic != nil {
		fmt.Fprintf(&b, " (predicate panicked: %v)", e.Panic)
	}
	if e.TimedOut > 0 {
		fmt.Fprintf(&b, " (predicate ran past its time limit %s)", e.TimedOut)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", e.Detail)
	}
	if e.Suggestion != "" {
		fmt.Fprintf(&b, "; suggestion: %s", e.Suggestion)
	}
	return b.String()
}

// Unwrap returns CheckInvariant.
func (e *InvariantViolation) Unwrap() error { return CheckInvariant }

// preconditionError reports a failed (or panicking) precondition.
type preconditionError struct {
	Name  string
	Panic any
}

func (e *preconditionError) Error() string {
	if e.Panic != nil {
		return fmt.Sprintf("kernel: precondition %q failed (predicate panicked: %v)", e.Name, e.Panic)
	}
	return fmt.Sprintf("kernel: precondition %q failed", e.Name)
}

// Unwrap returns CheckPrecondition.
func (e *preconditionError) Unwrap() error { return CheckPrecondition }

// RejectedError is returned by Execute (and Session.Execute) when the
// Verdict rejects the action. Nothing changed.
type RejectedError struct {
	Verdict Verdict
	// Seq is the trace entry a Session recorded the rejection in (zero
	// from the pure Kernel).
	Seq uint64
}

func (e *RejectedError) Error() string {
	var b strings.Builder
	b.WriteString("kernel: action ")
	fmt.Fprintf(&b, "%q rejected", e.Verdict.actionID())
	for _, c := range e.Verdict.Failures() {
		b.WriteString("; ")
		b.WriteString(unprefixed(c.Reason))
	}
	return b.String()
}

// Unwrap returns ErrRejected and the error of every failed check.
func (e *RejectedError) Unwrap() []error {
	errs := []error{ErrRejected}
	for _, c := range e.Verdict.Failures() {
		errs = append(errs, c.Err)
	}
	return errs
}

// decodeError is a refusal by the strict JSON reader, wrapping ErrDecode
// and the reader's error: its message names the package once, whatever
// the causes within it say.
type decodeError struct {
	where string // what was read ("kernel.execute payload"), may be empty
	err   error
}

func (e *decodeError) Error() string {
	msg := ErrDecode.Error()
	if e.where != "" {
		msg += ": " + e.where
	}
	return msg + ": " + strings.ReplaceAll(e.err.Error(), prefix, "")
}

func (e *decodeError) Unwrap() []error { return []error{ErrDecode, e.err} }

// Is reports whether target is the CheckName of a failed check, so that
// errors.Is(err, CheckWellFormed) holds for every action refused as not
// well formed, a meter of another kernel included, and errors.Is(err,
// CheckSharedBudget) for one the shared budget refused.
func (e *RejectedError) Is(target error) bool {
	c, ok := target.(CheckName)
	if !ok {
		return false
	}
	for _, f := range e.Verdict.checks {
		if f.Status == StatusFailed && f.Check == c {
			return true
		}
	}
	return false
}
