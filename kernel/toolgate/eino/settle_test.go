package eino_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
	"github.com/verity-go/verity/trace"
)

// TestInvalidReportedCostClosesTheCall: a tool that reports a negative
// cost ends the run with toolgate.ErrInvalidResult, and its call is not
// left open in the gate: it is settled at its reservation (or charged
// its fixed cost) and recorded, and a later After for it is
// ErrUnknownCall.
func TestInvalidReportedCostClosesTheCall(t *testing.T) {
	for _, tc := range []struct {
		name    string
		reserve bool
	}{{"reserved", true}, {"fixed cost", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 10,
				Tools: []toolgate.Rule{{Match: "measured", Cost: 3 * kernel.Unit, Reserve: tc.reserve}}}
			g, log := newGate(t, cfg)
			tool := &measuredTool{name: "measured"}
			tn := newToolsNode(t, g, nil, tool)
			ctx := context.Background()
			out, err := tn.Invoke(ctx, calls(call("c1", "measured", `{"actual":-5,"id":"c1"}`)))
			if !errors.Is(err, toolgate.ErrInvalidResult) || out != nil || tool.runs.Load() != 1 {
				t.Fatalf("Invoke: out %v, err %v, ran %d", out, err, tool.runs.Load())
			}
			if _, err := g.After(ctx, toolgate.Call{Tool: "measured", ID: "c1"}, toolgate.Result{}); !errors.Is(err, toolgate.ErrUnknownCall) {
				t.Fatalf("After for the same call: %v, want ErrUnknownCall (the call was left open)", err)
			}
			m, _ := g.Meter("")
			if got := m.Budget().Net(); got != 3*kernel.Unit || len(m.Reservations()) != 0 {
				t.Fatalf("net spend %v, open reservations %v; want 3 units, none", got, m.Reservations())
			}
			rs := results(t, log)
			if len(rs) != 1 || !rs[0].OK || rs[0].Measured || rs[0].Charged != 3*kernel.Unit || rs[0].OutputText != "ran:c1" {
				t.Fatalf("results %+v", rs)
			}
			checkLog(t, log, g, "")
		})
	}
}

// TestUnrecordedResultCanBeClosed: when the gate cannot settle a call
// (its log fails), the run ends with an *UnrecordedError naming the call
// the gate keeps open, its reservation held; once the log works again
// the host closes it with the error's Call and Result.
func TestUnrecordedResultCanBeClosed(t *testing.T) {
	store := &failingStore{Memory: trace.NewMemory()}
	log, err := trace.NewLog(store)
	if err != nil {
		t.Fatal(err)
	}
	cfg := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 10,
		Tools: []toolgate.Rule{{Match: "measured", Cost: 3 * kernel.Unit, Reserve: true}}}
	g, err := toolgate.New(context.Background(), log, mustCompile(cfg))
	if err != nil {
		t.Fatal(err)
	}
	tool := &measuredTool{name: "measured"}
	mw := eino.Middleware(g, eino.WithCallerFunc(func(context.Context) string { return "ops" }))
	ep := mw.Invokable(func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		out, err := tool.InvokableRun(ctx, in.Arguments)
		store.fail.Store(true) // the log fails once the tool has run
		return &compose.ToolOutput{Result: out}, err
	})
	ctx := context.Background()
	out, err := ep(ctx, &compose.ToolInput{Name: "measured", Arguments: `{"actual":1000,"id":"c1"}`, CallID: "c1"})
	var ue *eino.UnrecordedError
	if !errors.As(err, &ue) || out != nil {
		t.Fatalf("out %v, err %v; want an *UnrecordedError", out, err)
	}
	if ue.Call.ID != "c1" || ue.Call.Caller != "ops" || !ue.Result.Measured || ue.Result.Actual != kernel.Unit ||
		string(ue.Result.Output) != "ran:c1" || !strings.Contains(ue.Error(), `call "c1" of caller "ops"`) ||
		!strings.Contains(ue.Error(), "disk full") {
		t.Fatalf("error %v: %+v", ue, *ue)
	}
	m, _ := g.Meter("ops")
	if len(m.Reservations()) != 1 || m.Budget().Net() != 3*kernel.Unit {
		t.Fatalf("while the log fails: reservations %v, net %v; want the reservation held", m.Reservations(), m.Budget().Net())
	}

	store.fail.Store(false)
	if _, err := g.After(ctx, ue.Call, ue.Result); err != nil {
		t.Fatalf("closing the call: %v", err)
	}
	m, _ = g.Meter("ops")
	if len(m.Reservations()) != 0 || m.Budget().Net() != kernel.Unit {
		t.Fatalf("after closing: reservations %v, net %v; want none, 1 unit", m.Reservations(), m.Budget().Net())
	}
	if _, err := g.After(ctx, ue.Call, ue.Result); !errors.Is(err, toolgate.ErrUnknownCall) {
		t.Fatalf("closing it twice: %v", err)
	}
	checkLog(t, log, g, "ops")
}

// twinsGraph is a graph of one ToolsNode over del with the gate's
// middleware, compiled with a checkpoint store.
func twinsGraph(t *testing.T, g *toolgate.Gate, del *fakeTool, sequential bool) compose.Runnable[*schema.Message, []*schema.Message] {
	t.Helper()
	ctx := context.Background()
	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
		Tools:               []tool.BaseTool{del},
		ToolCallMiddlewares: []compose.ToolMiddleware{eino.Middleware(g)},
		ExecuteSequentially: sequential,
	})
	if err != nil {
		t.Fatal(err)
	}
	graph := compose.NewGraph[*schema.Message, []*schema.Message]()
	if err := graph.AddToolsNode("tools", tn); err != nil {
		t.Fatal(err)
	}
	if err := graph.AddEdge(compose.START, "tools"); err != nil {
		t.Fatal(err)
	}
	if err := graph.AddEdge("tools", compose.END); err != nil {
		t.Fatal(err)
	}
	run, err := graph.Compile(ctx, compose.WithCheckPointStore(&memStore{}))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// interruptedFor runs msg and returns its pending approvals by call id.
func interruptedFor(t *testing.T, run compose.Runnable[*schema.Message, []*schema.Message], msg *schema.Message, cp string) map[string]eino.Pending {
	t.Helper()
	_, err := run.Invoke(context.Background(), msg, compose.WithCheckPointID(cp))
	info, ok := compose.ExtractInterruptInfo(err)
	if !ok {
		t.Fatalf("not interrupted: %v", err)
	}
	byCall := map[string]eino.Pending{}
	for _, p := range eino.PendingApprovals(info.InterruptContexts) {
		byCall[p.CallID] = p
	}
	return byCall
}

// TestLateDenialNeverRuns: a human's denial that comes after the call's
// approval request was decided — by the approval of an identical call of
// the same message, which shares the request, or through the gate —
// cannot be recorded, and refuses its call all the same: the call never
// runs and never takes the grant the approval gave.
func TestLateDenialNeverRuns(t *testing.T) {
	const lateMark = "(the answer came after its approval request was decided, and was not recorded)"
	ctx := context.Background()

	t.Run("decided through the gate", func(t *testing.T) {
		g, log := newGate(t, catalogue(10*kernel.Unit))
		del := &fakeTool{name: "delete_file"}
		run := twinsGraph(t, g, del, false)
		msg := calls(call("c1", "delete_file", `{"path":"/x"}`))
		p := interruptedFor(t, run, msg, "cp")["c1"]
		if granted, err := g.Approve(ctx, p.ApprovalID, toolgate.DefaultApprover, "fine"); err != nil || !granted {
			t.Fatalf("approve: %v %v", granted, err)
		}
		out, err := run.Invoke(compose.ResumeWithData(ctx, p.InterruptID, eino.Deny("not that one")), msg, compose.WithCheckPointID("cp"))
		if err != nil {
			t.Fatal(err)
		}
		want := `tool "delete_file" denied by human: not that one ` + lateMark
		if del.runs.Load() != 0 || len(out) != 1 || out[0].Content != want {
			t.Fatalf("delete ran %d, answered %v", del.runs.Load(), out)
		}
		checkLog(t, log, g, "")
	})

	t.Run("twins answered both ways, in order", func(t *testing.T) {
		g, log := newGate(t, catalogue(10*kernel.Unit))
		del := &fakeTool{name: "delete_file"}
		run := twinsGraph(t, g, del, true)
		msg := calls(call("c1", "delete_file", `{"path":"/x"}`), call("c2", "delete_file", `{"path":"/x"}`))
		ps := interruptedFor(t, run, msg, "cp")
		if len(ps) != 2 || ps["c1"].ApprovalID != ps["c2"].ApprovalID {
			t.Fatalf("pending %+v: want two calls on one request", ps)
		}
		out, err := run.Invoke(compose.BatchResumeWithData(ctx, map[string]any{
			ps["c1"].InterruptID: eino.Approve("ok"), ps["c2"].InterruptID: eino.Deny("no"),
		}), msg, compose.WithCheckPointID("cp"))
		if err != nil {
			t.Fatalf("resume: %v", err)
		}
		if del.runs.Load() != 1 || len(out) != 2 || out[0].Content != `delete_file done: {"path":"/x"}` ||
			out[1].Content != `tool "delete_file" denied by human: no `+lateMark {
			t.Fatalf("delete ran %d, answered %v", del.runs.Load(), out)
		}
		if len(g.Pending()) != 0 {
			t.Fatalf("still pending %+v", g.Pending())
		}
		checkLog(t, log, g, "")
	})

	t.Run("twins answered both ways, in parallel", func(t *testing.T) {
		for i := range 10 {
			g, log := newGate(t, catalogue(10*kernel.Unit))
			var mu sync.Mutex
			ranAs := map[string]int{}
			del := &fakeTool{name: "delete_file", run: func(ctx context.Context, args string) (string, error) {
				mu.Lock()
				ranAs[compose.GetToolCallID(ctx)]++
				mu.Unlock()
				return "deleted", nil
			}}
			run := twinsGraph(t, g, del, false)
			msg := calls(call("c1", "delete_file", `{"path":"/x"}`), call("c2", "delete_file", `{"path":"/x"}`))
			cp := fmt.Sprint("cp", i)
			ps := interruptedFor(t, run, msg, cp)
			out, err := run.Invoke(compose.BatchResumeWithData(ctx, map[string]any{
				ps["c1"].InterruptID: eino.Approve("ok"), ps["c2"].InterruptID: eino.Deny("no"),
			}), msg, compose.WithCheckPointID(cp))
			if _, interrupted := compose.ExtractInterruptInfo(err); err != nil && !interrupted {
				t.Fatalf("resume: %v", err)
			}
			// Whichever answer the gate took first, the denied call never
			// runs, and the approval runs at most one call.
			if ranAs["c2"] != 0 || del.runs.Load() > 1 {
				t.Fatalf("run %d: ran as %v; out %v, err %v", i, ranAs, out, err)
			}
			checkLog(t, log, g, "")
		}
	})
}
