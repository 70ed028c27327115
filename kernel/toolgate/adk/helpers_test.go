package adk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/adk/v2/tool/toolconfirmation"
	"google.golang.org/genai"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/adk"
	"github.com/verity-go/verity/trace"
)

// spans records every span ADK ends, through the global tracer provider
// its telemetry package draws its tracer from (internal/telemetry:
// otel.GetTracerProvider().Tracer(...), which delegates to the provider
// set here).
var spans = tracetest.NewSpanRecorder()

func TestMain(m *testing.M) {
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	os.Exit(m.Run())
}

const (
	appName = "verity-test"
	userID  = "alice"
)

// tb is what the helpers need of a test: a *testing.T, *testing.B or
// *rapid.T.
type tb interface {
	require.TestingT
	Fatalf(format string, args ...any)
	Cleanup(func())
}

func helper(t tb) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
}

func units(n int64) kernel.Cost { return kernel.Cost(n) * kernel.Unit }

// script is a fake model (ADK's model.LLM, model/llm.go:
//
//	Name() string
//	GenerateContent(ctx context.Context, req *LLMRequest, stream bool) iter.Seq2[*LLMResponse, error]
//
// ). Each user message makes it emit the next batch of function calls
// (all in one response: ADK runs them concurrently); a request that ends
// with function responses makes it answer with text quoting them, so the
// test can read what the model read.
type script struct {
	name string

	mu      sync.Mutex
	batches [][]*genai.FunctionCall
	repeat  []*genai.FunctionCall // emitted once the batches are used up
	seen    []string              // one line per request: what its last content held
}

func newScript(name string, batches ...[]*genai.FunctionCall) *script {
	return &script{name: name, batches: batches}
}

func (s *script) Name() string { return s.name }

func (s *script) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		s.mu.Lock()
		var last *genai.Content
		if n := len(req.Contents); n > 0 {
			last = req.Contents[n-1]
		}
		line := describe(last)
		if s.repeat == nil {
			s.seen = append(s.seen, line)
		}
		var resp *model.LLMResponse
		switch {
		case last != nil && hasFunctionResponse(last):
			resp = &model.LLMResponse{Content: genai.NewContentFromText("read: "+line, genai.RoleModel)}
		case len(s.batches) > 0 || s.repeat != nil:
			batch := s.repeat
			if len(s.batches) > 0 {
				batch = s.batches[0]
				s.batches = s.batches[1:]
			}
			parts := make([]*genai.Part, len(batch))
			for i, fc := range batch {
				cp := *fc
				parts[i] = &genai.Part{FunctionCall: &cp}
			}
			resp = &model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: parts}}
		default:
			resp = &model.LLMResponse{Content: genai.NewContentFromText("nothing to do", genai.RoleModel)}
		}
		s.mu.Unlock()
		yield(resp, nil)
	}
}

// requests returns what the last content of each request held.
func (s *script) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func hasFunctionResponse(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p.FunctionResponse != nil {
			return true
		}
	}
	return false
}

// describe renders a content's function responses as "name=json" lines
// joined with "; ", or its text.
func describe(c *genai.Content) string {
	if c == nil {
		return ""
	}
	var out []string
	for _, p := range c.Parts {
		switch {
		case p.FunctionResponse != nil:
			b, _ := json.Marshal(p.FunctionResponse.Response)
			out = append(out, p.FunctionResponse.Name+"="+string(b))
		case p.Text != "":
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "; ")
}

func call(id, name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{ID: id, Name: name, Args: args}
}

// tools are the fake tools: each counts its runs.
type tools struct {
	reads, deletes, sends atomic.Int64
}

type pathArgs struct {
	Path string `json:"path"`
}

type pathResult struct {
	Path string `json:"path"`
	Done string `json:"done"`
}

func (ts *tools) list(t tb) []tool.Tool {
	helper(t)
	read, err := functiontool.New(functiontool.Config{Name: "read_file", Description: "reads a file"},
		func(_ agent.Context, a pathArgs) (pathResult, error) {
			ts.reads.Add(1)
			return pathResult{Path: a.Path, Done: "read"}, nil
		})
	require.NoError(t, err)
	del, err := functiontool.New(functiontool.Config{Name: "delete_file", Description: "deletes a file"},
		func(_ agent.Context, a pathArgs) (pathResult, error) {
			ts.deletes.Add(1)
			return pathResult{Path: a.Path, Done: "deleted"}, nil
		})
	require.NoError(t, err)
	send, err := functiontool.New(functiontool.Config{Name: "send", Description: "sends a message"},
		func(_ agent.Context, a pathArgs) (pathResult, error) {
			ts.sends.Add(1)
			return pathResult{Path: a.Path, Done: "sent"}, nil
		})
	require.NoError(t, err)
	return []tool.Tool{read, del, send}
}

func testConfig() toolgate.Policy {
	return toolgate.Policy{
		Budget:  units(10),
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_file", Cost: kernel.Unit / 10, Description: "reads a file"},
			{Match: "delete_file", Cost: units(1), Tier: claims.TierDelete, Description: "deletes a file"},
			{Match: "send", Cost: units(3), Description: "sends a message"},
			{Match: "transfer_to_agent", Cost: kernel.Unit / 100, Description: "hands the conversation to another agent"},
		},
	}
}

func newLog(t tb) *trace.Log {
	helper(t)
	log, err := trace.NewLog(trace.NewMemory())
	require.NoError(t, err)
	return log
}

func newGate(t tb, log *trace.Log, cfg toolgate.Policy) *toolgate.Gate {
	helper(t)
	g, err := toolgate.New(context.Background(), log, mustCompile(cfg))
	require.NoError(t, err)
	return g
}

// world is one agent and its runner, guarded by callbacks or the plugin.
type world struct {
	log     *trace.Log
	gate    *toolgate.Gate
	guard   *adk.Guard
	tools   *tools
	model   *script
	runner  *runner.Runner
	session string
}

type setup struct {
	cfg       toolgate.Policy
	plugin    bool // the runner plugin instead of the agent's callbacks
	both      bool // the plugin and the agent's callbacks
	log       *trace.Log
	extraTool []tool.Tool
}

func newWorld(t tb, s setup, batches ...[]*genai.FunctionCall) *world {
	helper(t)
	w := &world{log: s.log, tools: &tools{}, model: newScript("scripted", batches...), session: sessionName(t)}
	if w.log == nil {
		w.log = newLog(t)
	}
	if s.cfg.Budget == 0 {
		s.cfg = testConfig()
	}
	w.gate = newGate(t, w.log, s.cfg)
	var err error
	w.guard, err = adk.New(w.gate)
	require.NoError(t, err)
	cfg := llmagent.Config{Name: "assistant", Model: w.model, Tools: append(w.tools.list(t), s.extraTool...)}
	if !s.plugin || s.both {
		w.guard.Install(&cfg)
	}
	a, err := llmagent.New(cfg)
	require.NoError(t, err)
	rc := runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true}
	if s.plugin || s.both {
		p, err := w.guard.Plugin()
		require.NoError(t, err)
		rc.PluginConfig.Plugins = append(rc.PluginConfig.Plugins, p)
	}
	w.runner, err = runner.New(rc)
	require.NoError(t, err)
	return w
}

var sessionSeq atomic.Int64

// sessionName is a session id unique in the process (spans are recorded
// process-wide and found by their caller attribute).
func sessionName(t tb) string {
	name := "check"
	if n, ok := t.(interface{ Name() string }); ok {
		name = strings.ReplaceAll(n.Name(), "/", "_")
	}
	return fmt.Sprintf("%s-%d", name, sessionSeq.Add(1))
}

func (w *world) caller() string { return adk.SessionCaller(appName, userID, w.session) }

// say runs one user turn and returns its events.
func (w *world) say(t tb, text string) []*session.Event {
	helper(t)
	return w.send(t, genai.NewContentFromText(text, genai.RoleUser))
}

func (w *world) send(t tb, msg *genai.Content) []*session.Event {
	helper(t)
	var events []*session.Event
	for ev, err := range w.runner.Run(context.Background(), userID, w.session, msg, agent.RunConfig{}) {
		require.NoError(t, err)
		events = append(events, ev)
	}
	return events
}

// confirm answers the pending adk_request_confirmation call the way a
// client does: a user FunctionResponse for it.
func (w *world) confirm(t tb, id string, confirmed bool) []*session.Event {
	helper(t)
	return w.send(t, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: id, Name: toolconfirmation.FunctionCallName, Response: map[string]any{"confirmed": confirmed},
	}}}})
}

// confirmationRequests returns the adk_request_confirmation calls among
// events.
func confirmationRequests(events []*session.Event) []*genai.FunctionCall {
	var out []*genai.FunctionCall
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == toolconfirmation.FunctionCallName {
				out = append(out, p.FunctionCall)
			}
		}
	}
	return out
}

// functionResponses returns the function responses among events, by name.
func functionResponses(events []*session.Event, name string) []map[string]any {
	var out []map[string]any
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.Name == name {
				out = append(out, p.FunctionResponse.Response)
			}
		}
	}
	return out
}

// entries reads the whole log.
func entries(t tb, log *trace.Log) []trace.Entry {
	helper(t)
	var out []trace.Entry
	for e, err := range log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func kinds(es []trace.Entry) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[e.Kind]++
	}
	return m
}

// checkLog verifies the chain and replays each caller's kernel session
// from it: the replayed session's spend equals the gate's.
func checkLog(t tb, log *trace.Log, g *toolgate.Gate, callers ...string) {
	helper(t)
	_, err := trace.Verify(entries(t, log))
	require.NoError(t, err, "the log verifies")
	for _, c := range callers {
		s, err := kernel.Replay(context.Background(), log, g.Kernel(), g.SessionID(c))
		require.NoError(t, err, "caller %q replays", c)
		m, ok := g.Meter(c)
		require.True(t, ok)
		require.Equal(t, m.Budget().Net(), s.Meter().Budget().Net(), "caller %q: replayed spend", c)
		require.Equal(t, m.Steps(), s.Meter().Steps(), "caller %q: replayed steps", c)
		require.LessOrEqual(t, s.Meter().Budget().Net(), s.Meter().Budget().Limit(), "T1")
	}
}

// failingStore is a memory store whose appends fail while fail is set.
type failingStore struct {
	*trace.Memory
	fail atomic.Bool
}

var errDiskFull = errors.New("disk full")

func (s *failingStore) Append(ctx context.Context, es ...trace.Entry) error {
	if s.fail.Load() {
		return errDiskFull
	}
	return s.Memory.Append(ctx, es...)
}

// toolSpans returns the ended execute_tool spans whose caller attribute
// is caller.
func toolSpans(caller string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if !strings.HasPrefix(s.Name(), "execute_tool ") {
			continue
		}
		for _, a := range s.Attributes() {
			if a.Key == adk.AttrCaller && a.Value.AsString() == caller {
				out = append(out, s)
				break
			}
		}
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key string) (string, bool) {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.String(), true
		}
	}
	return "", false
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func atoi(t tb, s string) int {
	helper(t)
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// confirmationFields reads the hint and payload of the toolConfirmation
// argument of an adk_request_confirmation call, as a client would (the
// event may hold the struct or its JSON form).
func confirmationFields(t tb, v any) (string, map[string]any) {
	helper(t)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var tc struct {
		Hint    string         `json:"hint"`
		Payload map[string]any `json:"payload"`
	}
	require.NoError(t, json.Unmarshal(b, &tc))
	return tc.Hint, tc.Payload
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
