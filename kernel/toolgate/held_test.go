package toolgate_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// heldClock is a gate clock the test moves.
type heldClock struct {
	mu  sync.Mutex
	now time.Time
}

func newHeldClock() *heldClock {
	return &heldClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *heldClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *heldClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// heldConfig has a DELETE rule (one approver, a group) and a PRIVILEGE
// rule (two), a timeout and a ttl.
func heldConfig() toolgate.Policy {
	cfg := testConfig()
	cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "grant_admin", Cost: units(1), Tier: claims.TierPrivilege})
	cfg.Approvers = map[claims.RiskTier][]string{
		claims.TierDelete:    {"group:ops"},
		claims.TierPrivilege: {"group:ops", "group:security"},
	}
	cfg.ApprovalTimeout = time.Minute
	cfg.ApprovalTTL = time.Hour
	return cfg
}

var (
	olga  = toolgate.Principal{Issuer: "idp", Subject: "olga", Groups: []string{"ops"}}
	sam   = toolgate.Principal{Issuer: "idp", Subject: "sam", Groups: []string{"security"}}
	agent = toolgate.Call{Tool: "delete_file", Arguments: []byte(`{"path":"/tmp/x"}`), Caller: "agent"}
)

// entriesOf returns the payloads of the log's entries of kind.
func entriesOf(t *testing.T, log *trace.Log, kind string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind == kind {
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			out = append(out, m)
		}
	}
	return out
}

// TestUnansweredCallRefusedOnTheLog: a call held for its human and not
// answered is refused with a KindRefuse entry naming the request, which
// stays waiting; an approval given later is used by the same call again.
func TestUnansweredCallRefusedOnTheLog(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, heldConfig())
	assert.Equal(t, time.Minute, g.Compiled().Policy().ApprovalTimeout)
	d, err := g.Before(ctx, agent)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.Equal(t, `{"path":"/tmp/x"}`, d.Approval.Arguments)
	assert.Equal(t, d.Approval.Asked.Add(time.Hour), d.Approval.Expires)

	wctx, cancel := context.WithCancel(ctx)
	cancel()
	require.False(t, g.Await(wctx, d.Approval.ID), "nobody answered")
	r, err := g.Unanswered(ctx, d, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, r.Verdict)
	assert.Contains(t, r.Explanation, "no answer within 1m0s")
	refusals := entriesOf(t, log, gatelog.KindRefuse)
	require.Len(t, refusals, 1)
	assert.Equal(t, "approval_timeout", refusals[0]["reason"])
	assert.Equal(t, d.Approval.ID, refusals[0]["approval"])
	require.Len(t, g.Pending(), 1, "the request still waits")

	_, err = g.Unanswered(ctx, r, time.Minute)
	require.Error(t, err, "only an AskApproval is unanswered")

	ok, err := g.ApproveAs(ctx, d.Approval.ID, olga, "fine")
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, g.Await(ctx, d.Approval.ID), "decided: Await returns at once")
	again, err := g.Before(ctx, agent)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, again.Verdict)
	assert.Equal(t, d.Approval.ID, again.ApprovalID)
}

// TestAwaitReturnsOnceEveryApproverAnswered: a PRIVILEGE call's waiter
// wakes when the second approver answers, not the first.
func TestAwaitReturnsOnceEveryApproverAnswered(t *testing.T) {
	g := newGate(t, newLog(t), heldConfig())
	c := toolgate.Call{Tool: "grant_admin", Arguments: []byte(`{"user":"eve"}`), Caller: "agent"}
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	woke := make(chan bool, 1)
	go func() { woke <- g.Await(ctx, d.Approval.ID) }()

	ok, err := g.ApproveAs(ctx, d.Approval.ID, olga, "")
	require.NoError(t, err)
	require.False(t, ok)
	// Still waiting: a waiter bounded by a context that has ended says so.
	short, cancel := context.WithCancel(ctx)
	cancel()
	assert.False(t, g.Await(short, d.Approval.ID))
	_, err = g.ApproveAs(ctx, d.Approval.ID, olga, "")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover, "one principal, one approver")

	ok, err = g.ApproveAs(ctx, d.Approval.ID, sam, "")
	require.NoError(t, err)
	require.True(t, ok)
	select {
	case w := <-woke:
		assert.True(t, w)
	case <-time.After(time.Minute):
		t.Fatal("the waiter was not woken")
	}
	again, err := g.Before(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, again.Verdict)
}

// TestApprovalTTLExpires: a request nobody answered, an approval nobody
// used and a denial nobody met expire after the ttl, each recorded; the
// call is then asked about again.
func TestApprovalTTLExpires(t *testing.T) {
	log := newLog(t)
	clock := newHeldClock()
	g := newGate(t, log, heldConfig(), toolgate.WithClock(clock.Now))

	// A waiting request, expired by a sweep.
	d, err := g.Before(ctx, agent)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	clock.Advance(59 * time.Minute)
	n, err := g.ExpireApprovals(ctx)
	require.NoError(t, err)
	assert.Zero(t, n, "not yet")
	woke := make(chan bool, 1)
	go func() { woke <- g.Await(ctx, d.Approval.ID) }()
	clock.Advance(time.Minute)
	n, err = g.ExpireApprovals(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Empty(t, g.Pending())
	assert.True(t, <-woke, "an expired request wakes its waiter")
	_, err = g.ApproveAs(ctx, d.Approval.ID, olga, "")
	require.ErrorIs(t, err, toolgate.ErrUnknownApproval, "an expired request takes no answer")

	// An approval not used within the ttl, expired by Before.
	d, err = g.Before(ctx, agent)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	ok, err := g.ApproveAs(ctx, d.Approval.ID, olga, "")
	require.NoError(t, err)
	require.True(t, ok)
	clock.Advance(time.Hour)
	again, err := g.Before(ctx, agent)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, again.Verdict, "the approval expired: asked again")
	assert.NotEqual(t, d.Approval.ID, again.Approval.ID)

	// A denial not met within the ttl.
	require.NoError(t, g.DenyAs(ctx, again.Approval.ID, olga, "no"))
	clock.Advance(2 * time.Hour)
	n, err = g.ExpireApprovals(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	expired := entriesOf(t, log, gatelog.KindExpire)
	require.Len(t, expired, 3)
	var states []string
	for _, e := range expired {
		states = append(states, e["state"].(string))
		assert.Equal(t, "agent", e["caller"])
	}
	assert.Equal(t, []string{"waiting", "approved", "denied"}, states)
	assert.Empty(t, entriesOf(t, log, gatelog.KindResult))
	live, _ := g.LiveCallers()
	assert.Equal(t, 1, live)
}

// TestDurableApprovalsSurviveRestart: with WithDurableApprovals a gate
// restarted over the log lists a waiting request as it was asked, takes
// its answers (a PRIVILEGE request half approved keeps who approved),
// and runs the call again on an approval given before or after the
// restart; what was used or expired is not brought back.
func TestDurableApprovalsSurviveRestart(t *testing.T) {
	log := newLog(t)
	clock := newHeldClock()
	cfg := heldConfig()
	opts := []toolgate.Option{toolgate.WithClock(clock.Now), toolgate.WithDurableApprovals()}
	g := newGate(t, log, cfg, opts...)

	waiting, err := g.Before(ctx, agent)
	require.NoError(t, err)
	priv := toolgate.Call{Tool: "grant_admin", Arguments: []byte(`{"user":"<b>eve</b>"}`), Caller: "agent"}
	half, err := g.Before(ctx, priv)
	require.NoError(t, err)
	// In both groups, she answers for one of them, once.
	both := toolgate.Principal{Issuer: "idp", Subject: "olga", Groups: []string{"ops", "security"}}
	ok, err := g.ApproveAs(ctx, half.Approval.ID, both, "")
	require.NoError(t, err)
	require.False(t, ok)
	approvedCall := toolgate.Call{Tool: "delete_file", Arguments: []byte(`{"path":"/tmp/approved"}`), Caller: "bob"}
	approved, err := g.Before(ctx, approvedCall)
	require.NoError(t, err)
	_, err = g.ApproveAs(ctx, approved.Approval.ID, olga, "")
	require.NoError(t, err)
	usedCall := toolgate.Call{Tool: "delete_file", Arguments: []byte(`{"path":"/tmp/used"}`), Caller: "bob"}
	used, err := g.Before(ctx, usedCall)
	require.NoError(t, err)
	_, err = g.ApproveAs(ctx, used.Approval.ID, olga, "")
	require.NoError(t, err)
	ran, err := g.Before(ctx, usedCall)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, ran.Verdict)
	before := g.Pending()
	require.Len(t, before, 2)

	// Restarted.
	g2 := newGate(t, log, cfg, opts...)
	assert.Equal(t, before, g2.Pending(), "the waiting requests, as they were asked")

	_, err = g2.ApproveAs(ctx, half.Approval.ID, both, "")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover, "olga approved before the restart")
	ok, err = g2.ApproveAs(ctx, half.Approval.ID, sam, "")
	require.NoError(t, err)
	require.True(t, ok)
	d, err := g2.Before(ctx, priv)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict)
	assert.Equal(t, half.Approval.ID, d.ApprovalID)

	d, err = g2.Before(ctx, approvedCall)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict, "approved before the restart, used after it")
	assert.Equal(t, approved.Approval.ID, d.ApprovalID)
	d, err = g2.Before(ctx, usedCall)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict, "an approval used before the restart is not used again")

	ok, err = g2.ApproveAs(ctx, waiting.Approval.ID, olga, "after the restart")
	require.NoError(t, err)
	require.True(t, ok)

	// Restarted again once the ttl passed: what was left expires.
	clock.Advance(2 * time.Hour)
	g3 := newGate(t, log, cfg, opts...)
	require.Len(t, g3.Pending(), 1, "the request asked after the first restart")
	n, err := g3.ExpireApprovals(ctx)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "that request and the unused approval")
	g4 := newGate(t, log, cfg, opts...)
	assert.Empty(t, g4.Pending())
	d, err = g4.Before(ctx, agent)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict, "the approval expired with the ttl")

	// Without the option a restarted gate asks again.
	g5 := newGate(t, log, cfg, toolgate.WithClock(clock.Now))
	assert.Empty(t, g5.Pending())
}

func TestApprovalTimesValidated(t *testing.T) {
	for _, c := range []struct {
		timeout, ttl time.Duration
		ok           bool
	}{
		{0, 0, true}, {time.Minute, 0, true}, {time.Minute, time.Hour, true}, {time.Hour, time.Hour, true},
		{-time.Second, 0, false}, {25 * time.Hour, 0, false}, {0, -time.Second, false}, {2 * time.Hour, time.Hour, false},
	} {
		cfg := testConfig()
		cfg.ApprovalTimeout, cfg.ApprovalTTL = c.timeout, c.ttl
		_, err := cfg.Compile()
		if c.ok {
			assert.NoError(t, err, "%v %v", c.timeout, c.ttl)
		} else {
			assert.ErrorIs(t, err, toolgate.ErrInvalidPolicy, "%v %v", c.timeout, c.ttl)
		}
	}
}

func TestPolicyApprovalTimes(t *testing.T) {
	p, err := toolgate.LoadPolicy("testdata/policy/valid/approval_inbox.json")
	require.NoError(t, err)
	cfg, err := p.Compile()
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, cfg.Policy().ApprovalTimeout)
	assert.Equal(t, 24*time.Hour, cfg.Policy().ApprovalTTL)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"approval_timeout":"5m0s","approval_ttl":"24h0m0s"`)
	back, err := toolgate.ParsePolicy(b)
	require.NoError(t, err)
	assert.Equal(t, p.ApprovalTimeout, back.ApprovalTimeout)
	assert.Equal(t, p.ApprovalTTL, back.ApprovalTTL)
}
