package toolgate_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/killtest"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

const (
	killLogEnv     = "TOOLGATE_KILL_LOG"
	killWorkers    = 8
	killCallerName = "agent"
)

var killConfig = toolgate.Policy{Budget: 1 << 50, MinCost: 1, Tools: []toolgate.Rule{
	{Match: "read_file", Cost: 1},
	{Match: "search", Cost: 5, Reserve: true},
}}

// TestKilledGateKeepsEveryAcknowledgedCall runs a gate over a group-commit
// log (trace.SyncGroup) in a child process, with eight calls of one
// caller in flight at a time, kills it with SIGKILL mid-traffic, twice
// over the same log: every decision the child saw allowed is on the log as
// the kernel's execution of that call, every result it saw recorded is a
// result entry of that call, the chain verifies, and a gate restarted
// over the log takes calls again.
func TestKilledGateKeepsEveryAcknowledgedCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gate.log")
	var acks [][]string
	for round := range 2 {
		got := killtest.Kill(t, "TestKilledGateHelper", []string{killLogEnv + "=" + path, "TOOLGATE_KILL_ROUND=" + strconv.Itoa(round)}, 300*time.Millisecond)
		require.NotEmpty(t, got, "round %d acknowledged nothing", round)
		acks = append(acks, got...)
	}
	store, err := trace.OpenFile(path, trace.FileOptions{})
	if errors.Is(err, trace.ErrTornTail) {
		_, err = trace.RepairFile(path)
		require.NoError(t, err)
		store, err = trace.OpenFile(path, trace.FileOptions{})
	}
	require.NoError(t, err, "the killed gate's log opens (and verifies)")
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	defer log.Close()
	ctx := context.Background()
	_, err = log.Verify(ctx)
	require.NoError(t, err)
	entries := map[uint64]trace.Entry{}
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		entries[e.Seq] = e
	}
	decisions, results := 0, 0
	for _, a := range acks {
		require.Len(t, a, 3, "ack %v", a)
		seq, err := strconv.ParseUint(a[2], 10, 64)
		require.NoError(t, err)
		e, ok := entries[seq]
		require.True(t, ok, "acknowledged %s of call %s at entry %d is lost (the log has %d entries)", a[0], a[1], seq, len(entries))
		switch a[0] {
		case "allow":
			d, err := kernel.DecodeEntry(e)
			require.NoError(t, err)
			var rec kernel.Record
			switch x := d.(type) {
			case kernel.ExecuteEntry:
				rec = x.Record
			case kernel.ReserveEntry:
				rec = x.Record
			default:
				t.Fatalf("entry %d is a %s, not the decision of call %s", seq, e.Kind, a[1])
			}
			require.Contains(t, rec.Action.Tags, "call:"+a[1], "entry %d", seq)
			decisions++
		case "result":
			require.Equal(t, gatelog.KindResult, e.Kind, "entry %d", seq)
			var r gatelog.Result
			require.NoError(t, json.Unmarshal(e.Payload, &r))
			require.Equal(t, a[1], r.CallID, "entry %d", seq)
			results++
		default:
			t.Fatalf("unknown ack %v", a)
		}
	}
	require.Positive(t, decisions)
	require.Positive(t, results)
	g, err := toolgate.New(ctx, log, mustCompile(killConfig))
	require.NoError(t, err, "a gate restarts over the killed log")
	d, err := g.Before(ctx, toolgate.Call{Tool: "read_file", ID: "after-restart", Caller: killCallerName, Arguments: []byte(`{}`)})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
}

// TestKilledGateHelper is the child of TestKilledGateKeepsEveryAcknowledgedCall:
// it opens the log with group commit and calls through the gate from
// killWorkers goroutines until killed, acknowledging "allow <call id>
// <seq>" once Before allowed a call and "result <call id> <seq>" once
// After recorded it.
func TestKilledGateHelper(t *testing.T) {
	path := os.Getenv(killLogEnv)
	if path == "" {
		t.Skip("run by TestKilledGateKeepsEveryAcknowledgedCall")
	}
	store, err := trace.OpenFile(path, trace.FileOptions{Sync: trace.SyncGroup})
	if errors.Is(err, trace.ErrTornTail) {
		if _, err = trace.RepairFile(path); err == nil {
			store, err = trace.OpenFile(path, trace.FileOptions{Sync: trace.SyncGroup})
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	log, err := trace.NewLog(store)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := toolgate.New(ctx, log, mustCompile(killConfig))
	if err != nil {
		t.Fatal(err)
	}
	ack := killtest.Ack()
	round := os.Getenv("TOOLGATE_KILL_ROUND")
	// One call before "ready": the caller is started or resumed from the
	// log (slow under the race detector), and every round acknowledges
	// something however soon the kill comes.
	if !killCall(t, g, ack, "r"+round+"-first", "read_file") {
		return
	}
	fmt.Println("ready")
	var wg sync.WaitGroup
	for w := range killWorkers {
		wg.Go(func() {
			for i := 0; ; i++ {
				tool := "read_file"
				if i%3 == 2 {
					tool = "search"
				}
				if !killCall(t, g, ack, fmt.Sprintf("r%s-w%d-%d", round, w, i), tool) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// killCall makes one call through g and acknowledges its decision and
// its result.
func killCall(t *testing.T, g *toolgate.Gate, ack func(string, ...any), id, tool string) bool {
	ctx := context.Background()
	d, err := g.Before(ctx, toolgate.Call{Tool: tool, ID: id, Caller: killCallerName, Arguments: []byte(`{"path":"notes.txt"}`)})
	if err != nil || d.Verdict != toolgate.Allow {
		t.Errorf("before %s: %v %s", id, err, d.Explanation)
		return false
	}
	ack("allow %s %d", id, d.Seq)
	out, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte("contents"), Measured: tool == "search", Actual: 2})
	if err != nil {
		t.Errorf("after %s: %v", id, err)
		return false
	}
	ack("result %s %d", id, out.Seq)
	return true
}

// TestBeforeWrittenIsDurableOnlyAfterTheWait: over a group-commit log,
// Before, a refusal by BeforeWritten and After return with every entry
// durable; BeforeWritten's allowed decision is written and not yet
// durable when it returns (nothing else waits, so no fsync has run), and
// durable makes it so.
func TestBeforeWrittenIsDurableOnlyAfterTheWait(t *testing.T) {
	var mu sync.Mutex
	synced := uint64(0)
	store, err := trace.OpenFile(filepath.Join(t.TempDir(), "gate.log"), trace.FileOptions{Sync: trace.SyncGroup,
		OnSync: func(st trace.SyncStat) { mu.Lock(); synced += uint64(st.Records); mu.Unlock() }})
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	defer log.Close()
	durableNow := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return synced == log.Head().Size
	}
	ctx := context.Background()
	g, err := toolgate.New(ctx, log, mustCompile(killConfig))
	require.NoError(t, err)
	call := toolgate.Call{Tool: "read_file", Caller: killCallerName, Arguments: []byte(`{}`)}

	d, err := g.Before(ctx, call)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	require.True(t, durableNow(), "Before returns a durable decision")

	d, durable, err := g.BeforeWritten(ctx, call)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	require.NotNil(t, durable)
	require.False(t, durableNow(), "BeforeWritten returns before the fsync")
	require.NoError(t, durable())
	require.True(t, durableNow(), "durable waits for the fsync")

	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte("x")})
	require.NoError(t, err)
	require.True(t, durableNow(), "After returns a durable result")

	r, durable, err := g.BeforeWritten(ctx, toolgate.Call{Tool: "format_disk", Caller: killCallerName, Arguments: []byte(`{}`)})
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, r.Verdict)
	require.Nil(t, durable)
	require.True(t, durableNow(), "a refusal is durable when returned")
}
