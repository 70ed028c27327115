// Command einoagent runs an eino ADK agent whose every tool call goes
// through a Verity tool gate (kernel/toolgate/eino). The model is a
// script played back, so the program needs no network and no model:
//
//  1. Two log reads in one turn run in parallel and pass.
//  2. A service restart passes.
//  3. Deleting a core dump is a DELETE-tier call: the run stops (eino's
//     interrupt) and asks you; the run resumes with your answer, and the
//     delete runs once if you said yes, never if you said no.
//  4. A second restart costs more than the budget has left: it is
//     refused, and the model reads the refusal as the call's result.
//  5. The log — a file — is closed, reopened, verified, and the agent's
//     budget rebuilt from it by replay.
//
// Answer the question on standard input (y or n; no answer is no):
//
//	go run . [-log path] [-yes]
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
	"github.com/verity-go/verity/trace"
)

func main() {
	logPath := flag.String("log", "", "the trace log file (default: a new file in a temporary directory)")
	yes := flag.Bool("yes", false, "approve without asking")
	flag.Parse()
	path := *logPath
	if path == "" {
		dir, err := os.MkdirTemp("", "einoagent-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "einoagent:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "agent.trace")
	}
	var in io.Reader = os.Stdin
	if *yes {
		in = strings.NewReader("y\n")
	}
	if err := run(context.Background(), os.Stdout, in, path); err != nil {
		fmt.Fprintln(os.Stderr, "einoagent:", err)
		os.Exit(1)
	}
}

// caller is the key the gate keeps this agent's budget under.
const caller = "oncall-1"

// config is the gate's catalogue: what each tool costs and which need a
// human.
func config() toolgate.Policy {
	return toolgate.Policy{
		Budget:  5 * kernel.Unit,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_log", Cost: kernel.Unit, Description: "read a service's recent log"},
			{Match: "restart_service", Cost: 2 * kernel.Unit, Description: "restart a service"},
			{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete, Description: "a deleted file is gone"},
		},
	}
}

func run(ctx context.Context, w io.Writer, answers io.Reader, path string) error {
	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return err
	}
	log, err := trace.NewLog(store)
	if err != nil {
		store.Close()
		return err
	}
	defer log.Close() // on an early return; closed below before reopening
	comp, err := config().Compile()
	if err != nil {
		return err
	}
	gate, err := toolgate.New(ctx, log, comp)
	if err != nil {
		return err
	}

	mdl := &scripted{w: w}
	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
		Name:        "oncall",
		Description: "restores a failing service",
		Instruction: "You are on call for the checkout service.",
		Model:       mdl,
		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools()}},
		Middlewares: []adk.AgentMiddleware{eino.AgentMiddleware(gate)},
	})
	if err != nil {
		return err
	}
	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, CheckPointStore: &checkpoints{}})
	ctx = eino.WithCaller(ctx, caller)

	const runID = "incident-4711"
	events := runner.Query(ctx, "checkout is failing; fix it", adk.WithCheckPointID(runID))
	human := bufio.NewScanner(answers)
	for {
		pending, err := drain(w, events)
		if err != nil {
			return err
		}
		if len(pending) == 0 {
			break
		}
		targets := map[string]any{}
		for _, p := range pending {
			fmt.Fprintf(w, "human, %s [y/N] ", p.Question)
			ans := "n"
			if human.Scan() {
				ans = strings.TrimSpace(human.Text())
			}
			fmt.Fprintln(w, ans)
			if ans == "y" || ans == "yes" {
				targets[p.InterruptID] = eino.Approve("approved at the prompt")
			} else {
				targets[p.InterruptID] = eino.Deny("keep it for the post-mortem")
			}
		}
		if events, err = runner.ResumeWithParams(ctx, runID, &adk.ResumeParams{Targets: targets}); err != nil {
			return err
		}
	}

	m, _ := gate.Meter(caller)
	fmt.Fprintf(w, "budget: spent %s of %s in %d calls\n", m.Budget().Net(), m.Budget().Limit(), m.Steps())
	if err := log.Close(); err != nil {
		return err
	}
	return check(ctx, w, path, gate, m)
}

// check reopens the log file, verifies it and rebuilds the agent's
// session from it.
func check(ctx context.Context, w io.Writer, path string, gate *toolgate.Gate, live kernel.Meter) error {
	store, err := trace.OpenFile(path, trace.FileOptions{}) // verifies what it opens
	if err != nil {
		return err
	}
	log, err := trace.NewLog(store)
	if err != nil {
		store.Close()
		return err
	}
	defer log.Close()
	head, err := log.Verify(ctx)
	if err != nil {
		return err
	}
	s, err := kernel.Replay(ctx, log, gate.Kernel(), gate.SessionID(caller))
	if err != nil {
		return err
	}
	got := s.Meter()
	if got.Budget().Net() != live.Budget().Net() || got.Steps() != live.Steps() {
		return fmt.Errorf("replay rebuilt %v, the run ended at %v", got, live)
	}
	fmt.Fprintf(w, "log: %d entries verified, head %s; replay rebuilt the budget: spent %s in %d calls\n",
		head.Size, head.Hash, got.Budget().Net(), got.Steps())
	return nil
}

// drain prints a run's events and returns the approvals it stopped for.
func drain(w io.Writer, events *adk.AsyncIterator[*adk.AgentEvent]) ([]eino.Pending, error) {
	var pending []eino.Pending
	var errs []error
	for {
		ev, ok := events.Next()
		if !ok {
			return pending, errors.Join(errs...)
		}
		if ev.Err != nil {
			errs = append(errs, ev.Err)
		}
		if ev.Action != nil && ev.Action.Interrupted != nil {
			pending = eino.PendingApprovals(ev.Action.Interrupted.InterruptContexts)
			fmt.Fprintf(w, "run stopped: %d call(s) wait for a human\n", len(pending))
		}
	}
}

// tools are the agent's tools. They only say what they would do.
func tools() []tool.BaseTool {
	type service struct {
		Name string `json:"service"`
	}
	type file struct {
		Path string `json:"path"`
	}
	return []tool.BaseTool{
		utils.NewTool(&schema.ToolInfo{Name: "read_log", Desc: "read a service's recent log"},
			func(_ context.Context, s service) (string, error) {
				if s.Name == "payments" {
					return "payments: all requests OK", nil
				}
				return s.Name + ": out of disk space writing /var/crash/core.1234", nil
			}),
		utils.NewTool(&schema.ToolInfo{Name: "restart_service", Desc: "restart a service"},
			func(_ context.Context, s service) (string, error) { return s.Name + " restarted", nil }),
		utils.NewTool(&schema.ToolInfo{Name: "delete_file", Desc: "delete a file"},
			func(_ context.Context, f file) (string, error) { return "deleted " + f.Path, nil }),
	}
}

// scripted is the model: it plays back the turns of an on-call engineer's
// agent, printing the tool results it reads and the calls it makes.
type scripted struct {
	w    io.Writer
	mu   sync.Mutex
	turn int
}

func tc(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

var script = []*schema.Message{
	schema.AssistantMessage("", []schema.ToolCall{
		tc("call-1", "read_log", `{"service":"checkout"}`),
		tc("call-2", "read_log", `{"service":"payments"}`),
	}),
	schema.AssistantMessage("", []schema.ToolCall{tc("call-3", "restart_service", `{"service":"checkout"}`)}),
	schema.AssistantMessage("", []schema.ToolCall{tc("call-4", "delete_file", `{"path":"/var/crash/core.1234"}`)}),
	schema.AssistantMessage("", []schema.ToolCall{tc("call-5", "restart_service", `{"service":"checkout"}`)}),
	schema.AssistantMessage("Checkout was out of disk; restarted it. The second restart was refused by the budget.", nil),
}

func (s *scripted) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range input[len(input)-newTools(input):] {
		fmt.Fprintf(s.w, "  model reads %s: %s\n", m.ToolCallID, m.Content)
	}
	if s.turn >= len(script) {
		return nil, errors.New("the script has ended")
	}
	out := script[s.turn]
	s.turn++
	for _, c := range out.ToolCalls {
		fmt.Fprintf(s.w, "model calls %s %s %s\n", c.ID, c.Function.Name, c.Function.Arguments)
	}
	if out.Content != "" {
		fmt.Fprintln(s.w, "model:", out.Content)
	}
	return out, nil
}

// newTools counts the tool messages after the last assistant message:
// the results of the calls the model made last.
func newTools(input []*schema.Message) int {
	n := 0
	for i := len(input) - 1; i >= 0 && input[i].Role == schema.Tool; i-- {
		n++
	}
	return n
}

func (s *scripted) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := s.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{m}), nil
}

func (s *scripted) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return s, nil }

// checkpoints is an in-memory adk.CheckPointStore: where the run waits
// while the human decides.
type checkpoints struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *checkpoints) Get(_ context.Context, id string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.m[id]
	return b, ok, nil
}

func (c *checkpoints) Set(_ context.Context, id string, b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[id] = append([]byte(nil), b...)
	return nil
}
