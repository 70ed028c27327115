package kernel

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/verity-go/verity/trace"
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
	// InvariantTimeout bounds how long one invariant's predicate may run
	// (Invariant.Timeout overrides it); zero means no limit. A predicate
	// past its limit is a violation, fail closed as a panic is, so one
	// stuck predicate cannot hold a Session's lock. Go cannot stop a
	// goroutine: the abandoned predicate runs on until it returns, then
	// its result is dropped; one that never returns keeps its goroutine
	// (and what it references) for the life of the process. A limited
	// predicate runs on its own goroutine, which costs about a
	// microsecond; whether it finishes in time depends on the machine, so
	// Replay, which re-runs predicates, can disagree with a recorded
	// timeout.
	InvariantTimeout time.Duration
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
	timeout    time.Duration // Config.InvariantTimeout
	tag        *byte         // identity, to recognise its Meters
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
	if cfg.InvariantTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: negative invariant timeout %s", ErrInvalidConfig, cfg.InvariantTimeout))
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
		timeout:    cfg.InvariantTimeout,
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

// isEmergency reports whether id is a registered emergency action.
func (k *Kernel) isEmergency(id string) bool {
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
	steps     uint64   // non-emergency executions; never decremented (not even by rollback)
	emergency uint64   // emergency executions
	open      *openSet // open reservations (nil: none)
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

// CheckName names a check in a Verdict. It is also the error a failure
// of the check wraps (see Error): fmt prints a CheckName as that error,
// string(c) is the name.
type CheckName string

// The checks, in the order Evaluate runs and reports them.
const (
	CheckWellFormed   CheckName = "well_formed"  // Action.validate
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

// Verdict is what Evaluate decides about one action: whether it may run,
// one CheckResult per check in the documented order, and the simulated
// next state. It is a value of the kernel's own making: nothing in it can
// be edited, so Commit can trust it, and a Verdict applies only to the
// state and Meter it was made for. The zero Verdict allows nothing.
type Verdict struct {
	allowed   bool
	emergency bool
	checks    []CheckResult
	next      State
	action    Action   // the kernel's own copy of the evaluated action
	inverse   []Effect // the algebraic inverse of the action's effects
	tag       *byte    // the kernel that made it
	from      *stateData
	fromMeter Meter
}

// Allowed reports whether no check failed: Commit will commit the action.
func (v Verdict) Allowed() bool { return v.allowed }

// Emergency reports whether the action is a registered emergency action.
func (v Verdict) Emergency() bool { return v.emergency }

// actionID returns the id of the evaluated action.
func (v Verdict) actionID() string { return v.action.ID }

// Checks returns a copy of every check's result, in the documented order.
func (v Verdict) Checks() []CheckResult { return slices.Clone(v.checks) }

// Next returns the simulated next state when every effect applied
// (whether or not the action is allowed); otherwise the current state.
func (v Verdict) Next() State { return v.next }

// Failures returns the failed checks.
func (v Verdict) Failures() []CheckResult { return v.with(StatusFailed) }

// Warnings returns the monitoring invariants that are violated.
func (v Verdict) Warnings() []CheckResult { return v.with(StatusWarned) }

// with returns the checks of status st (nil if none).
func (v Verdict) with(st Status) []CheckResult {
	var out []CheckResult
	for _, c := range v.checks {
		if c.Status == st {
			out = append(out, c)
		}
	}
	return out
}

// owned returns v with slices of its own: the action's, the checks and
// the inverse (a Session's evaluate lends them).
func (v Verdict) owned() Verdict {
	v.action = v.action.clone()
	v.checks = slices.Clone(v.checks)
	v.inverse = slices.Clone(v.inverse)
	return v
}

// Err returns nil if the action is allowed, else a *RejectedError.
func (v Verdict) Err() error {
	if v.allowed {
		return nil
	}
	return &RejectedError{Verdict: v}
}

// Evaluate decides whether a may run from (m, s), without changing
// anything. The checks run in this order, every one of them reported:
//
//  1. well_formed: the action is well formed (DecodeAction's checks);
//  2. min_cost: cost ≥ ε (skipped for emergency actions; T2);
//  3. budget: net spend + cost ≤ B0 (T1);
//  4. step_limit: steps < floor(B0/ε) (skipped for emergency actions; T2);
//  5. effects: the effects apply in sequence to s (simulation);
//  6. invariant: each invariant on the simulated next state, in
//     configuration order (T3; skipped if effects failed);
//  7. precondition: each precondition on (s, a), in order.
//
// The action is allowed iff no check failed. The Verdict keeps its own
// copy of a: changing the caller's slices afterwards changes nothing.
func (k *Kernel) Evaluate(m Meter, s State, a Action) Verdict {
	// The copy of the effects and the inverse share one allocation: the
	// inverse has at most one effect per effect.
	n := len(a.Effects)
	buf := make([]Effect, n, 2*n)
	copy(buf, a.Effects)
	a.Effects, a.Tags, a.Input = buf[:n:n], slices.Clone(a.Tags), slices.Clone(a.Input)
	return k.evaluate(m, s, a, buf[n:n:2*n], make([]CheckResult, 0, k.checkCount()))
}

// checkCount is the number of checks Evaluate reports.
func (k *Kernel) checkCount() int { return 5 + len(k.invariants) + len(k.preconds) }

// evaluate is Evaluate on an action whose slices the Verdict may keep,
// appending the inverse to inv and the checks to checks. A Session lends
// it the caller's action and its own buffers under its mutex, and copies
// what leaves the call (sessionScratch).
func (k *Kernel) evaluate(m Meter, s State, a Action, inv []Effect, checks []CheckResult) Verdict {
	emergency := k.isEmergency(a.ID)
	v := Verdict{
		emergency: emergency,
		checks:    checks,
		next:      s,
		action:    a,
		tag:       k.tag,
		from:      s.d,
		fromMeter: m,
	}
	add := func(c CheckResult) { v.checks = append(v.checks, c) }
	failed := false
	fail := func(name CheckName, err error) {
		failed = true
		add(CheckResult{Check: name, Status: StatusFailed, Reason: err.Error(), Err: err})
	}

	wellFormed := true
	if m.tag != k.tag {
		wellFormed = false
		fail(CheckWellFormed, fmt.Errorf("%w: the meter was started by another kernel (use Kernel.Start)", ErrStaleVerdict))
	} else if err := a.validate(); err != nil {
		wellFormed = false
		fail(CheckWellFormed, err)
	} else {
		add(CheckResult{Check: CheckWellFormed, Status: StatusPassed})
	}

	switch {
	case emergency:
		add(CheckResult{Check: CheckMinCost, Status: StatusSkipped, Reason: "emergency action"})
	case a.Cost < k.minCost:
		fail(CheckMinCost, fmt.Errorf("%w: cost %s < minimum %s", CheckMinCost, a.Cost, k.minCost))
	default:
		add(CheckResult{Check: CheckMinCost, Status: StatusPassed})
	}

	if m.budget.canAfford(a.Cost) {
		add(CheckResult{Check: CheckBudget, Status: StatusPassed})
	} else {
		fail(CheckBudget, fmt.Errorf("%w: cost %s, remaining %s", CheckBudget, a.Cost, m.budget.Remaining()))
	}

	switch {
	case emergency:
		add(CheckResult{Check: CheckStepLimit, Status: StatusSkipped, Reason: "emergency action"})
	case m.steps >= k.maxSteps:
		fail(CheckStepLimit, fmt.Errorf("%w: %d of %d steps taken (budget %s / min_cost %s: every call costs at least min_cost)", CheckStepLimit, m.steps, k.maxSteps, k.budget, k.minCost))
	default:
		add(CheckResult{Check: CheckStepLimit, Status: StatusPassed})
	}

	simulated := false
	if !wellFormed {
		add(CheckResult{Check: CheckEffects, Status: StatusSkipped, Reason: "action is not well formed"})
	} else if next, inv, err := simulate(s, a.Effects, inv); err != nil {
		fail(CheckEffects, err)
	} else {
		add(CheckResult{Check: CheckEffects, Status: StatusPassed})
		v.next, v.inverse, simulated = next, inv, true
	}

	for _, inv := range k.invariants {
		if !simulated {
			add(CheckResult{Check: CheckInvariant, Name: inv.Name, Status: StatusSkipped, Reason: "no simulated next state"})
			continue
		}
		limit := inv.Timeout
		if limit == 0 {
			limit = k.timeout
		}
		ok, err := inv.holds(v.next, limit)
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
	v.allowed = !failed
	return v
}

// simulate applies effects to s and returns the next state and the
// algebraic inverse, appended to inv (reversed: apply it in order).
func simulate(s State, effects []Effect, inv []Effect) (State, []Effect, error) {
	b := newBuilder(s)
	b.grow(len(effects))
	for i, e := range effects {
		ie, err := b.apply(i, e)
		if err != nil {
			return s, nil, err
		}
		if ie.Op != 0 {
			inv = append(inv, ie)
		}
	}
	slices.Reverse(inv)
	return b.state(), inv, nil
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
	// Reserved: Reserve made it, and its cost is an upper bound until
	// Settle.
	Reserved bool
	// InputDigest is the SHA-256 of Action.Input's bytes exactly as given,
	// InputSize their number (zero: no input).
	InputDigest trace.Hash
	InputSize   int
	// Time is when a Session recorded the execution; Seq and Hash name
	// its trace entry, a receipt a host can hand back to the caller. The
	// pure Kernel leaves them zero.
	Time time.Time
	Seq  uint64
	Hash trace.Hash
}

// clone returns a copy of r that shares no slices with it: the action's
// effects and the inverse in one allocation (they live and die together).
func (r Record) clone() Record {
	r = r.cloneAction()
	r.Warnings = slices.Clone(r.Warnings)
	return r
}

// cloneAction is clone but for the warnings.
func (r Record) cloneAction() Record {
	n, m := len(r.Action.Effects), len(r.Inverse)
	buf := make([]Effect, n+m)
	copy(buf, r.Action.Effects)
	copy(buf[n:], r.Inverse)
	r.Action.Effects, r.Inverse = buf[:n:n], buf[n:]
	r.Action.Tags = slices.Clone(r.Action.Tags)
	r.Action.Input = slices.Clone(r.Action.Input)
	return r
}

// detach gives r slices of its own and returns a second copy of it:
// afterwards neither shares a slice with what r shared before or with
// the other, but for r's Warnings, which the copy keeps and r clones. It
// makes the copies in fewer allocations than two clones, both copies'
// effects and inverses in one, both copies' tags in another, and in place,
// so that its caller's frame holds no third record.
func (r *Record) detach() (kept Record) {
	kept = *r
	n, m := len(r.Action.Effects), len(r.Inverse)
	buf := make([]Effect, 2*(n+m))
	copy(buf, r.Action.Effects)
	copy(buf[n:], r.Inverse)
	copy(buf[n+m:], buf[:n+m])
	kept.Action.Effects, kept.Inverse = buf[:n:n], buf[n:n+m:n+m]
	r.Action.Effects, r.Inverse = buf[n+m:2*n+m:2*n+m], buf[2*n+m:]
	if t := len(r.Action.Tags); t > 0 {
		tags := make([]string, 2*t)
		copy(tags, r.Action.Tags)
		copy(tags[t:], r.Action.Tags)
		kept.Action.Tags, r.Action.Tags = tags[:t:t], tags[t:]
	} else {
		kept.Action.Tags, r.Action.Tags = slices.Clone(r.Action.Tags), slices.Clone(r.Action.Tags)
	}
	kept.Action.Input, r.Action.Input = slices.Clone(r.Action.Input), slices.Clone(r.Action.Input)
	r.Warnings = slices.Clone(r.Warnings) // kept keeps the original's
	return kept
}

// Execute evaluates a and, if it is allowed, commits it: it returns the
// next world state, the next Meter (charged, step counted) and the
// Record. If anything fails it returns s and m themselves with an error
// (a *RejectedError for a rejection, ErrDuplicateExecution or ErrOverflow
// from the ledger): nothing changes (T5). Everything is computed before
// the commit and nothing is checked after it, so no predicate can split an
// action.
func (k *Kernel) Execute(m Meter, s State, a Action, execID string) (State, Meter, Record, error) {
	return k.Commit(m, s, k.Evaluate(m, s, a), execID)
}

// Commit commits the action of a Verdict that this kernel's Evaluate
// returned for exactly (m, s): Execute without the evaluation, for
// callers that want to look at the Verdict first. A rejecting Verdict is
// returned as a *RejectedError; a Verdict from another kernel, state or
// Meter, or the zero Verdict, is refused with ErrStaleVerdict (so a
// decision cannot be applied to a state it was not made for). The Record
// shares nothing with the Verdict, which may be committed again (on
// another branch of a pure kernel's history).
func (k *Kernel) Commit(m Meter, s State, v Verdict, execID string) (State, Meter, Record, error) {
	next, nm, rec, err := k.commit(m, s, &v, execID)
	if err != nil {
		return next, nm, rec, err
	}
	return next, nm, rec.cloneAction(), nil
}

// commit is Commit whose Record shares the action's slices and the
// inverse with v (its Warnings are its own).
func (k *Kernel) commit(m Meter, s State, v *Verdict, execID string) (State, Meter, Record, error) {
	if v.tag != k.tag || v.from != s.d || v.fromMeter != m {
		return s, m, Record{}, fmt.Errorf("%w: evaluate again", ErrStaleVerdict)
	}
	if !v.allowed {
		return s, m, Record{}, v.Err()
	}
	budget, err := m.budget.charge(execID, v.action.Cost)
	if err != nil {
		return s, m, Record{}, err
	}
	next := Meter{budget: budget, steps: m.steps, emergency: m.emergency, open: m.open, tag: m.tag}
	if v.emergency {
		next.emergency++
	} else {
		next.steps++
	}
	rec := Record{
		ExecID:         execID,
		Action:         v.action,
		Emergency:      v.emergency,
		Before:         s.Fingerprint(),
		After:          v.next.Fingerprint(),
		Inverse:        v.inverse,
		Budget:         snapshot(budget),
		Steps:          next.steps,
		EmergencySteps: next.emergency,
	}
	if len(v.action.Input) > 0 {
		rec.InputDigest, rec.InputSize = sha256.Sum256(v.action.Input), len(v.action.Input)
	}
	rec.Warnings = v.Warnings()
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
	// Time is when a Session recorded the rollback; Seq and Hash name its
	// trace entry. The pure Kernel leaves them zero.
	Time time.Time
	Seq  uint64
	Hash trace.Hash
}

// Rollback undoes the execution rec on s (T7). s must be the state that
// execution produced (its fingerprint is checked: ErrFingerprintMismatch);
// the inverse effects are applied and the result must have the fingerprint
// the execution started from (ErrFingerprintMismatch too); the execution's charge
// is refunded exactly once (ErrAlreadyRolledBack, ErrUnknownExecution).
// The step counters are never decremented. On error s and m are returned
// unchanged.
func (k *Kernel) Rollback(m Meter, s State, rec Record) (State, Meter, RollbackRecord, error) {
	if m.tag != k.tag {
		return s, m, RollbackRecord{}, fmt.Errorf("%w: the meter was started by another kernel (use Kernel.Start)", ErrStaleVerdict)
	}
	if got := s.Fingerprint(); got != rec.After {
		return s, m, RollbackRecord{}, fmt.Errorf("%w: have %s, the execution produced %s", ErrFingerprintMismatch, got, rec.After)
	}
	h := keyHash(rec.ExecID)
	l, ok := m.budget.ledger.get(h, rec.ExecID)
	if !ok {
		return s, m, RollbackRecord{}, fmt.Errorf("%w: %q", ErrUnknownExecution, rec.ExecID)
	}
	if l.rolledBack {
		return s, m, RollbackRecord{}, fmt.Errorf("%w: %q", ErrAlreadyRolledBack, rec.ExecID)
	}
	restored, err := ApplyEffects(s, rec.Inverse)
	if err != nil {
		return s, m, RollbackRecord{}, fmt.Errorf("%w: the inverse effects do not apply: %w", ErrFingerprintMismatch, err)
	}
	if restored.Fingerprint() != rec.Before {
		return s, m, RollbackRecord{}, fmt.Errorf("%w: the inverse effects restored %s, expected %s", ErrFingerprintMismatch, restored.Fingerprint(), rec.Before)
	}
	budget, charged := m.budget.rollbackEntry(h, rec.ExecID, l)
	next := Meter{budget: budget, steps: m.steps, emergency: m.emergency, open: m.open.without(rec.ExecID), tag: m.tag}
	rr := RollbackRecord{
		ExecID:  rec.ExecID,
		Refund:  charged,
		Before:  rec.After,
		After:   rec.Before,
		Effects: slices.Clone(rec.Inverse),
		Budget:  snapshot(budget),
		Steps:   m.steps,
	}
	return restored, next, rr, nil
}
