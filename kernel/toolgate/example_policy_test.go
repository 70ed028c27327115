package toolgate_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

func ExampleParsePolicy() {
	p, err := toolgate.ParsePolicy([]byte(`{
	  "version": 1,
	  "budget": "10",
	  "min_cost": "0.01",
	  "tools": [
	    {"match": "read_*", "cost": "0.01"},
	    {"match": "delete_file", "cost": "1", "tier": "DELETE"},
	    {"match": "search", "cost": "2", "reserve": true, "refund_on_error": true}
	  ],
	  "invariants": [
	    {"name": "at-most-3-deletes", "at_most": {"key": "calls/delete_file", "n": 3}}
	  ]
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	comp, err := p.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	eff := comp.Policy() // the policy with its defaults applied: each rule's tier
	fmt.Printf("budget %s, each call at least %s\n", eff.Budget, eff.MinCost)
	for _, r := range eff.Tools {
		fmt.Printf("%-12s cost %-4s %-9s reserve=%v\n", r.Match, r.Cost, r.Tier, r.Reserve)
	}
	for _, s := range eff.Invariants {
		inv, _ := s.Invariant()
		fmt.Printf("invariant %s: %s\n", inv.Name, inv.Description)
	}
	// Output:
	// budget 10, each call at least 0.01
	// read_*       cost 0.01 READ_ONLY reserve=false
	// delete_file  cost 1    DELETE    reserve=false
	// search       cost 2    READ_ONLY reserve=true
	// invariant at-most-3-deletes: calls/delete_file is at most 3
}

// A policy with mistakes is refused with every one of them, each at its
// place in the file.
func ExampleParsePolicy_invalid() {
	_, err := toolgate.ParsePolicy([]byte(`{
	  "version": 1,
	  "budget": "10",
	  "min_cost": "0.01",
	  "tools": [
	    {"match": "read_*", "cost": "0.0005"},
	    {"match": "read_secret", "cost": "1", "tier": "PRIVILEGE"},
	    {"match": "rm", "cost": "1", "tier": "delete"}
	  ],
	  "invariants": [{"name": "deletes", "at_most": {"key": "calls/rm", "n": 3}, "within": {"key": "calls", "min": 0, "max": 9}}]
	}`))
	var ve *toolgate.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(errors.Is(err, toolgate.ErrInvalidPolicy))
		for _, v := range ve.Violations {
			fmt.Printf("%s: %s\n", v.Path, v.Rule)
		}
	}
	// Output:
	// true
	// /invariants/0: invariant_form
	// /tools/0/cost: cost
	// /tools/1/match: shadowed
	// /tools/2/tier: enum
}

// LoadPolicy reads testdata/policy/example.json, a filesystem MCP
// server's policy; the gate it configures refuses unknown tools and asks
// a human before deleting.
func ExampleLoadPolicy() {
	ctx := context.Background()
	p, err := toolgate.LoadPolicy("testdata/policy/example.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := p.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	clock := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	g, err := toolgate.New(ctx, trace.NewMemoryLog(), cfg, toolgate.WithClock(clock))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, tool := range []string{"read_text_file", "format_disk", "delete_file"} {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Arguments: []byte(`{"path":"notes.txt"}`), Caller: "alice"})
		if err != nil {
			fmt.Println(err)
			return
		}
		switch d.Verdict {
		case toolgate.Allow:
			fmt.Println(tool, "allowed")
			if _, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte("…")}); err != nil {
				fmt.Println(err)
			}
		case toolgate.Refuse:
			fmt.Println(tool, "refused")
		case toolgate.AskApproval:
			fmt.Println(tool, "waits for", d.Approval.Awaiting)
		}
	}
	m, _ := g.Meter("alice")
	fmt.Println("spent", m.Budget().Net(), "of", m.Budget().Limit())
	// Output:
	// read_text_file allowed
	// format_disk refused
	// delete_file waits for [human]
	// spent 0.01 of 25
}
