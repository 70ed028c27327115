package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// BenchmarkGuardCall is the gate's own cost per call inside the proxy:
// one tools/call through the Guard's middleware as verity-mcp installs
// it — the caller, the decision and the result on a trace.File (its
// entries written, never fsynced: the fsync is the disk's cost, which
// BenchmarkProxyVsPassThrough in cmd/verity-mcp measures), the
// decision log's two lines and the Guard's own (formatted, then
// discarded) — around a tool that answers at once with a plain text
// result as the Proxy hands it on (a RawResult). Each call runs on a
// goroutine of its own, as the SDK runs each request, so that the stack
// a call grows is counted too. cpu-ns/op is the process's CPU time per
// call (on a shared machine, ns/op also counts waiting for a core).
func BenchmarkGuardCall(b *testing.B) { benchGuardCall(b, false) }

// BenchmarkGuardCallPinned is BenchmarkGuardCall with the tool's
// definition pinned (Options.Pins, as verity-mcp runs by default): each
// call also checks its tool's pin and records its hash.
func BenchmarkGuardCallPinned(b *testing.B) { benchGuardCall(b, true) }

func benchGuardCall(b *testing.B, pinned bool) {
	store, err := trace.OpenFile(filepath.Join(b.TempDir(), "gate.log"), trace.FileOptions{Sync: trace.SyncManual})
	if err != nil {
		b.Fatal(err)
	}
	log, err := trace.NewLog(store)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = log.Close() })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: 1 << 50, MinCost: 1, Tools: []toolgate.Rule{{Match: "echo", Cost: 1}}}),
		toolgate.WithObserver(toolgate.LogObserver(logger)))
	if err != nil {
		b.Fatal(err)
	}
	opts := gatemcp.Options{Logger: logger, Caller: func(context.Context, *sdk.CallToolRequest) string { return "stdio" }}
	if pinned {
		ps, err := gatemcp.NewPins(ctx, log, gatemcp.PinOptions{Server: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		listing := []byte(`{"tools":[{"name":"echo","description":"Return the text given.","inputSchema":{"type":"object"}}]}`)
		if err := ps.Observe(ctx, []json.RawMessage{listing}, "", false, true); err != nil {
			b.Fatal(err)
		}
		opts.Pins = ps
	}
	gd, err := gatemcp.New(g, opts)
	if err != nil {
		b.Fatal(err)
	}
	result := []byte(`{"content":[{"type":"text","text":"ping"}]}`)
	handler := gd.Middleware()(func(context.Context, string, sdk.Request) (sdk.Result, error) {
		return &gatemcp.RawResult{JSON: result}, nil
	})
	req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "echo", Arguments: []byte(`{"text":"ping"}`)}}
	done := make(chan error)
	call := func() {
		go func() {
			res, err := handler(ctx, gatemcp.MethodCallTool, req)
			if r, ok := res.(*gatemcp.RawResult); err == nil && (!ok || string(r.JSON) != string(result)) {
				err = fmt.Errorf("call: %v", res)
			}
			done <- err
		}()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	call() // the first decision starts the caller's kernel session
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		call()
	}
	b.ReportMetric(float64((cpuTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
