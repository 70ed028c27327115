package eino_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// scriptedModel is a model.ToolCallingChatModel that answers from a
// script instead of a network: turn n (from 0) returns script(n, input).
// It keeps every input it was given.
type scriptedModel struct {
	script func(turn int, input []*schema.Message) *schema.Message

	mu     sync.Mutex
	inputs [][]*schema.Message
	tools  []*schema.ToolInfo
}

var _ model.ToolCallingChatModel = (*scriptedModel)(nil)

func (m *scriptedModel) Generate(_ context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m.mu.Lock()
	turn := len(m.inputs)
	m.inputs = append(m.inputs, append([]*schema.Message(nil), input...))
	m.mu.Unlock()
	out := m.script(turn, input)
	if out == nil {
		return nil, fmt.Errorf("scripted model: no turn %d", turn)
	}
	return out, nil
}

func (m *scriptedModel) Stream(ctx context.Context, input []*schema.Message, opts ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	out, err := m.Generate(ctx, input, opts...)
	if err != nil {
		return nil, err
	}
	return schema.StreamReaderFromArray([]*schema.Message{out}), nil
}

// WithTools keeps the tools and returns the same model: the script is
// what it answers, whatever it is bound to.
func (m *scriptedModel) WithTools(tools []*schema.ToolInfo) (model.ToolCallingChatModel, error) {
	m.mu.Lock()
	m.tools = tools
	m.mu.Unlock()
	return m, nil
}

// input returns what the model was given at turn n.
func (m *scriptedModel) input(n int) []*schema.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n >= len(m.inputs) {
		return nil
	}
	return m.inputs[n]
}

// turns builds a script from fixed messages, one per turn.
func turns(msgs ...*schema.Message) func(int, []*schema.Message) *schema.Message {
	return func(n int, _ []*schema.Message) *schema.Message {
		if n >= len(msgs) {
			return nil
		}
		return msgs[n]
	}
}

func call(id, name, args string) schema.ToolCall {
	return schema.ToolCall{ID: id, Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}
}

func calls(cs ...schema.ToolCall) *schema.Message { return schema.AssistantMessage("", cs) }

// toolMessage returns the tool message answering call id in msgs.
func toolMessage(msgs []*schema.Message, id string) (*schema.Message, bool) {
	for _, m := range msgs {
		if m.Role == schema.Tool && m.ToolCallID == id {
			return m, true
		}
	}
	return nil, false
}

// fakeTool is an invokable tool that counts its runs.
type fakeTool struct {
	name string
	runs atomic.Int64
	// run computes the output (a default echoes the arguments).
	run func(ctx context.Context, args string) (string, error)
}

func (f *fakeTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: f.name, Desc: "the " + f.name + " tool"}, nil
}

func (f *fakeTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	f.runs.Add(1)
	if f.run != nil {
		return f.run(ctx, args)
	}
	return f.name + " done: " + args, nil
}

// memStore is an in-memory adk.CheckPointStore / compose.CheckPointStore.
type memStore struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (s *memStore) Get(_ context.Context, id string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[id]
	return b, ok, nil
}

func (s *memStore) Set(_ context.Context, id string, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[id] = append([]byte(nil), b...)
	return nil
}

// tb is what the helpers need of a *testing.T, *testing.B or *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// newGate returns a gate over a new memory log.
func newGate(t tb, cfg toolgate.Policy) (*toolgate.Gate, *trace.Log) {
	t.Helper()
	log := trace.NewMemoryLog()
	g, err := toolgate.New(context.Background(), log, mustCompile(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return g, log
}

// checkLog verifies the log's chain and rebuilds each caller's kernel
// session from it, checking that the replayed budget is the gate's.
func checkLog(t tb, log *trace.Log, g *toolgate.Gate, callers ...string) {
	t.Helper()
	if err := verifyLog(log, g, callers...); err != nil {
		t.Fatal(err)
	}
}

func verifyLog(log *trace.Log, g *toolgate.Gate, callers ...string) error {
	ctx := context.Background()
	if _, err := log.Verify(ctx); err != nil {
		return fmt.Errorf("log does not verify: %w", err)
	}
	for _, c := range callers {
		s, err := kernel.Replay(ctx, log, g.Kernel(), g.SessionID(c))
		if err != nil {
			return fmt.Errorf("replay of caller %q: %w", c, err)
		}
		m, ok := g.Meter(c)
		if !ok {
			return fmt.Errorf("caller %q has no meter", c)
		}
		got, want := s.Meter().Budget(), m.Budget()
		if got.Net() != want.Net() || got.Gross() != want.Gross() || s.Meter().Steps() != m.Steps() {
			return fmt.Errorf("caller %q: replayed %v, gate %v", c, s.Meter(), m)
		}
	}
	return nil
}

// results decodes the log's toolgate.result entries.
func results(t tb, log *trace.Log) []gatelog.Result {
	t.Helper()
	var out []gatelog.Result
	for e, err := range log.Entries(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind != gatelog.KindResult {
			continue
		}
		d, err := gatelog.Decode(e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d.(gatelog.Result))
	}
	return out
}

// runResult is what an agent run produced.
type runResult struct {
	messages    []*schema.Message
	interrupted *adk.InterruptInfo
	err         error
}

// last returns the run's last message's content.
func (r runResult) last() string {
	if len(r.messages) == 0 {
		return ""
	}
	return r.messages[len(r.messages)-1].Content
}

// drain reads an agent run to its end.
func drain(it *adk.AsyncIterator[*adk.AgentEvent]) runResult {
	var r runResult
	for {
		ev, ok := it.Next()
		if !ok {
			return r
		}
		if ev.Err != nil {
			r.err = errors.Join(r.err, ev.Err)
		}
		if ev.Output != nil && ev.Output.MessageOutput != nil {
			msg, err := ev.Output.MessageOutput.GetMessage()
			if err != nil {
				r.err = errors.Join(r.err, err)
			} else if msg != nil {
				r.messages = append(r.messages, msg)
			}
		}
		if ev.Action != nil && ev.Action.Interrupted != nil {
			r.interrupted = ev.Action.Interrupted
		}
	}
}

// streamTool is a streamable tool that streams fixed chunks.
type streamTool struct {
	name   string
	chunks []string
	runs   atomic.Int64
}

func (s *streamTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: s.name, Desc: "the " + s.name + " tool"}, nil
}

func (s *streamTool) StreamableRun(context.Context, string, ...tool.Option) (*schema.StreamReader[string], error) {
	s.runs.Add(1)
	return schema.StreamReaderFromArray(s.chunks), nil
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
