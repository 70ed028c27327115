package toolgate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/verity-go/verity/kernel"
)

// A shared budget that renews (Policy.Shared.Period): each calendar
// period is a budget of its own in the shared store, named by the
// period's key (kernel/sqlbudget's SharedBudget.ForPeriod: the row
// id@key). A call is charged to the period its decision's recorded time
// falls in — the same row on every replica — and a refund goes back to
// the row its charge was taken from.

// periodicShared is a shared budget that renews: kernel/sqlbudget's
// SharedBudget implements it.
type periodicShared interface {
	kernel.SharedBudget
	ForPeriod(ctx context.Context, key string) (kernel.SharedBudget, error)
}

// sharedPeriods opens and keeps the rows of the periods in use.
type sharedPeriods struct {
	base   periodicShared
	period *budgetPeriod
	mu     sync.Mutex
	rows   map[string]kernel.SharedBudget
}

// maxSharedRows is how many periods' rows a gate keeps open at once: the
// current one and the one before cover every charge and refund.
const maxSharedRows = 4

func newSharedPeriods(sb kernel.SharedBudget, p *budgetPeriod) (*sharedPeriods, error) {
	base, ok := sb.(periodicShared)
	if !ok {
		return nil, fmt.Errorf("%w: the policy's shared budget renews (shared_budget.period), and the budget given WithSharedBudget has no periods (ForPeriod: use kernel/sqlbudget)", ErrInvalidConfig)
	}
	return &sharedPeriods{base: base, period: p, rows: map[string]kernel.SharedBudget{}}, nil
}

func (sp *sharedPeriods) row(ctx context.Context, at time.Time) (kernel.SharedBudget, error) {
	key := sp.period.key(at)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if r, ok := sp.rows[key]; ok {
		return r, nil
	}
	r, err := sp.base.ForPeriod(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("toolgate: opening the shared budget of period %s: %w", key, err)
	}
	if len(sp.rows) >= maxSharedRows {
		clear(sp.rows)
	}
	sp.rows[key] = r
	return r, nil
}

// callerShared is the shared budget one caller's kernel session uses:
// at is the session's clock, the recorded time of the execution it
// charges (the decision's).
type callerShared struct {
	sp *sharedPeriods
	at func() time.Time
}

func (c callerShared) Charge(ctx context.Context, actionID string, cost int64) error {
	r, err := c.sp.row(ctx, c.at())
	if err != nil {
		return err
	}
	return r.Charge(ctx, actionID, cost)
}

// Refund gives back to the row actionID was charged in: the current
// period's, or the one before (a call settled after its period ended).
func (c callerShared) Refund(ctx context.Context, actionID string, amount int64) error {
	now := c.at()
	var err error
	for _, at := range []time.Time{now, c.sp.period.start(now).Add(-time.Nanosecond)} {
		var r kernel.SharedBudget
		if r, err = c.sp.row(ctx, at); err != nil {
			return err
		}
		if err = r.Refund(ctx, actionID, amount); !errors.Is(err, kernel.ErrUnknownExecution) {
			return err
		}
	}
	return err
}

// sharedFor returns the shared budget of a caller's session whose clock
// is at.
func (g *Gate) sharedFor(at func() time.Time) kernel.SharedBudget {
	if g.sharedPeriods != nil {
		return callerShared{sp: g.sharedPeriods, at: at}
	}
	return g.shared
}
