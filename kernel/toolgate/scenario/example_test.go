package scenario_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/scenario"
)

// A policy with one rule that needs a human, and a cases file with one
// call and one scenario: asked, approved, run, settled. The last step
// expects the wrong charge, and says so.
func Example() {
	policy, err := toolgate.ParsePolicy([]byte(`{"version": 2, "budget": "10", "min_cost": "0.01",
	  "approvers": {"DELETE": ["human"]},
	  "tools": [{"name": "deletes", "match": "delete_file", "cost": "1", "tier": "DELETE"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cases, err := scenario.Parse([]byte(`{"cases": [
	  {"name": "a delete asks", "tool": "delete_file", "expect": "ask_approval", "condition": "tier"},
	  {"name": "asked, approved, run", "steps": [
	    {"name": "ask", "call": {"tool": "delete_file", "caller": "alice", "arguments": {"path": "/a"}},
	     "expect": {"verdict": "ask_approval", "waiting": 1,
	                "entries": [{"kind": "kernel.start"}, {"kind": "claims.evaluate", "bundle": {"decision": "ESCALATE"}}]}},
	    {"approve": {"request": "ask", "approver": "human"}, "expect": {"approved": true, "waiting": 0}},
	    {"name": "run", "call": {"tool": "delete_file", "caller": "alice", "arguments": {"path": "/a"}},
	     "expect": {"verdict": "allow", "budget": "9", "entries": [{"kind": "kernel.execute"}]}},
	    {"result": {"call": "run", "output": "gone"},
	     "expect": {"charged": "2", "entries": [{"kind": "toolgate.result", "ok": true}]}}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := scenario.NewRunner(policy)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cases {
		res := r.Run(context.Background(), c)
		if res.Passed() {
			fmt.Println("PASS", c.Name())
			continue
		}
		fmt.Println("FAIL", c.Name())
		for _, f := range res.Failures {
			fmt.Println("    ", f.Where()+":", strings.Join(f.Problems, "; "))
			fmt.Println("    ", f.Got)
		}
	}
	// Output:
	// PASS a delete asks
	// FAIL asked, approved, run
	//      step 3 (result run): charged 1, want 2
	//      got charged 1, unpaid 0; entries [toolgate.result]
}
