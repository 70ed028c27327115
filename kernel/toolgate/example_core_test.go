package toolgate_test

import (
	"fmt"
	"time"

	"github.com/verity-go/verity/kernel/toolgate"
)

// A version 2 policy that stops the toxic flow — untrusted input, then
// private data, then a way out — decided by the pure core, the caller's
// session given as a Snapshot.
func ExampleCompiled_Decide() {
	p, err := toolgate.ParsePolicy([]byte(`{
	  "version": 2, "budget": "10", "min_cost": "0.01",
	  "labels": ["untrusted_input", "private_data"],
	  "tools": [
	    {"name": "no-etc", "match": "read_file", "effect": "refuse", "reason": "not under /etc",
	     "paths": [{"argument": "/path", "under": ["/etc"]}]},
	    {"name": "issues", "match": "get_issue", "cost": "0.01", "labels": ["untrusted_input"]},
	    {"name": "private", "match": "read_file", "cost": "0.01", "labels": ["private_data"],
	     "rate": {"calls": 30, "per": "1m"}},
	    {"name": "pr", "match": "create_pull_request", "cost": "0.1",
	     "flow": [{"after": ["untrusted_input", "private_data"], "effect": "refuse",
	               "reason": "private data read after untrusted input must not leave"}]}
	  ]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	comp, err := p.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	seen := toolgate.Snapshot{Labels: map[string]bool{}}
	for _, c := range []toolgate.Call{
		{Tool: "read_file", Arguments: []byte(`{"path": "/srv/repo/../../etc/shadow"}`)},
		{Tool: "get_issue", Arguments: []byte(`{"n": 7}`)},
		{Tool: "read_file", Arguments: []byte(`{"path": "/srv/private/keys.txt"}`)},
		{Tool: "create_pull_request", Arguments: []byte(`{"title": "fix"}`)},
	} {
		r := comp.Decide(seen, c, at)
		fmt.Println(c.Tool, r.Verdict, r.Rule, r.Condition, r.Labels)
		if r.Verdict == toolgate.Refuse {
			fmt.Println("  ", r.Explanation)
		}
		for _, l := range r.Labels { // what the Gate does once the call ran
			seen.Labels[l] = true
		}
	}
	// Output:
	// read_file refuse rule #0 "no-etc" effect []
	//    tool "read_file" (rule #0 "no-etc", effect): not under /etc
	// get_issue allow rule #1 "issues" match [untrusted_input]
	// read_file allow rule #2 "private" match [private_data]
	// create_pull_request refuse rule #3 "pr" flow/0 []
	//    tool "create_pull_request" (rule #3 "pr", flow/0): private data read after untrusted input must not leave
}
