package mcp_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// TestSyncWhileRunningAnswersOnlyDurableCalls: with SyncWhileRunning over
// a group-commit log, every call the client is answered — allowed and
// run, or refused — is on disk with its decision (and its result) when
// the answer arrives, the tools ran exactly for the allowed calls, and
// the log replays to the gate's spend.
func TestSyncWhileRunningAnswersOnlyDurableCalls(t *testing.T) {
	sr := newSyncRig(t, func(srv *sdk.Server, ts *tools) { ts.add(srv, "read_file", "format_disk") })
	log, g, ts := sr.log, sr.gate, sr.tools
	cs, caller := sr.connect(t, currentProtocol, nil, nil)

	durable := func() bool {
		records, _ := sr.synced()
		return records == log.Head().Size
	}
	for i := range 8 { // one at a time: then every entry is this call's or an earlier one's
		tool := "read_file"
		if i%4 == 3 {
			tool = "format_disk"
		}
		res := call(t, cs, tool, "notes.txt")
		require.Equal(t, tool == "format_disk", res.IsError, "%s: %s", tool, text(res))
		require.True(t, durable(), "%s answered before its entries were durable", tool)
	}
	require.Equal(t, 6, ts.count("read_file"))
	require.Equal(t, 0, ts.count("format_disk"))
	replays(t, log, g, caller)
}

// breakingStore is a memory store that fails, as a File whose fsync
// failed does (trace.ErrBroken), every append from the first of kind on.
type breakingStore struct {
	*trace.Memory
	kind   string
	broken bool
}

func (s *breakingStore) Append(ctx context.Context, entries ...trace.Entry) error {
	for _, e := range entries {
		if e.Kind == s.kind {
			s.broken = true
		}
	}
	if s.broken {
		return fmt.Errorf("%w: fsync failed", trace.ErrBroken)
	}
	return s.Memory.Append(ctx, entries...)
}

// TestResultNotDurableIsNotAnswered: when the log cannot make a call's
// result durable, the client gets an error saying so, not the result,
// with SyncWhileRunning or without.
func TestResultNotDurableIsNotAnswered(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		store := &breakingStore{Memory: trace.NewMemory(), kind: gatelog.KindResult}
		log, err := trace.NewLog(store)
		require.NoError(t, err)
		g, err := toolgate.New(ctx, log, mustCompile(catalogue(1000*kernel.Unit)))
		require.NoError(t, err)
		gd, err := gatemcp.New(g, gatemcp.Options{SyncWhileRunning: overlap})
		require.NoError(t, err)
		srv := sdk.NewServer(&sdk.Implementation{Name: "tools", Version: "v1"}, nil)
		ts := &tools{runs: map[string]int{}}
		ts.add(srv, "read_file")
		srv.AddReceivingMiddleware(gd.Middleware())
		r := &rig{log: log, gate: g, guard: gd, srv: srv, tools: ts}
		cs, _ := r.connect(t, currentProtocol, nil, nil)
		res := call(t, cs, "read_file", "notes.txt")
		require.True(t, res.IsError, "overlap %v: %s", overlap, text(res))
		require.Contains(t, text(res), "could not record its result")
		require.NotContains(t, text(res), "done", "the tool's output is withheld")
		require.Equal(t, 1, ts.count("read_file"), "the tool ran")
	}
}

// syncRig is a server whose tools run behind a SyncWhileRunning Guard
// over a group-commit log, and the fsyncs of that log.
type syncRig struct {
	*rig
	mu    sync.Mutex
	stats []trace.SyncStat
}

func newSyncRig(t *testing.T, add func(*sdk.Server, *tools)) *syncRig {
	sr := &syncRig{}
	store, err := trace.OpenFile(filepath.Join(t.TempDir(), "gate.log"), trace.FileOptions{Sync: trace.SyncGroup,
		OnSync: func(st trace.SyncStat) { sr.mu.Lock(); sr.stats = append(sr.stats, st); sr.mu.Unlock() }})
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	g, err := toolgate.New(ctx, log, mustCompile(catalogue(1000*kernel.Unit)))
	require.NoError(t, err)
	gd, err := gatemcp.New(g, gatemcp.Options{SyncWhileRunning: true})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "tools", Version: "v1"}, nil)
	ts := &tools{runs: map[string]int{}}
	add(srv, ts)
	srv.AddReceivingMiddleware(gd.Middleware())
	sr.rig = &rig{log: log, gate: g, guard: gd, srv: srv, tools: ts}
	return sr
}

// synced returns the records made durable so far and the fsyncs that did.
func (sr *syncRig) synced() (records uint64, fsyncs int) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, st := range sr.stats {
		records += uint64(st.Records)
	}
	return records, len(sr.stats)
}

// TestSyncWhileRunningSharesTheResultsFsync: with SyncWhileRunning, a
// call whose tool ends before its decision's own fsync would start costs
// one fsync, the result's, which makes its decision durable too; and
// every call is durable, decision and result, when it is answered.
func TestSyncWhileRunningSharesTheResultsFsync(t *testing.T) {
	defer gatemcp.SetDecisionSyncAfter(time.Hour)()
	sr := newSyncRig(t, func(srv *sdk.Server, ts *tools) { ts.add(srv, "read_file") })
	cs, caller := sr.connect(t, currentProtocol, nil, nil)
	const calls = 6
	for i := range calls {
		res := call(t, cs, "read_file", "notes.txt")
		require.False(t, res.IsError, text(res))
		records, fsyncs := sr.synced()
		require.Equal(t, sr.log.Head().Size, records, "call %d answered before its entries were durable", i)
		require.Equal(t, i+1, fsyncs, "call %d: one fsync a call", i)
	}
	require.Equal(t, calls, sr.tools.count("read_file"))
	replays(t, sr.log, sr.gate, caller)
}

// TestSyncWhileRunningBoundsTheDecisionsWait: with SyncWhileRunning, the
// decision of a tool that runs long is made durable while it still runs,
// once decisionSyncAfter has passed.
func TestSyncWhileRunningBoundsTheDecisionsWait(t *testing.T) {
	defer gatemcp.SetDecisionSyncAfter(time.Millisecond)()
	release := make(chan struct{})
	sr := newSyncRig(t, func(srv *sdk.Server, ts *tools) {
		sdk.AddTool(srv, &sdk.Tool{Name: "read_file"}, func(context.Context, *sdk.CallToolRequest, pathIn) (*sdk.CallToolResult, any, error) {
			<-release
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
		})
	})
	cs, _ := sr.connect(t, currentProtocol, nil, nil)
	answered := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a"}})
		if err != nil {
			res = &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
		}
		answered <- res
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		records, _ := sr.synced()
		if head := sr.log.Head().Size; head > 0 && records == head {
			break // the decision (and the caller's start) is durable
		}
		require.True(t, time.Now().Before(deadline), "the decision was not made durable while the tool ran")
		runtime.Gosched()
	}
	select {
	case res := <-answered:
		t.Fatalf("answered before the tool ended: %s", text(res))
	default:
	}
	close(release)
	res := <-answered
	require.False(t, res.IsError, text(res))
	records, fsyncs := sr.synced()
	require.Equal(t, sr.log.Head().Size, records)
	require.Equal(t, 2, fsyncs, "the decision's, then the result's")
}
