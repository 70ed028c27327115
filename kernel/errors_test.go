package kernel_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
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
	add(kernel.ValidateAction(kernel.Action{Cost: -1, Name: "\xff", Effects: []kernel.Effect{{Op: 99}, kernel.Increment("x", value.String("a"))}}))
	_, err = kernel.DecodeAction([]byte(`{"id":"","cost":"x","tags":[1],"effects":[{"op":"nope"},1],"extra":true}`))
	add(err)
	_, err = kernel.DecodeAction([]byte(`{"id":"a","id":"b"}`))
	add(err)
	_, err = kernel.DecodeState([]byte(`{"x":{"$int":"01"}}`))
	add(err)
	_, err = kernel.NewState(map[string]any{"x": math.NaN()})
	add(err)
	_, err = kernel.ApplyEffects(s, []kernel.Effect{kernel.Set("y", value.Int(1)), kernel.Append("x", value.Int(1))})
	add(err)
	_, err = kernel.ApplyEffects(s, []kernel.Effect{{Op: 99, Key: "x"}})
	add(err)
	_, err = kernel.ParseCost("0.0005")
	add(err)
	bad := kernel.Action{ID: "bad", Cost: 5 * kernel.Unit, Effects: []kernel.Effect{kernel.Decrement("x", value.Int(5))}}
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

// TestRejectionsMatchTheirChecks: a rejection matches (errors.Is) the
// CheckName of every check that failed and of no other — a meter of
// another kernel is a failure of well_formed, a refusal of the shared
// budget one of shared_budget — and a CheckName as an error reads as its
// failure, with the package prefix.
func TestRejectionsMatchTheirChecks(t *testing.T) {
	all := []kernel.CheckName{kernel.CheckWellFormed, kernel.CheckMinCost, kernel.CheckBudget, kernel.CheckStepLimit,
		kernel.CheckEffects, kernel.CheckInvariant, kernel.CheckPrecondition, kernel.CheckSharedBudget}
	owner := kernel.Precondition{Name: "owner", Check: func(_ kernel.State, a kernel.Action) bool { return a.Name != "intruder" }}
	k := mustKernel(t, kernel.Config{Budget: 3 * kernel.Unit, MinActionCost: kernel.Unit,
		Invariants: []kernel.Invariant{nonNegative("x")}, Preconditions: []kernel.Precondition{owner}})
	other := mustKernel(t, kernel.Config{Budget: kernel.Unit, MinActionCost: kernel.Unit})
	s := mustState(t, map[string]any{"x": 1, "t": "a"})
	inc := kernel.Action{ID: "a", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}}
	with := func(f func(a *kernel.Action)) kernel.Action {
		a := inc
		f(&a)
		return a
	}
	spent := k.Start()
	for i := range 3 {
		var err error
		_, spent, _, err = k.Execute(spent, s, inc, strconv.Itoa(i))
		require.NoError(t, err)
	}
	cases := []struct {
		m    kernel.Meter
		a    kernel.Action
		want []kernel.CheckName
	}{
		{k.Start(), with(func(a *kernel.Action) { a.ID = "" }), []kernel.CheckName{kernel.CheckWellFormed}},
		{other.Start(), inc, []kernel.CheckName{kernel.CheckWellFormed}},
		{k.Start(), with(func(a *kernel.Action) { a.Cost = kernel.Unit / 2 }), []kernel.CheckName{kernel.CheckMinCost}},
		{spent, inc, []kernel.CheckName{kernel.CheckBudget, kernel.CheckStepLimit}},
		{k.Start(), with(func(a *kernel.Action) { a.Effects = []kernel.Effect{kernel.Increment("t", value.Int(1))} }), []kernel.CheckName{kernel.CheckEffects}},
		{k.Start(), with(func(a *kernel.Action) { a.Effects = []kernel.Effect{kernel.Decrement("x", value.Int(5))} }), []kernel.CheckName{kernel.CheckInvariant}},
		{k.Start(), with(func(a *kernel.Action) { a.Name = "intruder" }), []kernel.CheckName{kernel.CheckPrecondition}},
	}
	for i, c := range cases {
		_, _, _, err := k.Execute(c.m, s, c.a, "e")
		require.ErrorIs(t, err, kernel.ErrRejected, "case %d", i)
		for _, name := range all {
			assert.Equal(t, slices.Contains(c.want, name), errors.Is(err, name), "case %d: %s", i, string(name))
		}
	}

	sb := &refusingBudget{}
	sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, s, kernel.WithSharedBudget(sb))
	require.NoError(t, err)
	_, err = sess.Execute(ctx, inc)
	assert.ErrorIs(t, err, kernel.CheckSharedBudget)
	assert.ErrorIs(t, err, errPoolEmpty)
	assert.NotErrorIs(t, err, kernel.CheckBudget)

	for _, name := range all {
		assert.True(t, strings.HasPrefix(name.Error(), "kernel: "), string(name))
		assert.NotContains(t, strings.TrimPrefix(name.Error(), "kernel: "), "kernel: ")
	}
	assert.Equal(t, "kernel: budget exceeded", kernel.CheckBudget.Error())
}

var errPoolEmpty = errors.New("pool empty")

// refusingBudget is a SharedBudget that refuses every charge.
type refusingBudget struct{}

func (*refusingBudget) Charge(context.Context, string, int64) error { return errPoolEmpty }
func (*refusingBudget) Refund(context.Context, string, int64) error { return nil }
