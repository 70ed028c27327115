package eino_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// storedGraph is a gated ToolsNode in a graph whose checkpoints the test
// can read and rewrite, as whoever holds the checkpoint store could.
func storedGraph(t tb, g *toolgate.Gate, store *memStore, tools ...tool.BaseTool) compose.Runnable[*schema.Message, []*schema.Message] {
	t.Helper()
	tn := newToolsNode(t, g, nil, tools...)
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
	run, err := graph.Compile(context.Background(), compose.WithCheckPointStore(store))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// copyCheckpoint stores checkpoint from's bytes under to, with each
// replacement applied (old, new pairs of equal length, so that the
// encoding's lengths still hold), and reports whether every old was
// found.
func copyCheckpoint(s *memStore, from, to string, replace ...string) bool {
	b, ok, _ := s.Get(context.Background(), from)
	if !ok {
		return false
	}
	b = bytes.Clone(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if len(replace[i]) != len(replace[i+1]) || !bytes.Contains(b, []byte(replace[i])) {
			return false
		}
		b = bytes.ReplaceAll(b, []byte(replace[i]), []byte(replace[i+1]))
	}
	_ = s.Set(context.Background(), to, b)
	return true
}

// pendingOne runs msg under checkpoint cp and returns the one approval
// it waits on.
func pendingOne(t tb, run compose.Runnable[*schema.Message, []*schema.Message], ctx context.Context, msg *schema.Message, cp string) eino.Pending {
	t.Helper()
	_, err := run.Invoke(ctx, msg, compose.WithCheckPointID(cp))
	info, ok := compose.ExtractInterruptInfo(err)
	if !ok {
		t.Fatalf("not interrupted: %v", err)
	}
	ps := eino.PendingApprovals(info.InterruptContexts)
	if len(ps) != 1 {
		t.Fatalf("pending %+v", ps)
	}
	return ps[0]
}

// resume answers interrupt id of checkpoint cp and returns the one tool
// message, or the error.
func resume(run compose.Runnable[*schema.Message, []*schema.Message], msg *schema.Message, cp, id string, answer any) (string, error) {
	out, err := run.Invoke(compose.ResumeWithData(context.Background(), id, answer), msg, compose.WithCheckPointID(cp))
	if err != nil {
		return "", err
	}
	if len(out) != 1 {
		return "", fmt.Errorf("%d tool messages", len(out))
	}
	return out[0].Content, nil
}

func refusedAnswers(t tb, log *trace.Log) []gatelog.RefuseAnswer {
	t.Helper()
	var out []gatelog.RefuseAnswer
	for e, err := range log.Entries(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == gatelog.KindRefuseAnswer {
			v, err := gatelog.Decode(e)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, v.(gatelog.RefuseAnswer))
		}
	}
	return out
}

func pendingIDs(g *toolgate.Gate) []string {
	var ids []string
	for _, r := range g.Pending() {
		ids = append(ids, r.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestResumesAnswerOnlyTheQuestionAsked: a checkpoint rewritten to hold
// other arguments than those asked about (a swap), one naming another
// call's request (a forgery), and one resumed a second time after its
// answer was used (a replay): each runs nothing, is recorded, makes no
// request and cancels none; the checkpoint as it was then still resumes
// with the human's answer.
func TestResumesAnswerOnlyTheQuestionAsked(t *testing.T) {
	g, log := newGate(t, catalogue(100*kernel.Unit))
	del := &fakeTool{name: "delete_file"}
	store := &memStore{}
	run := storedGraph(t, g, store, del)
	ctx := context.Background()
	msgA := calls(call("dd", "delete_file", `{"path":"/tmp/ok"}`))
	msgB := calls(call("ee", "delete_file", `{"path":"/tmp/bb"}`))
	a := pendingOne(t, run, ctx, msgA, "a")
	b := pendingOne(t, run, ctx, msgB, "b")
	both := pendingIDs(g)

	// Swapped arguments: the resumed call deletes /etc/pw.
	if !copyCheckpoint(store, "a", "swap", "/tmp/ok", "/etc/pw") {
		t.Fatal("the checkpoint does not hold the arguments")
	}
	out, err := resume(run, msgA, "swap", a.InterruptID, eino.Approve("yes"))
	if err != nil || !strings.Contains(out, "another call") {
		t.Fatalf("swapped: %q, %v", out, err)
	}
	// Forged: the resumed call names b's request.
	if !copyCheckpoint(store, "a", "forge", a.ApprovalID, b.ApprovalID) {
		t.Fatal("the checkpoint does not hold the request id")
	}
	out, err = resume(run, msgA, "forge", a.InterruptID, eino.Approve("yes"))
	if err != nil || !strings.Contains(out, "another call") {
		t.Fatalf("forged: %q, %v", out, err)
	}
	if del.runs.Load() != 0 || !slices.Equal(pendingIDs(g), both) {
		t.Fatalf("ran %d, pending %v, want %v", del.runs.Load(), pendingIDs(g), both)
	}
	refused := refusedAnswers(t, log)
	if len(refused) != 2 || refused[0].ArgumentsSHA256 != (toolgate.Call{Arguments: []byte(`{"path":"/etc/pw"}`)}).ArgumentsDigest() ||
		refused[0].Reason != gatelog.AnswerOtherCall || refused[1].Approval != b.ApprovalID {
		t.Fatalf("refused answers %+v", refused)
	}

	// The questions asked still count, once.
	copyCheckpoint(store, "a", "a-again")
	out, err = resume(run, msgA, "a", a.InterruptID, eino.Approve("yes"))
	if err != nil || del.runs.Load() != 1 || !strings.Contains(out, "/tmp/ok") {
		t.Fatalf("real answer: %q, %v, ran %d", out, err, del.runs.Load())
	}
	out, err = resume(run, msgA, "a-again", a.InterruptID, eino.Approve("yes"))
	if err != nil || del.runs.Load() != 1 || !strings.Contains(out, "no question waiting") {
		t.Fatalf("replay: %q, %v, ran %d", out, err, del.runs.Load())
	}
	if !slices.Equal(pendingIDs(g), []string{b.ApprovalID}) {
		t.Fatalf("pending %v", pendingIDs(g))
	}
	if _, err := resume(run, msgB, "b", b.InterruptID, eino.Approve("yes")); err != nil || del.runs.Load() != 2 {
		t.Fatalf("b: %v, ran %d", err, del.runs.Load())
	}
	if len(refusedAnswers(t, log)) != 3 || len(g.Pending()) != 0 {
		t.Fatalf("refused %d, pending %v", len(refusedAnswers(t, log)), g.Pending())
	}
	checkLog(t, log, g, "")
}

// TestPrivilegeSelfApprovalRefused: an answer By the principal that made
// a PRIVILEGE call is refused, as is one by a principal who is no
// approver; both are recorded and the call still waits, and another
// approver's answer runs it.
func TestPrivilegeSelfApprovalRefused(t *testing.T) {
	cfg := catalogue(100 * kernel.Unit)
	cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "grant_role", Cost: kernel.Unit, Tier: claims.TierPrivilege})
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"group:ops"}, claims.TierPrivilege: {"group:ops"}}
	g, log := newGate(t, cfg)
	grant := &fakeTool{name: "grant_role"}
	store := &memStore{}
	run := storedGraph(t, g, store, grant)
	alice := toolgate.Principal{Issuer: "idp", Subject: "alice", Groups: []string{"ops"}}
	mallory := toolgate.Principal{Issuer: "idp", Subject: "mallory"}
	carol := toolgate.Principal{Issuer: "idp", Subject: "carol", Groups: []string{"ops"}}
	msg := calls(call("g1", "grant_role", `{"role":"admin"}`))
	p := pendingOne(t, run, toolgate.WithPrincipal(context.Background(), alice), msg, "cp")
	copyCheckpoint(store, "cp", "cp2")
	copyCheckpoint(store, "cp", "cp3")

	out, err := resume(run, msg, "cp", p.InterruptID, eino.Answer{Approved: true, By: &alice})
	if err != nil || !strings.Contains(out, "cannot be approved by the principal that made it") {
		t.Fatalf("self: %q, %v", out, err)
	}
	out, err = resume(run, msg, "cp2", p.InterruptID, eino.Answer{Approved: true, By: &mallory})
	if err != nil || !strings.Contains(out, "not an approver") {
		t.Fatalf("non-approver: %q, %v", out, err)
	}
	refused := refusedAnswers(t, log)
	if grant.runs.Load() != 0 || len(g.Pending()) != 1 || len(refused) != 2 ||
		refused[0].Reason != gatelog.AnswerSelfApproval || refused[1].Reason != gatelog.AnswerNotApprover {
		t.Fatalf("ran %d, pending %v, refused %+v", grant.runs.Load(), g.Pending(), refused)
	}
	if _, err := resume(run, msg, "cp3", p.InterruptID, eino.Answer{Approved: true, By: &carol}); err != nil || grant.runs.Load() != 1 {
		t.Fatalf("carol: %v, ran %d", err, grant.runs.Load())
	}
	checkLog(t, log, g, "idp|alice")
}

// TestOnlyQuestionsTheGateAskedWait is a rapid state machine over
// checkpoints of gated DELETE calls, against a naive model of the
// questions asked: each proposal asks one question; resumes come with the
// human's answer, or from a copy of the checkpoint rewritten to other
// arguments, to another waiting call's request, or replayed after its
// answer was used. Only the first kind counts (the delete runs once when
// approved, never when denied); every other runs nothing, is recorded,
// and changes no request: Gate.Pending holds exactly the questions the
// model says wait.
func TestOnlyQuestionsTheGateAskedWait(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g, log := newGate(rt, catalogue(1000*kernel.Unit))
		del := &fakeTool{name: "delete_file"}
		store := &memStore{}
		run := storedGraph(rt, g, store, del)
		ctx := context.Background()
		type question struct {
			msg       *schema.Message
			path      string
			interrupt string
			request   string
		}
		open := map[string]*question{}     // checkpoint → its unanswered question
		answered := map[string]*question{} // checkpoint (a copy from before its answer) → the question answered
		n, approved, refusals := 0, int64(0), 0
		rt.Repeat(map[string]func(*rapid.T){
			"propose": func(rt *rapid.T) {
				n++
				cp, path := fmt.Sprintf("cp%03d", n), fmt.Sprintf("/tmp/%03d", n)
				msg := calls(call(fmt.Sprintf("c%03d", n), "delete_file", `{"path":"`+path+`"}`))
				p := pendingOne(rt, run, ctx, msg, cp)
				open[cp] = &question{msg: msg, path: path, interrupt: p.InterruptID, request: p.ApprovalID}
			},
			"answer": func(rt *rapid.T) {
				cps := sortedKeys(open)
				if len(cps) == 0 {
					rt.Skip("nothing waits")
				}
				cp := rapid.SampledFrom(cps).Draw(rt, "checkpoint")
				q := open[cp]
				yes := rapid.Bool().Draw(rt, "approve")
				copyCheckpoint(store, cp, "before-"+cp)
				out, err := resume(run, q.msg, cp, q.interrupt, eino.Answer{Approved: yes, Reason: "r"})
				if err != nil {
					rt.Fatal(err)
				}
				if yes {
					approved++
				} else if !strings.Contains(out, "denied by human") {
					rt.Fatalf("denied: %q", out)
				}
				delete(open, cp)
				answered["before-"+cp] = q
			},
			"tampered or replayed": func(rt *rapid.T) {
				var froms []string
				froms = append(froms, sortedKeys(open)...)
				froms = append(froms, sortedKeys(answered)...)
				if len(froms) == 0 {
					rt.Skip("no checkpoint")
				}
				from := rapid.SampledFrom(froms).Draw(rt, "from")
				q := open[from]
				if q == nil {
					q = answered[from]
				}
				var replace []string
				switch kind := rapid.SampledFrom([]string{"arguments", "request", "replay"}).Draw(rt, "kind"); {
				case kind == "arguments":
					replace = []string{q.path, strings.Replace(q.path, "/tmp/", "/etc/", 1)}
				case kind == "request":
					var others []string
					for _, o := range sortedKeys(open) {
						if open[o] != q {
							others = append(others, open[o].request)
						}
					}
					if len(others) == 0 {
						rt.Skip("no other request")
					}
					replace = []string{q.request, rapid.SampledFrom(others).Draw(rt, "other")}
				default:
					if open[from] != nil {
						rt.Skip("not answered yet")
					}
				}
				if !copyCheckpoint(store, from, "tampered", replace...) {
					rt.Fatalf("checkpoint %s does not hold %v", from, replace)
				}
				out, err := resume(run, q.msg, "tampered", q.interrupt, eino.Answer{Approved: rapid.Bool().Draw(rt, "approve")})
				if err != nil {
					rt.Fatal(err)
				}
				if !strings.Contains(out, "another call") && !strings.Contains(out, "no question waiting") && !strings.Contains(out, "came after") {
					rt.Fatalf("a tampered resume answered %q", out)
				}
				refusals++
			},
			"": func(rt *rapid.T) {
				if del.runs.Load() != approved {
					rt.Fatalf("deletes ran %d times, %d approved", del.runs.Load(), approved)
				}
				var want []string
				for _, q := range open {
					want = append(want, q.request)
				}
				slices.Sort(want)
				if got := pendingIDs(g); !slices.Equal(got, want) {
					rt.Fatalf("pending %v, want %v: only the questions the gate asked wait", got, want)
				}
			},
		})
		if got := len(refusedAnswers(rt, log)); got != refusals {
			rt.Fatalf("%d refused answers recorded, %d refused", got, refusals)
		}
	})
}
