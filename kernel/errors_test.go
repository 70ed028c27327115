package kernel_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

// TestErrorsPrefixedOnce: every error the package returns starts with
// "kernel: " and says it once, also when several problems are reported
// together or an error is wrapped with where it happened.
func TestErrorsPrefixedOnce(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 2 * kernel.Unit, MinActionCost: kernel.Unit, Invariants: []kernel.Invariant{nonNegative("x")}})
	s := mustState(t, map[string]any{"x": 1})
	var errs []error
	add := func(err error) { errs = append(errs, err) }

	_, err := kernel.New(kernel.Config{Budget: -1, Invariants: []kernel.Invariant{{Name: "i", Check: func(kernel.State) bool { return true }, Enforcement: 9}}})
	add(err)
	add(kernel.Action{Cost: -1, Name: "\xff", Effects: []kernel.Effect{{Op: 99}, kernel.Increment("x", kernel.String("a"))}}.Validate())
	_, err = kernel.DecodeAction([]byte(`{"id":"","cost":"x","tags":[1],"effects":[{"op":"nope"},1],"extra":true}`))
	add(err)
	_, err = kernel.DecodeAction([]byte(`{"id":"a","id":"b"}`))
	add(err)
	_, err = kernel.DecodeState([]byte(`{"x":{"$int":"01"}}`))
	add(err)
	_, err = kernel.NewState(map[string]any{"x": math.NaN()})
	add(err)
	_, err = kernel.ApplyEffects(s, []kernel.Effect{kernel.Set("y", kernel.Int(1)), kernel.Append("x", kernel.Int(1))})
	add(err)
	_, err = kernel.ApplyEffects(s, []kernel.Effect{{Op: 99, Key: "x"}})
	add(err)
	_, err = kernel.ParseCost("0.0005")
	add(err)
	bad := kernel.Action{ID: "bad", Cost: 5 * kernel.Unit, Effects: []kernel.Effect{kernel.Decrement("x", kernel.Int(5))}}
	_, _, _, err = k.Execute(k.Start(), s, bad, "e1")
	add(err)
	_, _, _, err = k.Commit(k.Start(), s, kernel.Verdict{}, "e1")
	add(err)
	_, _, _, err = k.Rollback(k.Start(), s, kernel.Record{ExecID: "nope", After: s.Fingerprint()})
	add(err)

	store := &flakyStore{Memory: trace.NewMemory()}
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	sess, err := kernel.NewSession(ctx, log, k, s)
	require.NoError(t, err)
	store.fail.Store(true)
	_, err = sess.Execute(ctx, kernel.Action{ID: "ok", Cost: kernel.Unit})
	add(err)
	_, err = sess.Execute(ctx, bad)
	add(err)
	_, err = kernel.Replay(ctx, trace.NewMemoryLog(), k, "nobody")
	add(err)

	for i, err := range errs {
		require.Error(t, err, "case %d", i)
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, "kernel: "), "case %d: %s", i, msg)
		assert.Equal(t, 1, strings.Count(msg, "kernel: "), "case %d: %s", i, msg)
	}
}
