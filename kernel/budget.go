package kernel

import (
	"fmt"
	"sync/atomic"

	"github.com/verity-go/verity/internal/hamt"
)

// Budget is the budget controller of T1 and T4 as an immutable value: a
// limit B0, the gross amount ever charged, the amount refunded, and a
// ledger of what each execution was charged and refunded. Net spend is
// gross − refunded. Charge and Refund return a new Budget and leave the
// receiver unchanged; a refused transition returns the receiver itself.
//
// By construction: Net ≤ Limit after every Charge (T1); Gross never
// decreases (T4, Refund touches only the refunded total); a refund never
// exceeds what its execution was charged minus what it was already
// refunded.
type Budget struct {
	limit, gross, refunded Cost
	ledger                 ledger
	entries                int
}

type ledgerEntry struct {
	charged, refunded Cost
	overrun           Cost // of charged, what a settlement added beyond the reservation
	rolledBack        bool
}

// PeriodBudget returns a Budget that reports one period of a budget that
// renews (a tool gate's budget_period): its limit and what the period
// spent, net. It has no ledger (Charged reports nothing): a view for
// meters and logs, not a controller.
func PeriodBudget(limit, spent Cost) Budget { return Budget{limit: limit, gross: spent} }

// Limit returns B0.
func (b Budget) Limit() Cost { return b.limit }

// Gross returns everything ever charged (T4: never decreases).
func (b Budget) Gross() Cost { return b.gross }

// Refunded returns everything refunded.
func (b Budget) Refunded() Cost { return b.refunded }

// Net returns gross − refunded (T1: never above Limit).
func (b Budget) Net() Cost { return b.gross - b.refunded }

// Remaining returns Limit − Net.
func (b Budget) Remaining() Cost { return b.limit - b.Net() }

// executions returns the number of ledger entries.
func (b Budget) executions() int { return b.entries }

// canAfford reports whether c is a valid cost that fits the remaining
// budget: 0 ≤ c ≤ Limit − Net (computed without overflow).
func (b Budget) canAfford(c Cost) bool { return c >= 0 && c <= b.Remaining() }

// charge records that execution id was charged c. It fails with
// CheckBudget if c does not fit, ErrInvalidCost if c < 0,
// ErrDuplicateExecution if id was already charged, and ErrOverflow if the
// gross total would leave int64.
func (b Budget) charge(id string, c Cost) (Budget, error) {
	if c < 0 {
		return b, fmt.Errorf("%w: negative charge %s", ErrInvalidCost, c)
	}
	if !b.canAfford(c) {
		return b, fmt.Errorf("%w: cost %s, remaining %s", CheckBudget, c, b.Remaining())
	}
	gross, ok := addInt(int64(b.gross), int64(c))
	if !ok {
		return b, fmt.Errorf("%w: gross spend overflows", ErrOverflow)
	}
	h := keyHash(id)
	if _, dup := b.ledger.get(h, id); dup {
		return b, fmt.Errorf("%w: %q", ErrDuplicateExecution, id)
	}
	return Budget{limit: b.limit, gross: Cost(gross), refunded: b.refunded, ledger: b.ledger.put(h, id, ledgerEntry{charged: c}), entries: b.entries + 1}, nil
}

// Charged returns what execution id was charged and refunded so far.
func (b Budget) Charged(id string) (charged, refunded Cost, ok bool) {
	l, ok := b.ledger.get(keyHash(id), id)
	if !ok {
		return 0, 0, false
	}
	return l.charged, l.refunded, true
}

// refund gives back amount of what execution id was charged. It fails with
// ErrUnknownExecution for an id never charged and ErrRefundTooLarge if
// amount exceeds the charge minus earlier refunds.
func (b Budget) refund(id string, amount Cost) (Budget, error) {
	if amount < 0 {
		return b, fmt.Errorf("%w: negative refund %s", ErrInvalidCost, amount)
	}
	h := keyHash(id)
	l, ok := b.ledger.get(h, id)
	if !ok {
		return b, fmt.Errorf("%w: %q", ErrUnknownExecution, id)
	}
	if amount > l.charged-l.refunded {
		return b, fmt.Errorf("%w: %q was charged %s, refunded %s, asked %s",
			ErrRefundTooLarge, id, l.charged, l.refunded, amount)
	}
	l.refunded += amount
	ledger := b.ledger.put(h, id, l)
	return Budget{limit: b.limit, gross: b.gross, refunded: b.refunded + amount, ledger: ledger, entries: b.entries}, nil
}

// RolledBack reports whether execution id was rolled back.
func (b Budget) RolledBack(id string) bool {
	l, ok := b.ledger.get(keyHash(id), id)
	return ok && l.rolledBack
}

// rollback refunds everything execution id was charged and not yet
// refunded, exactly once.
func (b Budget) rollback(id string) (Budget, Cost, error) {
	h := keyHash(id)
	l, ok := b.ledger.get(h, id)
	if !ok {
		return b, 0, fmt.Errorf("%w: %q", ErrUnknownExecution, id)
	}
	if l.rolledBack {
		return b, 0, fmt.Errorf("%w: %q", ErrAlreadyRolledBack, id)
	}
	nb, amount := b.rollbackEntry(h, id, l)
	return nb, amount, nil
}

// rollbackEntry is rollback for the ledger entry l of id (hash h), found
// and checked (not rolled back) by the caller.
func (b Budget) rollbackEntry(h uint64, id string, l ledgerEntry) (Budget, Cost) {
	amount := l.charged - l.refunded
	l.refunded, l.rolledBack = l.charged, true
	ledger := b.ledger.put(h, id, l)
	return Budget{limit: b.limit, gross: b.gross, refunded: b.refunded + amount, ledger: ledger, entries: b.entries}, amount
}

// ledger is the persistent map execution id → ledgerEntry under a Budget:
// a persistent map (m) of older entries plus a short tail of the most
// recent puts, newest last. A key may appear in both and more than once in
// the tail; the newest occurrence wins.
//
// The tail array is shared by successive versions: a version sees its
// first n items only, and a put from the version that owns the array's
// end (used == n, claimed with a compare-and-swap, so that of two puts from
// the same version only one extends the array in place) writes item n and
// returns a version with n+1; any other put copies the n items first. So
// no item a version can see is ever written again, a put costs O(1) and
// not a path copy of the map, and once the tail is full its items go into
// the map in one batch (one hamt.Builder, so a node is copied once per
// batch rather than once per put).
type ledger struct {
	m    ledgerMap
	tail *ledgerTail
	n    int // items of tail this version sees
}

type ledgerMap = hamt.Map[string, ledgerEntry, hamt.Seeded[string]]

// keyHash is the hash of an execution id in the ledger's tail.
func keyHash(id string) uint64 { return hamt.Seeded[string]{}.Hash(id) }

const ledgerTailCap = 32

type ledgerTail struct {
	used  atomic.Int32 // items written (claimed)
	items []ledgerItem // len: capacity (a size class ≤ ledgerTailCap)
}

// newTail allocates a tail of at least n items (one allocation, the items
// array rounded up to a size class).
func newTail(n int) *ledgerTail {
	var t *ledgerTail
	switch {
	case n <= 4:
		x := new(struct {
			t ledgerTail
			a [4]ledgerItem
		})
		t = &x.t
		t.items = x.a[:]
	case n <= 8:
		x := new(struct {
			t ledgerTail
			a [8]ledgerItem
		})
		t = &x.t
		t.items = x.a[:]
	case n <= 16:
		x := new(struct {
			t ledgerTail
			a [16]ledgerItem
		})
		t = &x.t
		t.items = x.a[:]
	default:
		x := new(struct {
			t ledgerTail
			a [ledgerTailCap]ledgerItem
		})
		t = &x.t
		t.items = x.a[:]
	}
	return t
}

type ledgerItem struct {
	hash uint64
	key  string
	val  ledgerEntry
}

func (l ledger) get(h uint64, key string) (ledgerEntry, bool) {
	for i := l.n - 1; i >= 0; i-- {
		if it := &l.tail.items[i]; it.hash == h && it.key == key {
			return it.val, true
		}
	}
	return l.m.Get(key)
}

func (l ledger) put(h uint64, key string, val ledgerEntry) ledger {
	if l.tail != nil && l.n < len(l.tail.items) && l.tail.used.CompareAndSwap(int32(l.n), int32(l.n)+1) {
		l.tail.items[l.n] = ledgerItem{hash: h, key: key, val: val}
		l.n++
		return l
	}
	m := l.m
	var nt *ledgerTail
	n := 0
	if l.n == ledgerTailCap {
		b := m.Builder()
		b.Grow(l.n)
		for _, it := range l.tail.items[:l.n] {
			b.Set(it.key, it.val)
		}
		m = b.Map()
		nt = newTail(ledgerTailCap)
	} else {
		nt = newTail(2 * (l.n + 1))
		n = copy(nt.items, l.tail.itemsTo(l.n))
	}
	nt.items[n] = ledgerItem{hash: h, key: key, val: val}
	nt.used.Store(int32(n) + 1)
	return ledger{m: m, tail: nt, n: n + 1}
}

func (t *ledgerTail) itemsTo(n int) []ledgerItem {
	if t == nil {
		return nil
	}
	return t.items[:n]
}
