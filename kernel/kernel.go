package kernel

import (
	"fmt"
	"slices"
	"strconv"
)

// Config configures a Kernel.
type Config struct {
	// Budget is B0, the total the kernel may ever spend net (T1).
	Budget Cost
	// MinActionCost is ε > 0: every non-emergency action must cost at
	// least this much, which bounds the run to floor(B0/ε) steps (T2).
	MinActionCost Cost
	// Invariants are checked on the simulated next state of every action
	// (T3). They are evaluated in this order and all of them reported.
	Invariants []Invariant
	// Preconditions are checked on (current state, action).
	Preconditions []Precondition
	// EmergencyActions are the ids of actions that bypass the min-cost and
	// step-limit checks, and only those (T8).
	EmergencyActions []string
}

// Kernel is the immutable safety configuration: the pure functions
// Evaluate, Execute and Rollback take a Meter and a State and return
// new ones. A Kernel is safe for concurrent use.
type Kernel struct {
	budget     Cost
	minCost    Cost
	maxSteps   uint64
	invariants []Invariant
	preconds   []Precondition
	emergency  map[string]struct{}
	tag        *byte // identity, to recognise its Meters
}

// New validates cfg and returns a Kernel. MinActionCost must be positive
// and Budget non-negative (ErrInvalidConfig); invariants need a name and a
// predicate.
func New(cfg Config) (*Kernel, error) {
	var errs []error
	if cfg.MinActionCost <= 0 {
		errs = append(errs, fmt.Errorf("%w: minimum action cost must be > 0 (T2), got %s", ErrInvalidConfig, cfg.MinActionCost))
	}
	if cfg.Budget < 0 {
		errs = append(errs, fmt.Errorf("%w: negative budget %s", ErrInvalidConfig, cfg.Budget))
	}
	seen := map[string]bool{}
	for i, inv := range cfg.Invariants {
		if inv.Name == "" || inv.Check == nil {
			errs = append(errs, fmt.Errorf("%w: invariant %d needs a name and a predicate", ErrInvalidConfig, i))
		}
		if seen[inv.Name] {
			errs = append(errs, fmt.Errorf("%w: duplicate invariant name %q", ErrInvalidConfig, inv.Name))
		}
		seen[inv.Name] = true
		if err := inv.Enforcement.valid(); err != nil {
			errs = append(errs, within(err, "invariant %q", inv.Name))
		}
	}
	for i, p := range cfg.Preconditions {
		if p.Name == "" || p.Check == nil {
			errs = append(errs, fmt.Errorf("%w: precondition %d needs a name and a predicate", ErrInvalidConfig, i))
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs...)
	}
	k := &Kernel{
		budget:     cfg.Budget,
		minCost:    cfg.MinActionCost,
		maxSteps:   uint64(cfg.Budget / cfg.MinActionCost), // floor(B0/ε) in integers
		invariants: slices.Clone(cfg.Invariants),
		preconds:   slices.Clone(cfg.Preconditions),
		emergency:  make(map[string]struct{}, len(cfg.EmergencyActions)),
		tag:        new(byte),
	}
	for _, id := range cfg.EmergencyActions {
		k.emergency[id] = struct{}{}
	}
	return k, nil
}

// MaxSteps returns floor(B0/ε), the T2 bound on non-emergency executions.
func (k *Kernel) MaxSteps() uint64 { return k.maxSteps }

// MinActionCost returns ε.
func (k *Kernel) MinActionCost() Cost { return k.minCost }

// IsEmergency reports whether id is a registered emergency action.
func (k *Kernel) IsEmergency(id string) bool {
	_, ok := k.emergency[id]
	return ok
}

// Invariants returns a copy of the kernel's invariants.
func (k *Kernel) Invariants() []Invariant { return slices.Clone(k.invariants) }

// Meter is what the kernel counts, as an immutable value: the budget and
// the step counters. Obtain the first one from Kernel.Start; Execute,
// Commit and Rollback return the next one.
type Meter struct {
	budget    Budget
	steps     uint64 // non-emergency executions; never decremented (not even by rollback)
	emergency uint64 // emergency executions
	tag       *byte
}

// Start returns the initial Meter: nothing spent, no steps.
func (k *Kernel) Start() Meter {
	return Meter{budget: Budget{limit: k.budget}, tag: k.tag}
}

// Budget returns the budget.
func (m Meter) Budget() Budget { return m.budget }

// Steps returns the number of non-emergency executions (T2 counts these).
func (m Meter) Steps() uint64 { return m.steps }

// EmergencySteps returns the number of emergency executions.
func (m Meter) EmergencySteps() uint64 { return m.emergency }

// String returns the meter in words: "spent 1.5 of 10 (gross 2,
// refunded 0.5), 3 steps, 0 emergency steps".
func (m Meter) String() string {
	b := m.budget
	return fmt.Sprintf("spent %s of %s (gross %s, refunded %s), %d steps, %d emergency steps",
		b.Net(), b.limit, b.gross, b.refunded, m.steps, m.emergency)
}

// CheckName names a check in a Verdict.
type CheckName string

// The checks, in the order Evaluate runs and reports them.
const (
	CheckWellFormed   CheckName = "well_formed"  // Action.Validate
	CheckMinCost      CheckName = "min_cost"     // cost ≥ ε (skipped for emergency actions)
	CheckBudget       CheckName = "budget"       // net + cost ≤ B0
	CheckStepLimit    CheckName = "step_limit"   // steps < floor(B0/ε) (skipped for emergency actions)
	CheckEffects      CheckName = "effects"      // every effect fits the state it meets
	CheckInvariant    CheckName = "invariant"    // one per invariant, on the simulated next state
	CheckPrecondition CheckName = "precondition" // one per precondition, on the current state
)

// Status is the outcome of one check. The zero Status is invalid: it is
// never taken for a check that passed.
type Status uint8

const (
	// StatusPassed: the check holds.
	StatusPassed Status = iota + 1
	// StatusFailed: the check fails and the action is rejected.
	StatusFailed
	// StatusWarned: a monitoring invariant is violated; reported, not
	// rejected.
	StatusWarned
	// StatusSkipped: the check does not apply (emergency bypass) or could
	// not run (no simulated state because an effect did not fit).
	StatusSkipped
)

var statusNames = [...]string{"", "passed", "failed", "warned", "skipped"}

// String returns "passed", "failed", "warned" or "skipped".
func (s Status) String() string {
	if s >= StatusPassed && s <= StatusSkipped {
		return statusNames[s]
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// CheckResult is the outcome of one check.
type CheckResult struct {
	Check  CheckName
	Name   string // the invariant or precondition name
	Status Status
	Reason string // why it failed, warned or was skipped
	Err    error  // for StatusFailed and StatusWarned: the error (wraps a sentinel)
}

// Verdict is what Evaluate decides, with one CheckResult per check in the
// documented order and the simulated next state.
type Verdict struct {
	ActionID  string
	Allowed   bool
	Emergency bool
	Checks    []CheckResult
	// Next is the simulated next state when every effect applied (whether
	// or not the action is allowed); otherwise the current state.
	Next State

	// What Commit relies on is kept unexported, so that editing the
	// exported fields above cannot make Commit accept anything.
	ok        bool
	emergency bool
	warnings  []CheckResult // the StatusWarned checks (nil if none)
	next      State
	inverse   []Effect
	action    Action
	tag       *byte
	from      *stateData
	fromKS    Meter
}

// Failures returns the failed checks.
func (v Verdict) Failures() []CheckResult {
	var out []CheckResult
	for _, c := range v.Checks {
		if c.Status == StatusFailed {
			out = append(out, c)
		}
	}
	return out
}

// Warnings returns the monitoring invariants that are violated.
func (v Verdict) Warnings() []CheckResult {
	var out []CheckResult
	for _, c := range v.Checks {
		if c.Status == StatusWarned {
			out = append(out, c)
		}
	}
	return out
}

// Err returns nil if the action is allowed, else a *RejectedError.
func (v Verdict) Err() error {
	if v.Allowed {
		return nil
	}
	return &RejectedError{Verdict: v}
}

// Evaluate decides whether a may run from (ks, s), without changing
// anything. The checks run in this order, every one of them reported:
//
//  1. well_formed: Action.Validate;
//  2. min_cost: cost ≥ ε (skipped for emergency actions; T2);
//  3. budget: net spend + cost ≤ B0 (T1);
//  4. step_limit: steps < floor(B0/ε) (skipped for emergency actions; T2);
//  5. effects: the effects apply in sequence to s (simulation);
//  6. invariant: each invariant on the simulated next state, in
//     configuration order (T3; skipped if effects failed);
//  7. precondition: each precondition on (s, a), in order.
//
// The action is allowed iff no check failed.
func (k *Kernel) Evaluate(ks Meter, s State, a Action) Verdict {
	// The Verdict keeps its own copy of the action: changing the caller's
	// slices afterwards cannot change what Commit records.
	return k.evaluate(ks, s, a.clone(), nil, 0)
}

// evaluate is Evaluate with the Checks appended to checks[:0] (a scratch
// buffer the caller owns; nil for a fresh one) and spare capacity for
// spare more effects after the inverse.
func (k *Kernel) evaluate(ks Meter, s State, a Action, checks []CheckResult, spare int) Verdict {
	emergency := k.IsEmergency(a.ID)
	if n := 5 + len(k.invariants) + len(k.preconds); cap(checks) < n {
		checks = make([]CheckResult, 0, n)
	}
	v := Verdict{
		ActionID:  a.ID,
		Emergency: emergency,
		Checks:    checks[:0],
		Next:      s,
	}
	add := func(c CheckResult) { v.Checks = append(v.Checks, c) }
	failed := false
	fail := func(name CheckName, err error) {
		failed = true
		add(CheckResult{Check: name, Status: StatusFailed, Reason: err.Error(), Err: err})
	}

	wellFormed := true
	if ks.tag != k.tag {
		wellFormed = false
		fail(CheckWellFormed, fmt.Errorf("%w: use Kernel.Start", ErrForeignState))
	} else if err := a.Validate(); err != nil {
		wellFormed = false
		fail(CheckWellFormed, err)
	} else {
		add(CheckResult{Check: CheckWellFormed, Status: StatusPassed})
	}

	switch {
	case emergency:
		add(CheckResult{Check: CheckMinCost, Status: StatusSkipped, Reason: "emergency action"})
	case a.Cost < k.minCost:
		fail(CheckMinCost, fmt.Errorf("%w: cost %s < minimum %s", ErrBelowMinCost, a.Cost, k.minCost))
	default:
		add(CheckResult{Check: CheckMinCost, Status: StatusPassed})
	}

	if ks.budget.CanAfford(a.Cost) {
		add(CheckResult{Check: CheckBudget, Status: StatusPassed})
	} else {
		fail(CheckBudget, fmt.Errorf("%w: cost %s, remaining %s", ErrBudgetExceeded, a.Cost, ks.budget.Remaining()))
	}

	switch {
	case emergency:
		add(CheckResult{Check: CheckStepLimit, Status: StatusSkipped, Reason: "emergency action"})
	case ks.steps >= k.maxSteps:
		fail(CheckStepLimit, fmt.Errorf("%w: %d of %d steps taken", ErrStepLimit, ks.steps, k.maxSteps))
	default:
		add(CheckResult{Check: CheckStepLimit, Status: StatusPassed})
	}

	simulated := false
	if !wellFormed {
		add(CheckResult{Check: CheckEffects, Status: StatusSkipped, Reason: "action is not well formed"})
	} else {
		b := newBuilder(s)
		b.grow(len(a.Effects))
		inv := make([]Effect, 0, len(a.Effects)+spare)
		var effErr error
		for i, e := range a.Effects {
			ie, err := b.apply(i, e)
			if err != nil {
				effErr = err
				break
			}
			if ie.Op != 0 {
				inv = append(inv, ie)
			}
		}
		if effErr != nil {
			fail(CheckEffects, effErr)
		} else {
			add(CheckResult{Check: CheckEffects, Status: StatusPassed})
			slices.Reverse(inv)
			v.Next, v.inverse, simulated = b.state(), inv, true
		}
	}

	for _, inv := range k.invariants {
		if !simulated {
			add(CheckResult{Check: CheckInvariant, Name: inv.Name, Status: StatusSkipped, Reason: "no simulated next state"})
			continue
		}
		ok, err := inv.Holds(v.Next)
		switch {
		case ok:
			add(CheckResult{Check: CheckInvariant, Name: inv.Name, Status: StatusPassed})
		case inv.Enforcement == EnforcementMonitoring:
			add(CheckResult{Check: CheckInvariant, Name: inv.Name, Status: StatusWarned, Reason: err.Error(), Err: err})
		default:
			failed = true
			add(CheckResult{Check: CheckInvariant, Name: inv.Name, Status: StatusFailed, Reason: err.Error(), Err: err})
		}
	}

	pa := a
	if len(k.preconds) > 0 {
		pa = a.clone() // predicates get their own copy of the slices
	}
	for _, p := range k.preconds {
		if !wellFormed {
			add(CheckResult{Check: CheckPrecondition, Name: p.Name, Status: StatusSkipped, Reason: "action is not well formed"})
			continue
		}
		if ok, err := p.Holds(s, pa); ok {
			add(CheckResult{Check: CheckPrecondition, Name: p.Name, Status: StatusPassed})
		} else {
			failed = true
			add(CheckResult{Check: CheckPrecondition, Name: p.Name, Status: StatusFailed, Reason: err.Error(), Err: err})
		}
	}

	v.Allowed = !failed
	v.ok, v.emergency, v.next, v.action, v.tag, v.from, v.fromKS = !failed, emergency, v.Next, a, k.tag, s.d, ks
	for _, c := range v.Checks {
		if c.Status == StatusWarned {
			v.warnings = append(v.warnings, c)
		}
	}
	return v
}

// BudgetSnapshot is the budget totals at one moment.
type BudgetSnapshot struct {
	Limit, Gross, Refunded Cost
}

func snapshot(b Budget) BudgetSnapshot {
	return BudgetSnapshot{Limit: b.limit, Gross: b.gross, Refunded: b.refunded}
}

// Record describes one committed execution: what the trace records and
// what Rollback needs.
type Record struct {
	ExecID         string
	Action         Action // a copy of the action that ran
	Emergency      bool
	Before, After  Fingerprint
	Inverse        []Effect // algebraic inverse (InverseEffects), applied in order by Rollback
	Budget         BudgetSnapshot
	Steps          uint64 // Meter.Steps after the execution
	EmergencySteps uint64
	Warnings       []CheckResult // monitoring invariants violated by the next state
}

// clone returns a copy of r that shares no slices with it.
func (r Record) clone() Record {
	r.Action = r.Action.clone()
	r.Inverse = slices.Clone(r.Inverse)
	r.Warnings = slices.Clone(r.Warnings)
	return r
}

// packedClone is clone except for the action's tags (the caller copies
// them), with the action's effects and the inverse in one allocation
// (they live and die together in a Session's history).
func (r Record) packedClone() Record {
	n, m := len(r.Action.Effects), len(r.Inverse)
	if n == 0 || m == 0 {
		r.Action.Effects = slices.Clone(r.Action.Effects)
		r.Inverse = slices.Clone(r.Inverse)
	} else {
		buf := make([]Effect, n+m)
		copy(buf, r.Action.Effects)
		copy(buf[n:], r.Inverse)
		r.Action.Effects = buf[:n:n]
		r.Inverse = buf[n:]
	}
	r.Warnings = slices.Clone(r.Warnings)
	return r
}

// Execute evaluates a and, if it is allowed, commits it: it returns the
// next world state, the next Meter (charged, step counted) and the
// Record. If anything fails it returns s and ks themselves with an error
// (a *RejectedError for a rejection, ErrDuplicateExecution or ErrOverflow
// from the ledger): nothing changes (T5). Everything is computed before
// the commit and nothing is checked after it, so no predicate can split an
// action.
func (k *Kernel) Execute(ks Meter, s State, a Action, execID string) (State, Meter, Record, error) {
	v := k.evaluate(ks, s, a, nil, 0) // Commit copies the action
	return k.Commit(ks, s, v, execID)
}

// Commit commits the action of a Verdict that this kernel's Evaluate
// returned for exactly (ks, s): Execute without the evaluation, for
// callers that want to look at the Verdict first. A rejecting Verdict is
// returned as a *RejectedError; a Verdict from another kernel, state or
// meter is refused with ErrStaleVerdict (so a decision cannot be
// applied to a state it was not made for). Commit uses the Verdict's own
// unexported record of the decision: editing its exported fields changes
// nothing.
func (k *Kernel) Commit(ks Meter, s State, v Verdict, execID string) (State, Meter, Record, error) {
	next, nks, rec, err := k.commit(ks, s, &v, execID)
	if err == nil {
		rec.Action = rec.Action.clone()
		rec.Inverse = slices.Clone(rec.Inverse) // the Verdict may be committed again
	}
	return next, nks, rec, err
}

// commit is Commit without copying the action: the Record's Action shares
// its slices with the Verdict's (the caller copies it before handing it
// out). Its Inverse is the Verdict's private one and Warnings is fresh.
func (k *Kernel) commit(ks Meter, s State, v *Verdict, execID string) (State, Meter, Record, error) {
	if v.tag != k.tag || v.from != s.d || v.fromKS != ks {
		return s, ks, Record{}, fmt.Errorf("%w: evaluate again", ErrStaleVerdict)
	}
	if !v.ok {
		rv := *v
		rv.Allowed = false
		return s, ks, Record{}, rv.Err()
	}
	a := &v.action
	budget, err := ks.budget.Charge(execID, a.Cost)
	if err != nil {
		return s, ks, Record{}, err
	}
	next := Meter{budget: budget, steps: ks.steps, emergency: ks.emergency, tag: ks.tag}
	if v.emergency {
		next.emergency++
	} else {
		next.steps++
	}
	rec := Record{
		ExecID:         execID,
		Action:         *a,
		Emergency:      v.emergency,
		Before:         s.Fingerprint(),
		After:          v.next.Fingerprint(),
		Inverse:        v.inverse,
		Budget:         snapshot(budget),
		Steps:          next.steps,
		EmergencySteps: next.emergency,
	}
	rec.Warnings = slices.Clone(v.warnings)
	return v.next, next, rec, nil
}

// RollbackRecord describes one rollback.
type RollbackRecord struct {
	ExecID        string
	Refund        Cost
	Before, After Fingerprint // the state rolled back from, and restored to
	Effects       []Effect    // the inverse effects applied
	Budget        BudgetSnapshot
	Steps         uint64 // unchanged by the rollback
}

// Rollback undoes the execution rec on s (T7). s must be the state that
// execution produced (its fingerprint is checked: ErrFingerprintMismatch);
// the inverse effects are applied and the result must have the fingerprint
// the execution started from (ErrRollbackInexact); the execution's charge
// is refunded exactly once (ErrAlreadyRolledBack, ErrUnknownExecution).
// The step counters are never decremented. On error s and ks are returned
// unchanged.
func (k *Kernel) Rollback(ks Meter, s State, rec Record) (State, Meter, RollbackRecord, error) {
	if ks.tag != k.tag {
		return s, ks, RollbackRecord{}, fmt.Errorf("%w: use Kernel.Start", ErrForeignState)
	}
	if got := s.Fingerprint(); got != rec.After {
		return s, ks, RollbackRecord{}, fmt.Errorf("%w: have %s, the execution produced %s", ErrFingerprintMismatch, got, rec.After)
	}
	h := keyHash(rec.ExecID)
	l, ok := ks.budget.ledger.get(h, rec.ExecID)
	if !ok {
		return s, ks, RollbackRecord{}, fmt.Errorf("%w: %q", ErrUnknownExecution, rec.ExecID)
	}
	if l.rolledBack {
		return s, ks, RollbackRecord{}, fmt.Errorf("%w: %q", ErrAlreadyRolledBack, rec.ExecID)
	}
	restored, err := ApplyEffects(s, rec.Inverse)
	if err != nil {
		return s, ks, RollbackRecord{}, fmt.Errorf("%w: %w", ErrRollbackInexact, err)
	}
	if restored.Fingerprint() != rec.Before {
		return s, ks, RollbackRecord{}, fmt.Errorf("%w: restored %s, expected %s", ErrRollbackInexact, restored.Fingerprint(), rec.Before)
	}
	budget, charged := ks.budget.rollbackEntry(h, rec.ExecID, l)
	next := Meter{budget: budget, steps: ks.steps, emergency: ks.emergency, tag: ks.tag}
	rr := RollbackRecord{
		ExecID:  rec.ExecID,
		Refund:  charged,
		Before:  rec.After,
		After:   rec.Before,
		Effects: slices.Clone(rec.Inverse),
		Budget:  snapshot(budget),
		Steps:   ks.steps,
	}
	return restored, next, rr, nil
}
