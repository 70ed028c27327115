package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
)

// TestVerdictDoesNotAliasTheAction: changing the caller's action after
// Evaluate cannot change what Commit records; the Record describes the
// effects that were evaluated and applied.
func TestVerdictDoesNotAliasTheAction(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit, Invariants: []kernel.Invariant{nonNegative("x")}})
	s := mustState(t, map[string]any{"x": 0})
	a := kernel.Action{ID: "inc", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("x", kernel.Int(1))}, Tags: []string{"t"}}
	v := k.Evaluate(k.Start(), s, a)
	require.True(t, v.Allowed)
	a.Effects[0] = kernel.Set("x", kernel.Int(-100))
	a.Tags[0] = "changed"
	next, _, rec, err := k.Commit(k.Start(), s, v, "e1")
	require.NoError(t, err)
	got, _ := next.Get("x")
	assert.True(t, got.Equal(kernel.Int(1)))
	assert.Equal(t, []kernel.Effect{kernel.Increment("x", kernel.Int(1))}, rec.Action.Effects, "the record shows the evaluated effects")
	assert.Equal(t, []string{"t"}, rec.Action.Tags)
	replayed, err := kernel.ApplyEffects(s, rec.Action.Effects)
	require.NoError(t, err)
	assert.Equal(t, rec.After, replayed.Fingerprint(), "re-applying the recorded effects reproduces the committed state")
}

// TestCommitRecordsDoNotShareInverse: two Records committed from one
// Verdict (two branches of a pure kernel) do not share their Inverse, so
// changing one cannot break the other's rollback.
func TestCommitRecordsDoNotShareInverse(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit})
	s := mustState(t, map[string]any{"x": 0})
	a := kernel.Action{ID: "inc", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("x", kernel.Int(1))}}
	ks := k.Start()
	v := k.Evaluate(ks, s, a)
	n1, ks1, rec1, err := k.Commit(ks, s, v, "e1")
	require.NoError(t, err)
	n2, ks2, rec2, err := k.Commit(ks, s, v, "e2")
	require.NoError(t, err)
	rec1.Inverse[0] = kernel.Set("x", kernel.Int(42))
	back, _, _, err := k.Rollback(ks2, n2, rec2)
	require.NoError(t, err)
	assert.True(t, back.Equal(s))
	_, _ = n1, ks1
}
