package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
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
