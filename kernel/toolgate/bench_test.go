package toolgate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// BenchmarkGateCall is the gate's overhead per call: Before and After of
// one allowed call on a memory log (two trace entries).
func BenchmarkGateCall(b *testing.B) { benchGateCall(b, "") }

// benchGateCall is BenchmarkGateCall of calls made against definition.
func benchGateCall(b *testing.B, definition string) {
	log, _ := trace.NewLog(trace.NewMemory())
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1,
		Tools: []toolgate.Rule{{Match: "read_*", Cost: 1}}}))
	if err != nil {
		b.Fatal(err)
	}
	benchCalls(b, g, definition)
}

// benchCalls is the loop of the BenchmarkGateCall family: Before and
// After of one allowed read_file call by g, made against definition.
func benchCalls(b *testing.B, g *toolgate.Gate, definition string) {
	args := []byte(`{"path":"/srv/data/report.csv","limit":100}`)
	out := []byte(`{"rows":[["a","b"],["c","d"]],"truncated":false}`)
	b.ReportAllocs()
	for b.Loop() {
		d, err := g.Before(ctx, toolgate.Call{Tool: "read_file", Arguments: args, Caller: "agent", Definition: definition})
		if err != nil || d.Verdict != toolgate.Allow {
			b.Fatal(err, d.Explanation)
		}
		if _, err := g.After(ctx, d.Call, toolgate.Result{Output: out}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolCall1ms is the same call around a tool that takes 1 ms:
// compare with BenchmarkGateCall for the gate's share.
func BenchmarkToolCall1ms(b *testing.B) {
	for _, gated := range []bool{false, true} {
		name := map[bool]string{false: "direct", true: "gated"}[gated]
		b.Run(name, func(b *testing.B) {
			log, _ := trace.NewLog(trace.NewMemory())
			g, _ := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1,
				Tools: []toolgate.Rule{{Match: "*", Cost: 1}}}))
			for b.Loop() {
				if !gated {
					time.Sleep(time.Millisecond)
					continue
				}
				d, _ := g.Before(ctx, toolgate.Call{Tool: "slow", Arguments: []byte(`{}`)})
				time.Sleep(time.Millisecond)
				if _, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGateCall50Rules is BenchmarkGateCall under a policy of 50
// rules as a real catalogue has them: the call meets its rule last, after
// rules with argument schemas, principals and path conditions, and that
// rule has a path condition, an argument schema, a rate window and a
// label.
func BenchmarkGateCall50Rules(b *testing.B) {
	rules := make([]toolgate.Rule, 0, 50)
	for i := range 49 {
		r := toolgate.Rule{Match: fmt.Sprintf("tool_%d_*", i), Cost: 1}
		switch i % 3 {
		case 0:
			r.Arguments = json.RawMessage(`{"type": "object", "properties": {"limit": {"type": "integer", "maximum": 10}}}`)
		case 1:
			r.Principals = &toolgate.PrincipalCondition{Groups: []string{"admin"}}
		case 2:
			r.Match = "read_file"
			r.Effect = toolgate.EffectRefuse
			r.Paths = []toolgate.PathCondition{{Argument: "/path", Under: []string{fmt.Sprintf("/srv/secret%d", i)}}}
		}
		rules = append(rules, r)
	}
	rules = append(rules, toolgate.Rule{Match: "read_*", Cost: 1, Name: "reads", Labels: []string{"private_data"},
		Arguments: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}}, "required": ["path"]}`),
		Paths:     []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data"}}},
		Rate:      &toolgate.Rate{Calls: 1 << 30, Per: time.Minute}})
	log, _ := trace.NewLog(trace.NewMemory())
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1, Tools: rules}))
	if err != nil {
		b.Fatal(err)
	}
	benchCalls(b, g, "")
}

// nopObserver is told everything and keeps nothing.
type nopObserver struct{}

func (nopObserver) ObserveDecision(context.Context, toolgate.DecisionEvent) {}
func (nopObserver) ObserveOutcome(context.Context, toolgate.OutcomeEvent)   {}

// BenchmarkGateCallObserved is BenchmarkGateCall with an Observer that
// does nothing: the cost of the events themselves (two clock reads each,
// the caller's budget, the allow kept until After).
func BenchmarkGateCallObserved(b *testing.B) {
	log, _ := trace.NewLog(trace.NewMemory())
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1,
		Tools: []toolgate.Rule{{Match: "read_*", Cost: 1}}}), toolgate.WithObserver(nopObserver{}))
	if err != nil {
		b.Fatal(err)
	}
	benchCalls(b, g, "")
}

// BenchmarkGateCallRenewing is BenchmarkGateCall under a budget that
// renews each rolling second: the ledger's check and record on every
// call, in its steady state (the clock moves 1 ms per call, so the window
// holds a thousand calls and one leaves it as each comes).
func BenchmarkGateCallRenewing(b *testing.B) {
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Millisecond); return now }
	log, _ := trace.NewLog(trace.NewMemory(), trace.WithClock(clock))
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1,
		BudgetPeriod: &toolgate.BudgetPeriod{Every: time.Second},
		Tools:        []toolgate.Rule{{Match: "read_*", Cost: 1}}}), toolgate.WithClock(clock))
	if err != nil {
		b.Fatal(err)
	}
	benchCalls(b, g, "")
}

// BenchmarkGateCallPinned is BenchmarkGateCall with the call's pinned
// definition recorded on its decision and result (Call.Definition).
func BenchmarkGateCallPinned(b *testing.B) {
	benchGateCall(b, "sha256:5555555555555555555555555555555555555555555555555555555555555555")
}
