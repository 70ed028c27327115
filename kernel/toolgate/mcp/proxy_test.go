package mcp_test

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// proxied is a Guard and a Proxy in front of in-process upstreams that
// may be stopped and started again.
type proxied struct {
	gate  *toolgate.Gate
	log   *trace.Log
	proxy *gatemcp.Proxy
	srv   *sdk.Server
	tools *tools
	up    *sdk.ClientSession
	cs    *sdk.ClientSession
}

func newProxied(t tb, cfg toolgate.Policy) *proxied {
	log := trace.NewMemoryLog()
	g, err := toolgate.New(ctx, log, mustCompile(cfg))
	require.NoError(t, err)
	p := gatemcp.NewProxy(nil)
	gd, err := gatemcp.New(g, gatemcp.Options{Listed: p.Listed})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ServerOptions(nil))
	srv.AddReceivingMiddleware(gd.Middleware(), p.Middleware())
	px := &proxied{gate: g, log: log, proxy: p, srv: srv, tools: &tools{runs: map[string]int{}}}
	px.start(t)
	st, ct := sdk.NewInMemoryTransports()
	_, err = srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	px.cs, err = sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = px.cs.Close() })
	return px
}

// start starts a new upstream and attaches the proxy to it.
func (px *proxied) start(t tb) {
	up := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "v1"}, nil)
	px.tools.add(up, "read_file", "search", "write_file")
	st, ct := sdk.NewInMemoryTransports()
	_, err := up.Connect(ctx, st, nil)
	require.NoError(t, err)
	p := px.proxy
	client := sdk.NewClient(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ClientOptions())
	client.AddReceivingMiddleware(p.RelayMiddleware())
	px.up, err = client.Connect(ctx, p.Transport(ct), nil)
	require.NoError(t, err)
	_, err = p.Attach(ctx, px.srv, px.up)
	require.NoError(t, err)
	t.Cleanup(func() { _ = px.up.Close() })
}

// TestUnreachedCallsAreNeverCharged: whatever calls are made while the
// upstream runs, has died or runs again, a caller is charged for exactly
// the calls that reached it (the upstream's own count), each at its
// rule's cost; the log replays to the same spend.
func TestUnreachedCallsAreNeverCharged(t *testing.T) {
	costs := map[string]kernel.Cost{"read_file": kernel.Unit / 10, "search": kernel.Unit, "write_file": kernel.Unit / 2}
	rapid.Check(t, func(rt *rapid.T) {
		cfg := catalogue(1000 * kernel.Unit)
		cfg.Tools[1].Tier = claims.TierReadOnly // write_file runs without a human
		px := newProxied(rt, cfg)
		var want kernel.Cost
		running := true
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				tool := rapid.SampledFrom([]string{"read_file", "search", "write_file"}).Draw(rt, "tool")
				before := px.tools.count(tool)
				res := call(rt, px.cs, tool, "p")
				ran := px.tools.count(tool) - before
				if running {
					require.False(rt, res.IsError, text(res))
					require.Equal(rt, 1, ran)
					want += costs[tool]
				} else {
					require.True(rt, res.IsError, text(res))
					require.Equal(rt, 0, ran)
				}
			},
			"kill": func(rt *rapid.T) {
				if running {
					require.NoError(rt, px.up.Close())
					running = false
				}
			},
			"restart": func(rt *rapid.T) {
				if !running {
					px.start(rt)
					running = true
				}
			},
			"": func(rt *rapid.T) {
				var spent kernel.Cost
				for _, r := range results(rt, px.log) {
					spent += r.Charged
				}
				require.Equal(rt, want, spent, "charged only for the calls that reached the upstream")
			},
		})
	})
}

// results are the log's result entries.
func results(t tb, log *trace.Log) []gatelog.Result {
	var out []gatelog.Result
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindResult {
			var r gatelog.Result
			require.NoError(t, json.Unmarshal(e.Payload, &r))
			out = append(out, r)
		}
	}
	return out
}

// TestUnlistedToolIsRecordedNeverDecided: a call of a tool the upstream
// lacks is refused without reaching the gate's rules (nobody is asked,
// nothing charged, no kernel session) and is one entry of the log, a
// refusal that says so.
func TestUnlistedToolIsRecordedNeverDecided(t *testing.T) {
	px := newProxied(t, catalogue(10*kernel.Unit))
	res := call(t, px.cs, "delete_file", "/")
	require.True(t, res.IsError)
	require.Contains(t, text(res), "no such tool")
	require.Empty(t, px.gate.Pending(), "never asked")
	require.Equal(t, uint64(1), px.log.Head().Size, "one entry on the log")
	for e, err := range px.log.Entries(ctx, 0) {
		require.NoError(t, err)
		require.Equal(t, gatelog.KindRefuse, e.Kind)
		var r gatelog.Refuse
		require.NoError(t, json.Unmarshal(e.Payload, &r))
		require.Equal(t, "delete_file", r.Tool)
		require.Equal(t, "no_such_tool", r.Condition)
		require.Contains(t, r.Explanation, "no such tool")
	}
}

// FuzzFilterTools: filtering a tools/list result never panics; what it
// returns is one JSON value whose tools are those kept, in order.
func FuzzFilterTools(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"b","x":"\ud800"},{"name":"a"}],"nextCursor":"c"}`), "a")
	f.Add([]byte(`{"_meta":{}, "tools" : [ ] }`), "")
	f.Add([]byte(`{"tools":[{"name":1}]}`), "b")
	f.Add([]byte(`[]`), "a")
	f.Fuzz(func(t *testing.T, raw []byte, drop string) {
		out, err := gatemcp.FilterTools(raw, func(n string) bool { return n != drop })
		if err != nil {
			return
		}
		var v struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("filtered %q into %q: %v", raw, out, err)
		}
		for _, tl := range v.Tools {
			if tl.Name == drop {
				t.Fatalf("%q kept in %q", drop, out)
			}
		}
	})
}
