package toolgate_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// manualClock is a gate clock the test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Microsecond)
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestEvictedCallerKeepsItsBudget: a caller let go and resumed from the
// log is refused at exactly the call a caller never let go is refused at.
func TestEvictedCallerKeepsItsBudget(t *testing.T) {
	cfg := toolgate.Policy{Budget: units(10), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "read", Cost: units(1), RefundOnError: true},
		{Match: "search", Cost: units(3), Reserve: true},
	}}
	run := func(evict bool) (allowed int, net kernel.Cost) {
		g, err := toolgate.New(ctx, newLog(t), mustCompile(cfg), toolgate.WithCallerLimit(1))
		require.NoError(t, err)
		for i := 0; ; i++ {
			tool := []string{"read", "search"}[i%2]
			d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "alice"})
			require.NoError(t, err)
			if d.Verdict != toolgate.Allow {
				m, _ := g.Meter("alice")
				return allowed, m.Budget().Net()
			}
			allowed++
			// A failed read is refunded, a search settled below its
			// reservation: refunds and settlements of calls the resumed
			// session never saw executed.
			_, err = g.After(ctx, d.Call, toolgate.Result{Err: fmt.Errorf("flaky"), Actual: units(2), Measured: tool == "search"})
			require.NoError(t, err)
			if evict {
				d, err := g.Before(ctx, toolgate.Call{Tool: "read", Caller: fmt.Sprint("other", i)})
				require.NoError(t, err)
				_, err = g.After(ctx, d.Call, toolgate.Result{})
				require.NoError(t, err)
				live, _ := g.LiveCallers()
				require.Equal(t, 1, live, "alice was let go")
			}
		}
	}
	wantN, wantNet := run(false)
	gotN, gotNet := run(true)
	assert.Equal(t, wantN, gotN)
	assert.Equal(t, wantNet, gotNet)
	assert.Equal(t, 9, gotN, "failed reads are refunded, searches settled at 2: four of each, a read, and no room for a search")
}

// TestIdleCallerLetGo: a caller idle longer than WithIdleCallers is let
// go at the next call, one with an open call or a waiting approval is
// not, and each gets back what it had.
func TestIdleCallerLetGo(t *testing.T) {
	clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := toolgate.Policy{Budget: units(100), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "read", Cost: units(1)},
		{Match: "drop", Cost: units(1), Tier: claims.TierDelete},
	}}
	g, err := toolgate.New(ctx, newLog(t), mustCompile(cfg), toolgate.WithClock(clock.Now), toolgate.WithIdleCallers(time.Minute))
	require.NoError(t, err)
	open, err := g.Before(ctx, toolgate.Call{Tool: "read", Caller: "open"})
	require.NoError(t, err)
	ask, err := g.Before(ctx, toolgate.Call{Tool: "drop", Caller: "asking"})
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, ask.Verdict)
	idle, err := g.Before(ctx, toolgate.Call{Tool: "read", Caller: "idle"})
	require.NoError(t, err)
	_, err = g.After(ctx, idle.Call, toolgate.Result{})
	require.NoError(t, err)

	clock.Advance(2 * time.Minute)
	_, err = g.Before(ctx, toolgate.Call{Tool: "read", Caller: "new"})
	require.NoError(t, err)
	live, evicted := g.LiveCallers()
	assert.Equal(t, 3, live, "only the idle caller is let go")
	assert.Equal(t, uint64(1), evicted)

	_, err = g.After(ctx, open.Call, toolgate.Result{Actual: 0, Measured: true})
	require.NoError(t, err, "an open call survives")
	ok, err := g.Approve(ctx, ask.Approval.ID, toolgate.DefaultApprover, "")
	require.NoError(t, err, "a waiting approval survives")
	assert.True(t, ok)
	d, err := g.Before(ctx, ask.Call)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict)
	m, ok := g.Meter("idle")
	require.True(t, ok, "a caller let go resumes for Meter too")
	assert.Equal(t, units(1), m.Budget().Net())
	m, _ = g.Meter("open")
	assert.Equal(t, kernel.Cost(0), m.Budget().Net())
}

func TestCallerLimitsChecked(t *testing.T) {
	_, err := toolgate.New(ctx, newLog(t), mustCompile(toolgate.Policy{Budget: 1, MinCost: 1}), toolgate.WithCallerLimit(0))
	assert.ErrorIs(t, err, toolgate.ErrInvalidConfig)
	_, err = toolgate.New(ctx, newLog(t), mustCompile(toolgate.Policy{Budget: 1, MinCost: 1}), toolgate.WithIdleCallers(0))
	assert.ErrorIs(t, err, toolgate.ErrInvalidConfig)
}

// evictModel is the naive model: per caller the net spend, the open
// calls and the approval state of the one DELETE call, by caller.
type evictModel struct {
	net      map[string]kernel.Cost
	open     map[string][]openModel
	waiting  map[string]string // caller → approval id waiting
	granted  map[string]bool
	approved map[string]toolgate.Call
}

type openModel struct {
	call     toolgate.Call
	cost     kernel.Cost
	reserved bool
}

// TestEvictionMatchesModel: a gate that lets callers go (a caller limit
// of 1 to 3 and an idle time the test's clock passes) decides every call
// as a naive model of per-caller budgets that never forgets does, and
// loses no open call, waiting request or unused approval.
func TestEvictionMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		clock := &manualClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		budget := units(6)
		cfg := toolgate.Policy{Budget: budget, MinCost: 1, Tools: []toolgate.Rule{
			{Match: "read", Cost: units(1), RefundOnError: true},
			{Match: "search", Cost: units(2), Reserve: true},
			{Match: "drop", Cost: units(1), Tier: claims.TierDelete},
		}}
		limit := rapid.IntRange(1, 3).Draw(t, "limit")
		store := trace.NewMemory()
		log, err := trace.NewLog(store)
		require.NoError(t, err)
		g, err := toolgate.New(ctx, log, mustCompile(cfg), toolgate.WithClock(clock.Now), toolgate.WithCallerLimit(limit), toolgate.WithIdleCallers(time.Minute))
		require.NoError(t, err)
		m := evictModel{net: map[string]kernel.Cost{}, open: map[string][]openModel{}, waiting: map[string]string{},
			granted: map[string]bool{}, approved: map[string]toolgate.Call{}}
		callers := []string{"a", "b", "c", "d", "e"}
		busy := func() int {
			n := 0
			for _, c := range callers {
				if len(m.open[c]) > 0 || m.waiting[c] != "" || m.granted[c] {
					n++
				}
			}
			return n
		}
		t.Repeat(map[string]func(*rapid.T){
			"call": func(t *rapid.T) {
				who := rapid.SampledFrom(callers).Draw(t, "caller")
				tool := rapid.SampledFrom([]string{"read", "search"}).Draw(t, "tool")
				cost := map[string]kernel.Cost{"read": units(1), "search": units(2)}[tool]
				d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: who})
				require.NoError(t, err)
				want := m.net[who]+cost <= budget
				if (d.Verdict == toolgate.Allow) != want {
					t.Fatalf("%s %s with %s spent: %s, the model says allowed=%v", who, tool, m.net[who], d.Verdict, want)
				}
				if want {
					m.net[who] += cost
					m.open[who] = append(m.open[who], openModel{call: d.Call, cost: cost, reserved: tool == "search"})
				}
			},
			"result": func(t *rapid.T) {
				who := rapid.SampledFrom(callers).Draw(t, "caller")
				if len(m.open[who]) == 0 {
					t.Skip("no open call")
				}
				i := rapid.IntRange(0, len(m.open[who])-1).Draw(t, "call")
				oc := m.open[who][i]
				failed := rapid.Bool().Draw(t, "failed")
				r := toolgate.Result{}
				if failed {
					r.Err = fmt.Errorf("failed")
				}
				if oc.reserved {
					r.Actual, r.Measured = kernel.Cost(rapid.Int64Range(0, int64(oc.cost)).Draw(t, "actual")), true
				}
				_, err := g.After(ctx, oc.call, r)
				require.NoError(t, err, "an open call is never lost")
				switch {
				case oc.reserved:
					m.net[who] -= oc.cost - r.Actual
				case failed && oc.call.Tool == "read": // RefundOnError
					m.net[who] -= oc.cost
				}
				m.open[who] = slices.Delete(m.open[who], i, i+1)
			},
			"ask": func(t *rapid.T) {
				who := rapid.SampledFrom(callers).Draw(t, "caller")
				call := toolgate.Call{Tool: "drop", Caller: who, Arguments: []byte(`{"what":"x"}`)}
				d, err := g.Before(ctx, call)
				require.NoError(t, err)
				switch {
				case m.granted[who]:
					want := m.net[who]+units(1) <= budget
					if (d.Verdict == toolgate.Allow) != want {
						t.Fatalf("approved drop of %s: %s (%s)", who, d.Verdict, d.Explanation)
					}
					if want {
						m.net[who] += units(1)
						m.open[who] = append(m.open[who], openModel{call: d.Call, cost: units(1)})
						m.granted[who] = false
					}
				case m.waiting[who] == "" && m.net[who]+units(1) > budget:
					if d.Verdict != toolgate.Refuse {
						t.Fatalf("drop of %s beyond its budget: %s, not refused before asking", who, d.Verdict)
					}
				default:
					if d.Verdict != toolgate.AskApproval {
						t.Fatalf("drop of %s without approval: %s", who, d.Verdict)
					}
					if m.waiting[who] != "" && m.waiting[who] != d.Approval.ID {
						t.Fatalf("a waiting request of %s was lost: %s, now %s", who, m.waiting[who], d.Approval.ID)
					}
					m.waiting[who] = d.Approval.ID
				}
			},
			"approve": func(t *rapid.T) {
				who := rapid.SampledFrom(callers).Draw(t, "caller")
				if m.waiting[who] == "" {
					t.Skip("nothing waits")
				}
				ok, err := g.Approve(ctx, m.waiting[who], toolgate.DefaultApprover, "")
				require.NoError(t, err, "a waiting request is never lost")
				require.True(t, ok)
				m.waiting[who], m.granted[who] = "", true
			},
			"idle": func(t *rapid.T) {
				clock.Advance(2 * time.Minute)
			},
			"": func(t *rapid.T) {
				live, _ := g.LiveCallers()
				if live > max(limit, busy()) {
					t.Fatalf("%d live callers, limit %d, %d busy", live, limit, busy())
				}
				for _, c := range callers {
					if meter, ok := g.Meter(c); ok && meter.Budget().Net() != m.net[c] {
						t.Fatalf("%s: net %s, the model %s", c, meter.Budget().Net(), m.net[c])
					}
				}
			},
		})
		_, err = trace.VerifyStore(ctx, store)
		require.NoError(t, err)
	})
}

// A gate keeps the sessions of its most recent callers only; a caller let
// go resumes from the log with what it spent.
func ExampleWithCallerLimit() {
	log, _ := trace.NewLog(trace.NewMemory())
	g, _ := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: 3 * kernel.Unit, MinCost: kernel.Unit,
		Tools: []toolgate.Rule{{Match: "search", Cost: kernel.Unit}}}), toolgate.WithCallerLimit(1))
	call := func(who string) toolgate.Verdict {
		d, _ := g.Before(ctx, toolgate.Call{Tool: "search", Caller: who})
		if d.Verdict == toolgate.Allow {
			g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)})
		}
		return d.Verdict
	}
	call("alice")
	call("alice")
	call("bob") // alice is let go
	live, evicted := g.LiveCallers()
	fmt.Println(live, evicted)
	fmt.Println(call("alice"), call("alice")) // resumed: one unit left
	// Output:
	// 1 1
	// allow refuse
}

// TestCallersWaitingForAHumanDoNotStopEviction: callers kept for a
// request nobody answers sit at the least recently used end; the callers
// behind them are still let go at the limit.
func TestCallersWaitingForAHumanDoNotStopEviction(t *testing.T) {
	cfg := toolgate.Policy{Budget: units(100), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "read", Cost: units(1)},
		{Match: "drop", Cost: units(1), Tier: claims.TierDelete},
	}}
	g, err := toolgate.New(ctx, newLog(t), mustCompile(cfg), toolgate.WithCallerLimit(4))
	require.NoError(t, err)
	const asking = 40
	for i := range asking {
		d, err := g.Before(ctx, toolgate.Call{Tool: "drop", Caller: fmt.Sprintf("asking%d", i)})
		require.NoError(t, err)
		require.Equal(t, toolgate.AskApproval, d.Verdict)
	}
	for i := range 200 {
		d, err := g.Before(ctx, toolgate.Call{Tool: "read", Caller: fmt.Sprintf("reader%d", i)})
		require.NoError(t, err)
		_, err = g.After(ctx, d.Call, toolgate.Result{})
		require.NoError(t, err)
	}
	live, _ := g.LiveCallers()
	assert.LessOrEqual(t, live, asking+4, "the readers beyond the limit are let go")
}
