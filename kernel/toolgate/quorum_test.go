package toolgate_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
)

// quorumPolicy asks at tier for delete_file, k distinct members of ops.
func quorumPolicy(tier claims.RiskTier, k int, self bool) toolgate.Policy {
	cfg := testConfig()
	cfg.Budget = units(1000)
	cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "grant_admin", Cost: units(1), Tier: claims.TierPrivilege})
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"alice"}, claims.TierPrivilege: {"alice"}}
	cfg.Approvers[tier] = slices.Repeat([]string{"group:ops"}, k)
	cfg.SelfApproval = self
	return cfg
}

// TestKOfNApproval: two of ops; the same member twice counts once, the
// inbox's count is in Awaiting, and the second approval runs the call.
func TestKOfNApproval(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, quorumPolicy(claims.TierDelete, 2, false), toolgate.WithDurableApprovals())
	d, err := g.Before(ctx, agent)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.Equal(t, []string{"group:ops", "group:ops"}, d.Approval.Awaiting)
	ok, err := g.ApproveAs(ctx, d.Approval.ID, olga, "looks fine")
	require.NoError(t, err)
	require.False(t, ok)
	_, err = g.ApproveAs(ctx, d.Approval.ID, olga, "again")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover, "one member counts once")
	_, err = g.ApproveAs(ctx, d.Approval.ID, sam, "")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover, "not in ops")
	assert.Equal(t, []string{"group:ops"}, g.Pending()[0].Awaiting)
	d2, err := g.Before(ctx, agent)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d2.Verdict, "one approval of two does not run it")

	// Restarted, the first approval still counts.
	g = newGate(t, log, quorumPolicy(claims.TierDelete, 2, false), toolgate.WithDurableApprovals())
	_, err = g.ApproveAs(ctx, d.Approval.ID, olga, "again")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover, "one member counts once, after a restart too")
	oleg := toolgate.Principal{Issuer: "idp", Subject: "oleg", Groups: []string{"ops"}}
	ok, err = g.ApproveAs(ctx, d.Approval.ID, oleg, "")
	require.NoError(t, err)
	require.True(t, ok)
	d3, err := g.Before(ctx, agent)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d3.Verdict)

	// The log names both, each under a slot of the group.
	var approvers []string
	for _, e := range entriesOf(t, log, claims.KindApprove) {
		a := e["approval"].(map[string]any)
		approvers = append(approvers, fmt.Sprint(a["approver"], " ", a["reason"]))
	}
	assert.Equal(t, []string{"group:ops#1 by idp|olga: looks fine", "group:ops#2 by idp|oleg"}, approvers)
}

// TestKOfNPolicyForms: the file's object form reads as the group named
// count times and is written back as it was; a group named twice beside
// another name, or a list that reads as slots, is refused.
func TestKOfNPolicyForms(t *testing.T) {
	file := `{"version": 2, "budget": "10", "min_cost": "0.01", "approvers": {"DELETE": {"group": "ops", "count": 3}},
	  "tools": [{"match": "delete_file", "cost": "1", "tier": "DELETE"}]}`
	p, err := toolgate.ParsePolicy([]byte(file))
	require.NoError(t, err)
	assert.Equal(t, []string{"group:ops", "group:ops", "group:ops"}, p.Approvers[claims.TierDelete])
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"DELETE":{"group":"ops","count":3}`)
	valid, run := schemaVerdict(t, b)
	require.True(t, run)
	assert.True(t, valid, "%s", b)
	back, err := toolgate.ParsePolicy(b)
	require.NoError(t, err)
	assert.Equal(t, p.Approvers, back.Approvers)

	for name, approvers := range map[string][]string{
		"duplicate": {"group:ops", "group:ops", "alice"},
		"approvers": {"group:ops#1", "group:ops#2"},
		"range":     slices.Repeat([]string{"group:ops"}, 17),
	} {
		cfg := quorumPolicy(claims.TierDelete, 1, false)
		cfg.Approvers[claims.TierDelete] = approvers
		_, err := cfg.Compile()
		require.Error(t, err, name)
		var ve *toolgate.ValidationError
		require.ErrorAs(t, err, &ve)
		assert.True(t, slices.ContainsFunc(ve.Violations, func(v toolgate.Violation) bool { return v.Rule == name }), "%s: %v", name, err)
	}
	for _, bad := range []string{`{"group": "", "count": 2}`, `{"group": "ops", "count": 0}`, `{"group": "ops"}`,
		`{"group": "ops", "count": 2, "x": 1}`, `{"group": "ops", "count": 17}`} {
		f := `{"version": 2, "budget": "10", "min_cost": "0.01", "approvers": {"DELETE": ` + bad + `},
		  "tools": [{"match": "delete_file", "cost": "1", "tier": "DELETE"}]}`
		_, err := toolgate.ParsePolicy([]byte(f))
		require.Error(t, err, bad)
		valid, _ := schemaVerdict(t, []byte(f))
		assert.False(t, valid, bad)
	}
}

// kOfNModel is the naive model of one call's request: who approved it
// (principal keys, or an approver name), whether it was denied, granted.
type kOfNModel struct {
	asked, granted, denied bool
	approved               map[string]bool
}

// TestKOfNNeverRunsWithFewerThanKDistinctNonSelfApprovers: a call whose
// tier needs k members of ops runs only once k distinct eligible members
// (not the call's own principal at PRIVILEGE without self_approval)
// approved, each counted once; a denial by any member refuses it; and a
// gate restarted over the log holds the same requests with the same
// approvers awaited.
func TestKOfNNeverRunsWithFewerThanKDistinctNonSelfApprovers(t *testing.T) {
	checks := 0
	defer func() { t.Logf("%d checks", checks) }()
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 4).Draw(t, "k")
		tier := rapid.SampledFrom([]claims.RiskTier{claims.TierDelete, claims.TierPrivilege}).Draw(t, "tier")
		self := tier == claims.TierPrivilege && rapid.Bool().Draw(t, "self")
		cfg := quorumPolicy(tier, k, self)
		var people []toolgate.Principal
		for i := range 6 {
			p := toolgate.Principal{Issuer: "idp", Subject: fmt.Sprintf("p%d", i)}
			if rapid.Bool().Draw(t, fmt.Sprintf("ops%d", i)) {
				p.Groups = []string{"ops"}
			}
			people = append(people, p)
		}
		tool := "delete_file"
		if tier == claims.TierPrivilege {
			tool = "grant_admin"
		}
		c := toolgate.Call{Tool: tool, Arguments: []byte(`{"path":"/x"}`), Caller: "agent", Principal: people[0]}
		log := newLog(t)
		opts := []toolgate.Option{toolgate.WithDurableApprovals()}
		g, err := toolgate.New(ctx, log, mustCompile(cfg), opts...)
		require.NoError(t, err)
		m := kOfNModel{approved: map[string]bool{}}
		var id string
		eligible := func(key string, member, approve bool) bool {
			if !m.asked || !member || m.approved[key] {
				return false
			}
			return !approve || self || tier != claims.TierPrivilege || key != people[0].Key()
		}
		answer := func(key string, member, approve bool, do func() (bool, error)) {
			ok, err := do()
			if !eligible(key, member, approve) {
				require.Error(t, err, "%s answered", key)
				require.False(t, ok)
				return
			}
			require.NoError(t, err)
			if !approve {
				m.asked, m.denied, m.approved = false, true, map[string]bool{}
				return
			}
			m.approved[key] = true
			require.Equal(t, len(m.approved) >= k, ok, "granted after %d of %d", len(m.approved), k)
			if ok {
				m.asked, m.granted, m.approved = false, true, map[string]bool{}
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"call": func(t *rapid.T) {
				d, err := g.Before(ctx, c)
				require.NoError(t, err)
				switch {
				case m.granted:
					require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
					m.granted = false
				case m.denied:
					require.Equal(t, toolgate.Refuse, d.Verdict, d.Explanation)
					m.denied = false
				default:
					require.Equal(t, toolgate.AskApproval, d.Verdict, d.Explanation)
					if !m.asked {
						m.asked, id = true, d.Approval.ID
					}
					require.Equal(t, id, d.Approval.ID)
				}
			},
			"approve": func(t *rapid.T) {
				p := rapid.SampledFrom(people).Draw(t, "who")
				answer(p.Key(), len(p.Groups) > 0, true, func() (bool, error) { return g.ApproveAs(ctx, id, p, "") })
			},
			"deny": func(t *rapid.T) {
				p := rapid.SampledFrom(people).Draw(t, "who")
				answer(p.Key(), len(p.Groups) > 0, false, func() (bool, error) { return false, g.DenyAs(ctx, id, p, "no") })
			},
			"approve by name": func(t *rapid.T) {
				answer("group:ops", true, true, func() (bool, error) { return g.Approve(ctx, id, "group:ops", "") })
			},
			"restart": func(t *rapid.T) {
				before := g.Pending()
				g, err = toolgate.New(ctx, log, mustCompile(cfg), opts...)
				require.NoError(t, err)
				require.Equal(t, before, g.Pending(), "replay gives the same requests")
			},
			"": func(t *rapid.T) {
				checks++
				pending := g.Pending()
				if !m.asked {
					require.Empty(t, pending)
					return
				}
				require.Len(t, pending, 1)
				require.Equal(t, slices.Repeat([]string{"group:ops"}, k-len(m.approved)), pending[0].Awaiting)
			},
		})
		_, err = log.Verify(ctx)
		require.NoError(t, err)
	})
}
