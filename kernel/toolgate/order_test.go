package toolgate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
)

// TestBudgetCheckedBeforeAskingAHuman: a call that needs approval and
// that the budget could not pay is refused without asking anyone (no
// claims evaluation, nothing pending, nothing charged); one asked while
// the budget could pay, approved after the budget was spent elsewhere,
// is refused by the kernel when it runs.
func TestBudgetCheckedBeforeAskingAHuman(t *testing.T) {
	log := newLog(t)
	cfg := testConfig()
	cfg.Budget = units(2)
	cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "spend", Cost: kernel.Unit / 2})
	g := newGate(t, log, cfg)
	big := toolgate.Call{Tool: "delete_file", Arguments: []byte(`{"path":"/a"}`), Caller: "agent"}

	d, err := g.Before(ctx, big)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict, "1 of 2 left: worth asking")
	// Spend it elsewhere meanwhile: 1.3 of 2.
	for _, tool := range []string{"read_x", "read_x", "read_x", "spend", "spend"} {
		s, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "agent", Arguments: []byte(`{}`)})
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, s.Verdict)
		_, err = g.After(ctx, s.Call, toolgate.Result{})
		require.NoError(t, err)
	}
	ok, err := g.Approve(ctx, d.Approval.ID, toolgate.DefaultApprover, "")
	require.NoError(t, err)
	require.True(t, ok)
	ran, err := g.Before(ctx, big)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, ran.Verdict, "re-checked when it runs: %s", ran.Explanation)
	assert.Contains(t, ran.Explanation, "budget")

	// Now too little is left: the next ask is refused before anyone is asked.
	evaluations, rejections := len(entriesOf(t, log, claims.KindEvaluate)), len(entriesOf(t, log, kernel.KindReject))
	other := toolgate.Call{Tool: "delete_file", Arguments: []byte(`{"path":"/b"}`), Caller: "agent"}
	m, _ := g.Meter("agent")
	d, err = g.Before(ctx, other)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, "kernel", d.Condition)
	assert.Contains(t, d.Explanation, "budget")
	assert.Contains(t, d.Explanation, "nobody was asked")
	assert.Empty(t, g.Pending())
	assert.Len(t, entriesOf(t, log, claims.KindEvaluate), evaluations, "no request was made")
	m2, _ := g.Meter("agent")
	assert.Equal(t, m.Budget(), m2.Budget(), "nothing charged")
	assert.Len(t, entriesOf(t, log, kernel.KindReject), rejections, "the dry check records no rejection")
}
