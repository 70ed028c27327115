package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// TestVerdictDoesNotAliasTheAction: changing the caller's action after
// Evaluate cannot change what Commit records; the Record describes the
// effects that were evaluated and applied.
func TestVerdictDoesNotAliasTheAction(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit, Invariants: []kernel.Invariant{nonNegative("x")}})
	s := mustState(t, map[string]any{"x": 0})
	a := kernel.Action{ID: "inc", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}, Tags: []string{"t"}}
	v := k.Evaluate(k.Start(), s, a)
	require.True(t, v.Allowed())
	a.Effects[0] = kernel.Set("x", value.Int(-100))
	a.Tags[0] = "changed"
	next, _, rec, err := k.Commit(k.Start(), s, v, "e1")
	require.NoError(t, err)
	got, _ := next.Get("x")
	assert.True(t, got.Equal(value.Int(1)))
	assert.Equal(t, []kernel.Effect{kernel.Increment("x", value.Int(1))}, rec.Action.Effects, "the record shows the evaluated effects")
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
	a := kernel.Action{ID: "inc", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}}
	ks := k.Start()
	v := k.Evaluate(ks, s, a)
	n1, ks1, rec1, err := k.Commit(ks, s, v, "e1")
	require.NoError(t, err)
	n2, ks2, rec2, err := k.Commit(ks, s, v, "e2")
	require.NoError(t, err)
	rec1.Inverse[0] = kernel.Set("x", value.Int(42))
	back, _, _, err := k.Rollback(ks2, n2, rec2)
	require.NoError(t, err)
	assert.True(t, back.Equal(s))
	_, _ = n1, ks1
}

// TestVerdictCopiesCannotChangeTheCommit: what a Verdict hands out
// (Checks, Warnings, Failures, Next) is a copy or an immutable value, so
// changing it changes neither the Verdict nor what Commit records and
// counts: a non-emergency action stays one T2 step, its monitoring
// violation stays recorded.
func TestVerdictCopiesCannotChangeTheCommit(t *testing.T) {
	warn := kernel.Invariant{Name: "small", Enforcement: kernel.EnforcementMonitoring, Check: func(s kernel.State) bool {
		i, _ := s.Int("x")
		return i < 1
	}}
	k := mustKernel(t, kernel.Config{Budget: kernel.Unit, MinActionCost: kernel.Unit, Invariants: []kernel.Invariant{warn}})
	require.Equal(t, uint64(1), k.MaxSteps())
	s := mustState(t, map[string]any{"x": 0})
	a := kernel.Action{ID: "inc", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}}
	m := k.Start()
	v := k.Evaluate(m, s, a)
	require.True(t, v.Allowed())
	require.False(t, v.Emergency())
	require.Len(t, v.Warnings(), 1)
	for _, cs := range [][]kernel.CheckResult{v.Checks(), v.Warnings()} {
		for i := range cs {
			cs[i].Status = kernel.StatusPassed
		}
	}
	require.Len(t, v.Warnings(), 1)
	next, nm, rec, err := k.Commit(m, s, v, "e1")
	require.NoError(t, err)
	assert.True(t, next.Equal(v.Next()))
	assert.False(t, rec.Emergency)
	assert.Equal(t, uint64(1), nm.Steps())
	assert.Equal(t, uint64(0), nm.EmergencySteps())
	assert.Len(t, rec.Warnings, 1, "the monitoring violation is recorded")
	rec.Warnings[0].Status = kernel.StatusPassed
	_, _, rec2, err := k.Commit(m, s, v, "e2")
	require.NoError(t, err)
	assert.Equal(t, kernel.StatusWarned, rec2.Warnings[0].Status, "Records share nothing with the Verdict")
	back, bm, _, err := k.Rollback(nm, next, rec)
	require.NoError(t, err)
	assert.False(t, k.Evaluate(bm, back, a).Allowed(), "T2: a rollback does not give the step back")
}
