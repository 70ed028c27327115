package toolgate_test

// An Observer is told of every decision and every outcome, with the
// caller's budget after it: TestObserverToldOfEveryDecisionAndOutcome,
// TestEveryDecisionAndOutcomeObservedOnce (rapid);
// LogObserver writes one line each with the documented fields:
// TestLogObserverLines, ExampleLogObserver.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// recorder keeps what it is told.
type recorder struct {
	mu        sync.Mutex
	decisions []toolgate.DecisionEvent
	outcomes  []toolgate.OutcomeEvent
}

func (r *recorder) ObserveDecision(_ context.Context, e toolgate.DecisionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, e)
}

func (r *recorder) ObserveOutcome(_ context.Context, e toolgate.OutcomeEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.outcomes = append(r.outcomes, e)
}

func observedConfig() toolgate.Policy {
	return toolgate.Policy{Budget: units(3), MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "read_*", Cost: kernel.Unit / 10, Name: "reads"},
		{Match: "search", Cost: units(1), Reserve: true},
		{Match: "delete_*", Cost: units(1), Tier: claims.TierDelete},
	}}
}

func TestObserverToldOfEveryDecisionAndOutcome(t *testing.T) {
	r, r2 := &recorder{}, &recorder{}
	g, err := toolgate.New(ctx, newLog(t), mustCompile(observedConfig()), toolgate.WithObserver(r), toolgate.WithObserver(nil), toolgate.WithObserver(r2))
	require.NoError(t, err)
	alice := toolgate.Principal{Issuer: "https://idp", Subject: "alice"}

	// A refusal before the caller has a session: no budget to tell.
	d, err := g.Before(ctx, toolgate.Call{Tool: "format_disk", Caller: "a"})
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, d.Verdict)
	// An allowed fixed-cost call and its outcome.
	d, err = g.Before(ctx, toolgate.Call{Tool: "read_file", ID: "c1", Principal: alice, Arguments: []byte(`{}`)})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	assert.Equal(t, kernel.Unit/10, d.Cost, "Decision.Cost is what Before charged")
	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)})
	require.NoError(t, err)
	// A reserved call settled below its reservation, failed.
	d, err = g.Before(ctx, toolgate.Call{Tool: "search", ID: "c2", Principal: alice})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	assert.Equal(t, units(1), d.Cost)
	_, err = g.After(ctx, toolgate.Call{Caller: alice.Key(), ID: "c2"}, toolgate.Result{Err: errors.New("boom"), Actual: kernel.Unit / 2, Measured: true})
	require.NoError(t, err)
	// A call that asks a human.
	d, err = g.Before(ctx, toolgate.Call{Tool: "delete_file", ID: "c3", Principal: alice, Arguments: []byte(`{"path":"x"}`)})
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.Equal(t, 1, g.Waiting())
	// An After of a call that is not open.
	_, err = g.After(ctx, toolgate.Call{Caller: alice.Key(), ID: "nope"}, toolgate.Result{})
	require.ErrorIs(t, err, toolgate.ErrUnknownCall)
	// A Before that cannot decide: the context is done before the
	// caller's session starts.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = g.Before(cctx, toolgate.Call{Tool: "read_file", ID: "c4", Caller: "b"})
	require.Error(t, err)

	require.Len(t, r.decisions, 5)
	require.Len(t, r.outcomes, 3)
	assert.Equal(t, r.decisions, r2.decisions, "every observer is told")
	assert.Equal(t, r.outcomes, r2.outcomes)

	refused := r.decisions[0]
	assert.Equal(t, toolgate.Refuse, refused.Decision.Verdict)
	assert.Equal(t, "format_disk", refused.Call.Tool)
	assert.NotEmpty(t, refused.Call.ID, "the id Before assigned")
	assert.False(t, refused.Metered, "no session, no budget")
	assert.False(t, refused.Start.IsZero())

	read := r.decisions[1]
	assert.Equal(t, toolgate.Allow, read.Decision.Verdict)
	assert.Equal(t, alice.Key(), read.Call.Caller, "the caller Before charged")
	assert.Equal(t, "reads", read.Decision.Rule.Name)
	require.True(t, read.Metered)
	assert.Equal(t, units(3)-kernel.Unit/10, read.Budget.Remaining(), "the budget after the decision")
	assert.Positive(t, read.Duration)

	out := r.outcomes[0]
	assert.Equal(t, "read_file", out.Call.Tool, "the tool, from the open call")
	assert.Equal(t, alice, out.Call.Principal, "the principal, from the decision")
	assert.Equal(t, read.Decision, out.Decision, "the allow that opened the call")
	assert.Equal(t, kernel.Unit/10, out.Outcome.Charged)
	assert.False(t, out.Failed)
	assert.Equal(t, read.Start, out.Decided)
	assert.False(t, out.Allowed.Before(out.Decided))
	assert.False(t, out.Reported.Before(out.Allowed))
	assert.True(t, out.Metered)
	assert.Equal(t, units(3)-kernel.Unit/10, out.Budget.Remaining())

	settled := r.outcomes[1]
	assert.Equal(t, "search", settled.Call.Tool)
	assert.True(t, settled.Failed)
	assert.Equal(t, kernel.Unit/2, settled.Outcome.Charged)
	assert.Equal(t, units(3)-kernel.Unit/10-kernel.Unit/2, settled.Budget.Remaining(), "settled: the rest of the reservation is back")
	assert.Equal(t, units(3)-kernel.Unit/10-units(1), r.decisions[2].Budget.Remaining(), "reserved: the whole bound was held")

	ask := r.decisions[3]
	assert.Equal(t, toolgate.AskApproval, ask.Decision.Verdict)
	require.NotNil(t, ask.Decision.Approval)
	assert.Zero(t, ask.Decision.Cost, "nothing charged")

	unknown := r.outcomes[2]
	require.ErrorIs(t, unknown.Err, toolgate.ErrUnknownCall)
	assert.Equal(t, toolgate.Decision{}, unknown.Decision)
	assert.Empty(t, unknown.Call.Tool)

	failed := r.decisions[4]
	require.ErrorIs(t, failed.Err, context.Canceled)
	assert.Equal(t, "b", failed.Call.Caller)
	assert.Equal(t, "c4", failed.Call.ID)
	assert.Zero(t, failed.Decision.Verdict)

	// A call held for its human and not answered is a refusal observed
	// like Before's.
	u, err := g.Unanswered(ctx, ask.Decision, time.Second)
	require.NoError(t, err)
	require.Len(t, r.decisions, 6)
	unanswered := r.decisions[5]
	assert.Equal(t, u, unanswered.Decision)
	assert.Equal(t, toolgate.Refuse, unanswered.Decision.Verdict)
	assert.Equal(t, "approval", unanswered.Decision.Condition)
	assert.Equal(t, "c3", unanswered.Call.ID)
	assert.True(t, unanswered.Metered)
}

// jsonLines decodes the JSON log lines in b.
func jsonLines(t *testing.T, b []byte) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		out = append(out, m)
	}
	return out
}

func TestLogObserverLines(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n := 0
	ids := func() string { n++; return "id-" + string(rune('a'+n-1)) }
	g, err := toolgate.New(ctx, newLog(t), mustCompile(observedConfig()), toolgate.WithObserver(toolgate.LogObserver(logger)), toolgate.WithIDs(ids))
	require.NoError(t, err)
	alice := toolgate.Principal{Issuer: "https://idp", Subject: "alice"}

	d, err := g.Before(ctx, toolgate.Call{Tool: "read_file", ID: "c1", Principal: alice})
	require.NoError(t, err)
	_, err = g.After(ctx, d.Call, toolgate.Result{Err: errors.New("no such file")})
	require.NoError(t, err)
	_, err = g.Before(ctx, toolgate.Call{Tool: "format_disk", ID: "c2", Principal: alice})
	require.NoError(t, err)
	for range 3 {
		d, err = g.Before(ctx, toolgate.Call{Tool: "search", Principal: alice})
		require.NoError(t, err)
	}
	require.Equal(t, toolgate.Refuse, d.Verdict, "the budget ran out")
	_, err = g.Before(ctx, toolgate.Call{Tool: "delete_file", ID: "c3", Principal: alice, Arguments: []byte(`{}`)})
	require.NoError(t, err)

	lines := jsonLines(t, buf.Bytes())
	require.Len(t, lines, 7)
	for _, l := range lines {
		assert.Contains(t, l, "duration")
		delete(l, "duration")
		delete(l, "time")
		delete(l, "tool_duration")
		delete(l, "exec_id")
		delete(l, "approval")
	}
	key := alice.Key()
	assert.Equal(t, map[string]any{"level": "INFO", "msg": "toolgate decision", "tool": "read_file", "call_id": "c1", "caller": key, "principal": key,
		"verdict": "allow", "rule": "rule #0 \"reads\"", "condition": "match", "seq": 1.0, "cost": "0.1", "remaining": "2.9"}, lines[0])
	assert.Equal(t, map[string]any{"level": "INFO", "msg": "toolgate result", "tool": "read_file", "call_id": "c1", "caller": key, "principal": key,
		"ok": false, "charged": "0.1", "remaining": "2.9", "seq": 2.0}, lines[1])
	assert.Equal(t, map[string]any{"level": "INFO", "msg": "toolgate decision", "tool": "format_disk", "call_id": "c2", "caller": key, "principal": key,
		"verdict": "refuse", "condition": "unknown_tool", "seq": 3.0, "remaining": "2.9",
		"explanation": `tool "format_disk" is not in the gate's catalogue`}, lines[2])
	assert.Equal(t, "allow", lines[3]["verdict"])
	assert.Equal(t, "0.9", lines[4]["remaining"])
	assert.Equal(t, map[string]any{"level": "WARN", "msg": "toolgate decision", "tool": "search", "call_id": lines[5]["call_id"], "caller": key, "principal": key,
		"verdict": "refuse", "rule": "rule #1", "condition": "kernel", "seq": 6.0, "remaining": "0.9",
		"explanation": `tool "search" (rule #1, kernel): action "search" rejected: budget: cost 1, remaining 0.9`}, lines[5])
	assert.Equal(t, "refuse", lines[6]["verdict"], "too little budget is left: nobody is asked")
	assert.Equal(t, "kernel", lines[6]["condition"])
	assert.Contains(t, lines[6]["explanation"], "nobody was asked to approve it")
}

// A gate that writes a line for every decision and result: the proxy's
// log, or a service's.
func ExampleLogObserver() {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		switch a.Key {
		case slog.TimeKey, "duration", "tool_duration", "exec_id":
			return slog.Attr{} // vary from run to run
		}
		return a
	}}))
	log, _ := trace.NewLog(trace.NewMemory())
	g, _ := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: 3 * kernel.Unit, MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{{Match: "read_*", Cost: kernel.Unit / 10}}}),
		toolgate.WithObserver(toolgate.LogObserver(logger)))
	d, _ := g.Before(ctx, toolgate.Call{Tool: "read_file", ID: "call-1", Caller: "agent-1", Arguments: []byte(`{"path":"notes.txt"}`)})
	_, _ = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"buy milk"`)})
	_, _ = g.Before(ctx, toolgate.Call{Tool: "rm", ID: "call-2", Caller: "agent-1"})
	// Output:
	// level=INFO msg="toolgate decision" tool=read_file call_id=call-1 caller=agent-1 verdict=allow rule="rule #0" condition=match seq=1 cost=0.1 remaining=2.9
	// level=INFO msg="toolgate result" tool=read_file call_id=call-1 caller=agent-1 ok=true charged=0.1 remaining=2.9 seq=2
	// level=INFO msg="toolgate decision" tool=rm call_id=call-2 caller=agent-1 verdict=refuse condition=unknown_tool seq=3 remaining=2.9 explanation="tool \"rm\" is not in the gate's catalogue"
}
