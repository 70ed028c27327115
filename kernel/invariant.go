package kernel

import (
	"fmt"
	"strconv"
	"time"
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
// predicate that panics, or runs past its time limit, is a violation.
// AtMost, AtMostEach, Within, OneOf and Matches make the common ones.
type Invariant struct {
	Name        string
	Description string
	Check       func(State) bool
	Enforcement Enforcement
	Suggestion  string // what the agent should do instead, in the explanation
	// Explain, if set, says in a few words why a state violates the
	// invariant ("deletes would be 4, at most 3"); Verdict.Explain shows
	// it. Like Check it must be pure; a panic in it is ignored.
	Explain func(State) string
	// Timeout overrides Config.InvariantTimeout for this invariant: zero
	// takes the kernel's, a negative one means no limit.
	Timeout time.Duration
}

// Holds evaluates the invariant on s, without a time limit. A nil Check or
// a panic is a violation; the error is an *InvariantViolation or nil.
func (inv Invariant) Holds(s State) (ok bool, err error) {
	return inv.holds(s, 0)
}

// holds is Holds with a time limit (limit ≤ 0: none). Past the limit the
// predicate's goroutine is abandoned: it runs on until the predicate
// returns and its result is dropped (see Config.InvariantTimeout).
func (inv Invariant) holds(s State, limit time.Duration) (bool, error) {
	if limit <= 0 {
		return inv.run(s)
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1) // buffered: an abandoned predicate never blocks on it
	go func() {
		ok, err := inv.run(s)
		done <- result{ok, err}
	}()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case r := <-done:
		return r.ok, r.err
	case <-timer.C:
		v := inv.violation(nil)
		v.TimedOut = limit
		return false, v
	}
}

func (inv Invariant) run(s State) (ok bool, err error) {
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
	v := inv.violation(nil)
	v.Detail = inv.detail(s)
	return false, v
}

// detail is Explain(s), or "" if there is none or it panics.
func (inv Invariant) detail(s State) (d string) {
	if inv.Explain == nil {
		return ""
	}
	defer func() {
		if recover() != nil {
			d = ""
		}
	}()
	return validUTF8(inv.Explain(s))
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

// Holds evaluates the precondition; a failure's error wraps
// CheckPrecondition and names the precondition.
func (p Precondition) Holds(s State, a Action) (ok bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, &preconditionError{Name: p.Name, Panic: r}
		}
	}()
	if p.Check == nil {
		return false, &preconditionError{Name: p.Name, Panic: "nil predicate"}
	}
	if p.Check(s, a) {
		return true, nil
	}
	return false, &preconditionError{Name: p.Name}
}

func (e Enforcement) valid() error {
	if e != EnforcementBlocking && e != EnforcementMonitoring {
		return fmt.Errorf("%w: unknown enforcement %d", ErrInvalidConfig, e)
	}
	return nil
}
