package toolgate_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/verity-go/verity/kernel/toolgate"
)

// BenchmarkDecide50Rules is the decision core alone (Compiled.Decide, no
// log, no kernel) over 50 literal rules, the call meeting its rule last:
// the cost of matching a call against a catalogue, which a rule's server
// pattern adds a comparison to.
func BenchmarkDecide50Rules(b *testing.B) {
	rules := make([]toolgate.Rule, 0, 50)
	for i := range 49 {
		rules = append(rules, toolgate.Rule{Match: fmt.Sprintf("tool_%d_*", i), Cost: 1})
	}
	rules = append(rules, toolgate.Rule{Match: "read_*", Cost: 1})
	c := mustCompile(toolgate.Policy{Budget: 1 << 50, MinCost: 1, Tools: rules})
	call := toolgate.Call{Tool: "read_file", Arguments: []byte(`{"path": "/srv/data/a"}`), Caller: "a"}
	at := time.Unix(0, 0)
	b.ReportAllocs()
	for b.Loop() {
		if r := c.Decide(toolgate.Snapshot{}, call, at); r.Verdict != toolgate.Allow {
			b.Fatal(r.Explanation)
		}
	}
}
