package mcp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
	"github.com/verity-go/verity/trace"
)

// statelessServer serves the rig's server over streamable HTTP without
// sessions (2026-07-28), behind verify when it is not nil.
func statelessServer(t *testing.T, r *rig, verify auth.TokenVerifier) string {
	var h http.Handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return r.srv },
		&sdk.StreamableHTTPOptions{Stateless: true})
	if verify != nil {
		h = auth.RequireBearerToken(verify, nil)(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// statelessClient connects a 2026-07-28 client to url, with token when
// it is not "".
func statelessClient(t *testing.T, url, token string) *sdk.ClientSession {
	var hc *http.Client
	if token != "" {
		hc = &http.Client{Transport: bearer{token, http.DefaultTransport}}
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	require.NoError(t, err)
	require.Empty(t, cs.ID(), "a 2026-07-28 client has no session")
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func search(t *testing.T, cs *sdk.ClientSession) *sdk.CallToolResult {
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"path": "x"}})
	require.NoError(t, err)
	return res
}

// TestStatelessCallsAreKeyedByPrincipal: a request of 2026-07-28 over
// HTTP has no session (the SDK serves it on one that ends with it), so
// the Guard's default caller is its authenticated principal: every
// client, every connection and every request of one principal shares one
// budget — a key per session would give each request a fresh one — and
// another principal has its own; the clientInfo a client declares does
// not matter. Without a token, every such request is AnonymousCaller.
func TestStatelessCallsAreKeyedByPrincipal(t *testing.T) {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := strings.CutPrefix(token, "t-")
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"iss": "https://id.example"}}, nil
	}
	r := newRig(t, catalogue(2*kernel.Unit+kernel.Unit/2))
	url := statelessServer(t, r, verify)

	assert.False(t, search(t, statelessClient(t, url, "t-bob")).IsError)
	assert.False(t, search(t, statelessClient(t, url, "t-bob")).IsError, "a second client of bob's")
	res := search(t, statelessClient(t, url, "t-bob"))
	assert.True(t, res.IsError, "a third client of bob's draws on the same budget")
	assert.Contains(t, text(res), "remaining 0.5")
	assert.False(t, search(t, statelessClient(t, url, "t-alice")).IsError, "alice has a budget of her own")
	assert.Equal(t, 3, r.tools.count("search"))

	m, ok := r.gate.Meter("https://id.example|bob")
	require.True(t, ok, "bob's calls are charged to his principal's key")
	assert.Equal(t, 2*kernel.Unit, m.Budget().Net())
	_, ok = r.gate.Meter("https://id.example|alice")
	assert.True(t, ok)

	anon := newRig(t, catalogue(kernel.Unit+kernel.Unit/2))
	aurl := statelessServer(t, anon, nil)
	assert.False(t, search(t, statelessClient(t, aurl, "")).IsError)
	assert.True(t, search(t, statelessClient(t, aurl, "")).IsError, "unauthenticated stateless requests share one caller")
	m, ok = anon.gate.Meter(gatemcp.AnonymousCaller)
	require.True(t, ok)
	assert.Equal(t, kernel.Unit, m.Budget().Net())
}

// rawConn is the client end of an in-memory connection to a server,
// written and read as JSON-RPC messages.
type rawConn struct {
	t    *testing.T
	conn sdk.Connection
	id   int64
}

func rawConnect(t *testing.T, srv *sdk.Server) *rawConn {
	st, ct := sdk.NewInMemoryTransports()
	_, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	conn, err := ct.Connect(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &rawConn{t: t, conn: conn}
}

// call sends method with params and returns its response.
func (c *rawConn) call(method string, params any) *jsonrpc.Response {
	c.id++
	raw, err := json.Marshal(params)
	require.NoError(c.t, err)
	id, _ := jsonrpc.MakeID(float64(c.id))
	require.NoError(c.t, c.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}))
	for {
		msg, err := c.conn.Read(ctx)
		require.NoError(c.t, err)
		if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID == id {
			return resp
		}
	}
}

func modernMeta() map[string]any {
	return map[string]any{sdk.MetaKeyProtocolVersion: gatemcp.MultiRoundTripVersion, sdk.MetaKeyClientCapabilities: map[string]any{},
		sdk.MetaKeyClientInfo: map[string]any{"name": "raw", "version": "v1"}}
}

// protocolEntries are the log's KindProtocol entries.
func protocolEntries(t *testing.T, log *trace.Log) []gatelog.Protocol {
	var out []gatelog.Protocol
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind != gatelog.KindProtocol {
			continue
		}
		v, err := gatelog.Decode(e)
		require.NoError(t, err)
		out = append(out, v.(gatelog.Protocol))
	}
	return out
}

// TestMissingVersionRefused: on a connection whose client speaks
// 2026-07-28 (it discovered the server), a request without its protocol
// version in _meta is refused with -32602 before anything is decided:
// the tool does not run, no caller is charged, the refusal is on the log
// in one line. The same request with the version runs; on a connection
// of 2025-11-25, a request without _meta is the norm and runs.
func TestMissingVersionRefused(t *testing.T) {
	log := trace.NewMemoryLog()
	g, err := toolgate.New(ctx, log, mustCompile(catalogue(10*kernel.Unit)))
	require.NoError(t, err)
	rec := &records{}
	gd, err := gatemcp.New(g, gatemcp.Options{Log: log, Logger: slog.New(rec)})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "tools", Version: "v1"}, nil)
	ts := &tools{runs: map[string]int{}}
	ts.add(srv, "search")
	srv.AddReceivingMiddleware(gd.Middleware())

	c := rawConnect(t, srv)
	resp := c.call("server/discover", map[string]any{"_meta": modernMeta()})
	require.Nil(t, resp.Error, "discover")
	resp = c.call("tools/call", map[string]any{"name": "search", "arguments": map[string]any{"path": "x"}})
	require.NotNil(t, resp.Error, "a 2026 request without _meta version is refused")
	var werr *jsonrpc.Error
	require.ErrorAs(t, resp.Error, &werr)
	assert.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
	assert.Contains(t, werr.Message, sdk.MetaKeyProtocolVersion)
	assert.NotContains(t, werr.Message, "\n")
	assert.Equal(t, 0, ts.count("search"), "the tool did not run")
	_, charged := g.Meter(gd.ConnectionKey(nil))
	assert.False(t, charged)
	assert.Zero(t, g.Waiting())
	entries := protocolEntries(t, log)
	require.Len(t, entries, 1)
	assert.Equal(t, "missing_version", entries[0].Reason)
	assert.Equal(t, "tools/call", entries[0].Method)
	assert.Equal(t, "search", entries[0].Name)
	assert.Equal(t, jsonrpc.CodeInvalidParams, entries[0].Code)
	assert.Len(t, rec.matching("refused: missing_version", "search"), 1, "logged")

	resp = c.call("tools/call", map[string]any{"name": "search", "arguments": map[string]any{"path": "x"}, "_meta": modernMeta()})
	require.Nil(t, resp.Error, "with its version the request runs")
	assert.Equal(t, 1, ts.count("search"))

	legacy := rawConnect(t, srv)
	resp = legacy.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "old", "version": "v1"}})
	require.Nil(t, resp.Error)
	require.NoError(t, legacy.conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}))
	resp = legacy.call("tools/call", map[string]any{"name": "search", "arguments": map[string]any{"path": "x"}})
	require.Nil(t, resp.Error, "a 2025-11-25 request carries no _meta version")
	assert.Equal(t, 2, ts.count("search"))
	assert.Len(t, protocolEntries(t, log), 1)
}

// TestTraceparentJoinsSpansAndLog: a call whose _meta carries a W3C
// traceparent is recorded in that trace — the gate's execute_tool span
// is a child of the agent's span — and every log entry it makes names
// the trace: the execution's tag "trace:<id>" and the result's trace, or
// a refusal's. A malformed traceparent is not recorded, and the call is
// served all the same.
func TestTraceparentJoinsSpansAndLog(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	obs, err := gateotel.New(gateotel.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))})
	require.NoError(t, err)
	cfg := catalogue(10 * kernel.Unit)
	r := newRigWith(t, cfg, gatemcp.Options{}, toolgate.WithObserver(obs))
	cs, _ := r.connect(t, currentProtocol, nil, nil)

	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	callIn := func(tool, traceparent string) *sdk.CallToolResult {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"path": "x"},
			Meta: sdk.Meta{gatemcp.TraceMetaKey: traceparent}})
		require.NoError(t, err)
		return res
	}
	require.False(t, callIn("search", "00-"+traceID+"-"+parent+"-01").IsError)
	require.True(t, callIn("format_disk", "00-"+traceID+"-"+parent+"-01").IsError, "no rule: refused")
	require.False(t, callIn("read_file", "00-"+strings.Repeat("0", 32)+"-"+parent+"-01").IsError, "an invalid traceparent is ignored")

	ended := spans.Ended()
	require.Len(t, ended, 3)
	for i, s := range ended[:2] {
		assert.Equal(t, traceID, s.SpanContext().TraceID().String(), "span %d continues the agent's trace", i)
		assert.Equal(t, parent, s.Parent().SpanID().String(), "span %d is a child of the agent's span", i)
		assert.True(t, s.Parent().IsRemote())
	}
	assert.NotEqual(t, traceID, ended[2].SpanContext().TraceID().String())

	var tagged, results, refusals int
	for e, err := range r.log.Entries(ctx, 0) {
		require.NoError(t, err)
		switch e.Kind {
		case kernel.KindExecute:
			v, err := kernel.DecodeEntry(e)
			require.NoError(t, err)
			x := v.(kernel.ExecuteEntry)
			if x.Action.ID == "search" {
				assert.Contains(t, x.Action.Tags, "trace:"+traceID)
				tagged++
			} else {
				for _, tag := range x.Action.Tags {
					assert.False(t, strings.HasPrefix(tag, "trace:"), "read_file's invalid traceparent: no tag")
				}
			}
		case gatelog.KindResult, gatelog.KindRefuse:
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			switch x := v.(type) {
			case gatelog.Result:
				if x.Tool == "search" {
					assert.Equal(t, traceID, x.Trace)
					results++
				} else {
					assert.Empty(t, x.Trace)
				}
			case gatelog.Refuse:
				assert.Equal(t, traceID, x.Trace)
				refusals++
			}
		}
	}
	assert.Equal(t, [3]int{1, 1, 1}, [3]int{tagged, results, refusals})
}

// TestTraceID: a traceparent's trace id as W3C Trace Context reads it.
func TestTraceID(t *testing.T) {
	for tp, want := range map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00": "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01": "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": "",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "",
		"garbage": "",
		"":        "",
	} {
		assert.Equal(t, want, gatemcp.TraceID(tp), tp)
	}
}

// TestOnePrincipalOneBudgetAcrossEras is a state machine against a naive
// model: principals call over HTTP through 2026-07-28 clients (no
// session, a new one each time or one kept) and 2025-11-25 sessions (new
// or kept), in any order; every call of a principal draws on one budget
// — the model's per-principal spend — and runs exactly when the model
// says it can afford it. The Guard is keyed as verity-mcp keys it with
// -jwks: by the principal, whatever the session.
func TestOnePrincipalOneBudgetAcrossEras(t *testing.T) {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		user, ok := strings.CutPrefix(token, "t-")
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: user, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"iss": "https://id.example"}}, nil
	}
	calls := 0
	defer func() { t.Logf("%d calls checked against the model", calls) }()
	rapid.Check(t, func(rt *rapid.T) {
		const budget = 3 // units; search costs 1
		r := newRigWith(rt, catalogue(budget*kernel.Unit), gatemcp.Options{Caller: func(ctx context.Context, req *sdk.CallToolRequest) string {
			return gatemcp.DefaultPrincipal(ctx, req).Key()
		}})
		getServer := func(*http.Request) *sdk.Server { return r.srv }
		stateless := sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{Stateless: true})
		stateful := sdk.NewStreamableHTTPHandler(getServer, nil)
		front := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Header.Get(gatemcp.HeaderProtocolVersion) >= gatemcp.MultiRoundTripVersion {
				stateless.ServeHTTP(w, req)
				return
			}
			stateful.ServeHTTP(w, req)
		})
		srv := httptest.NewServer(auth.RequireBearerToken(verify, nil)(front))
		defer srv.Close()
		kept := map[string]*sdk.ClientSession{}
		defer func() {
			for _, cs := range kept {
				_ = cs.Close()
			}
		}()
		spent := map[string]int{}
		for range rapid.IntRange(1, 12).Draw(rt, "steps") {
			who := rapid.SampledFrom([]string{"alice", "bob"}).Draw(rt, "who")
			version := rapid.SampledFrom([]string{"2026-07-28", legacyProtocol}).Draw(rt, "version")
			key := who + " " + version
			cs := kept[key]
			if cs == nil || rapid.Bool().Draw(rt, "new client") {
				var err error
				cs, err = sdk.NewClient(&sdk.Implementation{Name: "agent-" + rapid.StringMatching(`[a-z]{1,5}`).Draw(rt, "clientInfo"), Version: "v1"}, nil).
					Connect(ctx, &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: bearer{"t-" + who, http.DefaultTransport}}},
						&sdk.ClientSessionOptions{ProtocolVersion: version})
				require.NoError(rt, err)
				if old := kept[key]; old != nil {
					_ = old.Close()
				}
				kept[key] = cs
			}
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"path": "x"}})
			require.NoError(rt, err)
			calls++
			affordable := spent[who] < budget
			require.Equal(rt, !affordable, res.IsError, "%s on %s, spent %d: %s", who, version, spent[who], text(res))
			if affordable {
				spent[who]++
			}
		}
		total := 0
		for _, n := range spent {
			total += n
		}
		require.Equal(rt, total, r.tools.count("search"), "the tool ran exactly for the calls the model afforded")
	})
}
