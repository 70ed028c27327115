package eino_test

import (
	"context"
	"testing"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
)

// TestPrincipalReachesGate: the middleware passes the principal the host
// put in the context (toolgate.WithPrincipal) to the gate. The caller key
// is left empty here, so the gate charges each call to the principal's
// key, and the principal is found by its meter; a context without one
// gives the zero principal (the caller key "").
func TestPrincipalReachesGate(t *testing.T) {
	bob := toolgate.Principal{Issuer: "https://id.example", Subject: "bob", Groups: []string{"eng"}}
	g, log := newGate(t, catalogue(10*kernel.Unit))
	read := &fakeTool{name: "read_file"}
	var seen []toolgate.Principal
	tn := newToolsNode(t, g, []eino.Option{
		eino.WithCallerFunc(func(context.Context) string { return "" }),
		eino.WithPrincipalFunc(func(ctx context.Context) toolgate.Principal {
			p := eino.PrincipalFrom(ctx)
			seen = append(seen, p)
			return p
		}),
	}, read)
	for _, ctx := range []context.Context{toolgate.WithPrincipal(context.Background(), bob), context.Background()} {
		if _, err := tn.Invoke(ctx, calls(call("c1", "read_file", `{}`))); err != nil {
			t.Fatal(err)
		}
	}
	if read.runs.Load() != 2 || len(seen) != 2 {
		t.Fatalf("runs %d, principals %v", read.runs.Load(), seen)
	}
	if seen[0].Key() != bob.Key() || len(seen[0].Groups) != 1 || !seen[1].IsZero() {
		t.Fatalf("principals %+v", seen)
	}
	for _, key := range []string{bob.Key(), ""} {
		m, ok := g.Meter(key)
		if !ok || m.Budget().Net() != kernel.Unit {
			t.Fatalf("caller %q: meter %v", key, ok)
		}
	}
	checkLog(t, log, g, bob.Key())
}

// TestResumeKeepsThePrincipal: a call interrupted for approval is
// resumed as the same call, for the principal it was made for, whatever
// principal the resume's context carries: the delete rule admits only
// bob, so a resume decided for mallory would be refused as an unknown
// tool, and the call would not run.
func TestResumeKeepsThePrincipal(t *testing.T) {
	bob := toolgate.Principal{Issuer: "https://id.example", Subject: "bob"}
	mallory := toolgate.Principal{Issuer: "https://id.example", Subject: "mallory"}
	cfg := catalogue(10 * kernel.Unit)
	for i := range cfg.Tools {
		if cfg.Tools[i].Match == "delete_file" {
			cfg.Tools[i].Principals = &toolgate.PrincipalCondition{Subjects: []string{"bob"}}
		}
	}
	g, log := newGate(t, cfg)
	del := &fakeTool{name: "delete_file"}
	tn := newToolsNode(t, g, []eino.Option{eino.WithCallerFunc(func(context.Context) string { return "" })}, del)
	graph := compose.NewGraph[*schema.Message, []*schema.Message]()
	_ = graph.AddToolsNode("tools", tn)
	_ = graph.AddEdge(compose.START, "tools")
	_ = graph.AddEdge("tools", compose.END)
	run, err := graph.Compile(context.Background(), compose.WithCheckPointStore(&memStore{}))
	if err != nil {
		t.Fatal(err)
	}
	msg := calls(call("c1", "delete_file", `{}`))
	_, err = run.Invoke(toolgate.WithPrincipal(context.Background(), bob), msg, compose.WithCheckPointID("cp"))
	info, _ := compose.ExtractInterruptInfo(err)
	if info == nil {
		t.Fatalf("no interrupt: %v", err)
	}
	ps := eino.PendingApprovals(info.InterruptContexts)
	if len(ps) != 1 || ps[0].Caller != bob.Key() {
		t.Fatalf("pending %+v", ps)
	}
	resume := compose.ResumeWithData(toolgate.WithPrincipal(context.Background(), mallory), ps[0].InterruptID, eino.Approve(""))
	out, err := run.Invoke(resume, msg, compose.WithCheckPointID("cp"))
	if err != nil {
		t.Fatal(err)
	}
	if del.runs.Load() != 1 {
		m, _ := toolMessage(out, "c1")
		t.Fatalf("delete ran %d times; the model read %v", del.runs.Load(), m)
	}
	if _, ok := g.Meter(mallory.Key()); ok {
		t.Fatal("the resumed call was charged to the resume's principal")
	}
	checkLog(t, log, g, bob.Key())
}
