package toolgate_test

import (
	"context"
	"fmt"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// A budget that renews each day in Paris: spent, the next call is
// refused with when it comes back; an approver adds to today's budget;
// the next day it is whole again. Budgets reads it all from the log.
func ExampleBudgetPeriod() {
	ctx := context.Background()
	now := time.Date(2026, 11, 30, 17, 0, 0, 0, time.UTC) // 18:00 in Paris
	clock := func() time.Time { return now }
	policy := toolgate.Policy{Budget: 2 * kernel.Unit, MinCost: kernel.Unit / 100,
		BudgetPeriod: &toolgate.BudgetPeriod{Calendar: "day", TimeZone: "Europe/Paris"},
		Approvers:    map[claims.RiskTier][]string{claims.TierDelete: {"ops-lead"}},
		Tools:        []toolgate.Rule{{Match: "search", Cost: kernel.Unit}}}
	comp, err := policy.Compile()
	if err != nil {
		panic(err)
	}
	log, _ := trace.NewLog(trace.NewMemory(), trace.WithClock(clock))
	gate, _ := toolgate.New(ctx, log, comp, toolgate.WithClock(clock))
	search := func() {
		d, _ := gate.Before(ctx, toolgate.Call{Caller: "alice", Tool: "search"})
		if d.Verdict == toolgate.Allow {
			_, _ = gate.After(ctx, d.Call, toolgate.Result{})
			fmt.Println("ran")
			return
		}
		fmt.Println("refused:", d.Explanation)
	}
	search()
	search()
	search()
	_ = gate.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", Approver: "ops-lead", Amount: kernel.Unit, Reason: "release night"})
	search()
	now = now.Add(7 * time.Hour) // 01:00 in Paris, the next day
	search()
	statuses, _ := toolgate.Budgets(ctx, log, comp, now)
	for _, s := range statuses {
		fmt.Printf("%s: %s, spent %s of %s, renews %s\n", s.Caller, s.Period, s.Spent, s.Limit, s.Renews.Format(time.RFC3339))
	}
	// Output:
	// ran
	// ran
	// refused: tool "search" (rule #0, budget): cost 1, remaining 0 of 2 this budget period; the budget renews at 2026-12-01T00:00:00+01:00
	// ran
	// ran
	// alice: day 2026-12-01 (Europe/Paris), spent 1 of 2, renews 2026-12-02T00:00:00+01:00
}
