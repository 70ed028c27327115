package sqlbudget_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestSharedBudgetRenewsForEveryReplica: two gates (two replicas, each
// with its own pool and log) under a shared budget that renews each day
// in Europe/Paris draw on one row per day, named by the day every
// replica computes from the decision's recorded time: together they stop
// at the day's limit, a refund goes back to the day it was charged in
// even when it comes after midnight, and the next day starts a new row
// with nothing spent.
func TestSharedBudgetRenewsForEveryReplica(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		var mu sync.Mutex
		now := time.Date(2026, 11, 29, 22, 30, 0, 0, time.UTC) // 23:30 in Paris
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		pol := toolgate.Policy{Budget: 100 * kernel.Unit, MinCost: kernel.Unit,
			Shared: &toolgate.SharedBudgetSpec{ID: "fleet", Limit: 5 * kernel.Unit, Period: &toolgate.BudgetPeriod{Calendar: "day", TimeZone: "Europe/Paris"}},
			Tools:  []toolgate.Rule{{Match: "t", Cost: 2 * kernel.Unit}, {Match: "scan", Cost: 2 * kernel.Unit, Reserve: true}}}
		comp, err := pol.Compile()
		require.NoError(t, err)
		var gates []*toolgate.Gate
		var store *sqlbudget.Store
		for range 2 {
			_, bs := budgets(t, b, dsn)
			store = bs
			bud, err := bs.OpenOrCreate(ctx, "fleet", pol.Shared.Limit)
			require.NoError(t, err)
			log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(clock))
			require.NoError(t, err)
			g, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clock), toolgate.WithSharedBudget(bud))
			require.NoError(t, err)
			gates = append(gates, g)
		}
		call := func(g *toolgate.Gate, caller, tool string) toolgate.Decision {
			d, err := g.Before(ctx, toolgate.Call{Caller: caller, Tool: tool})
			require.NoError(t, err)
			return d
		}
		row := func(id string) kernel.BudgetSnapshot {
			bud, err := store.Open(ctx, id)
			require.NoError(t, err)
			s, err := bud.Snapshot(ctx)
			require.NoError(t, err)
			return s
		}
		net := func(id string) kernel.Cost { s := row(id); return s.Gross - s.Refunded }
		open := call(gates[0], "a", "scan") // reserved on the 29th, settled on the 30th
		require.Equal(t, toolgate.Allow, open.Verdict)
		require.Equal(t, toolgate.Allow, call(gates[1], "b", "t").Verdict)
		d := call(gates[0], "c", "t")
		require.Equal(t, toolgate.Refuse, d.Verdict, "4 of 5 spent: the day's shared limit refuses 2 more")
		assert.Contains(t, d.Explanation, "fleet@2026-11-29")
		assert.Equal(t, 4*kernel.Unit, net("fleet@2026-11-29"))

		advance(time.Hour) // 00:30 in Paris
		_, err = gates[0].After(ctx, open.Call, toolgate.Result{Measured: true, Actual: kernel.Unit})
		require.NoError(t, err)
		assert.Equal(t, 3*kernel.Unit, net("fleet@2026-11-29"), "refunded to the day it was charged in")
		require.Equal(t, toolgate.Allow, call(gates[1], "a", "t").Verdict)
		require.Equal(t, toolgate.Allow, call(gates[0], "b", "t").Verdict)
		require.Equal(t, toolgate.Refuse, call(gates[1], "c", "t").Verdict)
		assert.Equal(t, 4*kernel.Unit, net("fleet@2026-11-30"))
		assert.Equal(t, kernel.Cost(0), net("fleet"), "the budget's own row holds only the limit")
		listed, err := store.List(ctx, "fleet@")
		require.NoError(t, err)
		require.Len(t, listed, 2)
		assert.Equal(t, "fleet@2026-11-29", listed[0].ID)
	})
}

// TestForPeriodRefusesBadKeys: a period key is 1 to 32 bytes, and the
// period's budget has the limit of the budget it renews.
func TestForPeriodRefusesBadKeys(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		bud, err := bs.Create(ctx, "team", 7*kernel.Unit)
		require.NoError(t, err)
		_, err = bud.ForPeriod(ctx, "")
		require.ErrorIs(t, err, sqlbudget.ErrInvalidID)
		_, err = bud.ForPeriod(ctx, "123456789012345678901234567890123")
		require.ErrorIs(t, err, sqlbudget.ErrInvalidID)
		p, err := bud.ForPeriod(ctx, "2026-11")
		require.NoError(t, err)
		require.NoError(t, p.Charge(ctx, "x", int64(7*kernel.Unit)))
		require.ErrorIs(t, p.Charge(ctx, "y", 1), kernel.CheckBudget)
		require.NoError(t, bud.Charge(ctx, "y", 1), "the base row is another budget")
	})
}
