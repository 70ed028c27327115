package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// gateLog writes a log file through a tool gate with a budget of 10: a
// read, a refused unknown tool, an approved deletion and a failed send.
func gateLog(t *testing.T) string {
	t.Helper()
	return gateLogWith(t, 10*kernel.Unit)
}

// gateLogWith is gateLog with the given budget.
func gateLogWith(t *testing.T, budget kernel.Cost) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gate.trace")
	f, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(f)
	require.NoError(t, err)
	n := 0
	comp, err := toolgate.Policy{Budget: budget, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "read_*", Cost: kernel.Unit / 10},
		{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete},
		{Match: "send", Cost: 2 * kernel.Unit, RefundOnError: true},
	}}.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, comp, toolgate.WithIDs(func() string { n++; return "id-" + string(rune('a'+n-1)) }))
	require.NoError(t, err)
	run := func(tool string, fail error) {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "agent-1", Arguments: []byte(`{}`)})
		require.NoError(t, err)
		if d.Verdict == toolgate.AskApproval {
			_, err := g.Approve(ctx, d.Approval.ID, toolgate.DefaultApprover, "checked")
			require.NoError(t, err)
			d, err = g.Before(ctx, d.Call)
			require.NoError(t, err)
		}
		if d.Verdict == toolgate.Allow {
			_, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"done"`), Err: fail})
			require.NoError(t, err)
		}
	}
	run("read_file", nil)
	run("format_disk", nil)
	run("delete_file", nil)
	run("send", errors.New("smtp down"))
	require.NoError(t, f.Close())
	return path
}

// TestInspectToolGate: the gate's refusals and results each have a
// one-line summary, and the callers' kernel sessions replay.
func TestInspectToolGate(t *testing.T) {
	path := gateLog(t)
	r := verity(t, "inspect", path, "--kind", "toolgate")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `toolgate\.result +read_file call id-a for "agent-1" ok, charged 0\.1 \(exec id-b\), output 6 bytes\n`, r.stdout)
	assert.Regexp(t, `toolgate\.refuse +refused format_disk call id-c for "agent-1" \(unknown_tool\): tool "format_disk" is not in the gate's catalogue\n`, r.stdout)
	assert.Regexp(t, `toolgate\.result +send call id-\w+ for "agent-1" failed: smtp down, charged 0 \(exec id-\w+\), output 6 bytes\n`, r.stdout)
	assert.NotContains(t, r.stdout, "unreadable")

	r = verity(t, "replay", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "kernel session toolgate:agent-1")
	assert.Contains(t, r.stdout, `"calls/delete_file":1`)
}

// approvalsLog writes a log file through a gate made WithDurableApprovals
// with an approval TTL of an hour: a deletion asked about, approved and
// run; another asked about and left to expire; an answer to a request
// never asked (refused); and an unknown tool. Every kind of entry the
// gate writes is in it, and the kernel's and claims' beside them.
func approvalsLog(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "approvals.trace")
	f, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(f)
	require.NoError(t, err)
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	n := 0
	compiled, err := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, ApprovalTTL: time.Hour,
		Tools: []toolgate.Rule{
			{Match: "read_*", Cost: kernel.Unit / 10},
			{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete},
		}}.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, compiled,
		toolgate.WithDurableApprovals(), toolgate.WithClock(func() time.Time { return now }),
		toolgate.WithIDs(func() string { n++; return fmt.Sprintf("id-%d", n) }))
	require.NoError(t, err)
	call := func(id, args string) toolgate.Call {
		return toolgate.Call{Tool: "delete_file", ID: id, Caller: "agent-1", Arguments: []byte(args)}
	}

	d, err := g.Before(ctx, call("d1", `{"path":"/tmp/a"}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	_, err = g.Approve(ctx, d.Approval.ID, toolgate.DefaultApprover, "checked")
	require.NoError(t, err)
	d, err = g.Before(ctx, d.Call)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"deleted"`)})
	require.NoError(t, err)

	d, err = g.Before(ctx, call("d2", `{"path":"/tmp/b"}`))
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	now = now.Add(2 * time.Hour)
	expired, err := g.ExpireApprovals(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, expired)

	_, err = g.Approve(ctx, "never-asked", toolgate.DefaultApprover, "")
	require.Error(t, err)
	d, err = g.Before(ctx, toolgate.Call{Tool: "format_disk", ID: "f1", Caller: "agent-1"})
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, d.Verdict)
	require.NoError(t, f.Close())
	return path
}

// TestEveryGateEntryIsReadable: on a log written with durable approvals,
// expiry and a refused answer, every command that reads entries (verify,
// inspect, inspect --json, replay, view) reads every entry — the gate's
// five kinds, the kernel's and the claims' — and none is an "unreadable
// payload".
func TestEveryGateEntryIsReadable(t *testing.T) {
	path := approvalsLog(t)
	r := verity(t, "verify", path)
	require.Equal(t, exitOK, r.code, r.stderr)

	r = verity(t, "inspect", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "unreadable")
	for _, kind := range []string{gatelog.KindRefuse, gatelog.KindResult, gatelog.KindRefuseAnswer, gatelog.KindAsk, gatelog.KindExpire,
		kernel.KindStart, kernel.KindExecute, claims.KindEvaluate, claims.KindApprove} {
		assert.Regexp(t, `\s`+regexp.QuoteMeta(kind)+`\s`, r.stdout, "the log holds a %s entry", kind)
	}
	assert.Regexp(t, `toolgate\.ask +asked DELETE approval id-\d+ of delete_file call d1 for "agent-1": Allow the DELETE tool call "delete_file" with arguments \{"path":"/tmp/a"\}\?, expires 2026-03-01T10:00:00\.0+Z\n`, r.stdout)
	assert.Regexp(t, `toolgate\.expire +expired waiting request id-\d+ \(DELETE\) of delete_file for "agent-1", asked 2026-03-01T09:00:00\.0+Z\n`, r.stdout)
	assert.Regexp(t, `toolgate\.refuse_answer +refused answer APPROVED by "human" to request never-asked for ""`, r.stdout)
	assert.Regexp(t, `toolgate\.result +delete_file call d1 for "agent-1" ok`, r.stdout)

	r = verity(t, "inspect", "--json", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "unreadable")

	r = verity(t, "replay", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "kernel session toolgate:agent-1")

	base, _ := startView(t, path)
	var st status
	getJSON(t, base+"api/status", &st)
	assert.True(t, st.OK)
	assert.Equal(t, 2, st.Kinds[gatelog.KindAsk])
	assert.Equal(t, 1, st.Kinds[gatelog.KindExpire])
	var page entriesPage
	getJSON(t, base+"api/entries?limit=1000", &page)
	require.Equal(t, int(st.Entries), page.Total)
	for _, row := range page.Rows {
		assert.Equal(t, "ok", row.State, "entry %d", row.Seq)
		assert.NotContains(t, row.Summary, "unreadable", "entry %d (%s)", row.Seq, row.Kind)
	}
}
