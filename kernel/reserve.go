package kernel

import (
	"fmt"
	"github.com/verity-go/verity/kernel/value"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/trace"
)

// Reservation is an execution whose cost is known only afterwards: Reserve
// charged an upper bound, and Settle has not yet recorded the actual cost.
type Reservation struct {
	ExecID   string
	ActionID string
	Amount   Cost // the upper bound charged
}

// openSet is an immutable list of open reservations, oldest first. In
// flight at once are a handful of calls, so a copy per change is cheap,
// and a Meter without any holds nil.
type openSet struct{ items []Reservation }

func (o *openSet) find(id string) int {
	if o == nil {
		return -1
	}
	return slices.IndexFunc(o.items, func(r Reservation) bool { return r.ExecID == id })
}

func (o *openSet) with(r Reservation) *openSet {
	var items []Reservation
	if o != nil {
		items = make([]Reservation, len(o.items), len(o.items)+1)
		copy(items, o.items)
	}
	return &openSet{items: append(items, r)}
}

func (o *openSet) without(id string) *openSet {
	i := o.find(id)
	if i < 0 {
		return o
	}
	if len(o.items) == 1 {
		return nil
	}
	return &openSet{items: slices.Delete(slices.Clone(o.items), i, i+1)}
}

// Reservations returns the open reservations, oldest first (a copy).
func (m Meter) Reservations() []Reservation {
	if m.open == nil {
		return nil
	}
	return slices.Clone(m.open.items)
}

// Reserve is Commit for a call whose cost is known only afterwards: the
// Verdict's action cost is the upper bound, charged now after the usual
// checks (budget, steps, invariants, preconditions), and the execution
// stays an open Reservation until Settle records the actual cost. Its
// Record has Reserved set. Until then the whole bound counts as spent, so
// T1 holds at every instant, with any number of reservations open; a
// reservation never settled stays charged.
func (k *Kernel) Reserve(m Meter, s State, v Verdict, execID string) (State, Meter, Record, error) {
	world, next, rec, err := k.reserve(m, s, &v, execID)
	if err != nil {
		return world, next, rec, err
	}
	return world, next, rec.cloneAction(), nil
}

// reserve is Reserve as commit is Commit: the Record shares v's slices.
func (k *Kernel) reserve(m Meter, s State, v *Verdict, execID string) (State, Meter, Record, error) {
	world, next, rec, err := k.commit(m, s, v, execID)
	if err != nil {
		return s, m, Record{}, err
	}
	rec.Reserved = true
	next.open = m.open.with(Reservation{ExecID: execID, ActionID: rec.Action.ID, Amount: rec.Action.Cost})
	return world, next, rec, nil
}

// SettleRecord describes one settlement of a reservation.
type SettleRecord struct {
	ExecID   string
	Reserved Cost // the upper bound Reserve charged
	Actual   Cost // the actual cost reported
	Refund   Cost // Reserved − Actual, given back, when the actual is lower
	Overrun  Cost // Actual − Reserved, charged beyond the bound, up to what remained
	Unpaid   Cost // the part of an overrun the budget had no room for: never charged
	Budget   BudgetSnapshot
	// Time is when a Session recorded the settlement; Seq and Hash name
	// its trace entry. The pure Kernel leaves them zero.
	Time time.Time
	Seq  uint64
	Hash trace.Hash
}

// Err returns nil, or for an actual above the reservation an error
// wrapping ErrOverrun that says how much was charged beyond the bound and
// how much was left unpaid. Session.Settle returns it.
func (r SettleRecord) Err() error {
	if r.Overrun == 0 && r.Unpaid == 0 {
		return nil
	}
	return fmt.Errorf("%w: %q reserved %s, cost %s: %s charged beyond the reservation, %s unpaid (not in the budget)",
		ErrOverrun, r.ExecID, r.Reserved, r.Actual, r.Overrun, r.Unpaid)
}

// Settle records the actual cost of the open reservation execID and
// closes it. An actual below the reservation refunds the difference. An
// actual above it (an overrun) is never hidden: the excess is charged up
// to what remains of the budget (Overrun), what does not fit is recorded
// as Unpaid and never charged — net spend stays ≤ B0 (T1) and gross only
// grows (T4) — and SettleRecord.Err reports it. Only the budget changes:
// the state, and the step counters, are the reservation's. Errors:
// ErrUnknownExecution, ErrNotReserved (no open reservation: never
// reserved, or already settled or rolled back), ErrInvalidCost,
// ErrOverflow; on error m is returned unchanged.
func (k *Kernel) Settle(m Meter, execID string, actual Cost) (Meter, SettleRecord, error) {
	if m.tag != k.tag {
		return m, SettleRecord{}, fmt.Errorf("%w: the meter was started by another kernel (use Kernel.Start)", ErrStaleVerdict)
	}
	if actual < 0 {
		return m, SettleRecord{}, fmt.Errorf("%w: negative actual cost %s", ErrInvalidCost, actual)
	}
	if m.open.find(execID) < 0 {
		if _, _, ok := m.budget.Charged(execID); !ok {
			return m, SettleRecord{}, fmt.Errorf("%w: %q", ErrUnknownExecution, execID)
		}
		return m, SettleRecord{}, fmt.Errorf("%w: %q", ErrNotReserved, execID)
	}
	budget, r, err := m.budget.settle(execID, actual)
	if err != nil {
		return m, SettleRecord{}, err
	}
	next := Meter{budget: budget, steps: m.steps, emergency: m.emergency, open: m.open.without(execID), tag: m.tag}
	r.ExecID, r.Actual, r.Budget = execID, actual, snapshot(budget)
	return next, r, nil
}

// RefundRecord describes one refund.
type RefundRecord struct {
	ExecID string
	Amount Cost
	Reason string
	Budget BudgetSnapshot
	// Time is when a Session recorded the refund; Seq and Hash name its
	// trace entry. The pure Kernel leaves them zero.
	Time time.Time
	Seq  uint64
	Hash trace.Hash
}

// Refund gives back amount of what execution execID was charged, for
// reason (a call that failed in the world, say): at most what it was
// charged and not yet refunded (ErrRefundTooLarge). It touches only the
// budget — the state, and so the model's bookkeeping (a failed call still
// counts towards a rate limit), and the step counters stay — and gross
// spend never decreases (T4). Unlike Rollback it works for any past
// execution, not only the last. An open reservation is settled instead
// (ErrReservationOpen; Settle with a lower actual refunds), a rolled-back
// execution has nothing left (ErrAlreadyRolledBack). On error m is
// returned unchanged.
func (k *Kernel) Refund(m Meter, execID string, amount Cost, reason string) (Meter, RefundRecord, error) {
	if m.tag != k.tag {
		return m, RefundRecord{}, fmt.Errorf("%w: the meter was started by another kernel (use Kernel.Start)", ErrStaleVerdict)
	}
	if !utf8.ValidString(reason) {
		return m, RefundRecord{}, fmt.Errorf("%w: refund reason is not valid UTF-8", value.ErrInvalidValue)
	}
	if m.open.find(execID) >= 0 {
		return m, RefundRecord{}, fmt.Errorf("%w: %q: settle it", ErrReservationOpen, execID)
	}
	if m.budget.RolledBack(execID) {
		return m, RefundRecord{}, fmt.Errorf("%w: %q", ErrAlreadyRolledBack, execID)
	}
	budget, err := m.budget.refund(execID, amount)
	if err != nil {
		return m, RefundRecord{}, err
	}
	next := Meter{budget: budget, steps: m.steps, emergency: m.emergency, open: m.open, tag: m.tag}
	return next, RefundRecord{ExecID: execID, Amount: amount, Reason: reason, Budget: snapshot(budget)}, nil
}

// settle is Settle on the budget: id's ledger entry was charged its
// reservation and nothing refunded (refunds wait for the settlement).
func (b Budget) settle(id string, actual Cost) (Budget, SettleRecord, error) {
	h := keyHash(id)
	l, _ := b.ledger.get(h, id)
	r := SettleRecord{Reserved: l.charged}
	if actual <= l.charged {
		r.Refund = l.charged - actual
		l.refunded += r.Refund
		ledger := b.ledger.put(h, id, l)
		return Budget{limit: b.limit, gross: b.gross, refunded: b.refunded + r.Refund, ledger: ledger, entries: b.entries}, r, nil
	}
	excess := actual - l.charged
	r.Overrun = min(excess, max(b.Remaining(), 0))
	r.Unpaid = excess - r.Overrun
	gross, ok := addInt(int64(b.gross), int64(r.Overrun))
	if !ok {
		return b, SettleRecord{}, fmt.Errorf("%w: gross spend overflows", ErrOverflow)
	}
	l.charged += r.Overrun
	l.overrun = r.Overrun
	ledger := b.ledger.put(h, id, l)
	return Budget{limit: b.limit, gross: Cost(gross), refunded: b.refunded, ledger: ledger, entries: b.entries}, r, nil
}

// sharedSplit divides a refund of amount from execution id between the
// SharedBudget's two charges of it: the reservation's (under id) and an
// overrun's (under id + "/overrun"), taking from the first first.
func (b Budget) sharedSplit(id string, amount Cost) (first, overrun Cost) {
	l, _ := b.ledger.get(keyHash(id), id)
	main := l.charged - l.overrun
	left := max(main-min(l.refunded, main), 0)
	first = min(amount, left)
	return first, amount - first
}
