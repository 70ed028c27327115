package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)} }

func compile(t *testing.T, cfg toolgate.Policy) *toolgate.Compiled {
	t.Helper()
	c, err := cfg.Compile()
	require.NoError(t, err)
	return c
}

// TestPathBypassCorpus: the path condition is not fooled by the usual ways
// of writing a path outside its directory as if it were inside.
func TestPathBypassCorpus(t *testing.T) {
	comp := compile(t, toolgate.Policy{Budget: units(10), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "read_file", Cost: 1, Name: "data", Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data"}}}},
		{Match: "read_file", Cost: 1, Name: "nocase", Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/Users/Shared"}, CaseInsensitive: true}}},
	}})
	inside, outside, unsafe := "inside", "outside", "unsafe"
	for _, c := range []struct{ path, want string }{
		{"/srv/data/report.csv", inside},
		{"/srv/data", inside},
		{"/srv/data/", inside},
		{"/srv/data//x", inside},
		{"/srv/data/./x", inside},
		{"//srv//data///x", inside},
		{"/srv/data/a/../b", inside},
		{"/srv/data/../../etc/passwd", outside},
		{"/srv/data/..", outside},
		{"/srv/database", outside},
		{"/srv/dat", outside},
		{"/../srv/data/x", inside}, // ".." never climbs above "/"
		{"/srv/data/%2e%2e/secret", unsafe},
		{"/srv/data/%252e%252e/x", unsafe},
		{"/srv/data/%2fx", inside}, // decodes to "/srv/data//x": still inside
		{"/srv/%64ata/x", unsafe},  // outside as sent, inside decoded
		{"/srv/data/%zz", unsafe},
		{"/srv/data/x\x00.txt", unsafe},
		{"/srv/data/x\n", unsafe},
		{"/srv/data\\..\\..\\etc", unsafe},
		{"./srv/data/x", unsafe},
		{"srv/data/x", unsafe},
		{"", unsafe},
		{"~/x", unsafe},
		{"/srv/data/\u2025/\u2025/etc", unsafe},        // two-dot leader
		{"/srv/data\uff0f..\uff0f..\uff0fetc", unsafe}, // fullwidth solidus
		{"/srv/data\u2215..\u2215etc", unsafe},         // division slash
		{"/srv/dat\u0430/x", outside},                  // Cyrillic a: another name
		{"/srv/data/cafe\u0301", unsafe},               // combining mark
		{"/srv/data/\u200bx", unsafe},                  // zero-width space
		{"/srv/data/\u202ex", unsafe},                  // right-to-left override
		{"/SRV/DATA/x", outside},                       // case-sensitive condition
		{"/users/shared/x", "nocase"},                  // case-insensitive condition
		{"/USERS/SHARED", "nocase"},
		{"/Users/Sharedx", outside},
	} {
		args, _ := json.Marshal(map[string]string{"path": c.path})
		ref, cond := comp.Match("read_file", toolgate.Principal{}, args)
		got := outside
		switch {
		case cond != "":
			got = unsafe
			assert.Equal(t, "paths/0", cond, "%q", c.path)
		case ref.Found && ref.Name == "data":
			got = inside
		case ref.Found:
			got = ref.Name
		}
		assert.Equal(t, c.want, got, "%q", c.path)
	}
}

// TestRuleConditionsDecide: principals, argument schemas and refusing
// rules make allow- and deny-lists, first match winning, and the decision
// names the rule and the condition.
func TestRuleConditionsDecide(t *testing.T) {
	comp := compile(t, toolgate.Policy{Budget: units(10), MinCost: 1,
		Approvers: map[claims.RiskTier][]string{claims.TierPrivilege: {"human"}},
		Tools: []toolgate.Rule{
			{Match: "sql", Name: "no-drop", Effect: toolgate.EffectRefuse, Reason: "no DROP",
				Arguments: json.RawMessage(`{"properties": {"q": {"pattern": "(?i)drop"}}, "required": ["q"]}`)},
			{Match: "sql", Cost: 2, Name: "admins", Principals: &toolgate.PrincipalCondition{Groups: []string{"admin"}}},
			{Match: "sql", Cost: 1, Name: "readers", Principals: &toolgate.PrincipalCondition{Scopes: []string{"db:read"}},
				Arguments: json.RawMessage(`{"type": "object", "properties": {"q": {"type": "string", "pattern": "^SELECT "}}, "required": ["q"]}`)},
		}})
	alice := toolgate.Principal{Issuer: "idp", Subject: "alice", Groups: []string{"admin"}}
	bob := toolgate.Principal{Issuer: "idp", Subject: "bob", Scopes: []string{"db:read"}}
	eve := toolgate.Principal{Issuer: "idp", Subject: "eve"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	decide := func(p toolgate.Principal, q string) toolgate.Ruling {
		args, _ := json.Marshal(map[string]string{"q": q})
		return comp.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: "sql", Principal: p, Arguments: args}, at)
	}
	r := decide(alice, "drop table x")
	assert.Equal(t, toolgate.Refuse, r.Verdict)
	assert.Equal(t, "no-drop", r.Rule.Name)
	assert.Equal(t, gatelog.ConditionEffect, r.Condition)
	assert.Equal(t, `tool "sql" (rule #0 "no-drop", effect): no DROP`, r.Explanation)

	r = decide(alice, "UPDATE t SET x=1")
	assert.Equal(t, toolgate.Allow, r.Verdict)
	assert.Equal(t, toolgate.RuleRef{Found: true, Index: 1, Name: "admins"}, r.Rule)
	assert.Equal(t, kernel.Cost(2), r.Cost)

	r = decide(bob, "SELECT 1")
	assert.Equal(t, toolgate.Allow, r.Verdict)
	assert.Equal(t, "readers", r.Rule.Name)
	assert.Equal(t, toolgate.Refuse, decide(bob, "UPDATE t SET x=1").Verdict, "bob may only read")
	r = decide(eve, "SELECT 1")
	assert.Equal(t, gatelog.ConditionNoRule, r.Condition, "no rule admits eve")
	assert.Equal(t, "no_rule", r.Reason)
	assert.False(t, r.Rule.Found)
	assert.Equal(t, `tool "sql": no rule admits the call: rule #1 "admins" (principals: the principal is not admitted); rule #2 "readers" (principals: the principal is not admitted)`, r.Explanation)
	r = decide(bob, "UPDATE t SET x=1")
	assert.Equal(t, `tool "sql": no rule admits the call: rule #1 "admins" (principals: the principal is not admitted); rule #2 "readers" (arguments: /q: does not match pattern '^SELECT ')`, r.Explanation,
		"a refusing rule that does not apply is not why")

	// Arguments read two ways never pass a deny-list.
	dup := comp.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: "sql", Principal: alice,
		Arguments: []byte(`{"q": "SELECT 1", "q": "DROP TABLE x"}`)}, at)
	assert.Equal(t, toolgate.Refuse, dup.Verdict)
	assert.Equal(t, gatelog.ConditionArguments, dup.Condition)
	assert.Equal(t, "no-drop", dup.Rule.Name)
}

// TestRateWindowAndFlow: a rate window refuses the call beyond its limit
// until the window slides; labels of calls that ran make a flow refuse or
// ask; and a gate restarted over the log decides the same.
func TestRateWindowAndFlow(t *testing.T) {
	clock := newFakeClock()
	cfg := toolgate.Policy{Budget: units(100), MinCost: 1,
		Approvers: map[claims.RiskTier][]string{claims.TierPrivilege: {"human"}},
		Tools: []toolgate.Rule{
			{Match: "read_issue", Cost: 1, Labels: []string{"untrusted_input"}},
			{Match: "read_private", Cost: 1, Labels: []string{"private_data"}, Rate: &toolgate.Rate{Calls: 2, Per: time.Minute}},
			{Match: "open_pr", Cost: 1, Name: "pr", Flow: []toolgate.FlowRule{
				{After: []string{"untrusted_input", "private_data"}, Reason: "private data after untrusted input"}}},
			{Match: "post", Cost: 1, Flow: []toolgate.FlowRule{{After: []string{"private_data"}, Ask: true}}},
		}}
	log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(clock.now))
	require.NoError(t, err)
	g := newGate(t, log, cfg, toolgate.WithClock(clock.now))
	run := func(g *toolgate.Gate, tool string) toolgate.Decision {
		t.Helper()
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Arguments: []byte(`{}`), Caller: "agent"})
		require.NoError(t, err)
		if d.Verdict == toolgate.Allow {
			_, err := g.After(ctx, d.Call, toolgate.Result{})
			require.NoError(t, err)
		}
		return d
	}
	assert.Equal(t, toolgate.Allow, run(g, "open_pr").Verdict)
	assert.Equal(t, toolgate.Allow, run(g, "read_private").Verdict)
	clock.advance(30 * time.Second)
	assert.Equal(t, toolgate.Allow, run(g, "read_private").Verdict)
	d := run(g, "read_private")
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, gatelog.ConditionRate, d.Condition)
	assert.Contains(t, d.Explanation, `(rule #1, rate): 2 calls in the last 1m0s, at most 2`)
	e, err := gatelog.Decode(entryAt(t, log, d.Seq))
	require.NoError(t, err)
	assert.Equal(t, "#1", e.(gatelog.Refuse).Rule)
	assert.Equal(t, "rate", e.(gatelog.Refuse).Condition)

	d = run(g, "post")
	assert.Equal(t, toolgate.AskApproval, d.Verdict, "private data seen: posting asks")
	assert.Equal(t, "flow/0", d.Condition)
	assert.Equal(t, claims.TierPrivilege, d.Approval.Tier)

	assert.Equal(t, toolgate.Allow, run(g, "open_pr").Verdict, "no untrusted input yet")
	assert.Equal(t, toolgate.Allow, run(g, "read_issue").Verdict)
	d = run(g, "open_pr")
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, `tool "open_pr" (rule #2 "pr", flow/0): private data after untrusted input`, d.Explanation)

	// A restarted gate knows the labels and the window from the log.
	clock.advance(20 * time.Second)
	g2 := newGate(t, log, cfg, toolgate.WithClock(clock.now))
	d = run(g2, "open_pr")
	assert.Equal(t, toolgate.Refuse, d.Verdict, "labels survive a restart")
	assert.Equal(t, "flow/0", d.Condition)
	assert.Equal(t, gatelog.ConditionRate, run(g2, "read_private").Condition, "the window survives a restart")
	clock.advance(10*time.Second + time.Millisecond)
	assert.Equal(t, toolgate.Allow, run(g2, "read_private").Verdict, "the first call left the window")
}

// windowsFake is a RateWindows in memory, as a database would hold it.
type windowsFake struct {
	calls map[string][]time.Time
	fail  error
}

func (w *windowsFake) Admit(_ context.Context, key string, at time.Time, per time.Duration, limit int) (bool, int, error) {
	if w.fail != nil {
		return false, 0, w.fail
	}
	seen := 0
	for _, t := range w.calls[key] {
		if t.After(at.Add(-per)) && !t.After(at) {
			seen++
		}
	}
	if seen >= limit {
		return false, seen, nil
	}
	w.calls[key] = append(w.calls[key], at)
	return true, seen, nil
}

// TestSharedWindowsBoundAllGates: two gates sharing windows allow the
// limit between them, under the documented key.
func TestSharedWindowsBoundAllGates(t *testing.T) {
	clock := newFakeClock()
	w := &windowsFake{calls: map[string][]time.Time{}}
	cfg := toolgate.Policy{Budget: units(100), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "send", Cost: 1, Name: "send", Rate: &toolgate.Rate{Calls: 3, Per: time.Hour, Scope: toolgate.RateScopeRule}}}}
	a := newGate(t, newLog(t), cfg, toolgate.WithClock(clock.now), toolgate.WithSharedWindows(w))
	b := newGate(t, newLog(t), cfg, toolgate.WithClock(clock.now), toolgate.WithSharedWindows(w))
	allowed := 0
	for i := range 6 {
		g := []*toolgate.Gate{a, b}[i%2]
		d, err := g.Before(ctx, toolgate.Call{Tool: "send", Caller: "tenant"})
		require.NoError(t, err)
		if d.Verdict == toolgate.Allow {
			allowed++
		} else {
			assert.Equal(t, gatelog.ConditionRate, d.Condition)
		}
		clock.advance(time.Second)
	}
	assert.Equal(t, 3, allowed)
	assert.Len(t, w.calls["toolgate|tenant|rule:send"], 3)
	w.fail = errors.New("database down")
	_, err := a.Before(ctx, toolgate.Call{Tool: "send", Caller: "other"})
	assert.ErrorContains(t, err, "database down", "no window, no decision: fail closed")
}

// TestInvalidRuleConditionsRefused: a Policy built in Go whose conditions
// cannot work is refused by Compile with every problem named, as the
// same policy in a file is.
func TestInvalidRuleConditionsRefused(t *testing.T) {
	_, err := toolgate.Policy{Budget: units(1), MinCost: 1, Approvers: map[claims.RiskTier][]string{claims.TierDelete: {"human"}}, Tools: []toolgate.Rule{
		{Match: "a", Cost: 1, Name: "x y", Arguments: json.RawMessage(`{"type": 5}`)},
		{Match: "b", Cost: 1, Paths: []toolgate.PathCondition{{Argument: "path", Under: []string{"rel"}}}},
		{Match: "c", Cost: 1, Rate: &toolgate.Rate{Calls: 0, Per: 0}, Labels: []string{"bad label"},
			Flow: []toolgate.FlowRule{{After: nil, Ask: true}}},
	}}.Compile()
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)
	assert.ElementsMatch(t, []pathRule{
		{"/tools/0/arguments", "argument_schema"},
		{"/tools/0/name", "rule_name"},
		{"/tools/1/paths/0/argument", "pointer"},
		{"/tools/1/paths/0/under/0", "path"},
		{"/tools/2/flow/0/after", "required"},
		{"/tools/2/flow/0/tier", "approvers"},
		{"/tools/2/labels/0", "label"},
		{"/tools/2/rate/calls", "range"},
		{"/tools/2/rate/per", "duration"},
	}, violationsOf(t, err), "%v", err)
}

// TestCoverageFindsUnusedAndShadowedRules: against a server's tool list,
// a rule that matches no tool and one that an unconditional earlier rule
// always decides for are told apart from the rules that decide.
func TestCoverageFindsUnusedAndShadowedRules(t *testing.T) {
	p, err := toolgate.ParsePolicy([]byte(`{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [
		{"match": "read_*", "cost": "0.01", "name": "reads"},
		{"match": "read_f*", "cost": "0.01", "name": "shadowed"},
		{"match": "write_file", "cost": "0.1", "principals": {"groups": ["ops"]}},
		{"match": "write_*", "cost": "0.1"},
		{"match": "delete_*", "cost": "1", "tier": "DELETE"}]}`))
	require.NoError(t, err)
	comp, err := p.Compile()
	require.NoError(t, err)
	cov := comp.Coverage([]string{"read_file", "read_text_file", "write_file", "list_directory"})
	require.Len(t, cov, 5)
	assert.Equal(t, []string{"read_file", "read_text_file"}, cov[0].Tools)
	assert.Empty(t, cov[1].Tools)
	assert.Equal(t, map[string]toolgate.RuleRef{"read_file": {Found: true, Index: 0, Name: "reads"}}, cov[1].Shadowed)
	assert.Equal(t, []string{"write_file"}, cov[2].Tools)
	assert.Equal(t, []string{"write_file"}, cov[3].Tools, "a conditional rule shadows nothing")
	assert.Empty(t, cov[4].Tools, "no delete tool: the approval can never be seen")
	assert.Empty(t, cov[4].Shadowed)

	ref, cond := comp.Match("write_file", toolgate.Principal{Groups: []string{"ops"}}, nil)
	assert.Equal(t, 2, ref.Index)
	assert.Empty(t, cond)
	ref, _ = comp.Match("write_file", toolgate.Principal{}, nil)
	assert.Equal(t, 3, ref.Index)
	ref, _ = comp.Match("list_directory", toolgate.Principal{}, nil)
	assert.False(t, ref.Found)
}

// TestRateWindowWhenTheClockStepsBack: a clock that steps back (a wall
// clock corrected) neither lets a window overflow nor loses its calls.
func TestRateWindowWhenTheClockStepsBack(t *testing.T) {
	clock := newFakeClock()
	start := clock.t
	g := newGate(t, newLog(t), toolgate.Policy{Budget: units(100), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "send", Cost: 1, Rate: &toolgate.Rate{Calls: 3, Per: time.Minute}}}}, toolgate.WithClock(clock.now))
	send := func(at time.Duration) toolgate.Verdict {
		clock.t = start.Add(at)
		d, err := g.Before(ctx, toolgate.Call{Tool: "send", Caller: "a"})
		require.NoError(t, err)
		return d.Verdict
	}
	assert.Equal(t, toolgate.Allow, send(0))
	assert.Equal(t, toolgate.Allow, send(50*time.Second))
	// Decided at 10s, recorded at 50s: a log's times never go back
	// (trace.Log), and a call counts at its recorded time.
	assert.Equal(t, toolgate.Allow, send(10*time.Second), "stepped back: two calls in (-50s, 10s] and after")
	assert.Equal(t, toolgate.Refuse, send(55*time.Second), "three calls in (-5s, 55s]")
	assert.Equal(t, toolgate.Allow, send(65*time.Second), "two calls in (5s, 65s], at 50s")
	assert.Equal(t, toolgate.Refuse, send(70*time.Second), "three calls in (10s, 70s]: two at 50s, one at 65s")
	assert.Equal(t, toolgate.Allow, send(111*time.Second), "one call in (51s, 111s]")
}

// TestRateWindowCountsCallsAfterAClockStepBack: calls recorded later than
// a stepped-back clock still count, so a window never holds more than
// its limit, whichever way the clock moved (as a shared window counts).
func TestRateWindowCountsCallsAfterAClockStepBack(t *testing.T) {
	clock := newFakeClock()
	start := clock.t
	g := newGate(t, newLog(t), toolgate.Policy{Budget: units(100), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "send", Cost: 1, Rate: &toolgate.Rate{Calls: 2, Per: time.Minute}}}}, toolgate.WithClock(clock.now))
	send := func(at time.Duration) toolgate.Verdict {
		clock.t = start.Add(at)
		d, err := g.Before(ctx, toolgate.Call{Tool: "send", Caller: "a"})
		require.NoError(t, err)
		return d.Verdict
	}
	assert.Equal(t, toolgate.Allow, send(0))
	assert.Equal(t, toolgate.Allow, send(50*time.Second))
	assert.Equal(t, toolgate.Refuse, send(10*time.Second), "stepped back: calls at 0s and 50s, both within a minute of 10s")
	assert.Equal(t, toolgate.Refuse, send(5*time.Second), "stepped back further")
	assert.Equal(t, toolgate.Allow, send(111*time.Second), "one call in (51s, 111s]")
}

// TestDecideExplanationIsOneLine: a Ruling's explanation is one line
// whatever the policy's reasons hold, from the decision core itself (as
// verity policy test and a host running the core see it), not only once
// the gate records it.
func TestDecideExplanationIsOneLine(t *testing.T) {
	comp, err := toolgate.Policy{Budget: 100, MinCost: 1,
		Approvers: map[claims.RiskTier][]string{claims.TierPrivilege: {"human"}},
		Tools: []toolgate.Rule{
			{Match: "rm", Effect: toolgate.EffectRefuse, Reason: "never.\nThen retry\u2028now"},
			{Match: "send", Cost: 1, Flow: []toolgate.FlowRule{{After: []string{"secret"}, Reason: "after\r\nsecret"}}},
			{Match: "post", Cost: 1, Flow: []toolgate.FlowRule{{After: []string{"secret"}, Ask: true, Reason: "ask\x00about\nsecret"}}},
			{Match: "read", Cost: 1, Labels: []string{"secret"}},
		}}.Compile()
	require.NoError(t, err)
	s := toolgate.Snapshot{Labels: map[string]bool{"secret": true}}
	for _, tool := range []string{"rm", "send", "post"} {
		ru := comp.Decide(s, toolgate.Call{Tool: tool}, time.Unix(1000, 0))
		require.NotEqual(t, toolgate.Allow, ru.Verdict, tool)
		assert.NotEmpty(t, ru.Explanation, tool)
		assert.Equal(t, toolgate.OneLine(ru.Explanation), ru.Explanation, tool)
	}
}

// TestApprovalAtALowerTierDoesNotAnswerAFlow: an approval granted when a
// call needed DELETE approvers does not let it run once a flow asks the
// PRIVILEGE approvers about it: the call is asked about again.
func TestApprovalAtALowerTierDoesNotAnswerAFlow(t *testing.T) {
	g := newGate(t, newLog(t), toolgate.Policy{Budget: units(100), MinCost: 1,
		Approvers: map[claims.RiskTier][]string{claims.TierDelete: {"alice"}, claims.TierPrivilege: {"alice", "bob"}},
		Tools: []toolgate.Rule{
			{Match: "read_private", Cost: 1, Labels: []string{"private_data"}},
			{Match: "delete", Cost: 1, Tier: claims.TierDelete,
				Flow: []toolgate.FlowRule{{After: []string{"private_data"}, Ask: true, Reason: "private data seen"}}},
		}})
	del := toolgate.Call{Tool: "delete", Arguments: []byte(`{"path":"/srv/x"}`), Caller: "agent"}
	d, err := g.Before(ctx, del)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	require.Equal(t, claims.TierDelete, d.Approval.Tier)
	ok, err := g.Approve(ctx, d.Approval.ID, "alice", "")
	require.NoError(t, err)
	require.True(t, ok)

	d, err = g.Before(ctx, toolgate.Call{Tool: "read_private", Caller: "agent"})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)

	d, err = g.Before(ctx, del)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict, "the flow asks the PRIVILEGE approvers: %s", d.Explanation)
	assert.Equal(t, claims.TierPrivilege, d.Approval.Tier)
	assert.Equal(t, "flow/0", d.Condition)
}

// TestRestartDecidesAsBeforeAfterAClockStepBack: a gate restarted over
// the log decides a call as the gate before it would have, even once the
// clock jumped forward and back.
func TestRestartDecidesAsBeforeAfterAClockStepBack(t *testing.T) {
	cfg := toolgate.Policy{Budget: units(100), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "send", Cost: 1, Rate: &toolgate.Rate{Calls: 2, Per: time.Minute}}}}
	// The same calls, the last one made by the gate that made the others
	// or by one restarted over their log.
	run := func(restart bool) toolgate.Verdict {
		clock := newFakeClock()
		start := clock.t
		log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(clock.now))
		require.NoError(t, err)
		g := newGate(t, log, cfg, toolgate.WithClock(clock.now))
		send := func(at time.Duration) toolgate.Verdict {
			clock.t = start.Add(at)
			d, err := g.Before(ctx, toolgate.Call{Tool: "send", Caller: "a"})
			require.NoError(t, err)
			return d.Verdict
		}
		require.Equal(t, toolgate.Allow, send(0))
		require.Equal(t, toolgate.Allow, send(100*time.Second), "the clock jumped forward")
		if restart {
			g = newGate(t, log, cfg, toolgate.WithClock(clock.now))
		}
		return send(30 * time.Second) // and back
	}
	assert.Equal(t, run(false), run(true), "the restarted gate decides as the live one")
}

// TestNoRuleTakesTheDefaultRulesName: "default" is the default rule's id
// in window keys, tags and log entries, so a rule of that name would share
// the default rule's window and be told apart from it on the log by
// nothing. A Policy built in Go and a policy file naming a rule so are
// both refused.
func TestNoRuleTakesTheDefaultRulesName(t *testing.T) {
	cfg := toolgate.Policy{Budget: units(100), MinCost: 1, AllowUnknown: true,
		DefaultRule: &toolgate.Rule{Cost: 1},
		Tools:       []toolgate.Rule{{Name: "default", Match: "x", Cost: 1, Rate: &toolgate.Rate{Calls: 2, Per: time.Hour}}}}
	_, err := cfg.Compile()
	require.ErrorContains(t, err, `/tools/0/name: rule_name: "default" is the default rule's name`)

	_, err = toolgate.ParsePolicy([]byte(`{"version": 2, "budget": "10", "min_cost": "1", "tools": [{"name": "default", "match": "x", "cost": "1"}]}`))
	var ve *toolgate.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Violations, 1, "%v", err)
	assert.Equal(t, "/tools/0/name", ve.Violations[0].Path)
	assert.Equal(t, "rule_name", ve.Violations[0].Rule)
}

// TestNoRuleAdmitsNamesTheRules: a call of a tool some rules match, none
// of which admits it, is not refused as a tool unknown to the gate (the
// model was just shown it in tools/list): the refusal, its condition
// no_rule and its log entry name each rule that matched the tool and the
// condition that failed for it. A tool no rule matches is still "not in
// the gate's catalogue".
func TestNoRuleAdmitsNamesTheRules(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, toolgate.Policy{Budget: units(10), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "read_file", Cost: 1, Name: "reads", Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data"}}}},
		{Match: "read_*", Cost: 1, Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/tmp", "/var/tmp"}}}},
		{Match: "write_file", Cost: 1, Arguments: json.RawMessage(`{"properties": {"mode": {"enum": ["append"]}}}`)},
	}})
	for _, tc := range []struct{ tool, args, want string }{
		{"read_file", `{"path": "/etc/passwd"}`,
			`tool "read_file": no rule admits the call: rule #0 "reads" (paths/0: "/etc/passwd" is not under /srv/data); rule #1 (paths/0: "/etc/passwd" is not under /tmp or /var/tmp)`},
		{"read_file", `{"file": "/srv/data/a"}`,
			`tool "read_file": no rule admits the call: rule #0 "reads" (paths/0: argument /path is absent); rule #1 (paths/0: argument /path is absent)`},
		{"read_dir", `{"path": 7}`, `tool "read_dir": no rule admits the call: rule #1 (paths/0: argument /path is not a string or an array of strings)`},
		{"write_file", `{"mode": "truncate"}`, `tool "write_file": no rule admits the call: rule #2 (arguments: /mode: value must be "append")`},
		{"format_disk", `{}`, `tool "format_disk" is not in the gate's catalogue`},
	} {
		d, err := g.Before(ctx, toolgate.Call{Tool: tc.tool, Arguments: []byte(tc.args), Caller: "agent"})
		require.NoError(t, err)
		assert.Equal(t, toolgate.Refuse, d.Verdict, tc.args)
		assert.Equal(t, tc.want, d.Explanation)
		e, err := gatelog.Decode(entryAt(t, log, d.Seq))
		require.NoError(t, err)
		want := gatelog.ConditionNoRule
		if tc.tool == "format_disk" {
			want = gatelog.ConditionUnknownTool
		}
		assert.Equal(t, want, d.Condition, tc.tool)
		assert.Equal(t, want, e.(gatelog.Refuse).Reason, tc.tool)
		assert.Equal(t, want, e.(gatelog.Refuse).Condition, tc.tool)
		assert.Equal(t, tc.want, e.(gatelog.Refuse).Explanation)
	}

	// At most four rules are named.
	var rules []toolgate.Rule
	for i := range 6 {
		rules = append(rules, toolgate.Rule{Match: "read_file", Cost: 1, Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/d" + strconv.Itoa(i)}}}})
	}
	ru := compile(t, toolgate.Policy{Budget: units(10), MinCost: 1, Tools: rules}).Decide(toolgate.Snapshot{},
		toolgate.Call{Tool: "read_file", Arguments: []byte(`{"path": "/x"}`)}, time.Time{})
	assert.Equal(t, `tool "read_file": no rule admits the call: rule #0 (paths/0: "/x" is not under /d0); rule #1 (paths/0: "/x" is not under /d1); `+
		`rule #2 (paths/0: "/x" is not under /d2); rule #3 (paths/0: "/x" is not under /d3); and 2 more`, ru.Explanation)
}
