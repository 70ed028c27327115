package toolgate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// TestTaskSettlesAcrossRestart: a reserved call recorded as a task stays
// charged its reservation across a restart of the gate, is opened again
// by OpenTasks, settled by After at what it measured, and is no longer
// open once its result is on the log.
func TestTaskSettlesAcrossRestart(t *testing.T) {
	log := trace.NewMemoryLog()
	cfg := toolgate.Policy{Budget: units(10), MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{{Match: "render", Cost: units(4), Reserve: true}}}
	g := newGate(t, log, cfg)
	c := call("render", `{"page":1}`)
	c.Caller = "alice"
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	seq, err := g.RecordTask(ctx, d.Call, "task-1", "sub:alice", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	e, err := gatelog.Decode(entryAt(t, log, seq))
	require.NoError(t, err)
	assert.Equal(t, "task-1", e.(gatelog.Task).TaskID)
	assert.Equal(t, d.ExecID, e.(gatelog.Task).ExecID)

	// Not open: nothing recorded.
	_, err = g.RecordTask(ctx, toolgate.Call{Caller: "alice", ID: "nope", Tool: "render"}, "t", "", time.Time{})
	require.ErrorIs(t, err, toolgate.ErrUnknownCall)

	// Restart: the call is not open until OpenTasks.
	g2 := newGate(t, log, cfg)
	_, err = g2.After(ctx, d.Call, toolgate.Result{Output: []byte("x")})
	require.ErrorIs(t, err, toolgate.ErrUnknownCall)
	tasks, err := g2.OpenTasks(ctx)
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	m, _ := g2.Meter("alice")
	assert.Equal(t, units(4), m.Budget().Net(), "the reservation stays charged")

	o, err := g2.After(ctx, d.Call, toolgate.Result{Output: []byte("done"), Measured: true, Actual: units(1)})
	require.NoError(t, err)
	assert.Equal(t, units(1), o.Charged)
	m, _ = g2.Meter("alice")
	assert.Equal(t, units(1), m.Budget().Net())

	g3 := newGate(t, log, cfg)
	tasks, err = g3.OpenTasks(ctx)
	require.NoError(t, err)
	assert.Empty(t, tasks, "a task whose result is on the log is closed")
	m, _ = g3.Meter("alice")
	assert.Equal(t, units(1), m.Budget().Net())
}

// TestFixedCostTaskEndsAtItsCostAfterRestart: a fixed-cost call opened
// again after a restart is closed by After at its cost, even when it
// failed under RefundOnError: its charge can no longer be refunded, and
// it must not stay open on a refund that fails.
func TestFixedCostTaskEndsAtItsCostAfterRestart(t *testing.T) {
	log := trace.NewMemoryLog()
	cfg := toolgate.Policy{Budget: units(10), MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{{Match: "render", Cost: units(4), RefundOnError: true}}}
	g := newGate(t, log, cfg)
	c := call("render", `{}`)
	c.Caller = "alice"
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	_, err = g.RecordTask(ctx, d.Call, "t1", "", time.Time{})
	require.NoError(t, err)

	g2 := newGate(t, log, cfg)
	_, err = g2.OpenTasks(ctx)
	require.NoError(t, err)
	o, err := g2.After(ctx, d.Call, toolgate.Result{Output: []byte("x"), Err: errors.New("boom")})
	require.NoError(t, err)
	assert.Equal(t, units(4), o.Charged)
	tasks, err := newGate(t, log, cfg).OpenTasks(ctx)
	require.NoError(t, err)
	assert.Empty(t, tasks, "closed")
}
