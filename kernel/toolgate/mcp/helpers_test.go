package mcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

var ctx = context.Background()

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	require.TestingT
	Cleanup(func())
}

// The protocol versions the tests run the approval flow on: the current
// one (input-required results, SEP-2322) and the last before it
// (ServerSession.Elicit).
const (
	currentProtocol = "" // the SDK's latest: 2026-07-28
	legacyProtocol  = "2025-11-25"
)

// catalogue is the tests' policy: reads are cheap, search costs a unit,
// deletes need a human.
func catalogue(budget kernel.Cost) toolgate.Policy {
	return toolgate.Policy{
		Budget:  budget,
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Match: "read_file", Cost: kernel.Unit / 10},
			{Match: "write_file", Cost: kernel.Unit / 2, Tier: claims.TierModify},
			{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete},
			{Match: "search", Cost: kernel.Unit},
		},
	}
}

// tools is an in-process MCP server's tools that count their executions.
type tools struct {
	mu   sync.Mutex
	runs map[string]int
}

func (ts *tools) count(name string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.runs[name]
}

func (ts *tools) total() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := 0
	for _, v := range ts.runs {
		n += v
	}
	return n
}

type pathIn struct {
	Path string `json:"path"`
}

func (ts *tools) add(srv *sdk.Server, names ...string) {
	for _, name := range names {
		sdk.AddTool(srv, &sdk.Tool{Name: name}, func(_ context.Context, _ *sdk.CallToolRequest, in pathIn) (*sdk.CallToolResult, any, error) {
			ts.mu.Lock()
			ts.runs[name]++
			ts.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: name + " " + in.Path + " done"}}}, nil, nil
		})
	}
}

// rig is an MCP server behind a Guard and the clients connected to it.
type rig struct {
	log   *trace.Log
	gate  *toolgate.Gate
	guard *gatemcp.Guard
	srv   *sdk.Server
	tools *tools
}

func newRig(t tb, cfg toolgate.Policy) *rig {
	return newRigWith(t, cfg, gatemcp.Options{})
}

// newRigWith is newRig with the Guard's options and the gate's.
func newRigWith(t tb, cfg toolgate.Policy, opts gatemcp.Options, gateOpts ...toolgate.Option) *rig {
	log := trace.NewMemoryLog()
	g, err := toolgate.New(ctx, log, mustCompile(cfg), gateOpts...)
	require.NoError(t, err)
	gd, err := gatemcp.New(g, opts)
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "tools", Version: "v1"}, nil)
	ts := &tools{runs: map[string]int{}}
	ts.add(srv, "read_file", "write_file", "delete_file", "search", "format_disk")
	srv.AddReceivingMiddleware(gd.Middleware())
	return &rig{log: log, gate: g, guard: gd, srv: srv, tools: ts}
}

// answers is a human at the client: it answers every elicitation with
// its action (or, when script is set, with what script returns for the
// n-th question, from 0) and records the questions.
type answers struct {
	action string
	script func(n int) string
	mu     sync.Mutex
	asked  []string
	// requests counts the elicitation/create requests the client
	// received: the way the legacy protocol asks; the current one asks
	// through input-required results instead.
	requests int
}

func (a *answers) countRequests(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "elicitation/create" {
			a.mu.Lock()
			a.requests++
			a.mu.Unlock()
		}
		return next(ctx, method, req)
	}
}

func (a *answers) elicitRequests() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.requests
}

func (a *answers) handler(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	a.mu.Lock()
	n := len(a.asked)
	a.asked = append(a.asked, req.Params.Message)
	action := a.action
	a.mu.Unlock()
	if a.script != nil {
		action = a.script(n)
	}
	res := &sdk.ElicitResult{Action: action}
	if action == "accept" {
		res.Content = map[string]any{"reason": "looks right"}
	}
	return res, nil
}

// setAction changes the answer to the next questions.
func (a *answers) setAction(action string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.action = action
}

func (a *answers) questions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// connect connects a client to the rig's server over in-memory
// transports, on protocol version (currentProtocol: the latest). A nil
// human makes a client without elicitation. It returns the client's
// session and the caller key its calls are charged to.
func (r *rig) connect(t tb, version string, human *answers, opts *sdk.ClientOptions) (*sdk.ClientSession, string) {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := r.srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	if opts == nil {
		opts = &sdk.ClientOptions{}
	}
	if human != nil {
		opts.ElicitationHandler = human.handler
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, opts)
	if human != nil {
		client.AddReceivingMiddleware(human.countRequests)
	}
	cs, err := client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs, r.guard.ConnectionKey(ss)
}

func call(t tb, cs *sdk.ClientSession, tool, path string) *sdk.CallToolResult {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"path": path}})
	require.NoError(t, err)
	return res
}

// text is a result's text content.
func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		} else {
			parts = append(parts, fmt.Sprintf("%T", c))
		}
	}
	return strings.Join(parts, "\n")
}

// replays checks the log's chain and rebuilds the caller's kernel session
// from it, which must end where the gate's did.
func replays(t tb, log *trace.Log, g *toolgate.Gate, caller string) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
	_, err := log.Verify(ctx)
	require.NoError(t, err, "the log verifies")
	s, err := kernel.Replay(ctx, log, g.Kernel(), g.SessionID(caller))
	require.NoError(t, err, "the caller's kernel session replays")
	m, ok := g.Meter(caller)
	require.True(t, ok)
	require.Equal(t, m.String(), s.Meter().String(), "replay ends with the gate's budget and steps")
}

// records is a slog.Handler that keeps what the Guard logs.
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r } // the tests read messages and record attributes only
func (r *records) WithGroup(string) slog.Handler            { return r }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	r.msgs = append(r.msgs, b.String())
	r.mu.Unlock()
	return nil
}

// matching returns the records that contain every one of parts.
func (r *records) matching(parts ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
next:
	for _, m := range r.msgs {
		for _, p := range parts {
			if !strings.Contains(m, p) {
				continue next
			}
		}
		out = append(out, m)
	}
	return out
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
