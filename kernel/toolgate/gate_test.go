package toolgate_test

// The gate's guarantees and the tests that check them:
//
//   - Every call is decided on the log before the caller hears of it:
//     TestEveryDecisionIsOnTheLog (each Decision.Seq names an entry of the
//     right kind), TestLogVerifiesAndReplays.
//   - Unknown tools are refused unless allowed: TestUnknownToolRefused,
//     TestAllowUnknownUsesTheDefaultRule.
//   - The budget is never overspent (T1), also by parallel calls and across
//     callers under a shared budget: TestBudgetRunsOutWithAnExplanation,
//     TestParallelCallsNeverOverspend (rapid), TestSharedBudgetBoundsAllCallers.
//   - Counters and invariants per tool: TestInvariantOverToolCounter.
//   - DELETE and PRIVILEGE calls need a human; an approval is bound to the
//     caller, tool and arguments and used once; a denial refuses:
//     TestApprovalBoundToTheCallAndUsedOnce, TestDenialRefusesOnce,
//     TestApprovalNeedsEveryApprover, TestGateMatchesModel (rapid state
//     machine against a naive model).
//   - Reserve and settle, refunds, overruns: TestReservedCallSettled,
//     TestRefundOnError, TestMeasuredBelowFixedCostRefunded.
//   - Results are recorded bounded, and checked for speculative markers
//     when asked: TestResultRecordedBounded, TestSpeculativeResultFlagged.
//   - A restarted gate resumes every caller's spend: TestRestartResumesSpend.
//   - Idle callers are let go and resumed from the log with their spend,
//     never losing an open call or an approval: TestEvictedCallerKeepsItsBudget,
//     TestIdleCallerLetGo, TestEvictionMatchesModel (rapid state machine).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

var ctx = context.Background()

func units(n int64) kernel.Cost { return kernel.Cost(n) * kernel.Unit }

func newLog(t require.TestingT) *trace.Log {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}))
	require.NoError(t, err)
	return log
}

func testConfig() toolgate.Policy {
	return toolgate.Policy{
		Budget:  units(10),
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_*", Cost: kernel.Unit / 10, Description: "reads a file"},
			{Match: "search", Cost: units(3), Reserve: true, RefundOnError: true},
			{Match: "delete_file", Cost: units(1), Tier: claims.TierDelete, Description: "deletes a file"},
			{Match: "send", Cost: units(2), RefundOnError: true},
		},
	}
}

func newGate(t testing.TB, log *trace.Log, cfg toolgate.Policy, opts ...toolgate.Option) *toolgate.Gate {
	t.Helper()
	g, err := toolgate.New(ctx, log, mustCompile(cfg), opts...)
	require.NoError(t, err)
	return g
}

func call(tool, args string) toolgate.Call {
	return toolgate.Call{Tool: tool, Arguments: []byte(args)}
}

// entryAt returns the log entry with sequence number seq.
func entryAt(t testing.TB, log *trace.Log, seq uint64) trace.Entry {
	t.Helper()
	for e, err := range log.Entries(ctx, seq) {
		require.NoError(t, err)
		return e
	}
	t.Fatalf("no entry %d", seq)
	return trace.Entry{}
}

func TestUnknownToolRefused(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	d, err := g.Before(ctx, call("format_disk", `{}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, `tool "format_disk" is not in the gate's catalogue`, d.Explanation)
	assert.NotEmpty(t, d.Call.ID, "a call id is assigned")
	e := entryAt(t, log, d.Seq)
	assert.Equal(t, gatelog.KindRefuse, e.Kind)
	got, err := gatelog.Decode(e)
	require.NoError(t, err)
	assert.Equal(t, gatelog.Refuse{Session: "toolgate:", CallID: d.Call.ID, Tool: "format_disk", Reason: "unknown_tool", Condition: "unknown_tool",
		Explanation: d.Explanation, ArgumentsSHA256: call("", `{}`).ArgumentsDigest(), ArgumentsSize: 2}, got)
	_, err = g.After(ctx, d.Call, toolgate.Result{})
	assert.ErrorIs(t, err, toolgate.ErrUnknownCall, "a refused call cannot be finished")
}

func TestAllowUnknownUsesTheDefaultRule(t *testing.T) {
	cfg := testConfig()
	cfg.AllowUnknown = true
	cfg.DefaultRule = &toolgate.Rule{Cost: units(4)}
	g := newGate(t, newLog(t), cfg)
	d, err := g.Before(ctx, call("format_disk", `{}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	m, ok := g.Meter("")
	require.True(t, ok)
	assert.Equal(t, units(4), m.Budget().Net())
}

func TestBudgetRunsOutWithAnExplanation(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	for i := range 5 {
		d, err := g.Before(ctx, call("send", fmt.Sprintf(`{"n":%d}`, i)))
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict, "call %d", i)
		_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"sent"`)})
		require.NoError(t, err)
	}
	d, err := g.Before(ctx, call("send", `{"n":5}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, `tool "send" (rule #3, kernel): action "send" rejected: budget: cost 2, remaining 0`, d.Explanation)
	assert.Equal(t, kernel.KindReject, entryAt(t, log, d.Seq).Kind, "the rejection's own entry")
}

func TestInvariantOverToolCounter(t *testing.T) {
	cfg := testConfig()
	cfg.GoInvariants = []kernel.Invariant{kernel.AtMost("at-most-2-reads", "calls/read_file", 2)}
	g := newGate(t, newLog(t), cfg)
	for range 2 {
		d, err := g.Before(ctx, call("read_file", `{}`))
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict)
	}
	d, err := g.Before(ctx, call("read_file", `{}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Contains(t, d.Explanation, "invariant at-most-2-reads: calls/read_file would be 3, at most 2")
	d, err = g.Before(ctx, call("read_dir", `{}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict, "another tool has its own counter")
	d, err = g.Before(ctx, toolgate.Call{Tool: "read_file", Caller: "bob"})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict, "another caller has its own counters")
}

func TestApprovalBoundToTheCallAndUsedOnce(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	c := toolgate.Call{Tool: "delete_file", Arguments: []byte(`{"path":"/tmp/a"}`), Caller: "alice", ID: "c1"}

	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	req := d.Approval
	require.NotNil(t, req)
	assert.Equal(t, `Allow the DELETE tool call "delete_file" with arguments {"path":"/tmp/a"}?`, req.Question)
	assert.Equal(t, []string{toolgate.DefaultApprover}, req.Awaiting)
	assert.Equal(t, c.ArgumentsDigest(), req.ArgumentsDigest)
	assert.Equal(t, []toolgate.ApprovalRequest{*req}, g.Pending())

	again, err := g.Before(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, req.ID, again.Approval.ID, "the same call waits on the same request")

	granted, err := g.Approve(ctx, req.ID, toolgate.DefaultApprover, "looks right")
	require.NoError(t, err)
	assert.True(t, granted)
	assert.Empty(t, g.Pending())
	_, err = g.Approve(ctx, req.ID, toolgate.DefaultApprover, "twice")
	assert.ErrorIs(t, err, toolgate.ErrUnknownApproval)

	// Other arguments, another tool, another caller: not approved.
	other := c
	other.Arguments = []byte(`{"path":"/etc"}`)
	d, err = g.Before(ctx, other)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict, "the approval is bound to the arguments")
	bob := c
	bob.Caller = "bob"
	d, err = g.Before(ctx, bob)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict, "the approval is bound to the caller")

	d, err = g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	assert.Equal(t, req.ID, d.ApprovalID)
	ex, err := kernel.DecodeEntry(entryAt(t, log, d.Seq))
	require.NoError(t, err)
	assert.Contains(t, ex.(kernel.ExecuteEntry).Action.Tags, "approval:"+req.ID, "the execute entry names the approval")
	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte("deleted")})
	require.NoError(t, err)

	c.ID = "c2"
	d, err = g.Before(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict, "an approval is used once")
	assert.NotEqual(t, req.ID, d.Approval.ID)
}

func TestDenialRefusesOnce(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	c := call("delete_file", `{"path":"/"}`)
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	require.NoError(t, g.Deny(ctx, d.Approval.ID, toolgate.DefaultApprover, "never the root"))
	r, err := g.Before(ctx, d.Call)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, r.Verdict)
	assert.Equal(t, `tool "delete_file" (rule #2, approval): DELETE denied by human: never the root`, r.Explanation)
	d, err = g.Before(ctx, d.Call)
	require.NoError(t, err)
	require.NoError(t, g.Deny(ctx, d.Approval.ID, toolgate.DefaultApprover, "no:\nnot\ttoday"))
	r, err = g.Before(ctx, d.Call)
	require.NoError(t, err)
	assert.Equal(t, `tool "delete_file" (rule #2, approval): DELETE denied by human: no: not today`, r.Explanation, "an explanation is one line whatever the reason")
	e, err := gatelog.Decode(entryAt(t, log, r.Seq))
	require.NoError(t, err)
	assert.Equal(t, d.Approval.ID, e.(gatelog.Refuse).Approval)
	r, err = g.Before(ctx, d.Call)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, r.Verdict, "the next attempt asks again")
	assert.NotEqual(t, d.Approval.ID, r.Approval.ID)
	m, _ := g.Meter("")
	assert.Zero(t, m.Steps(), "a denied call never ran")
}

func TestApprovalNeedsEveryApprover(t *testing.T) {
	cfg := testConfig()
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"dba", "owner"}}
	g := newGate(t, newLog(t), cfg)
	d, err := g.Before(ctx, call("delete_file", `{}`))
	require.NoError(t, err)
	require.Equal(t, []string{"dba", "owner"}, d.Approval.Awaiting)
	_, err = g.Approve(ctx, d.Approval.ID, "intruder", "")
	assert.ErrorIs(t, err, claims.ErrNotRequired)
	granted, err := g.Approve(ctx, d.Approval.ID, "dba", "")
	require.NoError(t, err)
	assert.False(t, granted)
	assert.Equal(t, []string{"owner"}, g.Pending()[0].Awaiting)
	d2, err := g.Before(ctx, d.Call)
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d2.Verdict, "still waiting for the owner")
	granted, err = g.Approve(ctx, d.Approval.ID, "owner", "")
	require.NoError(t, err)
	assert.True(t, granted)
	d3, err := g.Before(ctx, d.Call)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d3.Verdict)
}

func TestReservedCallSettled(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	d, err := g.Before(ctx, call("search", `{"q":"x"}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	assert.True(t, d.Reserved)
	m, _ := g.Meter("")
	assert.Equal(t, units(3), m.Budget().Net(), "the upper bound is charged")
	out, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`{"hits":1}`), Actual: kernel.Unit / 2, Measured: true})
	require.NoError(t, err)
	assert.Equal(t, kernel.Unit/2, out.Charged)
	m, _ = g.Meter("")
	assert.Equal(t, kernel.Unit/2, m.Budget().Net())
	_, err = g.After(ctx, d.Call, toolgate.Result{})
	assert.ErrorIs(t, err, toolgate.ErrUnknownCall, "a call is finished once")

	// Measured above the reservation, beyond what remains: the rest is
	// unpaid, recorded, and net spend stays within the budget.
	d, err = g.Before(ctx, call("search", `{"q":"y"}`))
	require.NoError(t, err)
	out, err = g.After(ctx, d.Call, toolgate.Result{Actual: units(20), Measured: true})
	require.ErrorIs(t, err, kernel.ErrOverrun)
	assert.Equal(t, units(10)-kernel.Unit/2, out.Charged)
	assert.Equal(t, units(10)+kernel.Unit/2, out.Unpaid)
	m, _ = g.Meter("")
	assert.Equal(t, units(10), m.Budget().Net())
	res, err := gatelog.Decode(entryAt(t, log, out.Seq))
	require.NoError(t, err)
	assert.Equal(t, out.Unpaid, res.(gatelog.Result).Unpaid)
}

func TestRefundOnError(t *testing.T) {
	g := newGate(t, newLog(t), testConfig())
	d, err := g.Before(ctx, call("send", `{}`))
	require.NoError(t, err)
	out, err := g.After(ctx, d.Call, toolgate.Result{Err: errors.New("smtp down")})
	require.NoError(t, err)
	assert.Zero(t, out.Charged)
	m, _ := g.Meter("")
	assert.Zero(t, m.Budget().Net())
	assert.Equal(t, uint64(1), m.Steps(), "a failed call still counts")
	// Without RefundOnError a failure is paid for.
	d, err = g.Before(ctx, call("read_file", `{}`))
	require.NoError(t, err)
	out, err = g.After(ctx, d.Call, toolgate.Result{Err: errors.New("no such file")})
	require.NoError(t, err)
	assert.Equal(t, kernel.Unit/10, out.Charged)
}

func TestMeasuredBelowFixedCostRefunded(t *testing.T) {
	g := newGate(t, newLog(t), testConfig())
	d, err := g.Before(ctx, call("send", `{}`))
	require.NoError(t, err)
	out, err := g.After(ctx, d.Call, toolgate.Result{Actual: kernel.Unit / 2, Measured: true})
	require.NoError(t, err)
	assert.Equal(t, kernel.Unit/2, out.Charged)
	d, err = g.Before(ctx, call("send", `{}`))
	require.NoError(t, err)
	out, err = g.After(ctx, d.Call, toolgate.Result{Actual: units(9), Measured: true})
	require.NoError(t, err)
	assert.Equal(t, units(2), out.Charged, "a fixed cost is never raised afterwards")
}

func TestResultRecordedBounded(t *testing.T) {
	log := newLog(t)
	cfg := testConfig()
	cfg.ResultTextLimit = 5
	g := newGate(t, log, cfg)
	d, err := g.Before(ctx, call("read_file", `{}`))
	require.NoError(t, err)
	out, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte("héllo world"), Err: errors.New("partial read of the file")})
	require.NoError(t, err)
	e, err := gatelog.Decode(entryAt(t, log, out.Seq))
	require.NoError(t, err)
	r := e.(gatelog.Result)
	assert.Equal(t, "héll", r.OutputText, "cut at a character boundary")
	assert.True(t, r.Truncated)
	assert.Equal(t, 12, r.OutputSize)
	assert.Equal(t, "parti", r.Error)
	assert.False(t, r.OK)

	d, err = g.Before(ctx, call("read_file", `{}`))
	require.NoError(t, err)
	out, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte{0xff, 0xfe, 'a'}})
	require.NoError(t, err)
	e, err = gatelog.Decode(entryAt(t, log, out.Seq))
	require.NoError(t, err)
	assert.Equal(t, "//5h", e.(gatelog.Result).OutputBase64, "bytes that are not UTF-8 are kept as base64")
}

func TestSpeculativeResultFlagged(t *testing.T) {
	cfg := testConfig()
	cfg.CheckResults = true
	g := newGate(t, newLog(t), cfg)
	d, err := g.Before(ctx, call("read_file", `{}`))
	require.NoError(t, err)
	out, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`{"answer":42,"epistemic_status":"speculative"}`)})
	require.NoError(t, err)
	assert.True(t, out.Speculative)
	assert.Contains(t, out.Finding, "epistemic_status")
	d, err = g.Before(ctx, call("read_file", `{}`))
	require.NoError(t, err)
	out, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`plain grounded text`)})
	require.NoError(t, err)
	assert.False(t, out.Speculative)
}

func TestEveryDecisionIsOnTheLog(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	kinds := map[toolgate.Verdict][]string{
		toolgate.Allow:       {kernel.KindExecute, kernel.KindReserve},
		toolgate.Refuse:      {kernel.KindReject, gatelog.KindRefuse},
		toolgate.AskApproval: {claims.KindEvaluate},
	}
	for i, c := range []toolgate.Call{call("read_file", `{}`), call("nope", ``), call("delete_file", `{}`), call("search", `{}`),
		call("send", `{}`), call("delete_file", `{}`), call("send", `{}`), call("send", `{}`), call("send", `{}`)} {
		d, err := g.Before(ctx, c)
		require.NoError(t, err)
		assert.Contains(t, kinds[d.Verdict], entryAt(t, log, d.Seq).Kind, "call %d (%s)", i, d.Verdict)
	}
}

func TestDuplicateCallIDRefused(t *testing.T) {
	g := newGate(t, newLog(t), testConfig())
	c := toolgate.Call{Tool: "read_file", ID: "same"}
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	d2, err := g.Before(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d2.Verdict)
	assert.Equal(t, `call id "same" is already running`, d2.Explanation)
	_, err = g.After(ctx, c, toolgate.Result{})
	require.NoError(t, err)
	d3, err := g.Before(ctx, c)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d3.Verdict, "a finished id may be used again")
}

func TestLogVerifiesAndReplays(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	for _, caller := range []string{"alice", "bob"} {
		for _, tool := range []string{"read_file", "search", "send", "delete_file"} {
			d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: caller, Arguments: []byte(`{}`)})
			require.NoError(t, err)
			if d.Verdict == toolgate.AskApproval {
				_, err := g.Approve(ctx, d.Approval.ID, toolgate.DefaultApprover, "")
				require.NoError(t, err)
				d, err = g.Before(ctx, d.Call)
				require.NoError(t, err)
			}
			require.Equal(t, toolgate.Allow, d.Verdict)
			_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte("ok"), Actual: kernel.Unit, Measured: true})
			require.NoError(t, err)
		}
	}
	var entries []trace.Entry
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		entries = append(entries, e)
	}
	_, err := trace.Verify(entries)
	require.NoError(t, err)
	for _, caller := range []string{"alice", "bob"} {
		s, err := kernel.Replay(ctx, log, g.Kernel(), g.SessionID(caller))
		require.NoError(t, err)
		m, _ := g.Meter(caller)
		assert.Equal(t, totals(m.Budget()), totals(s.Meter().Budget()), caller)
		n, _ := s.State().Int("calls")
		assert.Equal(t, int64(4), n)
	}
}

func TestRestartResumesSpend(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	for range 4 {
		d, err := g.Before(ctx, toolgate.Call{Tool: "send", Caller: "alice"})
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict)
	}
	g2 := newGate(t, log, testConfig())
	d, err := g2.Before(ctx, toolgate.Call{Tool: "send", Caller: "alice"})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict)
	d, err = g2.Before(ctx, toolgate.Call{Tool: "send", Caller: "alice"})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict, "alice's 8 units spent before the restart still count")
	m, _ := g2.Meter("alice")
	assert.Equal(t, units(10), m.Budget().Net())
}

// sharedBudget is a kernel.SharedBudget in memory, for tests.
type sharedBudget struct {
	mu      sync.Mutex
	limit   int64
	spent   int64
	charged map[string]int64
}

func (b *sharedBudget) Charge(_ context.Context, id string, cost int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent+cost > b.limit {
		return fmt.Errorf("%w: shared", kernel.CheckBudget)
	}
	b.spent += cost
	b.charged[id] += cost
	return nil
}

func (b *sharedBudget) Refund(_ context.Context, id string, amount int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if amount > b.charged[id] {
		return errors.New("refund above charge")
	}
	b.charged[id] -= amount
	b.spent -= amount
	return nil
}

func TestSharedBudgetBoundsAllCallers(t *testing.T) {
	shared := &sharedBudget{limit: int64(units(5)), charged: map[string]int64{}}
	g := newGate(t, newLog(t), testConfig(), toolgate.WithSharedBudget(shared))
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := g.Before(ctx, toolgate.Call{Tool: "send", Caller: fmt.Sprintf("caller-%d", i%4)})
			assert.NoError(t, err)
			if d.Verdict == toolgate.Allow {
				allowed.Add(1)
			} else {
				assert.Contains(t, d.Explanation, "shared_budget")
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(2), allowed.Load(), "2 calls of 2 fit in the shared 5")
	assert.LessOrEqual(t, shared.spent, shared.limit)
}

func TestInvalidConfigNamesEveryProblem(t *testing.T) {
	cfg := toolgate.Policy{Budget: units(1), MinCost: units(1), Tools: []toolgate.Rule{
		{Match: "[", Cost: units(1)},
		{Match: "cheap", Cost: 1},
		{Match: "odd", Cost: units(1), Tier: "delete"},
		{Match: "priv", Cost: units(1), Tier: claims.TierPrivilege},
	}, Approvers: map[claims.RiskTier][]string{}}
	_, err := cfg.Compile()
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)
	assert.ElementsMatch(t, []pathRule{
		{"/tools/0/match", "glob"},
		{"/tools/1/cost", "min_cost"},
		{"/tools/2/tier", "enum"},
		{"/tools/3/tier", "approvers"},
	}, violationsOf(t, err), "%v", err)
	_, err = toolgate.New(ctx, nil, mustCompile(testConfig()))
	assert.ErrorIs(t, err, toolgate.ErrInvalidConfig)
	_, err = toolgate.New(ctx, newLog(t), nil)
	assert.ErrorIs(t, err, toolgate.ErrInvalidConfig)
}

func TestExplanationIsOneLine(t *testing.T) {
	g := newGate(t, newLog(t), testConfig())
	d, err := g.Before(ctx, call("delete_file", "{\n\"path\": \"x\"\n}"))
	require.NoError(t, err)
	assert.Equal(t, `Allow the DELETE tool call "delete_file" with arguments {"path":"x"}?`, d.Approval.Question)
}

// TestApprovalShowsTheWholeArguments: what a human approves is exactly
// what runs — the question shows the arguments in full, with invisible
// characters escaped, and arguments that cannot be shown that way are
// refused rather than asked about.
func TestApprovalShowsTheWholeArguments(t *testing.T) {
	g := newGate(t, newLog(t), testConfig())
	long := `{"path":"/tmp/scratch/` + strings.Repeat("x", 600) + `"}`
	d, err := g.Before(ctx, call("delete_file", long))
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.Contains(t, d.Approval.Question, long, "never cut")

	d, err = g.Before(ctx, call("delete_file", "{\"path\":\"/tmp/\u202egpj.exe\"}"))
	require.NoError(t, err)
	assert.Equal(t, `Allow the DELETE tool call "delete_file" with arguments {"path":"/tmp/\u202egpj.exe"}?`, d.Approval.Question)

	for args, why := range map[string]string{
		`{"path":"/tmp/a","path":"/etc/passwd"}`: "duplicate",
		"not\njson\t\xff":                        "cannot read one way",
		`{"path":"` + strings.Repeat("x", toolgate.MaxShownArguments) + `"}`: "too long to show a human",
	} {
		d, err := g.Before(ctx, call("delete_file", args))
		require.NoError(t, err)
		assert.Equal(t, toolgate.Refuse, d.Verdict, args)
		assert.Contains(t, d.Explanation, why)
		assert.NotContains(t, d.Explanation, "\n")
	}
}

// TestWaitingRequestsBounded: an agent cannot pile up requests nobody
// answers; denying one makes room.
func TestWaitingRequestsBounded(t *testing.T) {
	cfg := testConfig()
	cfg.MaxWaiting = 3
	g := newGate(t, newLog(t), cfg)
	var first *toolgate.ApprovalRequest
	for i := range 3 {
		d, err := g.Before(ctx, call("delete_file", fmt.Sprintf(`{"n":%d}`, i)))
		require.NoError(t, err)
		require.Equal(t, toolgate.AskApproval, d.Verdict)
		if first == nil {
			first = d.Approval
		}
	}
	d, err := g.Before(ctx, call("delete_file", `{"n":3}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, `tool "delete_file" (rule #2, approval): DELETE: 3 calls of this caller already wait for a human`, d.Explanation)
	d, err = g.Before(ctx, toolgate.Call{Tool: "delete_file", Caller: "other", Arguments: []byte(`{"n":3}`)})
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict, "the bound is per caller")
	require.NoError(t, g.Deny(ctx, first.ID, toolgate.DefaultApprover, "stale"))
	d, err = g.Before(ctx, call("delete_file", `{"n":3}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict)
}

// TestHugeResultStillRecorded: a result whose kept text would not fit
// one entry (escapes, base64) is recorded with its digest and size.
func TestHugeResultStillRecorded(t *testing.T) {
	log := newLog(t)
	cfg := testConfig()
	cfg.ResultTextLimit = -1
	g := newGate(t, log, cfg)
	for _, out := range [][]byte{bytes.Repeat([]byte{1}, 3<<20), bytes.Repeat([]byte{0xff}, 13<<20)} {
		d, err := g.Before(ctx, call("read_file", `{}`))
		require.NoError(t, err)
		o, err := g.After(ctx, d.Call, toolgate.Result{Output: out, Err: errors.New(strings.Repeat("e", 5000))})
		require.NoError(t, err)
		e, err := gatelog.Decode(entryAt(t, log, o.Seq))
		require.NoError(t, err)
		r := e.(gatelog.Result)
		assert.True(t, r.Truncated)
		assert.Empty(t, r.OutputText+r.OutputBase64)
		assert.Equal(t, len(out), r.OutputSize)
		assert.Len(t, r.Error, toolgate.DefaultResultTextLimit)
	}
}

// TestNegativeActualRefused: a negative measured cost is refused and the
// call stays open for a correct report.
func TestNegativeActualRefused(t *testing.T) {
	g := newGate(t, newLog(t), testConfig())
	for _, tool := range []string{"send", "search"} {
		d, err := g.Before(ctx, call(tool, `{}`))
		require.NoError(t, err)
		_, err = g.After(ctx, d.Call, toolgate.Result{Actual: -1, Measured: true})
		require.ErrorIs(t, err, toolgate.ErrInvalidResult)
		_, err = g.After(ctx, d.Call, toolgate.Result{Actual: 1, Measured: true})
		require.NoError(t, err, tool)
	}
}

// totals are a budget's totals, comparable with ==.
func totals(b kernel.Budget) [3]kernel.Cost {
	return [3]kernel.Cost{b.Limit(), b.Gross(), b.Refunded()}
}

// failingRefunds is a shared budget that charges but cannot refund.
type failingRefunds struct{ sharedBudget }

func (b *failingRefunds) Refund(context.Context, string, int64) error {
	return errors.New("shared budget unreachable")
}

// TestRecordedRefundClosesTheCall: once a settlement or refund is on the
// log it stands, even when the shared budget cannot follow; the call is
// closed and never refunded twice.
func TestRecordedRefundClosesTheCall(t *testing.T) {
	shared := &failingRefunds{sharedBudget{limit: int64(units(100)), charged: map[string]int64{}}}
	g := newGate(t, newLog(t), testConfig(), toolgate.WithSharedBudget(shared))
	for _, tool := range []string{"send", "search"} {
		d, err := g.Before(ctx, call(tool, `{}`))
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict)
		out, err := g.After(ctx, d.Call, toolgate.Result{Err: errors.New("failed")})
		require.ErrorContains(t, err, "shared budget unreachable", tool)
		assert.NotZero(t, out.Seq, "the result is recorded")
		assert.Zero(t, out.Charged)
		_, err = g.After(ctx, d.Call, toolgate.Result{Err: errors.New("failed")})
		assert.ErrorIs(t, err, toolgate.ErrUnknownCall, "%s: closed, not refunded twice", tool)
	}
	m, _ := g.Meter("")
	assert.Zero(t, m.Budget().Net())
	assert.Equal(t, int64(units(5)), shared.spent, "the shared balance overstates, never understates")
}

// TestPolicyMaxWaiting: max_waiting in a policy file bounds the waiting
// requests of the gate it configures.
func TestPolicyMaxWaiting(t *testing.T) {
	p, err := toolgate.ParsePolicy([]byte(`{"version":1,"budget":"10","min_cost":"0.01","max_waiting":1,
		"tools":[{"match":"delete_*","cost":"1","tier":"DELETE"}]}`))
	require.NoError(t, err)
	cfg, err := p.Compile()
	require.NoError(t, err)
	assert.Equal(t, 1, cfg.Policy().MaxWaiting)
	g, err := toolgate.New(ctx, newLog(t), cfg)
	require.NoError(t, err)
	d, err := g.Before(ctx, call("delete_file", `{"n":1}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict)
	d, err = g.Before(ctx, call("delete_file", `{"n":2}`))
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
}

// mustCompile compiles a policy the test builds in Go, which is valid:
// a violation is the test's own mistake, and stops it loudly.
func mustCompile(p toolgate.Policy) *toolgate.Compiled {
	comp, err := p.Compile()
	if err != nil {
		panic(err)
	}
	return comp
}
