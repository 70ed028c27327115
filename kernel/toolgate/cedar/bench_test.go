package cedar_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// tenRules returns a policy of ten rules whose last one decides the
// benchmark's call: in Cedar (the worked example's condition) or in its
// native form.
func tenRules(b *testing.B, inCedar bool) toolgate.Policy {
	worked := loadCedar(b, "testdata/worked_cedar.json")
	native := loadCedar(b, "testdata/worked_native.json")
	var rules []toolgate.Rule
	for i := range 9 {
		r := toolgate.Rule{Name: fmt.Sprintf("other%d", i), Match: fmt.Sprintf("tool_%d_*", i), Cost: 1}
		switch i % 3 {
		case 0:
			r.Arguments = json.RawMessage(`{"type": "object", "properties": {"limit": {"type": "integer", "maximum": 10}}}`)
		case 1:
			r.Principals = &toolgate.PrincipalCondition{Groups: []string{"admin"}}
		}
		rules = append(rules, r)
	}
	last := native.Tools[1]
	if inCedar {
		last = worked.Tools[1]
	}
	last.Cost = 1
	p := toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1, Labels: []string{"private_data"}, Conditions: worked.Conditions,
		Tools: append(rules, last, toolgate.Rule{Name: "read-private", Match: "read_private", Cost: 1, Labels: []string{"private_data"}})}
	return p
}

// BenchmarkGateCall is the gate's cost per call (Before and After of one
// allowed call on a memory log) on a ten-rule policy whose deciding rule
// is the worked example, in Cedar and in native form, in the same run:
// the difference is what a Cedar condition adds.
func BenchmarkGateCall(b *testing.B) {
	for _, form := range []string{"native", "cedar"} {
		b.Run(form, func(b *testing.B) {
			comp, err := tenRules(b, form == "cedar").Compile()
			if err != nil {
				b.Fatal(err)
			}
			log, _ := trace.NewLog(trace.NewMemory())
			g, err := toolgate.New(ctx, log, comp)
			if err != nil {
				b.Fatal(err)
			}
			args := []byte(`{"repo":"acme/api","title":"fix the build","draft":false}`)
			out := []byte(`{"number":42}`)
			b.ReportAllocs()
			for b.Loop() {
				d, err := g.Before(ctx, toolgate.Call{Tool: "github.create_pull_request", Arguments: args, Caller: "agent", Principal: eng})
				if err != nil || d.Verdict != toolgate.Allow {
					b.Fatal(err, d.Explanation)
				}
				if _, err := g.After(ctx, d.Call, toolgate.Result{Output: out}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvaluate is one Cedar condition's evaluation alone (the
// worked example's), entity building included.
func BenchmarkEvaluate(b *testing.B) {
	p := loadCedar(b, "testdata/worked_cedar.json")
	c, err := p.Conditions[0].Compile("/tools/1/when/text", p.Tools[1].When.Text)
	if err != nil {
		b.Fatal(err)
	}
	in := &toolgate.ConditionInput{Principal: eng, Tool: "github.create_pull_request",
		Arguments: map[string]any{"repo": "acme/api", "title": "fix the build", "draft": false}}
	b.ReportAllocs()
	for b.Loop() {
		if a, err := c.Evaluate(in); err != nil || !a.Applies {
			b.Fatal(a, err)
		}
	}
}
