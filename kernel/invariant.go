package kernel

import (
	"fmt"
	"strconv"
)

// Enforcement says what a violated invariant does.
type Enforcement uint8

const (
	// EnforcementBlocking rejects any action whose simulated next state
	// violates the invariant (T3). It is the zero value: an invariant
	// that does not say blocks, the restrictive outcome.
	EnforcementBlocking Enforcement = iota
	// EnforcementMonitoring reports the violation in the Verdict and the
	// trace but does not reject. T3 says nothing about monitoring
	// invariants.
	EnforcementMonitoring
)

// String returns "blocking" or "monitoring".
func (e Enforcement) String() string {
	switch e {
	case EnforcementBlocking:
		return "blocking"
	case EnforcementMonitoring:
		return "monitoring"
	}
	return "enforcement(" + strconv.Itoa(int(e)) + ")"
}

// Invariant is a named predicate every reachable state must satisfy. The
// predicate must be a pure function of the State (T3 assumes it); a
// predicate that panics is recovered and counts as a violation.
type Invariant struct {
	Name        string
	Description string
	Check       func(State) bool
	Enforcement Enforcement
	Suggestion  string // shown to the agent when the invariant blocks
}

// Holds evaluates the invariant on s. A nil Check or a panic is a
// violation; the error is an *InvariantViolation or nil.
func (inv Invariant) Holds(s State) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, inv.violation(r)
		}
	}()
	if inv.Check == nil {
		return false, inv.violation("nil predicate")
	}
	if inv.Check(s) {
		return true, nil
	}
	return false, inv.violation(nil)
}

func (inv Invariant) violation(p any) *InvariantViolation {
	return &InvariantViolation{Name: inv.Name, Description: inv.Description, Suggestion: inv.Suggestion, Enforcement: inv.Enforcement, Panic: p}
}

// Precondition is a named predicate over the current state and the
// proposed action, checked before the action runs. Like invariants, a
// panic is recovered and counts as a failure.
type Precondition struct {
	Name        string
	Description string
	Check       func(State, Action) bool
}

// Holds evaluates the precondition; the error is a *PreconditionError.
func (p Precondition) Holds(s State, a Action) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, &PreconditionError{Name: p.Name, Panic: r}
		}
	}()
	if p.Check == nil {
		return false, &PreconditionError{Name: p.Name, Panic: "nil predicate"}
	}
	if p.Check(s, a) {
		return true, nil
	}
	return false, &PreconditionError{Name: p.Name}
}

func (e Enforcement) valid() error {
	if e != EnforcementBlocking && e != EnforcementMonitoring {
		return fmt.Errorf("%w: unknown enforcement %d", ErrInvalidConfig, e)
	}
	return nil
}
