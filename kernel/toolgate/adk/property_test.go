package adk_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/adk"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// countingTools are n tools "t0".."t<n-1>" that count their runs and may
// wait at a barrier before returning.
type countingTools struct {
	runs    []atomic.Int64
	enter   func() // called by every run, may block
	running atomic.Int64
	peak    atomic.Int64
}

func newCountingTools(t tb, n int) (*countingTools, []tool.Tool) {
	ct := &countingTools{runs: make([]atomic.Int64, n)}
	out := make([]tool.Tool, n)
	for i := range n {
		tl, err := functiontool.New(functiontool.Config{Name: fmt.Sprintf("t%d", i), Description: "a tool"},
			func(_ agent.Context, a pathArgs) (pathResult, error) {
				now := ct.running.Add(1)
				for {
					p := ct.peak.Load()
					if now <= p || ct.peak.CompareAndSwap(p, now) {
						break
					}
				}
				if ct.enter != nil {
					ct.enter()
				}
				ct.running.Add(-1)
				ct.runs[i].Add(1)
				return pathResult{Path: a.Path, Done: "ran"}, nil
			})
		require.NoError(t, err)
		out[i] = tl
	}
	return ct, out
}

func runParallel(t tb, cfg toolgate.Policy, tl []tool.Tool, calls []*genai.FunctionCall) (*world, []*session.Event) {
	helper(t)
	w := &world{log: newLog(t), model: newScript("parallel", calls), session: sessionName(t)}
	w.gate = newGate(t, w.log, cfg)
	var err error
	w.guard, err = adk.New(w.gate)
	require.NoError(t, err)
	ac := llmagent.Config{Name: "assistant", Model: w.model, Tools: tl}
	w.guard.Install(&ac)
	a, err := llmagent.New(ac)
	require.NoError(t, err)
	w.runner, err = runner.New(runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	return w, w.say(t, "go")
}

// TestConcurrentToolCallsNeverOverspend: a model turn of N function
// calls, which ADK runs on N goroutines through the guard, never spends
// more than the budget (T1); exactly the calls the gate allowed ran, each
// once; every other call's result is the gate's budget explanation; when
// all calls fit, none is refused; and the log (one chain, not forked)
// verifies and replays to the same spend.
func TestConcurrentToolCallsNeverOverspend(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		const nTools = 3
		costs := make([]kernel.Cost, nTools)
		cfg := toolgate.Policy{
			Budget:  kernel.Cost(rapid.Int64Range(1, 10).Draw(rt, "budget units")) * kernel.Unit,
			MinCost: kernel.Unit / 100,
		}
		for i := range costs {
			costs[i] = kernel.Cost(rapid.Int64Range(1, 400).Draw(rt, fmt.Sprintf("cost t%d (hundredths)", i))) * kernel.Unit / 100
			cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: fmt.Sprintf("t%d", i), Cost: costs[i]})
		}
		which := rapid.SliceOfN(rapid.IntRange(0, nTools-1), 1, 12).Draw(rt, "calls")
		calls := make([]*genai.FunctionCall, len(which))
		var total kernel.Cost
		for i, k := range which {
			calls[i] = call(fmt.Sprintf("call-%d", i), fmt.Sprintf("t%d", k), map[string]any{"path": fmt.Sprint(i)})
			total += costs[k]
		}

		ct, tl := newCountingTools(rt, nTools)
		w, events := runParallel(rt, cfg, tl, calls)

		var spent kernel.Cost
		var ran int64
		for k := range nTools {
			spent += kernel.Cost(ct.runs[k].Load()) * costs[k]
			ran += ct.runs[k].Load()
		}
		if spent > cfg.Budget {
			rt.Fatalf("T1: tools worth %v ran under a budget of %v", spent, cfg.Budget)
		}
		m, ok := w.gate.Meter(w.caller())
		require.True(rt, ok)
		require.Equal(rt, spent, m.Budget().Net(), "the gate charged exactly what ran")

		refused := 0
		for k := range nTools {
			for _, r := range functionResponses(events, fmt.Sprintf("t%d", k)) {
				if e, isErr := r["error"].(string); isErr {
					refused++
					require.Contains(rt, e, "budget", "a refusal explains the budget")
				} else {
					require.Equal(rt, "ran", r["done"])
				}
			}
		}
		require.Equal(rt, len(calls), int(ran)+refused, "each call ran once or was refused")
		if total <= cfg.Budget {
			require.Zero(rt, refused, "calls that fit are never refused")
		}
		k := kinds(entries(rt, w.log))
		require.Equal(rt, int(ran), k["kernel.execute"])
		require.Equal(rt, int(ran), k[gatelog.KindResult])
		require.Equal(rt, refused, k["kernel.reject"])
		checkLog(rt, w.log, w.gate, w.caller())
	})
}

// TestToolCallsOfOneTurnRunConcurrently shows what the property above
// exercises: ADK runs the calls of one model turn at the same time, each
// through the guard (every tool waits until all have started).
func TestToolCallsOfOneTurnRunConcurrently(t *testing.T) {
	const n = 6
	ct, tl := newCountingTools(t, 1)
	var wg sync.WaitGroup
	wg.Add(n)
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	var timedOut atomic.Bool
	ct.enter = func() {
		wg.Done()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
			timedOut.Store(true)
		}
	}
	cfg := toolgate.Policy{Budget: units(10), MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{{Match: "t0", Cost: units(1)}}}
	calls := make([]*genai.FunctionCall, n)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("c%d", i), "t0", map[string]any{"path": fmt.Sprint(i)})
	}
	w, _ := runParallel(t, cfg, tl, calls)
	assert.False(t, timedOut.Load(), "the calls did not all run at once")
	assert.EqualValues(t, n, ct.peak.Load(), "all calls were in their tools at once")
	assert.EqualValues(t, n, ct.runs[0].Load())
	checkLog(t, w.log, w.gate, w.caller())
}
