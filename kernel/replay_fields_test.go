package kernel_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// TestReplayRejectsDisagreeingFields: a log whose hash chain is intact but
// whose execute, rollback or reject entry records a field that the replay
// does not reproduce (inverse, emergency counter, rollback effects or
// refund, a rejection's budget or steps) is refused, not accepted.
func TestReplayRejectsDisagreeingFields(t *testing.T) {
	k := sessionKernel(t)
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, map[string]any{"x": 0}))
	require.NoError(t, err)
	rec, err := sess.Execute(ctx, incX)
	require.NoError(t, err)
	_, err = sess.Rollback(ctx, rec.ExecID)
	require.NoError(t, err)
	_, err = sess.Execute(ctx, kernel.Action{ID: "dec", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Decrement("x", value.Int(1))}})
	require.ErrorIs(t, err, kernel.ErrRejected)

	var entries []trace.Entry
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		entries = append(entries, e)
	}
	require.Len(t, entries, 4)

	rechain := func(t *testing.T, kind, old, new string) *trace.Log {
		t.Helper()
		tl := trace.NewMemoryLog()
		found := false
		for _, e := range entries {
			p := string(e.Payload)
			if e.Kind == kind {
				require.Contains(t, p, old)
				p = strings.Replace(p, old, new, 1)
				found = true
			}
			_, err := tl.Append(ctx, e.Kind, []byte(p))
			require.NoError(t, err)
		}
		require.True(t, found)
		return tl
	}
	// The untouched log replays.
	_, err = kernel.Replay(ctx, rechain(t, kernel.KindStart, `"session"`, `"session"`), k, "")
	require.NoError(t, err)

	for _, tc := range []struct{ name, kind, old, new string }{
		{"execute inverse", kernel.KindExecute, `"inverse":[{"key":"x","op":"decrement","value":1}]`, `"inverse":[]`},
		{"execute emergency steps", kernel.KindExecute, `"emergency_steps":0`, `"emergency_steps":5`},
		{"execute emergency flag", kernel.KindExecute, `"emergency":false`, `"emergency":true`},
		{"rollback refund", kernel.KindRollback, `"refund":"2"`, `"refund":"1"`},
		{"rollback effects", kernel.KindRollback, `"effects":[{"key":"x","op":"decrement","value":1}]`, `"effects":[]`},
		{"rollback before", kernel.KindRollback, `"before":"`, `"before":"0`},
		{"reject budget", kernel.KindReject, `"gross":"2"`, `"gross":"9"`},
		{"reject steps", kernel.KindReject, `"steps":1`, `"steps":0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := kernel.Replay(ctx, rechain(t, tc.kind, tc.old, tc.new), k, "")
			require.ErrorIs(t, err, kernel.ErrReplay)
		})
	}
}

// TestReplayRejectsDisagreeingWarnings: the monitoring violations an
// execute entry records must be the ones the replay finds.
func TestReplayRejectsDisagreeingWarnings(t *testing.T) {
	warn := kernel.Invariant{Name: "small", Enforcement: kernel.EnforcementMonitoring, Check: func(s kernel.State) bool {
		i, _ := s.Int("x")
		return i < 1
	}}
	k := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit, Invariants: []kernel.Invariant{warn}})
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, map[string]any{"x": 0}))
	require.NoError(t, err)
	rec, err := sess.Execute(ctx, incX)
	require.NoError(t, err)
	require.Len(t, rec.Warnings, 1)
	tl := trace.NewMemoryLog()
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		p := string(e.Payload)
		if e.Kind == kernel.KindExecute {
			i := strings.Index(p, `"warnings":[`)
			require.Positive(t, i)
			p = p[:i] + `"warnings":[]}`
		}
		_, err = tl.Append(ctx, e.Kind, []byte(p))
		require.NoError(t, err)
	}
	_, err = kernel.Replay(ctx, log, k, "")
	require.NoError(t, err)
	_, err = kernel.Replay(ctx, tl, k, "")
	require.ErrorIs(t, err, kernel.ErrReplay)
}
