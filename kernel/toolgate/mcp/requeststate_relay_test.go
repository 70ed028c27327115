package mcp_test

import (
	"context"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// confirmer is an upstream whose tool "confirm" asks its client a
// question through its own input-required result, with its own request
// state, and records the retries it receives.
type confirmer struct {
	state string // the requestState it issues
	mu    sync.Mutex
	seen  []sdk.CallToolParamsRaw
}

func (c *confirmer) server() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "confirmer", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "confirm"}, func(_ context.Context, req *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
		c.mu.Lock()
		c.seen = append(c.seen, *req.Params)
		c.mu.Unlock()
		if req.Params.RequestState == "" {
			return &sdk.CallToolResult{RequestState: c.state, InputRequests: sdk.InputRequestMap{
				"upstream.ok": &sdk.ElicitParams{Mode: "form", Message: "Really?", RequestedSchema: map[string]any{"type": "object"}}}}, nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "confirmed"}}}, nil, nil
	})
	return srv
}

func confirmRig(t *testing.T, c *confirmer) *sdk.ClientSession {
	g, err := toolgate.New(ctx, trace.NewMemoryLog(), mustCompile(toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{{Match: "confirm", Cost: kernel.Unit}}}))
	require.NoError(t, err)
	p := gatemcp.NewProxy(nil)
	gd, err := gatemcp.New(g, gatemcp.Options{Listed: p.Listed})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ServerOptions(nil))
	srv.AddReceivingMiddleware(gd.Middleware(), p.Middleware())
	st, ct := sdk.NewInMemoryTransports()
	_, err = c.server().Connect(ctx, st, nil)
	require.NoError(t, err)
	up, err := sdk.NewClient(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ClientOptions()).Connect(ctx, p.Transport(ct), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = up.Close() })
	_, err = p.Attach(ctx, srv, up)
	require.NoError(t, err)
	st, ct = sdk.NewInMemoryTransports()
	_, err = srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, &sdk.ClientOptions{
		Capabilities:   &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}}},
		MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true},
	}).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestUpstreamInputRequiredRelayedUnchanged: the upstream's own
// input-required result reaches the client as the upstream wrote it, and
// the client's retry reaches the upstream with its state and input
// responses as sent — less an answer under the Guard's InputKey, which
// is never forwarded.
func TestUpstreamInputRequiredRelayedUnchanged(t *testing.T) {
	c := &confirmer{state: "upstream-state-1"}
	cs := confirmRig(t, c)
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), text(res))
	assert.Equal(t, "upstream-state-1", res.RequestState, "the upstream's state, unchanged")
	require.Contains(t, res.InputRequests, "upstream.ok")
	assert.NotContains(t, res.InputRequests, gatemcp.InputKey)

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{}, RequestState: res.RequestState,
		InputResponses: sdk.InputResponseMap{"upstream.ok": &sdk.ElicitResult{Action: "accept"}, gatemcp.InputKey: &sdk.ElicitResult{Action: "accept"}}})
	require.NoError(t, err)
	assert.Equal(t, "confirmed", text(res))
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Len(t, c.seen, 2)
	retry := c.seen[1]
	assert.Equal(t, "upstream-state-1", retry.RequestState)
	assert.Contains(t, retry.InputResponses, "upstream.ok")
	assert.NotContains(t, retry.InputResponses, gatemcp.InputKey, "the Guard's answer is never forwarded")
}

// TestUpstreamImitatingTheGuardsStateRefused: an upstream whose state
// would pass for the Guard's is refused, not relayed.
func TestUpstreamImitatingTheGuardsStateRefused(t *testing.T) {
	cs := confirmRig(t, &confirmer{state: "vg2.imitation"})
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "confirm", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.False(t, res.NeedsInput())
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "which this proxy keeps for its own")
}

// TestReplayedStateRunsOnceAndChargesOnce: the same retry sent eight
// times at once runs its call once and charges it once; the others are
// refused as replays, and none of their answers is the one that counts.
func TestReplayedStateRunsOnceAndChargesOnce(t *testing.T) {
	r := newRig(t, catalogue(10*kernel.Unit))
	cs, caller := r.connect(t, currentProtocol, &answers{action: "accept"},
		&sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})
	args := map[string]any{"path": "x"}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: args})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	state := res.RequestState

	var wg sync.WaitGroup
	var mu sync.Mutex
	ran, refused := 0, 0
	for range 8 {
		wg.Go(func() {
			// Params of its own: the client writes _meta into them.
			got, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "x"}, RequestState: state,
				InputResponses: sdk.InputResponseMap{gatemcp.InputKey: &sdk.ElicitResult{Action: "accept"}}})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				requireStateError(t, err, "used already")
				refused++
				return
			}
			if !got.IsError {
				ran++
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 1, ran)
	assert.Equal(t, 7, refused)
	assert.Equal(t, 1, r.tools.count("delete_file"))
	m, ok := r.gate.Meter(caller)
	require.True(t, ok)
	assert.Equal(t, kernel.Unit, m.Budget().Net(), "charged once")
	replays(t, r.log, r.gate, caller)
}
