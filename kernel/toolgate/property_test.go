package toolgate_test

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// TestParallelCallsNeverOverspend: however many calls of whatever costs
// arrive at once, for one caller or several, net spend never exceeds the
// budget (T1), every allowed call is one execution on the log, the log
// verifies as one chain, and it replays to the same spend.
func TestParallelCallsNeverOverspend(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		budget := units(rapid.Int64Range(1, 20).Draw(rt, "budget"))
		costs := rapid.SliceOfN(rapid.Int64Range(1, 5000), 1, 40).Draw(rt, "costs")
		callers := rapid.IntRange(1, 3).Draw(rt, "callers")
		reserve := rapid.Bool().Draw(rt, "reserve")
		cfg := toolgate.Policy{Budget: budget, MinCost: 1, Tools: []toolgate.Rule{{Match: "*", Reserve: reserve,
			CostFunc: func(c toolgate.Call) (kernel.Cost, error) {
				var n int64
				_, err := fmt.Sscan(string(c.Arguments), &n)
				return kernel.Cost(n), err
			}}}}
		log := newLog(rt)
		g, err := toolgate.New(ctx, log, mustCompile(cfg))
		require.NoError(rt, err)

		var wg sync.WaitGroup
		var mu sync.Mutex
		allowed := map[string]int64{}
		for i, c := range costs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				caller := fmt.Sprint(i % callers)
				d, err := g.Before(ctx, toolgate.Call{Tool: "tool", Caller: caller, Arguments: []byte(fmt.Sprint(c))})
				if err != nil {
					rt.Errorf("Before: %v", err)
					return
				}
				if d.Verdict == toolgate.Allow {
					// Settle above the reservation half the time: overruns
					// must stay within the budget too.
					_, err = g.After(ctx, d.Call, toolgate.Result{Actual: kernel.Cost(c * int64(1+i%2)), Measured: true})
					if err != nil && !errors.Is(err, kernel.ErrOverrun) {
						rt.Errorf("After: %v", err)
					}
					mu.Lock()
					allowed[caller]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		var entries []trace.Entry
		for e, err := range log.Entries(ctx, 0) {
			require.NoError(rt, err)
			entries = append(entries, e)
		}
		if _, err := trace.Verify(entries); err != nil {
			rt.Fatalf("the log forked or broke: %v", err)
		}
		for i := range callers {
			caller := fmt.Sprint(i)
			m, ok := g.Meter(caller)
			if !ok {
				continue
			}
			if net := m.Budget().Net(); net > budget {
				rt.Fatalf("caller %s spent %s of %s", caller, net, budget)
			}
			if int64(m.Steps()) != allowed[caller] {
				rt.Fatalf("caller %s: %d executions, %d allowed", caller, m.Steps(), allowed[caller])
			}
			s, err := kernel.Replay(ctx, log, g.Kernel(), g.SessionID(caller))
			require.NoError(rt, err)
			if totals(s.Meter().Budget()) != totals(m.Budget()) {
				rt.Fatalf("replay: %v, gate: %v", s.Meter().Budget(), m.Budget())
			}
		}
	})
}

// gateModel is the naive model of one Gate: per caller, net spend, the
// per-tool counters, the open calls, and the approvals by (tool, args).
type gateModel struct {
	budget  kernel.Cost
	net     map[string]kernel.Cost
	calls   map[string]map[string]int64 // caller → tool → calls
	open    map[string]modelCall        // "caller/id" → call
	waiting map[string]string           // "caller/tool/args" → request id
	granted map[string]int
	denied  map[string]int
}

type modelCall struct {
	caller, id string
	rule       toolgate.Rule
	cost       kernel.Cost
}

var modelRules = []toolgate.Rule{
	{Match: "read_file", Cost: kernel.Unit / 10},
	{Match: "search", Cost: units(3), Reserve: true, RefundOnError: true},
	{Match: "delete_file", Cost: units(1), Tier: claims.TierDelete},
	{Match: "send", Cost: units(2), RefundOnError: true},
}

// TestGateMatchesModel: a rapid state machine drives a Gate with calls of
// known, unknown and DELETE-tier tools from two callers, results measured
// or not, failed or not, and approvals and denials, and checks every
// verdict, every charge and every counter against gateModel.
func TestGateMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		budget := units(rapid.Int64Range(1, 12).Draw(rt, "budget"))
		cfg := toolgate.Policy{Budget: budget, MinCost: kernel.Unit / 100, Tools: modelRules,
			GoInvariants: []kernel.Invariant{kernel.AtMost("at-most-2-deletes", "calls/delete_file", 2)}}
		g, err := toolgate.New(ctx, newLog(rt), mustCompile(cfg))
		require.NoError(rt, err)
		m := &gateModel{budget: budget, net: map[string]kernel.Cost{}, calls: map[string]map[string]int64{},
			open: map[string]modelCall{}, waiting: map[string]string{}, granted: map[string]int{}, denied: map[string]int{}}
		nextID := 0

		rt.Repeat(map[string]func(*rapid.T){
			"before": func(rt *rapid.T) {
				tool := rapid.SampledFrom([]string{"read_file", "search", "delete_file", "send", "nope"}).Draw(rt, "tool")
				caller := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "caller")
				args := rapid.SampledFrom([]string{`{"x":1}`, `{"x":2}`}).Draw(rt, "args")
				nextID++
				c := toolgate.Call{Tool: tool, Caller: caller, Arguments: []byte(args), ID: fmt.Sprint(nextID)}
				d, err := g.Before(ctx, c)
				require.NoError(rt, err)
				want, approval := m.before(c)
				if d.Verdict != want {
					rt.Fatalf("%s by %s: verdict %s, model %s (%s)", tool, caller, d.Verdict, want, d.Explanation)
				}
				if want == toolgate.AskApproval && approval != "" && d.Approval.ID != approval {
					rt.Fatalf("asked with request %s, model waits on %s", d.Approval.ID, approval)
				}
				if want == toolgate.AskApproval && approval == "" {
					m.waiting[caller+"/"+tool+"/"+args] = d.Approval.ID
				}
			},
			"after": func(rt *rapid.T) {
				if len(m.open) == 0 {
					rt.Skip("nothing open")
				}
				keys := make([]string, 0, len(m.open))
				for k := range m.open {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				oc := m.open[rapid.SampledFrom(keys).Draw(rt, "call")]
				r := toolgate.Result{Measured: rapid.Bool().Draw(rt, "measured"), Actual: kernel.Cost(rapid.Int64Range(0, 5000).Draw(rt, "actual"))}
				if rapid.Bool().Draw(rt, "failed") {
					r.Err = errors.New("tool failed")
				}
				out, err := g.After(ctx, toolgate.Call{Caller: oc.caller, ID: oc.id}, r)
				if err != nil && !errors.Is(err, kernel.ErrOverrun) {
					rt.Fatalf("After: %v", err)
				}
				charged := m.after(oc, r)
				if out.Charged != charged {
					rt.Fatalf("charged %s, model %s", out.Charged, charged)
				}
			},
			"decide": func(rt *rapid.T) {
				if len(m.waiting) == 0 {
					rt.Skip("nothing waiting")
				}
				keys := make([]string, 0, len(m.waiting))
				for k := range m.waiting {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				key := rapid.SampledFrom(keys).Draw(rt, "request")
				id := m.waiting[key]
				delete(m.waiting, key)
				if rapid.Bool().Draw(rt, "approve") {
					granted, err := g.Approve(ctx, id, toolgate.DefaultApprover, "")
					require.NoError(rt, err)
					require.True(rt, granted)
					m.granted[key]++
				} else {
					require.NoError(rt, g.Deny(ctx, id, toolgate.DefaultApprover, "no"))
					m.denied[key]++
				}
			},
		})
		for caller, net := range m.net {
			meter, ok := g.Meter(caller)
			require.True(rt, ok)
			if meter.Budget().Net() != net {
				rt.Fatalf("caller %s: net %s, model %s", caller, meter.Budget().Net(), net)
			}
			if net > budget {
				rt.Fatalf("caller %s overspent: %s of %s", caller, net, budget)
			}
		}
	})
}

// before returns the verdict the model expects, and for AskApproval the
// request the call already waits on ("" for a new one).
func (m *gateModel) before(c toolgate.Call) (toolgate.Verdict, string) {
	var rule *toolgate.Rule
	for i := range modelRules {
		if modelRules[i].Match == c.Tool {
			rule = &modelRules[i]
		}
	}
	if rule == nil {
		return toolgate.Refuse, ""
	}
	key := c.Caller + "/" + c.Tool + "/" + string(c.Arguments)
	usedApproval := false
	if rule.Tier == claims.TierDelete {
		switch {
		case m.denied[key] > 0:
			m.denied[key]--
			return toolgate.Refuse, ""
		case m.granted[key] > 0:
			usedApproval = true
		case m.waiting[key] != "":
			return toolgate.AskApproval, m.waiting[key]
		case rule.Cost > m.budget-m.net[c.Caller] || m.calls[c.Caller]["delete_file"] >= 2:
			return toolgate.Refuse, "" // the kernel would refuse it: nobody is asked
		default:
			return toolgate.AskApproval, ""
		}
	}
	calls := m.calls[c.Caller]
	if calls == nil {
		calls = map[string]int64{}
		m.calls[c.Caller] = calls
	}
	if rule.Cost > m.budget-m.net[c.Caller] || (c.Tool == "delete_file" && calls["delete_file"] >= 2) {
		return toolgate.Refuse, "" // an unused approval stays
	}
	if usedApproval {
		m.granted[key]--
	}
	calls[c.Tool]++
	m.net[c.Caller] += rule.Cost
	m.open[c.Caller+"/"+c.ID] = modelCall{caller: c.Caller, id: c.ID, rule: *rule, cost: rule.Cost}
	return toolgate.Allow, ""
}

// after settles or refunds oc as the gate documents and returns what the
// call costs in the end.
func (m *gateModel) after(oc modelCall, r toolgate.Result) kernel.Cost {
	delete(m.open, oc.caller+"/"+oc.id)
	failed := r.Err != nil
	if oc.rule.Reserve {
		actual := oc.cost
		if r.Measured {
			actual = r.Actual
		}
		if failed && oc.rule.RefundOnError {
			actual = 0
		}
		if actual <= oc.cost {
			m.net[oc.caller] -= oc.cost - actual
			return actual
		}
		extra := min(actual-oc.cost, m.budget-m.net[oc.caller])
		m.net[oc.caller] += extra
		return oc.cost + extra
	}
	switch {
	case failed && oc.rule.RefundOnError:
		m.net[oc.caller] -= oc.cost
		return 0
	case r.Measured && r.Actual < oc.cost:
		m.net[oc.caller] -= oc.cost - r.Actual
		return r.Actual
	}
	return oc.cost
}
