package kernel

import "fmt"

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
	ledger                 *hnode[ledgerEntry]
	entries                int
}

type ledgerEntry struct {
	charged, refunded Cost
	rolledBack        bool
}

// NewBudget returns a budget of limit with nothing spent.
func NewBudget(limit Cost) (Budget, error) {
	if limit < 0 {
		return Budget{}, fmt.Errorf("%w: negative budget %s", ErrInvalidCost, limit)
	}
	return Budget{limit: limit}, nil
}

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

// Executions returns the number of ledger entries.
func (b Budget) Executions() int { return b.entries }

// CanAfford reports whether c is a valid cost that fits the remaining
// budget: 0 ≤ c ≤ Limit − Net (computed without overflow).
func (b Budget) CanAfford(c Cost) bool { return c >= 0 && c <= b.Remaining() }

// Charge records that execution id was charged c. It fails with
// ErrBudgetExceeded if c does not fit, ErrInvalidCost if c < 0,
// ErrDuplicateExecution if id was already charged, and ErrOverflow if the
// gross total would leave int64.
func (b Budget) Charge(id string, c Cost) (Budget, error) {
	if c < 0 {
		return b, fmt.Errorf("%w: negative charge %s", ErrInvalidCost, c)
	}
	if !b.CanAfford(c) {
		return b, fmt.Errorf("%w: cost %s, remaining %s", ErrBudgetExceeded, c, b.Remaining())
	}
	gross, ok := addInt(int64(b.gross), int64(c))
	if !ok {
		return b, fmt.Errorf("%w: gross spend overflows", ErrOverflow)
	}
	ledger, old := hamtPut(b.ledger, keyHash(id), id, ledgerEntry{charged: c}, nil)
	if old != nil {
		return b, fmt.Errorf("%w: %q", ErrDuplicateExecution, id)
	}
	return Budget{limit: b.limit, gross: Cost(gross), refunded: b.refunded, ledger: ledger, entries: b.entries + 1}, nil
}

// Charged returns what execution id was charged and refunded so far.
func (b Budget) Charged(id string) (charged, refunded Cost, ok bool) {
	l := hamtGet(b.ledger, keyHash(id), id)
	if l == nil {
		return 0, 0, false
	}
	return l.val.charged, l.val.refunded, true
}

// Refund gives back amount of what execution id was charged. It fails with
// ErrUnknownExecution for an id never charged and ErrRefundTooLarge if
// amount exceeds the charge minus earlier refunds.
func (b Budget) Refund(id string, amount Cost) (Budget, error) {
	if amount < 0 {
		return b, fmt.Errorf("%w: negative refund %s", ErrInvalidCost, amount)
	}
	h := keyHash(id)
	l := hamtGet(b.ledger, h, id)
	if l == nil {
		return b, fmt.Errorf("%w: %q", ErrUnknownExecution, id)
	}
	if amount > l.val.charged-l.val.refunded {
		return b, fmt.Errorf("%w: %q was charged %s, refunded %s, asked %s",
			ErrRefundTooLarge, id, l.val.charged, l.val.refunded, amount)
	}
	ledger, _ := hamtPut(b.ledger, h, id, ledgerEntry{charged: l.val.charged, refunded: l.val.refunded + amount, rolledBack: l.val.rolledBack}, nil)
	return Budget{limit: b.limit, gross: b.gross, refunded: b.refunded + amount, ledger: ledger, entries: b.entries}, nil
}

// RolledBack reports whether execution id was rolled back.
func (b Budget) RolledBack(id string) bool {
	l := hamtGet(b.ledger, keyHash(id), id)
	return l != nil && l.val.rolledBack
}

// rollback refunds everything execution id was charged and not yet
// refunded, exactly once.
func (b Budget) rollback(id string) (Budget, Cost, error) {
	h := keyHash(id)
	l := hamtGet(b.ledger, h, id)
	if l == nil {
		return b, 0, fmt.Errorf("%w: %q", ErrUnknownExecution, id)
	}
	if l.val.rolledBack {
		return b, 0, fmt.Errorf("%w: %q", ErrAlreadyRolledBack, id)
	}
	nb, amount := b.rollbackLeaf(h, l)
	return nb, amount, nil
}

// rollbackLeaf is rollback for the ledger leaf l (hash h) of b, found and
// checked (not rolled back) by the caller.
func (b Budget) rollbackLeaf(h uint64, l *hleaf[ledgerEntry]) (Budget, Cost) {
	amount := l.val.charged - l.val.refunded
	ledger, _ := hamtPut(b.ledger, h, l.key, ledgerEntry{charged: l.val.charged, refunded: l.val.charged, rolledBack: true}, nil)
	return Budget{limit: b.limit, gross: b.gross, refunded: b.refunded + amount, ledger: ledger, entries: b.entries}, amount
}
