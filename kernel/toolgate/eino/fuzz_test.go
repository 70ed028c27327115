package eino_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
)

// FuzzMiddleware sends arbitrary calls (names, ids, arguments, callers,
// resume data) through the middleware: it never panics, a tool runs only
// when the gate allowed it and then exactly once, a call that does not
// run answers one non-empty line or waits for approval, and the log
// verifies and replays.
func FuzzMiddleware(f *testing.F) {
	f.Add("read_file", "c1", `{"path":"/etc/motd"}`, "alice", uint8(0), "")
	f.Add("delete_file", "", `{"path":"/"}`, "", uint8(1), "yes")
	f.Add("drop_table", "c\n2", "\xff\xfe", "bob\x00", uint8(2), "")
	f.Add("read_file", "c1", "", "", uint8(3), "")
	f.Add("delete_*", "c1", `{}`, "x", uint8(1), "")
	f.Fuzz(func(t *testing.T, name, id, args, caller string, mode uint8, answer string) {
		cfg := toolgate.Policy{Budget: 2 * kernel.Unit, MinCost: kernel.Unit,
			Tools: []toolgate.Rule{{Match: "read_*", Cost: kernel.Unit}, {Match: "delete_*", Cost: kernel.Unit, Tier: claims.TierDelete}}}
		g, log := newGate(t, cfg)
		ran := 0
		ep := eino.Middleware(g).Invokable(func(context.Context, *compose.ToolInput) (*compose.ToolOutput, error) {
			ran++
			return &compose.ToolOutput{Result: "ok"}, nil
		})
		ctx := eino.WithCaller(context.Background(), caller)
		in := &compose.ToolInput{Name: name, Arguments: args, CallID: id}
		for i := 0; i <= int(mode%4); i++ { // repeat: the budget runs out, ids repeat
			before := ran
			out, err := ep(ctx, in)
			switch {
			case err != nil:
				if _, ok := compose.IsInterruptRerunError(err); !ok {
					t.Fatalf("error that is not an approval interrupt: %v", err)
				}
				if ran != before {
					t.Fatal("a call waiting for approval ran")
				}
				// Answer it as a human would, then ask again.
				if p := g.Pending(); len(p) == 1 {
					var derr error
					reason := strings.ToValidUTF8(answer, "?") // claims refuses other reasons
					if answer == "yes" {
						_, derr = g.Approve(ctx, p[0].ID, toolgate.DefaultApprover, reason)
					} else {
						derr = g.Deny(ctx, p[0].ID, toolgate.DefaultApprover, reason)
					}
					if derr != nil {
						t.Fatal(derr)
					}
				} else {
					t.Fatalf("interrupted with %d pending requests", len(p))
				}
			case ran == before+1:
				if out == nil || out.Result != "ok" {
					t.Fatalf("a call that ran answered %+v", out)
				}
			case ran == before:
				if out == nil || out.Result == "" || strings.Contains(out.Result, "\n") {
					t.Fatalf("a refused call answered %+v", out)
				}
			default:
				t.Fatalf("one call ran %d times", ran-before)
			}
		}
		if ran > 2 {
			t.Fatalf("%d calls ran on a budget of two", ran)
		}
		var callers []string
		if _, ok := g.Meter(caller); ok {
			callers = append(callers, caller)
		}
		checkLog(t, log, g, callers...)
	})
}

// FuzzResumeAnswer resumes a compose graph interrupted for approval with
// arbitrary resume data: the call runs at most once, and only on an
// approval the gate recorded; any other answer leaves it not run, its
// tool message one non-empty line or a new interrupt.
func FuzzResumeAnswer(f *testing.F) {
	f.Add(true, "human", "checked", uint8(0))
	f.Add(false, "", "no way", uint8(0))
	f.Add(true, "mallory", "", uint8(0))
	f.Add(true, "", "\xff", uint8(0))
	f.Add(false, "", "", uint8(1))
	f.Add(false, "", "", uint8(2))
	f.Add(false, "", "", uint8(3))
	f.Fuzz(func(t *testing.T, approved bool, approver, reason string, kind uint8) {
		cfg := toolgate.Policy{Budget: 2 * kernel.Unit, MinCost: kernel.Unit,
			Tools: []toolgate.Rule{{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete}}}
		g, log := newGate(t, cfg)
		del := &fakeTool{name: "delete_file"}
		run := toolsGraph(t, newToolsNode(t, g, nil, del))
		ctx := context.Background()
		msg := calls(call("c1", "delete_file", `{"path":"/x"}`))
		_, err := run.Invoke(ctx, msg, compose.WithCheckPointID("cp"))
		info, ok := compose.ExtractInterruptInfo(err)
		if !ok {
			t.Fatalf("not interrupted: %v", err)
		}
		ps := eino.PendingApprovals(info.InterruptContexts)
		if len(ps) != 1 {
			t.Fatalf("pending %+v", ps)
		}
		var data any
		switch kind % 4 {
		case 0:
			data = eino.Answer{Approved: approved, Approver: approver, Reason: reason}
		case 1:
			data = approved
		case 2:
			data = reason
		case 3:
			data = (*eino.Answer)(nil)
		}
		out, err := run.Invoke(compose.ResumeWithData(ctx, ps[0].InterruptID, data), msg, compose.WithCheckPointID("cp"))
		if err != nil {
			if _, ok := compose.ExtractInterruptInfo(err); !ok {
				t.Fatalf("resume failed: %v", err)
			}
			if del.runs.Load() != 0 {
				t.Fatal("ran and interrupted")
			}
		} else {
			// One line, unless the human's reason spans several (the
			// gate quotes a denial's reason as given).
			multi := strings.ContainsAny(reason, "\r\n")
			if len(out) != 1 || out[0].Content == "" || (!multi && strings.Contains(out[0].Content, "\n")) {
				t.Fatalf("answered %+v", out)
			}
			if del.runs.Load() > 1 {
				t.Fatalf("ran %d times", del.runs.Load())
			}
		}
		if del.runs.Load() == 1 {
			isApproval := (kind%4 == 0 && approved) || (kind%4 == 1 && approved)
			if !isApproval {
				t.Fatalf("ran on %#v", data)
			}
		}
		checkLog(t, log, g, "")
	})
}

// toolsGraph compiles START → tools → END with a checkpoint store.
func toolsGraph(t tb, tn *compose.ToolsNode) compose.Runnable[*schema.Message, []*schema.Message] {
	t.Helper()
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
	run, err := graph.Compile(context.Background(), compose.WithCheckPointStore(&memStore{}))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

var _ tool.InvokableTool = (*fakeTool)(nil)
