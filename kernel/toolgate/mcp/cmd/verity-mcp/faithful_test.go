package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// legacyProtocol is the version the tests that need the upstream's own
// requests relayed speak: before 2026-07-28 a server may send requests
// to its client while it serves a call.
const legacyProtocol = "2025-11-25"

// rawPolicy is a policy for rawserver's tools; tools and top are the
// entries of "tools" and extra top-level members.
func rawPolicy(t testing.TB, tools, top string) string {
	p := filepath.Join(t.TempDir(), "policy.json")
	text := fmt.Sprintf(`{"version": 2, "budget": "10", "min_cost": "0.01"%s, "tools": [%s]}`, top, tools)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// rawProxy is verity-mcp in-process in front of rawserver, with a client
// that keeps every byte the proxy wrote to it.
type rawProxy struct {
	*proxy
	journal string
	log     string
	policy  string
	wire    *syncBuffer // what the proxy wrote to its client
	changed chan struct{}
}

type rawClient struct {
	elicit func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error)
	//lint:ignore SA1019 the test plays a client on a protocol before 2026-07-28, whose roots the proxy must relay
	roots []*sdk.Root
}

func startRaw(t testing.TB, policy string, flags []string, rc *rawClient) *rawProxy {
	dir := t.TempDir()
	rp := &rawProxy{journal: filepath.Join(dir, "journal"), log: filepath.Join(dir, "trace.log"), policy: policy,
		wire: &syncBuffer{}, changed: make(chan struct{}, 16)}
	args := append([]string{"-policy", policy, "-log", rp.log}, flags...)
	args = append(args, "--", bins.rawserver, "-journal", rp.journal)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		code := run(ctx, args, inR, outW, p.stderr)
		_ = outW.Close()
		_ = inR.Close()
		p.done <- code
	}()
	opts := &sdk.ClientOptions{ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
		select {
		case rp.changed <- struct{}{}:
		default:
		}
	}}
	if rc != nil {
		opts.ElicitationHandler = rc.elicit
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, opts)
	if rc != nil && rc.roots != nil {
		//lint:ignore SA1019 the test plays a client on a protocol before 2026-07-28, whose roots the proxy must relay
		client.AddRoots(rc.roots...)
	}
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: io.NopCloser(io.TeeReader(outR, rp.wire)), Writer: inW},
		&sdk.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		cancel()
		t.Fatalf("connecting to the proxy: %v\nstderr:\n%s", err, p.stderr.String())
	}
	p.cs = cs
	rp.proxy = p
	t.Cleanup(func() {
		cancel()
		_ = cs.Close()
	})
	return rp
}

func (rp *rawProxy) journaled(t testing.TB) []string {
	b, err := os.ReadFile(rp.journal)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

// spent stops the proxy and returns what the log says the caller spent.
func (rp *rawProxy) spent(t testing.TB) (kernel.Cost, []gatelog.Result) {
	t.Helper()
	code := rp.stop(t)
	require.Equal(t, 0, code, rp.stderr.String())
	log, err := trace.OpenFileReadOnly(rp.log)
	require.NoError(t, err)
	defer func() { _ = log.Close() }()
	l, err := trace.NewLog(log)
	require.NoError(t, err)
	pol, err := toolgate.LoadPolicy(rp.policy)
	require.NoError(t, err)
	comp, err := pol.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(context.Background(), trace.NewMemoryLog(), comp)
	require.NoError(t, err)
	s, err := kernel.Replay(context.Background(), l, g.Kernel(), g.SessionID("stdio"))
	require.NoError(t, err)
	var results []gatelog.Result
	for e, err := range l.Entries(context.Background(), 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindResult {
			var r gatelog.Result
			require.NoError(t, json.Unmarshal(e.Payload, &r))
			results = append(results, r)
		}
	}
	return s.Meter().Budget().Net(), results
}

const allTools = `{"match": "zeta", "cost": "0.1"}, {"match": "alpha", "cost": "0.1"}, {"match": "grow", "cost": "0.1"},
	{"match": "omega", "cost": "0.1"}, {"match": "ask", "cost": "0.1"}, {"match": "roots", "cost": "0.1"}`

func TestUnlistedToolRefusedBeforeApproval(t *testing.T) {
	asked := 0
	var mu sync.Mutex
	rc := &rawClient{elicit: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		return &sdk.ElicitResult{Action: "accept"}, nil
	}}
	pol := rawPolicy(t, allTools+`, {"match": "delete_file", "cost": "1", "tier": "DELETE"}`, "")
	rp := startRaw(t, pol, nil, rc)
	res := rp.call(t, "delete_file", map[string]any{"path": "/etc"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "no such tool")
	res = rp.call(t, "alpha", nil)
	require.False(t, res.IsError, text(res))

	net, results := rp.spent(t)
	assert.Equal(t, kernel.Unit/10, net, "only alpha is charged")
	assert.Len(t, results, 1)
	assert.Zero(t, asked, "the human is never asked about a tool the upstream does not have")
	assert.Equal(t, []string{"alpha"}, rp.journaled(t))
}

// TestResultsReachTheClientByteForByte: a lone surrogate, which the
// SDK's own types read as U+FFFD, reaches the client as the upstream
// wrote it, in the text and in the structured content.
func TestResultsReachTheClientByteForByte(t *testing.T) {
	rp := startRaw(t, rawPolicy(t, allTools, ""), nil, nil)
	_ = rp.call(t, "zeta", nil)
	wire := rp.wire.String()
	assert.Contains(t, wire, `"result":{"content":[{"type":"text","text":"x\ud800y"}],"structuredContent":{"s":"x\ud800y"}}`)
	_, results := rp.spent(t)
	require.Len(t, results, 1)
	assert.True(t, results[0].OK)
}

// TestToolsListIsTheUpstreams: with -list all, tools/list is the
// upstream's answer: its order, its "execution" members, no added hint.
// By default (the policy refuses unknown tools) the tools the caller may
// never call are left out, the others kept as written, and the list,
// being the caller's, is cacheScope "private".
func TestToolsListIsTheUpstreams(t *testing.T) {
	tool := func(n string) string {
		return fmt.Sprintf(`{"name":%q,"description":"the %s tool","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"},"annotations":{"readOnlyHint":true}}`, n, n)
	}
	pol := rawPolicy(t, allTools, "")

	rp := startRaw(t, pol, []string{"-list", "all"}, nil)
	_, err := rp.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var all []string
	for _, n := range []string{"zeta", "alpha", "scan", "hang", "crash", "grow", "ask", "roots"} {
		all = append(all, tool(n))
	}
	assert.Contains(t, rp.wire.String(), `"result":{"tools":[`+strings.Join(all, ",")+`]}`)
	assert.NotContains(t, rp.wire.String(), "idempotentHint")
	require.Equal(t, 0, rp.stop(t))

	rp = startRaw(t, pol, nil, nil)
	list, err := rp.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	assert.Equal(t, []string{"zeta", "alpha", "grow", "ask", "roots"}, names)
	// Filtered for this caller: marked private (MCP 2026-07-28 caching),
	// every other member as the upstream wrote it.
	assert.Contains(t, rp.wire.String(), `"result":{"tools":[`+strings.Join([]string{tool("zeta"), tool("alpha"), tool("grow"), tool("ask"), tool("roots")}, ",")+`],"cacheScope":"private"}`)
	require.Equal(t, 0, rp.stop(t))
}

// TestListChangesFollowed: the upstream adds a tool and says so; the
// client is told, lists it and may call it. (With pinning, the default,
// a new tool waits for a person's re-pin: pins_test.go; here it is off.)
func TestListChangesFollowed(t *testing.T) {
	rp := startRaw(t, rawPolicy(t, allTools, ""), []string{"-pins", "off"}, nil)
	res := rp.call(t, "omega", nil)
	assert.True(t, res.IsError, "not listed yet")
	res = rp.call(t, "grow", nil)
	require.False(t, res.IsError, text(res))
	select {
	case <-rp.changed:
	case <-time.After(30 * time.Second):
		t.Fatalf("no tools/list_changed reached the client\n%s", rp.stderr.String())
	}
	require.Eventually(t, func() bool {
		list, err := rp.cs.ListTools(context.Background(), nil)
		return err == nil && len(list.Tools) > 0 && list.Tools[len(list.Tools)-1].Name == "omega"
	}, 30*time.Second, 10*time.Millisecond)
	res = rp.call(t, "omega", nil)
	require.False(t, res.IsError, text(res))
	net, _ := rp.spent(t)
	assert.Equal(t, 2*kernel.Unit/10, net, "grow and the second omega")
	assert.Equal(t, []string{"grow", "omega"}, rp.journaled(t))
}

// TestUpstreamRequestsRelayed: the upstream's elicitation and roots
// requests reach the real client, whose answers go back.
func TestUpstreamRequestsRelayed(t *testing.T) {
	rc := &rawClient{
		elicit: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			if req.Params.Message != "may I?" {
				return &sdk.ElicitResult{Action: "decline"}, nil
			}
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
		//lint:ignore SA1019 the test plays a client on a protocol before 2026-07-28, whose roots the proxy must relay
		roots: []*sdk.Root{{URI: "file:///home/agent/project", Name: "project"}},
	}
	rp := startRaw(t, rawPolicy(t, allTools, ""), nil, rc)
	res := rp.call(t, "ask", nil)
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "answer: accept", text(res))
	res = rp.call(t, "roots", nil)
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "root: file:///home/agent/project", text(res))
	rp.spent(t)
}

// TestCostFromSettlesAtTheReportedFigure: a reserved rule with
// cost_from is settled at the figure the result reports; a missing or
// invalid one settles at the reservation, unmeasured.
func TestCostFromSettlesAtTheReportedFigure(t *testing.T) {
	for _, tc := range []struct {
		name, pointer string
		n             any
		want          kernel.Cost
		measured      bool
	}{
		{"structured", "/structuredContent/scanned", 0.25, kernel.Unit / 4, true},
		{"meta", "/_meta/cost", "1.5", 3 * kernel.Unit / 2, true},
		{"missing", "/structuredContent/scanned", nil, 2 * kernel.Unit, false},
		{"negative", "/structuredContent/scanned", -1, 2 * kernel.Unit, false},
		{"not_a_number", "/_meta/cost", "lots", 2 * kernel.Unit, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := rawPolicy(t, fmt.Sprintf(`{"match": "scan", "cost": "2", "reserve": true, "cost_from": %q}`, tc.pointer), "")
			rp := startRaw(t, pol, nil, nil)
			args := map[string]any{}
			if tc.n != nil {
				args["n"] = tc.n
			}
			res := rp.call(t, "scan", args)
			require.False(t, res.IsError, text(res))
			net, results := rp.spent(t)
			assert.Equal(t, tc.want, net)
			require.Len(t, results, 1)
			assert.Equal(t, tc.measured, results[0].Measured)
			assert.Equal(t, tc.want, results[0].Charged)
		})
	}
}

// TestHangingUpstreamTimesOut: a call the upstream never answers ends at
// its rule's timeout (or the policy's), recorded as failed and settled
// by its rule: refunded under refund_on_error, charged otherwise. The
// upstream is still there for the next call.
func TestHangingUpstreamTimesOut(t *testing.T) {
	for _, tc := range []struct {
		name, rule, top string
		want            kernel.Cost
	}{
		{"rule_refunds", `{"match": "hang", "cost": "1", "timeout": "200ms", "refund_on_error": true}`, "", kernel.Unit / 10},
		{"default_charges", `{"match": "hang", "cost": "1"}`, `, "timeout": "200ms"`, kernel.Unit + kernel.Unit/10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := startRaw(t, rawPolicy(t, tc.rule+`, {"match": "alpha", "cost": "0.1"}`, tc.top), nil, nil)
			res := rp.call(t, "hang", nil)
			assert.True(t, res.IsError)
			assert.Contains(t, text(res), "timed out after 200ms")
			res = rp.call(t, "alpha", nil)
			require.False(t, res.IsError, text(res))
			net, results := rp.spent(t)
			assert.Equal(t, tc.want, net)
			require.Len(t, results, 2)
			assert.False(t, results[0].OK)
			assert.Contains(t, results[0].Error, "timed out")
			assert.Equal(t, []string{"hang", "alpha"}, rp.journaled(t))
		})
	}
}

// TestCrashingUpstreamRestarted: the upstream dies in a call; the proxy
// says so and restarts it, and later calls run on the new process.
func TestCrashingUpstreamRestarted(t *testing.T) {
	rp := startRaw(t, rawPolicy(t, `{"match": "crash", "cost": "1"}, {"match": "alpha", "cost": "0.1"}`, ""), nil, nil)
	res := rp.call(t, "crash", nil)
	assert.True(t, res.IsError)
	require.Eventually(t, func() bool { return strings.Contains(rp.stderr.String(), "upstream restarted") }, 60*time.Second, 10*time.Millisecond)
	assert.Contains(t, rp.stderr.String(), "upstream exited; restarting it")
	res = rp.call(t, "alpha", nil)
	require.False(t, res.IsError, text(res))
	net, results := rp.spent(t)
	assert.Equal(t, kernel.Unit+kernel.Unit/10, net, "the crash reached the upstream: charged by its rule")
	require.Len(t, results, 2)
	assert.False(t, results[0].OK)
	assert.Equal(t, []string{"crash", "alpha"}, rp.journaled(t))
}

// TestUpstreamExitStopsTheProxy: with -upstream-exit the proxy exits 1
// when the upstream dies, and says why.
func TestUpstreamExitStopsTheProxy(t *testing.T) {
	rp := startRaw(t, rawPolicy(t, `{"match": "crash", "cost": "1"}`, ""), []string{"-upstream-exit"}, nil)
	_, _ = rp.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	select {
	case code := <-rp.done:
		assert.Equal(t, 1, code)
	case <-time.After(60 * time.Second):
		t.Fatalf("the proxy did not exit\n%s", rp.stderr.String())
	}
	assert.Contains(t, rp.stderr.String(), "upstream exited; stopping (-upstream-exit)")
	assert.True(t, bytes.Contains([]byte(rp.stderr.String()), []byte("log head")), "the log is closed and its head printed")
}
