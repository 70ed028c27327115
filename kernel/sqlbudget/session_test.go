package sqlbudget_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestSessionsShareSQLBudget: two kernel sessions, each with its own
// connection pool (as two worker processes would have), its own local
// budget, and its own trace log in the same database, draw on one shared
// budget. The shared budget stops them together once it is spent,
// rejections name the shared_budget check in the trace, and a rollback
// gives its cost back to the shared balance.
func TestSessionsShareSQLBudget(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		const sharedLimit = 15 * kernel.Unit
		cost := 2 * kernel.Unit
		k, err := kernel.New(kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit})
		require.NoError(t, err)
		initial, err := kernel.NewState(map[string]any{"x": 0})
		require.NoError(t, err)
		inc := kernel.Action{ID: "inc", Name: "increment x", Cost: cost, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}}

		type worker struct {
			sess   *kernel.Session
			budget *sqlbudget.SharedBudget
			store  *sqlstore.Store
		}
		var workers []worker
		for i := 0; i < 2; i++ {
			db, bs := budgets(t, b, dsn)
			bud, err := bs.OpenOrCreate(ctx, "fleet", sharedLimit)
			require.NoError(t, err)
			logs, err := sqlstore.Open(ctx, db, b.Dialect)
			require.NoError(t, err)
			st, err := logs.Create(ctx, []string{"worker-a", "worker-b"}[i])
			require.NoError(t, err)
			lg, err := trace.NewLog(st)
			require.NoError(t, err)
			sess, err := kernel.NewSession(ctx, lg, k, initial, kernel.WithSharedBudget(bud), kernel.WithSessionID(st.ID()))
			require.NoError(t, err)
			workers = append(workers, worker{sess, bud, st})
		}

		var wg sync.WaitGroup
		executed := make([]int, len(workers))
		for i, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 6; j++ {
					_, err := w.sess.Execute(ctx, inc)
					if err == nil {
						executed[i]++
						continue
					}
					if !errors.Is(err, kernel.CheckBudget) {
						t.Errorf("worker %d: %v", i, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		total := executed[0] + executed[1]
		assert.Equal(t, int(sharedLimit/cost), total, "the shared budget admits exactly floor(15/2) executions in all")
		s, err := workers[0].budget.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, kernel.Cost(total)*cost, s.Gross)
		assert.LessOrEqual(t, s.Gross-s.Refunded, s.Limit)
		for i, w := range workers {
			assert.Equal(t, kernel.Cost(executed[i])*cost, w.sess.Meter().Budget().Net(), "local budget of worker %d", i)
		}

		// A refused shared charge is a recorded rejection naming the check
		// (asked of the worker whose local budget still has room).
		idle := 0
		if executed[1] < executed[0] {
			idle = 1
		}
		_, err = workers[idle].sess.Execute(ctx, inc)
		var rej *kernel.RejectedError
		require.ErrorAs(t, err, &rej)
		assert.Equal(t, kernel.CheckSharedBudget, rej.Verdict.Failures()[0].Check)
		var last trace.Entry
		for e, err := range workers[idle].store.Entries(ctx, 0) {
			require.NoError(t, err)
			last = e
		}
		assert.Equal(t, kernel.KindReject, last.Kind)
		assert.Contains(t, string(last.Payload), `"check":"shared_budget"`)

		// Rolling back returns the cost to the shared budget, for the
		// execution id the session charged.
		w := workers[0]
		if executed[0] == 0 {
			w = workers[1]
		}
		hist := w.sess.History()
		require.NotEmpty(t, hist)
		lastExec := hist[len(hist)-1]
		_, err = w.sess.Rollback(ctx, lastExec.ExecID)
		require.NoError(t, err)
		charged, refunded, ok, err := w.budget.Charged(ctx, lastExec.ExecID)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, cost, charged)
		assert.Equal(t, cost, refunded)
		s2, err := w.budget.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, s.Gross, s2.Gross, "T4: a refund leaves gross untouched")
		assert.Equal(t, s.Refunded+cost, s2.Refunded)

		// Both traces are intact hash chains in the database.
		for _, w := range workers {
			_, err := trace.VerifyStore(ctx, w.store)
			require.NoError(t, err)
		}
	})
}

// TestSessionReservesAndSettlesSQLBudget: a reservation charges the SQL
// budget its upper bound, a settlement below it refunds the difference
// there, an overrun is charged there under the id + "/overrun",
// and a refund gives back first from the reservation's charge, then from
// the overrun's; the shared totals follow the session's after each step.
func TestSessionReservesAndSettlesSQLBudget(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		bud, err := bs.Create(ctx, "calls", 10*kernel.Unit)
		require.NoError(t, err)
		k, err := kernel.New(kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: 1})
		require.NoError(t, err)
		sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, kernel.State{}, kernel.WithSharedBudget(bud))
		require.NoError(t, err)
		same := func() {
			t.Helper()
			s, err := bud.Snapshot(ctx)
			require.NoError(t, err)
			mb := sess.Meter().Budget()
			assert.Equal(t, kernel.BudgetSnapshot{Limit: mb.Limit(), Gross: mb.Gross(), Refunded: mb.Refunded()}, s)
		}
		call := kernel.Action{ID: "search", Cost: 4 * kernel.Unit, Effects: []kernel.Effect{kernel.Count("calls/search", value.Int(1), value.Int(0))}}
		a, err := sess.Reserve(ctx, call)
		require.NoError(t, err)
		same()
		_, err = sess.Settle(ctx, a.ExecID, kernel.Unit)
		require.NoError(t, err)
		same()
		c, err := sess.Reserve(ctx, call)
		require.NoError(t, err)
		_, err = sess.Settle(ctx, c.ExecID, 6*kernel.Unit) // 2 beyond the reservation
		require.ErrorIs(t, err, kernel.ErrOverrun)
		same()
		charged, _, ok, err := bud.Charged(ctx, c.ExecID+"/overrun")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, 2*kernel.Unit, charged)
		_, err = sess.Refund(ctx, c.ExecID, 5*kernel.Unit, "the call failed")
		require.NoError(t, err)
		same()
		_, refunded, _, err := bud.Charged(ctx, c.ExecID+"/overrun")
		require.NoError(t, err)
		assert.Equal(t, kernel.Unit, refunded, "4 from the reservation, then 1 from the overrun")
	})
}
