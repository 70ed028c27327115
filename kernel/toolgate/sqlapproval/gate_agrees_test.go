package sqlapproval_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/sqlapproval"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestStoreAgreesWithTheGate: the store takes exactly the answers the
// holding gate takes. A real gate asks about a call (DELETE or
// PRIVILEGE; one approver, two groups, or two of one group; with or
// without self_approval) and publishes the request; random answers —
// principals in and out of the groups, the call's own principal, an
// approver name — are given to the store and, when it takes them,
// applied to the gate, which must take them too; an answer the store
// refuses, the gate refuses too. Whether the call may run agrees at
// every step: the store's request is approved exactly when the gate
// grants it, and denied exactly when the gate's next decision refuses
// the call.
func TestStoreAgreesWithTheGate(t *testing.T) {
	be := sqltest.Backends[1] // SQLite: the property is the rules', the races are TestOneAnswerWinsTheRace's
	store := openStores(t, be, 1)[0]
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		tier := rapid.SampledFrom([]claims.RiskTier{claims.TierDelete, claims.TierPrivilege}).Draw(rt, "tier")
		approvers := rapid.SampledFrom([]string{`["human"]`, `["group:ops"]`, `{"group": "ops", "count": 2}`, `["group:ops", "group:security"]`}).Draw(rt, "approvers")
		self := tier == claims.TierPrivilege && rapid.Bool().Draw(rt, "self_approval")
		p, err := toolgate.ParsePolicy([]byte(fmt.Sprintf(`{"version": 2, "budget": "100", "min_cost": "0.01", "self_approval": %t,
		  "approvers": {%q: %s}, "tools": [{"match": "t", "cost": "1", "tier": %q}], "approval_ttl": "1h"}`, self, tier, approvers, tier)))
		require.NoError(rt, err)
		comp, err := p.Compile()
		require.NoError(rt, err)
		g, err := toolgate.New(context.Background(), trace.NewMemoryLog(), comp)
		require.NoError(rt, err)
		maker := toolgate.Principal{Issuer: "iss", Subject: "agent", Groups: []string{"ops", "security"}}
		c := toolgate.Call{Caller: maker.Key(), Principal: maker, Tool: "t", Arguments: []byte(`{}`)}
		d, err := g.Before(ctx, c)
		require.NoError(rt, err)
		require.Equal(rt, toolgate.AskApproval, d.Verdict)
		req := sqlapproval.FromGate(g.Pending()[0], "r1", p.Approvers[tier], p.SelfApproval)
		req.ID = fmt.Sprintf("g%d-%s", run, req.ID)
		gateID := d.Approval.ID
		_, err = store.Publish(ctx, req)
		require.NoError(rt, err)

		people := []sqlapproval.Answer{principal("alice", "ops"), principal("bob", "ops", "security"), principal("carol", "security"),
			principal("mallory"), {By: maker.Key(), Issuer: "iss", Subject: "agent", Groups: maker.Groups}, {By: "human"}}
		for i := range rapid.IntRange(1, 6).Draw(rt, "answers") {
			a := answer(rapid.SampledFrom(people).Draw(rt, fmt.Sprint("who", i)), req.ID, "r2", rapid.Bool().Draw(rt, fmt.Sprint("approve", i)))
			r, rec, serr := store.Give(ctx, a, t0)
			var granted bool
			var gerr error
			pr, authed := a.Principal()
			switch {
			case authed && a.Approve:
				granted, gerr = g.ApproveAs(ctx, gateID, pr, a.Reason)
			case authed:
				gerr = g.DenyAs(ctx, gateID, pr, a.Reason)
			case a.Approve:
				name := a.By
				if serr == nil {
					name = rec.Name
				}
				granted, gerr = g.Approve(ctx, gateID, name, a.Reason)
			default:
				gerr = g.Deny(ctx, gateID, a.By, a.Reason)
			}
			require.Equal(rt, serr == nil, gerr == nil, "the store (%v) and the gate (%v) agree on %+v", serr, gerr, a)
			if serr != nil {
				continue
			}
			require.Equal(rt, r.State == sqlapproval.Approved, granted, "approved in the store exactly when the gate grants")
			if r.State == sqlapproval.Denied {
				d, err := g.Before(ctx, c)
				require.NoError(rt, err)
				require.Equal(rt, toolgate.Refuse, d.Verdict, "denied in the store: the gate refuses the call")
			}
		}
	})
}
