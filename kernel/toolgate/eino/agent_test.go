package eino_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
)

// catalogue is the rule set the agent tests share: reads cost one unit,
// deleting a file needs a human.
func catalogue(budget kernel.Cost) toolgate.Policy {
	return toolgate.Policy{
		Budget:  budget,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_file", Cost: kernel.Unit},
			{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete},
		},
	}
}

// newRunner builds a ChatModelAgent over mdl and tools with the gate's
// agent middleware, and a Runner with a checkpoint store.
func newRunner(t tb, g *toolgate.Gate, mdl *scriptedModel, store adk.CheckPointStore, streaming bool, tools ...tool.BaseTool) *adk.Runner {
	t.Helper()
	ctx := context.Background()
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name:        "oncall",
		Description: "an on-call agent under a tool gate",
		Model:       mdl,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools}},
		Middlewares: []adk.AgentMiddleware{eino.AgentMiddleware(g)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, CheckPointStore: store, EnableStreaming: streaming})
}

// TestAgentCallPasses: an allowed call runs once, the model reads its
// output, the gate records it under the run's caller.
func TestAgentCallPasses(t *testing.T) {
	g, log := newGate(t, catalogue(10*kernel.Unit))
	read := &fakeTool{name: "read_file"}
	mdl := &scriptedModel{script: turns(
		calls(call("c1", "read_file", `{"path":"/etc/motd"}`)),
		schema.AssistantMessage("the motd says hello", nil),
	)}
	r := newRunner(t, g, mdl, &memStore{}, false, read)
	ctx := eino.WithCaller(context.Background(), "alice")

	res := drain(r.Query(ctx, "what does the motd say?"))
	if res.err != nil || res.interrupted != nil {
		t.Fatalf("run: err %v, interrupted %v", res.err, res.interrupted)
	}
	if got := read.runs.Load(); got != 1 {
		t.Fatalf("read_file ran %d times, want 1", got)
	}
	tm, ok := toolMessage(mdl.input(1), "c1")
	if !ok || tm.Content != `read_file done: {"path":"/etc/motd"}` {
		t.Fatalf("model's second input has tool message %v", tm)
	}
	if res.last() != "the motd says hello" {
		t.Fatalf("final answer %q", res.last())
	}
	rs := results(t, log)
	if len(rs) != 1 || !rs[0].OK || rs[0].Caller != "alice" || rs[0].CallID != "c1" || rs[0].OutputText != tm.Content {
		t.Fatalf("results %+v", rs)
	}
	m, ok := g.Meter("alice")
	if !ok || m.Budget().Net() != kernel.Unit {
		t.Fatalf("alice's meter %v", m)
	}
	checkLog(t, log, g, "alice")
}

// TestAgentRefusalForBudgetReachesModel: the call the budget cannot pay
// does not run, the run goes on, and the model's next input holds the
// refusal's explanation as the call's tool message.
func TestAgentRefusalForBudgetReachesModel(t *testing.T) {
	g, log := newGate(t, catalogue(2*kernel.Unit))
	read := &fakeTool{name: "read_file"}
	mdl := &scriptedModel{script: turns(
		calls(call("c1", "read_file", `{"path":"a"}`)),
		calls(call("c2", "read_file", `{"path":"b"}`)),
		calls(call("c3", "read_file", `{"path":"c"}`)),
		schema.AssistantMessage("out of budget; stopping", nil),
	)}
	r := newRunner(t, g, mdl, &memStore{}, false, read)

	res := drain(r.Query(context.Background(), "read a, b and c"))
	if res.err != nil || res.interrupted != nil {
		t.Fatalf("run: err %v, interrupted %v", res.err, res.interrupted)
	}
	if got := read.runs.Load(); got != 2 {
		t.Fatalf("read_file ran %d times, want 2", got)
	}
	tm, ok := toolMessage(mdl.input(3), "c3")
	if !ok {
		t.Fatal("the model's fourth input has no answer to c3")
	}
	if !strings.HasPrefix(tm.Content, `tool "read_file" (rule #0, kernel): action "read_file" rejected: `) || !strings.Contains(tm.Content, "budget") {
		t.Fatalf("the model read %q, want the budget refusal", tm.Content)
	}
	if strings.Contains(tm.Content, "\n") {
		t.Fatalf("explanation is not one line: %q", tm.Content)
	}
	m, _ := g.Meter("")
	if m.Budget().Net() != 2*kernel.Unit {
		t.Fatalf("spent %v, want 2 units", m.Budget().Net())
	}
	checkLog(t, log, g, "")
}

// TestAgentDeleteWaitsForConfirmation: a DELETE-tier call interrupts the
// run with the question; resumed with an approval it runs once, resumed
// with a denial it never runs and the model reads the denial.
func TestAgentDeleteWaitsForConfirmation(t *testing.T) {
	script := func() *scriptedModel {
		return &scriptedModel{script: turns(
			calls(call("c1", "read_file", `{"path":"/tmp/x"}`), call("c2", "delete_file", `{"path":"/tmp/x"}`)),
			schema.AssistantMessage("handled", nil),
			calls(call("c3", "delete_file", `{"path":"/tmp/x"}`)),
			schema.AssistantMessage("handled again", nil),
		)}
	}
	ctx := context.Background()

	// interrupted starts a run whose first turn reads and asks to delete,
	// and checks that it stops for approval with nothing deleted.
	interrupted := func(t *testing.T, g *toolgate.Gate, r *adk.Runner, del, read *fakeTool) eino.Pending {
		t.Helper()
		res := drain(r.Query(ctx, "clean up /tmp/x", adk.WithCheckPointID("run-1")))
		if res.err != nil {
			t.Fatal(res.err)
		}
		if res.interrupted == nil {
			t.Fatal("the run was not interrupted for approval")
		}
		ps := eino.PendingApprovals(res.interrupted.InterruptContexts)
		if len(ps) != 1 {
			t.Fatalf("pending approvals %+v", ps)
		}
		p := ps[0]
		if p.Tool != "delete_file" || p.CallID != "c2" || p.Tier != claims.TierDelete ||
			!strings.Contains(p.Question, `"delete_file"`) || p.ApprovalID == "" {
			t.Fatalf("approval info %+v", *p.ApprovalInfo)
		}
		if got := g.Pending(); len(got) != 1 || got[0].ID != p.ApprovalID {
			t.Fatalf("gate pending %+v", got)
		}
		if del.runs.Load() != 0 || read.runs.Load() != 1 {
			t.Fatalf("before the answer: delete ran %d, read ran %d", del.runs.Load(), read.runs.Load())
		}
		return p
	}

	t.Run("approved runs once", func(t *testing.T) {
		g, log := newGate(t, catalogue(10*kernel.Unit))
		del, read := &fakeTool{name: "delete_file"}, &fakeTool{name: "read_file"}
		mdl := script()
		store := &memStore{}
		p := interrupted(t, g, newRunner(t, g, mdl, store, false, read, del), del, read)

		// A new Runner over the same store: the process that resumes need
		// not be the one that was interrupted.
		r := newRunner(t, g, mdl, store, false, read, del)
		it, err := r.ResumeWithParams(ctx, "run-1", &adk.ResumeParams{
			Targets: map[string]any{p.InterruptID: eino.Approve("checked: scratch file")}})
		if err != nil {
			t.Fatal(err)
		}
		res := drain(it)
		if res.err != nil || res.interrupted != nil {
			t.Fatalf("resume: err %v, interrupted %v", res.err, res.interrupted)
		}
		if del.runs.Load() != 1 || read.runs.Load() != 1 {
			t.Fatalf("after approval: delete ran %d, read ran %d; want 1 and 1", del.runs.Load(), read.runs.Load())
		}
		in := mdl.input(1)
		if tm, ok := toolMessage(in, "c2"); !ok || tm.Content != `delete_file done: {"path":"/tmp/x"}` {
			t.Fatalf("the model read %v for c2", tm)
		}
		if tm, ok := toolMessage(in, "c1"); !ok || tm.Content != `read_file done: {"path":"/tmp/x"}` {
			t.Fatalf("the model read %v for c1", tm)
		}

		// The approval was used: the same call asked again waits again.
		res = drain(r.Query(ctx, "and once more", adk.WithCheckPointID("run-2")))
		if res.err != nil || res.interrupted == nil {
			t.Fatalf("second delete: err %v, interrupted %v", res.err, res.interrupted)
		}
		if del.runs.Load() != 1 {
			t.Fatalf("the approval was used twice: delete ran %d times", del.runs.Load())
		}
		checkLog(t, log, g, "")
	})

	t.Run("denied never runs", func(t *testing.T) {
		g, log := newGate(t, catalogue(10*kernel.Unit))
		del, read := &fakeTool{name: "delete_file"}, &fakeTool{name: "read_file"}
		mdl := script()
		store := &memStore{}
		r := newRunner(t, g, mdl, store, false, read, del)
		p := interrupted(t, g, r, del, read)

		it, err := r.ResumeWithParams(ctx, "run-1", &adk.ResumeParams{
			Targets: map[string]any{p.InterruptID: eino.Deny("that file is evidence")}})
		if err != nil {
			t.Fatal(err)
		}
		res := drain(it)
		if res.err != nil || res.interrupted != nil {
			t.Fatalf("resume: err %v, interrupted %v", res.err, res.interrupted)
		}
		if del.runs.Load() != 0 || read.runs.Load() != 1 {
			t.Fatalf("after denial: delete ran %d, read ran %d", del.runs.Load(), read.runs.Load())
		}
		tm, ok := toolMessage(mdl.input(1), "c2")
		if !ok || !strings.Contains(tm.Content, "denied by human: that file is evidence") {
			t.Fatalf("the model read %v for c2", tm)
		}
		if len(g.Pending()) != 0 {
			t.Fatalf("still pending: %+v", g.Pending())
		}
		checkLog(t, log, g, "")
	})

	t.Run("decided through the gate, resumed without data", func(t *testing.T) {
		g, log := newGate(t, catalogue(10*kernel.Unit))
		del, read := &fakeTool{name: "delete_file"}, &fakeTool{name: "read_file"}
		mdl := script()
		r := newRunner(t, g, mdl, &memStore{}, false, read, del)
		p := interrupted(t, g, r, del, read)

		// Resumed before anyone answered: it waits again.
		it, err := r.Resume(ctx, "run-1")
		if err != nil {
			t.Fatal(err)
		}
		res := drain(it)
		if res.err != nil || res.interrupted == nil || del.runs.Load() != 0 {
			t.Fatalf("unanswered resume: err %v, interrupted %v, delete ran %d", res.err, res.interrupted, del.runs.Load())
		}
		// An operator approves through the gate; a plain resume goes on.
		if granted, err := g.Approve(ctx, p.ApprovalID, toolgate.DefaultApprover, "ok from the console"); err != nil || !granted {
			t.Fatalf("approve: %v %v", granted, err)
		}
		it, err = r.Resume(ctx, "run-1")
		if err != nil {
			t.Fatal(err)
		}
		res = drain(it)
		if res.err != nil || res.interrupted != nil || del.runs.Load() != 1 {
			t.Fatalf("answered resume: err %v, interrupted %v, delete ran %d", res.err, res.interrupted, del.runs.Load())
		}
		checkLog(t, log, g, "")
	})

	t.Run("an answer not understood denies", func(t *testing.T) {
		g, log := newGate(t, catalogue(10*kernel.Unit))
		del, read := &fakeTool{name: "delete_file"}, &fakeTool{name: "read_file"}
		mdl := script()
		r := newRunner(t, g, mdl, &memStore{}, false, read, del)
		p := interrupted(t, g, r, del, read)
		it, err := r.ResumeWithParams(ctx, "run-1", &adk.ResumeParams{Targets: map[string]any{p.InterruptID: "yes please"}})
		if err != nil {
			t.Fatal(err)
		}
		res := drain(it)
		if res.err != nil || res.interrupted != nil || del.runs.Load() != 0 {
			t.Fatalf("resume: err %v, interrupted %v, delete ran %d", res.err, res.interrupted, del.runs.Load())
		}
		if tm, _ := toolMessage(mdl.input(1), "c2"); tm == nil || !strings.Contains(tm.Content, "was not understood") {
			t.Fatalf("the model read %v", tm)
		}
		checkLog(t, log, g, "")
	})
}

// TestAgentTwoApproversInterruptTwice: with two approvers required, the
// first approval leaves the call waiting for the second.
func TestAgentTwoApproversInterruptTwice(t *testing.T) {
	cfg := catalogue(10 * kernel.Unit)
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"alice", "bob"}}
	g, log := newGate(t, cfg)
	del := &fakeTool{name: "delete_file"}
	mdl := &scriptedModel{script: turns(calls(call("c1", "delete_file", `{"path":"/x"}`)), schema.AssistantMessage("done", nil))}
	r := newRunner(t, g, mdl, &memStore{}, false, del)
	ctx := context.Background()

	res := drain(r.Query(ctx, "delete /x", adk.WithCheckPointID("run")))
	ps := eino.PendingApprovals(res.interrupted.InterruptContexts)
	if len(ps) != 1 || len(ps[0].Awaiting) != 2 {
		t.Fatalf("pending %+v", ps)
	}
	for i, who := range []string{"alice", "bob"} {
		it, err := r.ResumeWithParams(ctx, "run", &adk.ResumeParams{
			Targets: map[string]any{ps[0].InterruptID: eino.Answer{Approved: true, Approver: who}}})
		if err != nil {
			t.Fatal(err)
		}
		res = drain(it)
		if res.err != nil {
			t.Fatal(res.err)
		}
		if i == 0 {
			ps = eino.PendingApprovals(res.interrupted.InterruptContexts)
			if del.runs.Load() != 0 || len(ps) != 1 || len(ps[0].Awaiting) != 1 || ps[0].Awaiting[0] != "bob" {
				t.Fatalf("after alice: delete ran %d, pending %+v", del.runs.Load(), ps)
			}
		}
	}
	if del.runs.Load() != 1 || res.interrupted != nil {
		t.Fatalf("after bob: delete ran %d, interrupted %v", del.runs.Load(), res.interrupted)
	}
	checkLog(t, log, g, "")
}

// TestAgentStreaming: in a streaming run the tools stream; an allowed
// call's output reaches the model whole and is recorded whole, a refusal
// reaches the model as the call's output.
func TestAgentStreaming(t *testing.T) {
	g, log := newGate(t, catalogue(10*kernel.Unit))
	logs := &streamTool{name: "read_file", chunks: []string{"line 1\n", "line 2\n", "line 3\n"}}
	mdl := &scriptedModel{script: turns(
		calls(call("c1", "read_file", `{"path":"/var/log/app"}`), call("c2", "drop_table", `{}`)),
		schema.AssistantMessage("read it", nil),
	)}
	drop := &fakeTool{name: "drop_table"}
	r := newRunner(t, g, mdl, &memStore{}, true, logs, drop)

	res := drain(r.Query(context.Background(), "tail the log"))
	if res.err != nil || res.interrupted != nil {
		t.Fatalf("run: err %v, interrupted %v", res.err, res.interrupted)
	}
	if tm, ok := toolMessage(mdl.input(1), "c1"); !ok || tm.Content != "line 1\nline 2\nline 3\n" {
		t.Fatalf("the model read %v for c1", tm)
	}
	if tm, ok := toolMessage(mdl.input(1), "c2"); !ok || !strings.Contains(tm.Content, `tool "drop_table" is not in the gate's catalogue`) {
		t.Fatalf("the model read %v for c2", tm)
	}
	if drop.runs.Load() != 0 {
		t.Fatal("an unknown tool ran")
	}
	rs := results(t, log)
	if len(rs) != 1 || rs[0].OutputText != "line 1\nline 2\nline 3\n" || !rs[0].OK {
		t.Fatalf("results %+v", rs)
	}
	checkLog(t, log, g, "")
}

// TestAgentSessionCaller: without a caller in the context, the run's adk
// session value names it, and it survives an interrupt and a resume.
func TestAgentSessionCaller(t *testing.T) {
	g, log := newGate(t, catalogue(10*kernel.Unit))
	del := &fakeTool{name: "delete_file"}
	mdl := &scriptedModel{script: turns(calls(call("c1", "delete_file", `{"path":"/x"}`)), schema.AssistantMessage("done", nil))}
	r := newRunner(t, g, mdl, &memStore{}, false, del)
	ctx := context.Background()
	res := drain(r.Query(ctx, "delete /x", adk.WithCheckPointID("run"),
		adk.WithSessionValues(map[string]any{eino.SessionCallerKey: "tenant-7"})))
	ps := eino.PendingApprovals(res.interrupted.InterruptContexts)
	if len(ps) != 1 || ps[0].Caller != "tenant-7" {
		t.Fatalf("pending %+v", ps)
	}
	it, err := r.ResumeWithParams(ctx, "run", &adk.ResumeParams{Targets: map[string]any{ps[0].InterruptID: true}})
	if err != nil {
		t.Fatal(err)
	}
	if res = drain(it); res.err != nil || del.runs.Load() != 1 {
		t.Fatalf("resume: %v, delete ran %d", res.err, del.runs.Load())
	}
	if _, ok := g.Meter(""); ok {
		t.Fatal(`a call was made under the caller ""`)
	}
	checkLog(t, log, g, "tenant-7")
}
