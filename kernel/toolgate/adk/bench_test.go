package adk_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/adk"
)

// BenchmarkGuardCall is the guard's own cost per allowed call: BeforeTool
// (the gate's decision and its kernel.execute entry) and AfterTool (the
// toolgate.result entry), on a memory log, without ADK around it.
func BenchmarkGuardCall(b *testing.B) {
	cfg := testConfig()
	cfg.Budget = kernel.Cost(1) << 60
	g := newGate(b, newLog(b), cfg)
	guard, err := adk.New(g)
	require.NoError(b, err)
	args := map[string]any{"path": "/etc/motd"}
	result := map[string]any{"path": "/etc/motd", "done": "read"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ctx := newToolCtx(appName, userID, "s", fmt.Sprint(i), nil)
		i++
		if out, err := guard.BeforeTool(ctx, namedTool("read_file"), args); out != nil || err != nil {
			b.Fatal(out, err)
		}
		if _, err := guard.AfterTool(ctx, namedTool("read_file"), args, result, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunnerTurn is one whole ADK turn — the user's message, a model
// response with one function call, the tool, the model's answer — on a
// new session each time, with and without the guard: the difference is
// what gating costs a real run.
func BenchmarkRunnerTurn(b *testing.B) {
	for _, guarded := range []bool{false, true} {
		b.Run(fmt.Sprintf("guarded=%v", guarded), func(b *testing.B) {
			cfg := testConfig()
			g := newGate(b, newLog(b), cfg)
			guard, err := adk.New(g)
			require.NoError(b, err)
			m := newScript("bench")
			m.repeat = []*genai.FunctionCall{call("", "read_file", map[string]any{"path": "/a"})}
			ts := &tools{}
			ac := llmagent.Config{Name: "assistant", Model: m, Tools: ts.list(b)}
			if guarded {
				guard.Install(&ac)
			}
			a, err := llmagent.New(ac)
			require.NoError(b, err)
			r, err := runner.New(runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
			require.NoError(b, err)
			msg := genai.NewContentFromText("read", genai.RoleUser)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				for _, err := range r.Run(context.Background(), userID, fmt.Sprint(i), msg, agent.RunConfig{}) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			if ts.reads.Load() != int64(i) {
				b.Fatalf("%d reads in %d turns", ts.reads.Load(), i)
			}
		})
	}
}
