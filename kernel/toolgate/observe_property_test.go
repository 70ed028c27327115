package toolgate_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// TestEveryDecisionAndOutcomeObservedOnce: whatever the calls — allowed,
// refused by the catalogue or the budget, asking a human, reported once,
// twice or never — the Observer is told of each decision and each After
// exactly once, in order, with what the caller was returned, and the
// budget it is told is the caller's as Meter reads it then.
func TestEveryDecisionAndOutcomeObservedOnce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		r := &recorder{}
		log, err := trace.NewLog(trace.NewMemory())
		if err != nil {
			rt.Fatal(err)
		}
		g, err := toolgate.New(ctx, log, mustCompile(observedConfig()), toolgate.WithObserver(r))
		if err != nil {
			rt.Fatal(err)
		}
		var decisions []toolgate.Decision
		var outcomes []toolgate.Outcome
		var open []toolgate.Call
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for i := range steps {
			caller := rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "caller")
			switch rapid.IntRange(0, 2).Draw(rt, "op") {
			case 0, 1:
				tool := rapid.SampledFrom([]string{"read_file", "search", "delete_file", "rm"}).Draw(rt, "tool")
				d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: caller, ID: fmt.Sprint("c", i), Arguments: []byte(`{}`)})
				if err != nil {
					rt.Fatal(err)
				}
				decisions = append(decisions, d)
				if d.Verdict == toolgate.Allow {
					open = append(open, d.Call)
				}
				e := r.decisions[len(r.decisions)-1]
				if m, ok := g.Meter(caller); ok != e.Metered || (ok && m.Budget() != e.Budget) {
					rt.Fatalf("decision %d: observed budget %v (%v), the caller's %v (%v)", i, e.Budget, e.Metered, m.Budget(), ok)
				}
			case 2:
				if len(open) == 0 {
					continue
				}
				k := rapid.IntRange(0, len(open)-1).Draw(rt, "which")
				c := open[k]
				var res toolgate.Result
				if rapid.Bool().Draw(rt, "fails") {
					res.Err = errors.New("failed")
				}
				if rapid.Bool().Draw(rt, "measured") {
					res.Actual, res.Measured = kernel.Cost(rapid.Int64Range(0, 2000).Draw(rt, "actual")), true
				}
				out, err := g.After(ctx, c, res)
				if err != nil && !errors.Is(err, toolgate.ErrUnknownCall) && !errors.Is(err, kernel.ErrOverrun) {
					rt.Fatal(err)
				}
				if !rapid.Bool().Draw(rt, "again") { // sometimes reported twice: the second is ErrUnknownCall
					open = append(open[:k], open[k+1:]...)
				}
				outcomes = append(outcomes, out)
				e := r.outcomes[len(r.outcomes)-1]
				if !errors.Is(e.Err, err) || (err == nil) != (e.Err == nil) {
					rt.Fatalf("outcome: observed error %v, returned %v", e.Err, err)
				}
				if err == nil && (e.Call.Tool == "" || e.Decision.Verdict != toolgate.Allow || e.Decision.Call.ID != c.ID) {
					rt.Fatalf("outcome of %s: observed without its allow: %+v", c.ID, e)
				}
			}
		}
		if len(r.decisions) != len(decisions) || len(r.outcomes) != len(outcomes) {
			rt.Fatalf("observed %d decisions and %d outcomes, made %d and %d", len(r.decisions), len(r.outcomes), len(decisions), len(outcomes))
		}
		for i, d := range decisions {
			if e := r.decisions[i]; e.Err != nil || !reflect.DeepEqual(e.Decision, d) {
				rt.Fatalf("decision %d: observed %+v, returned %+v", i, e.Decision, d)
			}
		}
		for i, o := range outcomes {
			if e := r.outcomes[i]; e.Outcome != o {
				rt.Fatalf("outcome %d: observed %+v, returned %+v", i, e.Outcome, o)
			}
		}
	})
}
