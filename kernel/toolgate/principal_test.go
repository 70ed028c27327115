package toolgate_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
)

// TestPrincipalKeyIsInjective: two principals with a different issuer or
// subject never share a caller key, and only the anonymous principal has
// the empty key.
func TestPrincipalKeyIsInjective(t *testing.T) {
	part := rapid.SampledFrom([]string{"", "a", "|", "%", "a|b", "%7C", "\n", "https://idp.example", "a%7Cb", "é"})
	str := rapid.OneOf(part, rapid.String(), rapid.Custom(func(t *rapid.T) string {
		return part.Draw(t, "x") + part.Draw(t, "y")
	}))
	rapid.Check(t, func(t *rapid.T) {
		a := toolgate.Principal{Issuer: str.Draw(t, "iss1"), Subject: str.Draw(t, "sub1")}
		b := toolgate.Principal{Issuer: str.Draw(t, "iss2"), Subject: str.Draw(t, "sub2")}
		same := a.Issuer == b.Issuer && a.Subject == b.Subject
		if (a.Key() == b.Key()) != same {
			t.Fatalf("%q and %q: keys %q and %q", a, b, a.Key(), b.Key())
		}
		if (a.Key() == "") != (a.Issuer == "" && a.Subject == "") {
			t.Fatalf("%+v has key %q", a, a.Key())
		}
		if strings.Count(a.Key(), "|") > 1 {
			t.Fatalf("key %q has more than one separator", a.Key())
		}
	})
}

func TestPrincipalKeyForm(t *testing.T) {
	assert.Equal(t, "", toolgate.Principal{Groups: []string{"ops"}}.Key())
	assert.Equal(t, "https://idp.example|alice", toolgate.Principal{Issuer: "https://idp.example", Subject: "alice"}.Key())
	assert.Equal(t, "a%7Cb|100%25%0A", toolgate.Principal{Issuer: "a|b", Subject: "100%\n"}.Key())
}

// TestCallerDefaultsToThePrincipal: a call without a Caller is charged to
// its principal's key; two principals have two budgets.
func TestCallerDefaultsToThePrincipal(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	alice := toolgate.Principal{Issuer: "idp", Subject: "alice"}
	c := call("read_file", `{}`)
	c.Principal = alice
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	assert.Equal(t, "idp|alice", d.Call.Caller)
	m, ok := g.Meter("idp|alice")
	require.True(t, ok)
	assert.Equal(t, 1, int(m.Steps()))
	_, ok = g.Meter("")
	assert.False(t, ok, "the anonymous caller made no call")
	_, err = g.After(ctx, d.Call, toolgate.Result{})
	require.NoError(t, err)
}

// TestApproversByGroup: an approver named "group:<g>" is answered by any
// principal of that group, recorded under the group with who answered;
// someone outside it cannot answer.
func TestApproversByGroup(t *testing.T) {
	log := newLog(t)
	cfg := testConfig()
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"group:security"}}
	g := newGate(t, log, cfg)
	d, err := g.Before(ctx, call("delete_file", `{"path":"x"}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.Equal(t, []string{"group:security"}, d.Approval.Awaiting)

	mallory := toolgate.Principal{Issuer: "idp", Subject: "mallory", Groups: []string{"dev"}}
	_, err = g.ApproveAs(ctx, d.Approval.ID, mallory, "")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover)

	carol := toolgate.Principal{Issuer: "idp", Subject: "carol", Groups: []string{"dev", "security"}}
	ok, err := g.ApproveAs(ctx, d.Approval.ID, carol, "looks fine")
	require.NoError(t, err)
	require.True(t, ok)
	d, err = g.Before(ctx, call("delete_file", `{"path":"x"}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict)

	var found bool
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		if strings.Contains(string(e.Payload), `"by idp|carol: looks fine"`) && strings.Contains(string(e.Payload), `group:security`) {
			found = true
		}
	}
	assert.True(t, found, "the log names who answered for the group")
}

// TestOnePrincipalIsOneApprover: a request that waits for two approvers
// needs two principals — one who is in the group and named too answers
// once, not for both.
func TestOnePrincipalIsOneApprover(t *testing.T) {
	cfg := testConfig()
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"group:security", "idp|bob"}}
	g := newGate(t, newLog(t), cfg)
	d, err := g.Before(ctx, call("delete_file", `{"path":"x"}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)

	bob := toolgate.Principal{Issuer: "idp", Subject: "bob", Groups: []string{"security"}}
	ok, err := g.ApproveAs(ctx, d.Approval.ID, bob, "")
	require.NoError(t, err)
	require.False(t, ok)
	_, err = g.ApproveAs(ctx, d.Approval.ID, bob, "")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover, "bob answered already")
	d, err = g.Before(ctx, call("delete_file", `{"path":"x"}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)

	carol := toolgate.Principal{Issuer: "idp", Subject: "carol", Groups: []string{"security"}}
	_, err = g.ApproveAs(ctx, d.Approval.ID, carol, "")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover, "the group has answered; only bob is awaited")
}

// TestPendingWhileApproving: Pending and ApproveAs read a request while
// an approval changes what it waits for (run with -race).
func TestPendingWhileApproving(t *testing.T) {
	cfg := testConfig()
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"a", "b"}}
	g := newGate(t, newLog(t), cfg)
	d, err := g.Before(ctx, call("delete_file", `{"path":"x"}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			for _, p := range g.Pending() {
				_ = p.Awaiting
			}
			_, _ = g.ApproveAs(ctx, d.Approval.ID, toolgate.Principal{Issuer: "x", Subject: "y"}, "")
		}
	}()
	ok, err := g.Approve(ctx, d.Approval.ID, "a", "")
	require.NoError(t, err)
	require.False(t, ok)
	<-done
	assert.Equal(t, []string{"b"}, g.Pending()[0].Awaiting)
}
