// This file and the others of the package check the guarantees of
// sqlbudget:
//
//   - T1 (net spend ≤ limit), T4 (gross never decreases) and refunds ≤
//     charges, against a naive model under random charges and refunds
//     through two connection pools: TestT1BudgetSafety (rapid state
//     machine).
//   - T1 under concurrency, with random costs and refunds from three
//     pools at once; gross and refunded equal the sums of the successful
//     calls: TestT1ConcurrentPools (rapid).
//   - T1 across operating-system processes: four processes charge one
//     budget at once; the total charged never exceeds it and equals
//     successful charges × cost: TestMultiProcessCharges.
//   - The same on a PostgreSQL database whose default isolation is
//     serializable (charges and refunds ask for READ COMMITTED, which the
//     re-checked conditional UPDATE relies on): no serialization failures,
//     T1 holds: TestSerializableDefaultIsolation.
//   - Each rule (over budget, duplicate, negative, unknown action, refund
//     too large, partial refunds, zero cost) and that a refused call
//     changes nothing: TestChargeRefundRules, TestStoreCreateOpen;
//     a gross total that would leave int64 is refused with
//     kernel.ErrOverflow: TestChargeOverflow.
//   - Integration with kernel.Session: two sessions with their own pools
//     and traces share one budget, rejections are recorded with the
//     shared_budget check, rollbacks refund it: TestSessionsShareSQLBudget.
//
// Every test runs on PostgreSQL (when VERITY_PG_DSN is set; otherwise it
// skips, naming the variable) and on a SQLite file.

package sqlbudget_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// budgets opens a pool on dsn (what one process would hold) and Store
// over it.
func budgets(t testing.TB, b sqltest.Backend, dsn string) (*sql.DB, *sqlbudget.Store) {
	t.Helper()
	db := b.Open(t, dsn)
	bs, err := sqlbudget.Open(context.Background(), db, b.Dialect)
	require.NoError(t, err)
	return db, bs
}

var ctx = context.Background()

// helperBudget opens, in a helper process that parent started, the
// budget HELPER_BUDGET names.
func helperBudget(t testing.TB, parent string) *sqlbudget.SharedBudget {
	t.Helper()
	db, dialect := sqltest.OpenFromEnv(t, parent)
	bs, err := sqlbudget.Open(ctx, db, dialect)
	require.NoError(t, err)
	bud, err := bs.Open(ctx, os.Getenv("HELPER_BUDGET"))
	require.NoError(t, err)
	return bud
}

func TestChargeRefundRules(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		bud, err := bs.Create(ctx, "team", 10*kernel.Unit)
		require.NoError(t, err)
		snap := func() kernel.BudgetSnapshot {
			s, err := bud.Snapshot(ctx)
			require.NoError(t, err)
			return s
		}
		unit := int64(kernel.Unit)

		require.NoError(t, bud.Charge(ctx, "a1", 4*unit))
		require.NoError(t, bud.Charge(ctx, "a2", 6*unit))
		assert.Equal(t, kernel.BudgetSnapshot{Limit: 10 * kernel.Unit, Gross: 10 * kernel.Unit}, snap())

		tests := []struct {
			name string
			run  func() error
			want error
		}{
			{"ChargeOverRemaining", func() error { return bud.Charge(ctx, "a3", 1) }, kernel.CheckBudget},
			{"ChargeDuplicateAction", func() error { return bud.Charge(ctx, "a1", 0) }, kernel.ErrDuplicateExecution},
			{"ChargeNegative", func() error { return bud.Charge(ctx, "a4", -1) }, kernel.ErrInvalidCost},
			{"ChargeEmptyAction", func() error { return bud.Charge(ctx, "", 1) }, sqlbudget.ErrInvalidID},
			{"RefundUnknownAction", func() error { return bud.Refund(ctx, "nope", 1) }, kernel.ErrUnknownExecution},
			{"RefundMoreThanCharged", func() error { return bud.Refund(ctx, "a1", 4*unit+1) }, kernel.ErrRefundTooLarge},
			{"RefundMoreThanGrossNet", func() error { return bud.Refund(ctx, "a1", math.MaxInt64) }, kernel.ErrRefundTooLarge},
			{"RefundNegative", func() error { return bud.Refund(ctx, "a1", -1) }, kernel.ErrInvalidCost},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				before := snap()
				require.ErrorIs(t, tc.run(), tc.want)
				assert.Equal(t, before, snap(), "a refused call changes nothing")
			})
		}

		// Partial refunds add up to the charge and no further.
		require.NoError(t, bud.Refund(ctx, "a1", unit))
		require.NoError(t, bud.Refund(ctx, "a1", 3*unit))
		require.ErrorIs(t, bud.Refund(ctx, "a1", 1), kernel.ErrRefundTooLarge)
		c, r, ok, err := bud.Charged(ctx, "a1")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, 4*kernel.Unit, c)
		assert.Equal(t, 4*kernel.Unit, r)
		_, _, ok, err = bud.Charged(ctx, "never")
		require.NoError(t, err)
		assert.False(t, ok)
		assert.Equal(t, kernel.BudgetSnapshot{Limit: 10 * kernel.Unit, Gross: 10 * kernel.Unit, Refunded: 4 * kernel.Unit}, snap())

		// The refund made room again; gross keeps growing (T4).
		require.NoError(t, bud.Charge(ctx, "a3", 4*unit))
		require.ErrorIs(t, bud.Charge(ctx, "a5", 1), kernel.CheckBudget)
		assert.Equal(t, 14*kernel.Unit, snap().Gross)

		// A zero-cost action is recorded (so it can be found, and refunded by 0).
		require.NoError(t, bud.Charge(ctx, "free", 0))
		require.NoError(t, bud.Refund(ctx, "free", 0))
	})
}

// TestChargeOverflow: when the gross total would leave int64 the charge
// is refused with kernel.ErrOverflow (never wrapped around), even though
// the net spend would fit.
func TestChargeOverflow(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		bud, err := bs.Create(ctx, "huge", kernel.Cost(math.MaxInt64))
		require.NoError(t, err)
		require.NoError(t, bud.Charge(ctx, "a", math.MaxInt64-5))
		require.NoError(t, bud.Refund(ctx, "a", math.MaxInt64-5))
		require.ErrorIs(t, bud.Charge(ctx, "b", 10), kernel.ErrOverflow)
		require.NoError(t, bud.Charge(ctx, "c", 5))
		s, err := bud.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, kernel.BudgetSnapshot{Limit: math.MaxInt64, Gross: math.MaxInt64, Refunded: math.MaxInt64 - 5}, s)
	})
}

func TestStoreCreateOpen(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		_, bs := budgets(t, b, dsn)
		_, err := bs.Create(ctx, "x", kernel.Unit)
		require.NoError(t, err)
		_, err = bs.Create(ctx, "x", kernel.Unit)
		require.ErrorIs(t, err, sqlbudget.ErrExists)
		_, err = bs.Create(ctx, "neg", -1)
		require.ErrorIs(t, err, kernel.ErrInvalidCost)
		_, err = bs.Create(ctx, "bad\x00", 1)
		require.ErrorIs(t, err, sqlbudget.ErrInvalidID)
		_, err = bs.Open(ctx, "missing")
		require.ErrorIs(t, err, sqlbudget.ErrNotFound)
		got, err := bs.OpenOrCreate(ctx, "x", kernel.Unit)
		require.NoError(t, err)
		assert.Equal(t, "x", got.ID())
		_, err = bs.OpenOrCreate(ctx, "x", 2*kernel.Unit)
		require.ErrorIs(t, err, sqlbudget.ErrLimitMismatch)
		reopened, err := bs.Open(ctx, "x")
		require.NoError(t, err)
		require.NoError(t, reopened.Charge(ctx, "a", 1))

		// Another pool (another process) sees the same budgets and balances.
		_, bs2 := budgets(t, b, dsn)
		x2, err := bs2.Open(ctx, "x")
		require.NoError(t, err)
		require.ErrorIs(t, x2.Charge(ctx, "a", 1), kernel.ErrDuplicateExecution)
		require.NoError(t, x2.Charge(ctx, "b", int64(kernel.Unit)-1))
		require.ErrorIs(t, reopened.Charge(ctx, "c", 1), kernel.CheckBudget)
		_, err = sqlbudget.Open(ctx, nil, b.Dialect)
		require.Error(t, err)
		_, err = sqlbudget.Open(ctx, nil, "mysql")
		require.ErrorIs(t, err, sqlstore.ErrDialect)
	})
}

// model is the naive reference for the state machine: totals and a map.
type model struct {
	limit, gross, refunded int64
	charged, refundedBy    map[string]int64
}

// TestT1BudgetSafety runs random charges and refunds (fitting, too large,
// duplicate, unknown) against one shared budget through several pools
// and compares every outcome with the naive model. After every step: net
// spend ≤ limit (T1), gross never decreases (T4), and no action is
// refunded more than it was charged.
func TestT1BudgetSafety(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		_, bs1 := budgets(t, b, dsn)
		_, bs2 := budgets(t, b, dsn)
		rapid.Check(t, func(rt *rapid.T) {
			limit := rapid.Int64Range(0, 50).Draw(rt, "limit")
			id := uuid.NewString()
			bud1, err := bs1.Create(ctx, id, kernel.Cost(limit))
			if err != nil {
				rt.Fatal(err)
			}
			bud2, err := bs2.Open(ctx, id)
			if err != nil {
				rt.Fatal(err)
			}
			m := model{limit: limit, charged: map[string]int64{}, refundedBy: map[string]int64{}}
			pick := func(rt *rapid.T) *sqlbudget.SharedBudget {
				if rapid.Bool().Draw(rt, "second pool") {
					return bud2
				}
				return bud1
			}
			action := func(rt *rapid.T) string { return "a" + strconv.Itoa(rapid.IntRange(0, 12).Draw(rt, "action")) }
			lastGross := int64(0)
			rt.Repeat(map[string]func(*rapid.T){
				"charge": func(rt *rapid.T) {
					a, cost := action(rt), rapid.Int64Range(0, 20).Draw(rt, "cost")
					err := pick(rt).Charge(ctx, a, cost)
					_, dup := m.charged[a]
					switch { // the kernel's order: affordability, then duplicates
					case cost > m.limit-(m.gross-m.refunded):
						if !errors.Is(err, kernel.CheckBudget) {
							rt.Fatalf("charge %d over remaining %d: %v", cost, m.limit-(m.gross-m.refunded), err)
						}
					case dup:
						if !errors.Is(err, kernel.ErrDuplicateExecution) {
							rt.Fatalf("duplicate charge of %s: %v", a, err)
						}
					default:
						if err != nil {
							rt.Fatalf("charge %d of %s: %v", cost, a, err)
						}
						m.charged[a] = cost
						m.gross += cost
					}
				},
				"refund": func(rt *rapid.T) {
					a, amount := action(rt), rapid.Int64Range(0, 20).Draw(rt, "amount")
					err := pick(rt).Refund(ctx, a, amount)
					c, known := m.charged[a]
					switch {
					case !known:
						if !errors.Is(err, kernel.ErrUnknownExecution) {
							rt.Fatalf("refund of uncharged %s: %v", a, err)
						}
					case amount > c-m.refundedBy[a]:
						if !errors.Is(err, kernel.ErrRefundTooLarge) {
							rt.Fatalf("refund %d of %s (charged %d, refunded %d): %v", amount, a, c, m.refundedBy[a], err)
						}
					default:
						if err != nil {
							rt.Fatalf("refund %d of %s: %v", amount, a, err)
						}
						m.refundedBy[a] += amount
						m.refunded += amount
					}
				},
				"": func(rt *rapid.T) {
					s, err := pick(rt).Snapshot(ctx)
					if err != nil {
						rt.Fatal(err)
					}
					want := kernel.BudgetSnapshot{Limit: kernel.Cost(m.limit), Gross: kernel.Cost(m.gross), Refunded: kernel.Cost(m.refunded)}
					if s != want {
						rt.Fatalf("snapshot %+v, model %+v", s, want)
					}
					if s.Gross-s.Refunded > s.Limit {
						rt.Fatalf("T1: net %s over limit %s", s.Gross-s.Refunded, s.Limit)
					}
					if int64(s.Gross) < lastGross {
						rt.Fatalf("T4: gross went down from %d to %s", lastGross, s.Gross)
					}
					lastGross = int64(s.Gross)
					for a, c := range m.charged {
						gc, gr, ok, err := bud1.Charged(ctx, a)
						if err != nil || !ok || int64(gc) != c || int64(gr) != m.refundedBy[a] || gr > gc {
							rt.Fatalf("ledger of %s: %s/%s ok=%v err=%v, model %d/%d", a, gc, gr, ok, err, c, m.refundedBy[a])
						}
					}
				},
			})
		})
	})
}

// TestT1ConcurrentPools: several connection pools (each what one process
// would hold) charge and refund one budget at the same time with random
// costs. Whatever the interleaving: net spend ≤ limit, gross equals the
// sum of the successful charges, refunded equals the sum of the
// successful refunds, and the ledger agrees.
func TestT1ConcurrentPools(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		const pools = 3
		var all []*sqlbudget.Store
		for i := 0; i < pools; i++ {
			_, bs := budgets(t, b, dsn)
			all = append(all, bs)
		}
		rapid.Check(t, func(rt *rapid.T) {
			limit := rapid.Int64Range(0, 60).Draw(rt, "limit")
			id := uuid.NewString()
			if _, err := all[0].Create(ctx, id, kernel.Cost(limit)); err != nil {
				rt.Fatal(err)
			}
			type op struct {
				cost   int64
				refund int64 // refunded right after a successful charge, ≤ cost
			}
			plans := make([][]op, pools)
			for p := range plans {
				n := rapid.IntRange(1, 6).Draw(rt, "ops")
				for i := 0; i < n; i++ {
					c := rapid.Int64Range(0, 15).Draw(rt, "cost")
					plans[p] = append(plans[p], op{cost: c, refund: rapid.Int64Range(0, c).Draw(rt, "refund")})
				}
			}
			var mu sync.Mutex
			var gross, refunded int64
			var wg sync.WaitGroup
			errs := make(chan error, pools)
			for p := 0; p < pools; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					bud, err := all[p].Open(ctx, id)
					if err != nil {
						errs <- err
						return
					}
					for i, o := range plans[p] {
						a := fmt.Sprintf("p%d-%d", p, i)
						err := bud.Charge(ctx, a, o.cost)
						if errors.Is(err, kernel.CheckBudget) {
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						if err := bud.Refund(ctx, a, o.refund); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						gross += o.cost
						refunded += o.refund
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				rt.Fatal(err)
			}
			bud, _ := all[1].Open(ctx, id)
			s, err := bud.Snapshot(ctx)
			if err != nil {
				rt.Fatal(err)
			}
			if s.Gross-s.Refunded > s.Limit || int64(s.Gross) != gross || int64(s.Refunded) != refunded {
				rt.Fatalf("snapshot %+v, successful charges %d, refunds %d", s, gross, refunded)
			}
		})
	})
}

// ---- N operating-system processes charging one budget ----

const (
	procs        = 4
	triesPerProc = 25
	procCost     = 3 * int64(kernel.Unit)
	procLimit    = 37 * procCost // fewer than procs × triesPerProc charges fit
)

// TestHelperCharger is not a test on its own: TestMultiProcessCharges runs
// the test binary again as several processes that land here, wait for a
// common start signal, and charge the shared budget as fast as they can.
func TestHelperCharger(t *testing.T) {
	bud := helperBudget(t, "TestMultiProcessCharges")
	start := os.Getenv("HELPER_START")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(start); err == nil {
			break
		}
		require.True(t, time.Now().Before(deadline), "no start signal")
		time.Sleep(2 * time.Millisecond)
	}
	ok := 0
	for i := 0; i < triesPerProc; i++ {
		err := bud.Charge(ctx, fmt.Sprintf("%s-%d", os.Getenv("HELPER_NAME"), i), procCost)
		if errors.Is(err, kernel.CheckBudget) {
			continue
		}
		require.NoError(t, err)
		ok++
	}
	require.NoError(t, os.WriteFile(os.Getenv("HELPER_OUT"), []byte(strconv.Itoa(ok)), 0o600))
}

// TestMultiProcessCharges: procs OS processes charge one budget at once.
// The total charged never exceeds the budget and equals the number of
// successful charges × cost; since every charge costs the same, exactly
// floor(limit / cost) of them succeed.
func TestMultiProcessCharges(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		_, bs := budgets(t, b, dsn)
		id := "fleet-" + uuid.NewString()
		bud, err := bs.Create(ctx, id, kernel.Cost(procLimit))
		require.NoError(t, err)
		dir := t.TempDir()
		start := filepath.Join(dir, "start")
		var wg sync.WaitGroup
		outs := make([][]byte, procs)
		errs := make([]error, procs)
		for p := 0; p < procs; p++ {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperCharger$", "-test.count=1")
			cmd.Env = append(append(os.Environ(), b.HelperEnv(dsn)...), "HELPER_BUDGET="+id, "HELPER_START="+start,
				"HELPER_NAME=proc"+strconv.Itoa(p), "HELPER_OUT="+filepath.Join(dir, "out"+strconv.Itoa(p)))
			wg.Add(1)
			go func() { defer wg.Done(); outs[p], errs[p] = cmd.CombinedOutput() }()
		}
		time.Sleep(200 * time.Millisecond) // let the processes connect; they wait for the signal
		require.NoError(t, os.WriteFile(start, nil, 0o600))
		wg.Wait()
		successes := int64(0)
		for p := 0; p < procs; p++ {
			require.NoError(t, errs[p], "process %d:\n%s", p, outs[p])
			raw, err := os.ReadFile(filepath.Join(dir, "out"+strconv.Itoa(p)))
			require.NoError(t, err)
			n, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
			require.NoError(t, err)
			successes += n
		}
		s, err := bud.Snapshot(ctx)
		require.NoError(t, err)
		assert.LessOrEqual(t, int64(s.Gross), procLimit, "T1: total charged within the budget")
		assert.Equal(t, successes*procCost, int64(s.Gross), "total charged = successful charges × cost")
		assert.Equal(t, procLimit/procCost, successes)
	})
}
