package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// muxServers are the in-process upstreams of the Mux tests, in the
// order they are added, and their tools in the order each lists them.
var muxServers = []struct {
	name  string
	tools []string
}{
	{"files", []string{"read_file", "search"}},
	{"notes", []string{"read_file", "write_file"}},
	{"mail", []string{"write_file"}},
}

// muxed is a Guard and a Mux in front of in-process upstreams that may
// be stopped and started again.
type muxed struct {
	gate  *toolgate.Gate
	log   *trace.Log
	mux   *gatemcp.Mux
	srv   *sdk.Server
	tools map[string]*tools
	up    map[string]*sdk.ClientSession
	ups   map[string]*sdk.Server // the upstreams' servers
	cs    *sdk.ClientSession
}

// muxPolicy prices every server's tools by their own name: search 1,
// read_file 0.1, write_file 0.5.
func muxPolicy(budget kernel.Cost) toolgate.Policy {
	price := map[string]kernel.Cost{"search": kernel.Unit, "read_file": kernel.Unit / 10, "write_file": kernel.Unit / 2}
	cfg := toolgate.Policy{Budget: budget, MinCost: kernel.Unit / 100}
	for _, s := range muxServers {
		for _, tool := range s.tools {
			cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: s.name + "__" + tool, Cost: price[tool], Tier: claims.TierReadOnly})
		}
	}
	return cfg
}

func newMuxed(t tb, cfg toolgate.Policy) *muxed {
	log := trace.NewMemoryLog()
	g, err := toolgate.New(ctx, log, mustCompile(cfg))
	require.NoError(t, err)
	m := gatemcp.NewMux(nil)
	gd, err := gatemcp.New(g, gatemcp.Options{Mux: m})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: "v1"}, m.ServerOptions(nil))
	srv.AddReceivingMiddleware(gd.Middleware(), m.Middleware())
	mx := &muxed{gate: g, log: log, mux: m, srv: srv, tools: map[string]*tools{}, up: map[string]*sdk.ClientSession{}, ups: map[string]*sdk.Server{}}
	for _, s := range muxServers {
		_, err := m.Add(gatemcp.MuxServer{Name: s.name})
		require.NoError(t, err)
		mx.tools[s.name] = &tools{runs: map[string]int{}}
		mx.start(t, s.name)
	}
	st, ct := sdk.NewInMemoryTransports()
	_, err = srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	mx.cs, err = sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mx.cs.Close() })
	return mx
}

// start starts server's upstream anew and attaches it.
func (mx *muxed) start(t tb, server string) {
	up := sdk.NewServer(&sdk.Implementation{Name: server, Version: "v1"}, nil)
	for _, s := range muxServers {
		if s.name == server {
			mx.tools[server].add(up, s.tools...)
		}
	}
	st, ct := sdk.NewInMemoryTransports()
	_, err := up.Connect(ctx, st, nil)
	require.NoError(t, err)
	p := mx.mux.Proxy(server)
	client := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "v1"}, p.ClientOptions())
	client.AddReceivingMiddleware(p.RelayMiddleware())
	cs, err := client.Connect(ctx, p.Transport(ct), nil)
	require.NoError(t, err)
	require.NoError(t, mx.mux.Attach(ctx, mx.srv, server, cs))
	mx.up[server], mx.ups[server] = cs, up
	t.Cleanup(func() { _ = cs.Close() })
}

// stop ends server's upstream session, as when its process exits.
func (mx *muxed) stop(server string) {
	cs := mx.up[server]
	_ = cs.Close()
	mx.mux.Detach(server, cs)
}

func (mx *muxed) listed(t tb) []string {
	res, err := mx.cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestMuxListIsDeterministic: the merged tools/list is the servers in
// the order added, each server's tools in its order, named
// server__tool, each definition as its server wrote it but its name.
func TestMuxListIsDeterministic(t *testing.T) {
	mx := newMuxed(t, muxPolicy(100*kernel.Unit))
	want := []string{"files__read_file", "files__search", "notes__read_file", "notes__write_file", "mail__write_file"}
	for range 3 {
		assert.Equal(t, want, mx.listed(t))
	}
	assert.Equal(t, want, mx.mux.Tools())
	res, err := mx.cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.NotNil(t, res.Tools[0].InputSchema, "the definition is the server's")
}

// TestMuxRoutesByServer: a call reaches the server its name names,
// under the tool's own name, and no other.
func TestMuxRoutesByServer(t *testing.T) {
	mx := newMuxed(t, muxPolicy(100*kernel.Unit))
	res, err := mx.cs.CallTool(ctx, &sdk.CallToolParams{Name: "notes__read_file", Arguments: map[string]any{"path": "a"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, "read_file a done", res.Content[0].(*sdk.TextContent).Text)
	assert.Equal(t, 1, mx.tools["notes"].count("read_file"))
	assert.Equal(t, 0, mx.tools["files"].count("read_file"))

	for _, name := range []string{"read_file", "nobody__read_file", "files__write_file", "files__", "__search"} {
		res, err := mx.cs.CallTool(ctx, &sdk.CallToolParams{Name: name})
		require.NoError(t, err)
		assert.True(t, res.IsError, name)
	}
	for _, s := range muxServers {
		assert.Equal(t, map[string]int{}, without(mx.tools[s.name], "read_file", s.name == "notes"), s.name)
	}
}

// without returns ts's counts without tool when skip.
func without(ts *tools, tool string, skip bool) map[string]int {
	out := map[string]int{}
	for k, v := range ts.runs {
		if k == tool && skip {
			continue
		}
		out[k] = v
	}
	return out
}

// TestMuxDownServerLeavesTheListAndReturns: a server that stops leaves
// tools/list and its calls fail uncharged, the others' calls pass, and
// it comes back when it is attached again; the clients are told each
// time.
func TestMuxDownServerLeavesTheListAndReturns(t *testing.T) {
	mx := newMuxed(t, muxPolicy(100*kernel.Unit))
	changed := make(chan struct{}, 16)
	st, ct := sdk.NewInMemoryTransports()
	_, err := mx.srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	watcher, err := sdk.NewClient(&sdk.Implementation{Name: "watcher", Version: "v1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() { _ = watcher.Close() }()

	mx.stop("notes")
	<-changed
	assert.Equal(t, []string{"files__read_file", "files__search", "mail__write_file"}, mx.listed(t))
	res, err := mx.cs.CallTool(ctx, &sdk.CallToolParams{Name: "notes__read_file"})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*sdk.TextContent).Text, `server "notes" is not running`)
	res, err = mx.cs.CallTool(ctx, &sdk.CallToolParams{Name: "files__search", Arguments: map[string]any{"path": "p"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)

	mx.start(t, "notes")
	<-changed
	assert.Equal(t, []string{"files__read_file", "files__search", "notes__read_file", "notes__write_file", "mail__write_file"}, mx.listed(t))
	res, err = mx.cs.CallTool(ctx, &sdk.CallToolParams{Name: "notes__read_file", Arguments: map[string]any{"path": "p"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content[0].(*sdk.TextContent).Text)
	assert.Equal(t, kernel.Unit+kernel.Unit/10, spentBy(t, mx.gate, mx.log), "charged for the two calls that ran")
}

// spentBy is the net spend of the one caller of an in-memory client.
func spentBy(t tb, g *toolgate.Gate, log *trace.Log) kernel.Cost {
	bs, err := toolgate.Budgets(ctx, log, g.Compiled(), time.Now())
	require.NoError(t, err)
	var total kernel.Cost
	for _, b := range bs {
		total += b.Spent
	}
	return total
}

// TestMuxRefusesBadServers: a name against the rule, a name served
// already, and an upstream that lists a tool twice are refused, each with
// one line naming the server.
func TestMuxRefusesBadServers(t *testing.T) {
	m := gatemcp.NewMux(nil)
	for _, bad := range []string{"", "a_b", "A", "-a", strings.Repeat("a", 33), "a__b"} {
		_, err := m.Add(gatemcp.MuxServer{Name: bad})
		assert.Error(t, err, bad)
	}
	_, err := m.Add(gatemcp.MuxServer{Name: "twice"})
	require.NoError(t, err)
	_, err = m.Add(gatemcp.MuxServer{Name: "twice"})
	assert.ErrorContains(t, err, `server "twice" is served already`)

	up := sdk.NewServer(&sdk.Implementation{Name: "twice", Version: "v1"}, nil)
	up.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/list" {
				return &gatemcp.RawResult{JSON: json.RawMessage(`{"tools":[{"name":"x","inputSchema":{"type":"object"}},{"name":"x","inputSchema":{"type":"object"}}]}`)}, nil
			}
			return next(ctx, method, req)
		}
	})
	st, ct := sdk.NewInMemoryTransports()
	_, err = up.Connect(ctx, st, nil)
	require.NoError(t, err)
	p := m.Proxy("twice")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "v1"}, p.ClientOptions()).Connect(ctx, p.Transport(ct), nil)
	require.NoError(t, err)
	defer func() { _ = cs.Close() }()
	srv := sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: "v1"}, nil)
	err = m.Attach(ctx, srv, "twice", cs)
	require.Error(t, err)
	assert.Equal(t, `server "twice" lists tool "x" more than once: its name "twice__x" would name two tools; fix the server`, err.Error())
	assert.False(t, m.Up("twice"))
	assert.Empty(t, m.Tools())
}

// TestMuxRoutesAndChargesExactly is a state machine over three
// upstreams that stop and start again between calls, against a naive
// model: tools/list is the tools of the servers running, in order; a
// call runs on its server exactly when that server runs, and the caller
// is charged exactly the calls that ran, at their rules' costs.
func TestMuxRoutesAndChargesExactly(t *testing.T) {
	price := map[string]kernel.Cost{"search": kernel.Unit, "read_file": kernel.Unit / 10, "write_file": kernel.Unit / 2}
	rapid.Check(t, func(rt *rapid.T) {
		mx := newMuxed(rt, muxPolicy(1000*kernel.Unit))
		running := map[string]bool{"files": true, "notes": true, "mail": true}
		runs := map[string]int{} // server/tool → runs
		var want kernel.Cost
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				s := rapid.SampledFrom(muxServers).Draw(rt, "server")
				tool := rapid.SampledFrom(s.tools).Draw(rt, "tool")
				res, err := mx.cs.CallTool(ctx, &sdk.CallToolParams{Name: s.name + "__" + tool, Arguments: map[string]any{"path": "p"}})
				require.NoError(rt, err)
				require.Equal(rt, !running[s.name], res.IsError)
				if running[s.name] {
					runs[s.name+"/"+tool]++
					want += price[tool]
				}
			},
			"stop": func(rt *rapid.T) {
				s := rapid.SampledFrom(muxServers).Draw(rt, "server").name
				if !running[s] {
					rt.Skip("not running")
				}
				mx.stop(s)
				running[s] = false
			},
			"start": func(rt *rapid.T) {
				s := rapid.SampledFrom(muxServers).Draw(rt, "server").name
				if running[s] {
					rt.Skip("running")
				}
				mx.start(rt, s)
				running[s] = true
			},
			"": func(rt *rapid.T) {
				var names []string
				for _, s := range muxServers {
					if running[s.name] {
						for _, tool := range s.tools {
							names = append(names, s.name+"__"+tool)
						}
					}
				}
				require.Equal(rt, names, mx.mux.Tools())
				require.Equal(rt, want, spentBy(rt, mx.gate, mx.log))
				for _, s := range muxServers {
					for _, tool := range s.tools {
						require.Equal(rt, runs[s.name+"/"+tool], mx.tools[s.name].count(tool), "%s/%s", s.name, tool)
					}
				}
			},
		})
		if !slices.Contains([]bool{running["files"], running["notes"], running["mail"]}, true) {
			return
		}
		require.Equal(rt, mx.mux.Tools(), mx.listed(rt))
	})
}

// TestMuxListChangedReachesClients: an upstream's
// notifications/tools/list_changed reaches the gateway's clients, and
// the merged list has the new tool in its server's place.
func TestMuxListChangedReachesClients(t *testing.T) {
	mx := newMuxed(t, muxPolicy(100*kernel.Unit))
	changed := make(chan struct{}, 16)
	st, ct := sdk.NewInMemoryTransports()
	_, err := mx.srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	watcher, err := sdk.NewClient(&sdk.Implementation{Name: "watcher", Version: "v1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() { _ = watcher.Close() }()

	mx.tools["notes"].add(mx.ups["notes"], "search")
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed reached the client")
	}
	require.Eventually(t, func() bool { return slices.Contains(mx.mux.Tools(), "notes__search") }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"files__read_file", "files__search", "notes__read_file", "notes__search", "notes__write_file", "mail__write_file"}, mx.mux.Tools())
	// The Guard lists only what the policy lets the caller call.
	assert.Equal(t, []string{"files__read_file", "files__search", "notes__read_file", "notes__write_file", "mail__write_file"}, mx.listed(t))
}

// TestMuxCallTimeout: a server's CallTimeout bounds its calls whose rule
// has no timeout of its own: a call that outlasts it times out, recorded
// as failed and settled by its rule (refunded here), while another
// server's call is unbounded and a rule's own timeout wins.
func TestMuxCallTimeout(t *testing.T) {
	cfg := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "slow__wait", Cost: kernel.Unit, RefundOnError: true},
		{Match: "calm__wait", Cost: kernel.Unit, RefundOnError: true},
		{Match: "slow__patient", Cost: kernel.Unit, RefundOnError: true, Timeout: 5 * time.Second},
	}}
	log := trace.NewMemoryLog()
	g, err := toolgate.New(ctx, log, mustCompile(cfg))
	require.NoError(t, err)
	m := gatemcp.NewMux(nil)
	gd, err := gatemcp.New(g, gatemcp.Options{Mux: m})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "gateway", Version: "v1"}, m.ServerOptions(nil))
	srv.AddReceivingMiddleware(gd.Middleware(), m.Middleware())
	for name, timeout := range map[string]time.Duration{"slow": 50 * time.Millisecond, "calm": 0} {
		p, err := m.Add(gatemcp.MuxServer{Name: name, CallTimeout: timeout})
		require.NoError(t, err)
		up := sdk.NewServer(&sdk.Implementation{Name: name, Version: "v1"}, nil)
		wait := func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-ctx.Done():
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
		}
		sdk.AddTool(up, &sdk.Tool{Name: "wait"}, wait)
		sdk.AddTool(up, &sdk.Tool{Name: "patient"}, wait)
		st, ct := sdk.NewInMemoryTransports()
		_, err = up.Connect(ctx, st, nil)
		require.NoError(t, err)
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "gateway", Version: "v1"}, p.ClientOptions()).Connect(ctx, p.Transport(ct), nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		require.NoError(t, m.Attach(ctx, srv, name, cs))
	}
	st, ct := sdk.NewInMemoryTransports()
	_, err = srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	agent, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer func() { _ = agent.Close() }()

	res, err := agent.CallTool(ctx, &sdk.CallToolParams{Name: "slow__wait", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	assert.Equal(t, `tool "slow__wait" timed out after 50ms`, res.Content[0].(*sdk.TextContent).Text)
	res, err = agent.CallTool(ctx, &sdk.CallToolParams{Name: "calm__wait", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	res, err = agent.CallTool(ctx, &sdk.CallToolParams{Name: "slow__patient", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	assert.Equal(t, 2*kernel.Unit, spentBy(t, g, log), "the timed-out call refunded, the others charged")
}
