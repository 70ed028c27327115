package sqlbudget

import (
	"context"
	"fmt"

	"github.com/verity-go/verity/kernel"
)

// PeriodSeparator joins a budget's id and a period's key in the id of
// that period's budget: "fleet@2026-11" is the budget "fleet" in the
// period whose key is "2026-11".
const PeriodSeparator = "@"

// ForPeriod returns the budget of one period of b, for a budget that
// renews: the budget b.ID() + PeriodSeparator + key, created with b's
// limit by the first process that asks for it (Store.OpenOrCreate), so
// that every process computing the same key from the same recorded time
// draws on the same row, and the next period starts a new one with
// nothing spent. b's own row holds only the limit. A key is 1 to 32
// bytes; the period's id must fit MaxIDLen.
func (b *SharedBudget) ForPeriod(ctx context.Context, key string) (kernel.SharedBudget, error) {
	if len(key) == 0 || len(key) > 32 {
		return nil, fmt.Errorf("%w: a period key is 1 to 32 bytes, got %d", ErrInvalidID, len(key))
	}
	s, err := b.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return b.bs.OpenOrCreate(ctx, b.id+PeriodSeparator+key, s.Limit)
}

// Listed is one budget of a Store and its totals.
type Listed struct {
	ID string
	kernel.BudgetSnapshot
}

// List returns the budgets whose id starts with prefix ("" for all),
// by id, with their totals as they are in the database now: what
// `verity budget show -db` prints.
func (bs *Store) List(ctx context.Context, prefix string) ([]Listed, error) {
	q := bs.d.Rebind("SELECT budget_id, limit_amount, gross, refunded FROM " + BudgetsTable + " ORDER BY budget_id")
	rows, err := bs.db.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqlbudget: listing budgets: %w", err)
	}
	defer rows.Close()
	var out []Listed
	for rows.Next() {
		var l Listed
		var limit, gross, refunded int64
		if err := rows.Scan(&l.ID, &limit, &gross, &refunded); err != nil {
			return nil, fmt.Errorf("sqlbudget: listing budgets: %w", err)
		}
		if len(l.ID) < len(prefix) || l.ID[:len(prefix)] != prefix {
			continue
		}
		l.Limit, l.Gross, l.Refunded = kernel.Cost(limit), kernel.Cost(gross), kernel.Cost(refunded)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlbudget: listing budgets: %w", err)
	}
	return out, nil
}
