// The rate windows' guarantees, each on PostgreSQL (when VERITY_PG_DSN is
// set) and on a SQLite file:
//
//   - Admit decides as the naive reference (refWindows below) under random
//     keys, times (also out of order), durations and limits, through two
//     connection pools sharing one database: TestRateWindowsMatchReference
//     (rapid state machine).
//   - A window never admits more than its limit, whatever the number of
//     pools and goroutines calling at once: TestRateWindowNeverOverAdmits
//     (and the same across operating-system processes:
//     TestRateWindowMultiProcess).
//   - The window's bounds, invalid input and that a refusal records
//     nothing: TestRateWindowRules; pruning: TestPruneWindows.
//   - Two tool gates with their own logs and pools share a window through
//     the database and allow its limit between them: TestGatesShareSQLWindows.
//   - A database at version 1 of the budget schema gains the windows and
//     keeps its budgets: TestWindowsMigrateFromVersion1 (windows_internal_test.go).

package sqlbudget_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

type rateWindows = toolgate.RateWindows

var _ toolgate.RateWindows = (*sqlbudget.Store)(nil)

// refWindows is the naive reference: every admitted call's time per key,
// in a slice; a decision first forgets the key's calls at or before
// at − per, then counts the rest.
type refWindows struct {
	mu    sync.Mutex
	calls map[string][]time.Time
}

func (r *refWindows) Admit(_ context.Context, key string, at time.Time, per time.Duration, limit int) (bool, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = map[string][]time.Time{}
	}
	cutoff := at.Add(-per)
	var kept []time.Time
	for _, t := range r.calls[key] {
		if t.After(cutoff) {
			kept = append(kept, t)
		}
	}
	r.calls[key] = kept
	if len(kept) >= limit {
		return false, len(kept), nil
	}
	r.calls[key] = append(kept, at)
	return true, len(kept), nil
}

var _ rateWindows = (*refWindows)(nil)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestRateWindowRules(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		admit := func(key string, at time.Time, per time.Duration, limit int) (bool, int) {
			t.Helper()
			ok, seen, err := bs.Admit(ctx, key, at, per, limit)
			require.NoError(t, err)
			return ok, seen
		}
		type outcome struct {
			Admitted bool
			Seen     int
		}
		got := func(ok bool, seen int) outcome { return outcome{ok, seen} }

		t.Run("LimitAdmitsThenRefuses", func(t *testing.T) {
			for i := range 3 {
				assert.Equal(t, outcome{true, i}, got(admit("k1", epoch.Add(time.Duration(i)*time.Second), time.Minute, 3)))
			}
			assert.Equal(t, outcome{false, 3}, got(admit("k1", epoch.Add(10*time.Second), time.Minute, 3)))
			// The refusal recorded nothing: still 3 seen.
			assert.Equal(t, outcome{false, 3}, got(admit("k1", epoch.Add(59*time.Second), time.Minute, 3)))
		})
		t.Run("WindowIsHalfOpen", func(t *testing.T) {
			// The call at epoch leaves the window exactly per later.
			assert.Equal(t, outcome{true, 0}, got(admit("k2", epoch, time.Minute, 1)))
			assert.Equal(t, outcome{false, 1}, got(admit("k2", epoch.Add(time.Minute-time.Nanosecond), time.Minute, 1)))
			assert.Equal(t, outcome{true, 0}, got(admit("k2", epoch.Add(time.Minute), time.Minute, 1)))
		})
		t.Run("LaterCallsCount", func(t *testing.T) {
			// A call another gate recorded at a later time still counts
			// for an earlier one (clocks of several gates differ).
			assert.Equal(t, outcome{true, 0}, got(admit("k3", epoch.Add(time.Hour), time.Minute, 1)))
			assert.Equal(t, outcome{false, 1}, got(admit("k3", epoch, time.Minute, 1)))
		})
		t.Run("KeysAreApart", func(t *testing.T) {
			assert.Equal(t, outcome{true, 0}, got(admit("alice|read", epoch, time.Minute, 1)))
			assert.Equal(t, outcome{true, 0}, got(admit("bob|read", epoch, time.Minute, 1)))
			assert.Equal(t, outcome{true, 0}, got(admit("alice|write", epoch, time.Minute, 1)))
		})
		t.Run("ZeroLimitNeverAdmits", func(t *testing.T) {
			assert.Equal(t, outcome{false, 0}, got(admit("k4", epoch, time.Minute, 0)))
		})
		t.Run("ExtremeTimes", func(t *testing.T) {
			assert.Equal(t, outcome{true, 0}, got(admit("k5", time.Unix(0, -1<<63), time.Hour, 2)))
			assert.Equal(t, outcome{true, 0}, got(admit("k6", time.Unix(0, 1<<63-2), time.Hour, 2)))
		})
		invalid := []struct {
			name  string
			key   string
			at    time.Time
			per   time.Duration
			limit int
			want  error
		}{
			{"EmptyKey", "", epoch, time.Minute, 1, sqlbudget.ErrInvalidID},
			{"NULInKey", "a\x00b", epoch, time.Minute, 1, sqlbudget.ErrInvalidID},
			{"InvalidUTF8Key", "a\xffb", epoch, time.Minute, 1, sqlbudget.ErrInvalidID},
			{"ZeroDuration", "k", epoch, 0, 1, sqlbudget.ErrInvalidWindow},
			{"NegativeDuration", "k", epoch, -time.Second, 1, sqlbudget.ErrInvalidWindow},
			{"NegativeLimit", "k", epoch, time.Minute, -1, sqlbudget.ErrInvalidWindow},
			{"TimeBeforeRange", "k", time.Unix(0, -1<<63).Add(-time.Nanosecond), time.Minute, 1, sqlbudget.ErrInvalidWindow},
			{"TimeAfterRange", "k", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Minute, 1, sqlbudget.ErrInvalidWindow},
			{"LastNanosecond", "k", time.Unix(0, 1<<63-1), time.Minute, 1, sqlbudget.ErrInvalidWindow},
		}
		for _, tc := range invalid {
			t.Run(tc.name, func(t *testing.T) {
				ok, seen, err := bs.Admit(ctx, tc.key, tc.at, tc.per, tc.limit)
				require.ErrorIs(t, err, tc.want)
				assert.False(t, ok)
				assert.Zero(t, seen)
			})
		}
		// None of the invalid calls recorded anything.
		assert.Equal(t, outcome{true, 0}, got(admit("k", epoch, time.Minute, 1)))
	})
}

// TestRateWindowsMatchReference is a rapid state machine: random calls on
// a few keys (each with its own duration), at times that mostly move
// forward but sometimes step back, through two pools on one database,
// decided as the naive reference decides them.
func TestRateWindowsMatchReference(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		_, bs1 := budgets(t, b, dsn)
		_, bs2 := budgets(t, b, dsn)
		rapid.Check(t, func(rt *rapid.T) {
			run := uuid.NewString()
			ref := &refWindows{}
			pers := []time.Duration{time.Second, 10 * time.Second, time.Minute}
			limit := rapid.IntRange(0, 4).Draw(rt, "limit")
			now := epoch
			rt.Repeat(map[string]func(*rapid.T){
				"admit": func(rt *rapid.T) {
					k := rapid.IntRange(0, 2).Draw(rt, "key")
					key, per := run+"/"+strconv.Itoa(k), pers[k]
					step := time.Duration(rapid.Int64Range(-3000, 15000).Draw(rt, "step ms")) * time.Millisecond
					now = now.Add(step)
					st := bs1
					if rapid.Bool().Draw(rt, "second pool") {
						st = bs2
					}
					ok, seen, err := st.Admit(ctx, key, now, per, limit)
					if err != nil {
						rt.Fatal(err)
					}
					wok, wseen, _ := ref.Admit(ctx, key, now, per, limit)
					if ok != wok || seen != wseen {
						rt.Fatalf("%s at %s per %s limit %d: admitted %v seen %d, reference %v %d", key, now.Sub(epoch), per, limit, ok, seen, wok, wseen)
					}
					if seen > limit {
						rt.Fatalf("window holds %d calls over its limit %d", seen, limit)
					}
				},
			})
		})
	})
}

// TestRateWindowNeverOverAdmits: pools (standing in for gates in
// different processes) call one window at once, all at times within one
// window; exactly limit calls are admitted, and each seen count from 0 to
// limit−1 is handed out once.
func TestRateWindowNeverOverAdmits(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		const pools, workers, tries, limit = 4, 3, 10, 17
		dsn := b.NewDSN(t)
		stores := make([]*sqlbudget.Store, pools)
		for i := range stores {
			_, stores[i] = budgets(t, b, dsn)
		}
		for round := range 3 {
			key := fmt.Sprintf("burst-%d", round)
			var mu sync.Mutex
			seens := map[int]int{}
			var wg sync.WaitGroup
			errs := make(chan error, pools*workers)
			for p := range pools {
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range tries {
							at := epoch.Add(time.Duration(p*workers*tries+w*tries+i) * time.Millisecond)
							ok, seen, err := stores[p].Admit(ctx, key, at, time.Hour, limit)
							if err != nil {
								errs <- err
								return
							}
							if ok {
								mu.Lock()
								seens[seen]++
								mu.Unlock()
							}
						}
					}()
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			want := map[int]int{}
			for i := range limit {
				want[i] = 1
			}
			assert.Equal(t, want, seens, "round %d: admitted calls by the count they saw", round)
		}
	})
}

// TestHelperWindowCaller is not a test on its own: TestRateWindowMultiProcess
// starts the test binary as processes that land here. Each calls the
// window HELPER_WINDOW HELPER_TRIES times and prints how many it admitted.
func TestHelperWindowCaller(t *testing.T) {
	db, dialect := sqltest.OpenFromEnv(t, "TestRateWindowMultiProcess")
	bs, err := sqlbudget.Open(ctx, db, dialect)
	require.NoError(t, err)
	tries, err := strconv.Atoi(os.Getenv("HELPER_TRIES"))
	require.NoError(t, err)
	limit, err := strconv.Atoi(os.Getenv("HELPER_LIMIT"))
	require.NoError(t, err)
	n := 0
	for i := range tries {
		ok, _, err := bs.Admit(ctx, os.Getenv("HELPER_WINDOW"), epoch.Add(time.Duration(i)*time.Millisecond), time.Hour, limit)
		require.NoError(t, err)
		if ok {
			n++
		}
	}
	fmt.Printf("ADMITTED %d\n", n)
}

// TestRateWindowMultiProcess: four operating-system processes call one
// window at once; together they are admitted exactly its limit.
func TestRateWindowMultiProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		const procs, tries, limit = 4, 25, 40
		dsn := b.NewDSN(t)
		_, _ = budgets(t, b, dsn) // migrate once before the processes start
		outs := make([][]byte, procs)
		errs := make([]error, procs)
		var wg sync.WaitGroup
		for i := range procs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWindowCaller$", "-test.count=1", "-test.v")
				cmd.Env = append(append(os.Environ(), b.HelperEnv(dsn)...), "HELPER_WINDOW=shared",
					"HELPER_TRIES="+strconv.Itoa(tries), "HELPER_LIMIT="+strconv.Itoa(limit))
				outs[i], errs[i] = cmd.CombinedOutput()
			}()
		}
		wg.Wait()
		total := 0
		for i := range procs {
			require.NoError(t, errs[i], "%s", outs[i])
			var n int
			found := false
			for _, line := range splitLines(string(outs[i])) {
				if _, err := fmt.Sscanf(line, "ADMITTED %d", &n); err == nil {
					found = true
				}
			}
			require.True(t, found, "helper output: %s", outs[i])
			total += n
		}
		assert.Equal(t, limit, total)
	})
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestPruneWindows(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		db, bs := budgets(t, b, b.NewDSN(t))
		rows := func() int {
			var n int
			require.NoError(t, db.QueryRow("SELECT count(*) FROM "+sqlbudget.WindowsTable).Scan(&n))
			return n
		}
		for i := range 5 {
			_, _, err := bs.Admit(ctx, "idle", epoch.Add(time.Duration(i)*time.Second), time.Minute, 10)
			require.NoError(t, err)
		}
		_, _, err := bs.Admit(ctx, "long", epoch, time.Hour, 10)
		require.NoError(t, err)
		require.Equal(t, 6, rows())

		// Nothing has expired a minute after the first call.
		n, err := bs.PruneWindows(ctx, epoch.Add(time.Minute-time.Nanosecond))
		require.NoError(t, err)
		assert.Zero(t, n)
		// Two minutes on, the minute-long windows' calls have ended, the
		// hour-long one's has not.
		n, err = bs.PruneWindows(ctx, epoch.Add(2*time.Minute))
		require.NoError(t, err)
		assert.EqualValues(t, 5, n)
		assert.Equal(t, 1, rows())
		ok, seen, err := bs.Admit(ctx, "long", epoch.Add(30*time.Minute), time.Hour, 10)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, 1, seen, "pruning kept the call whose window is still open")

		// A busy key forgets its own expired calls as it goes.
		for i := range 50 {
			_, _, err := bs.Admit(ctx, "busy", epoch.Add(time.Duration(i)*time.Second), 5*time.Second, 100)
			require.NoError(t, err)
		}
		var busy int
		require.NoError(t, db.QueryRow(b.Rebind("SELECT count(*) FROM "+sqlbudget.WindowsTable+" WHERE window_key = ?"), "busy").Scan(&busy))
		assert.Equal(t, 5, busy)

		n, err = bs.PruneWindows(ctx, time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		assert.Positive(t, n)
		assert.Zero(t, rows())
		n, err = bs.PruneWindows(ctx, time.Time{})
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

// TestGatesShareSQLWindows: two tool gates, each with its own log and
// its own pool (two processes' worth), share one rate window through the
// database; between them they allow the rule's limit of calls, and each
// refusal names the rule's rate condition.
func TestGatesShareSQLWindows(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		_, s1 := budgets(t, b, dsn)
		_, s2 := budgets(t, b, dsn)
		now := epoch
		clock := func() time.Time { return now }
		cfg := toolgate.Policy{Budget: 100 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
			{Name: "send", Match: "send_*", Cost: kernel.Unit / 10, Rate: &toolgate.Rate{Calls: 3, Per: time.Minute, Scope: toolgate.RateScopeRule}},
		}}
		comp, err := cfg.Compile()
		require.NoError(t, err)
		gates := make([]*toolgate.Gate, 2)
		for i, st := range []*sqlbudget.Store{s1, s2} {
			g, err := toolgate.New(ctx, trace.NewMemoryLog(), comp, toolgate.WithClock(clock), toolgate.WithSharedWindows(st))
			require.NoError(t, err)
			gates[i] = g
		}
		allowed := 0
		for i := range 8 {
			d, err := gates[i%2].Before(ctx, toolgate.Call{Tool: []string{"send_mail", "send_sms"}[i%2], Caller: "tenant"})
			require.NoError(t, err)
			switch d.Verdict {
			case toolgate.Allow:
				allowed++
				_, err := gates[i%2].After(ctx, d.Call, toolgate.Result{})
				require.NoError(t, err)
			default:
				assert.Equal(t, gatelog.ConditionRate, d.Condition, d.Explanation)
			}
			now = now.Add(time.Second)
		}
		assert.Equal(t, 3, allowed, "the window's limit, across both gates")

		// A minute after the first call, its place in the window is free.
		now = epoch.Add(time.Minute)
		d, err := gates[0].Before(ctx, toolgate.Call{Tool: "send_mail", Caller: "tenant"})
		require.NoError(t, err)
		assert.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
		// Another caller has a window of its own.
		d, err = gates[1].Before(ctx, toolgate.Call{Tool: "send_mail", Caller: "other"})
		require.NoError(t, err)
		assert.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	})
}
