package kernel_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// TestVerdictExplainWording: the explanation a host hands back to a model
// names each failed check in a stable wording.
func TestVerdictExplainWording(t *testing.T) {
	deletes := kernel.AtMost("at-most-3-deletes", "deletes", 3)
	deletes.Suggestion = "ask a human"
	plain := kernel.Invariant{Name: "plain", Check: func(kernel.State) bool { return false }}
	panicky := kernel.Invariant{Name: "panicky", Check: func(kernel.State) bool { panic("boom") }, Enforcement: kernel.EnforcementMonitoring}
	k := mustKernel(t, kernel.Config{Budget: units(1), MinActionCost: kernel.Unit / 2,
		Invariants:    []kernel.Invariant{deletes},
		Preconditions: []kernel.Precondition{{Name: "owner", Check: func(kernel.State, kernel.Action) bool { return false }}},
	})
	s := mustState(t, map[string]any{"deletes": 3})
	del := kernel.Action{ID: "delete", Cost: units(2), Effects: []kernel.Effect{kernel.Increment("deletes", value.Int(1))}}
	v := k.Evaluate(k.Start(), s, del)
	assert.Equal(t, `action "delete" rejected: budget: cost 2, remaining 1; invariant at-most-3-deletes: deletes would be 4, at most 3 (ask a human); precondition owner: failed`, v.Explain())

	k = mustKernel(t, kernel.Config{Budget: units(1), MinActionCost: kernel.Unit / 2, Invariants: []kernel.Invariant{plain, panicky}})
	cases := map[string]kernel.Action{
		`action "cheap" rejected: min_cost: cost 0.1 < minimum 0.5; invariant plain: violated`:            {ID: "cheap", Cost: 100},
		`action "bad" rejected: effects: effect 0 (increment "nothing"): increment of an absent variable`: {ID: "bad", Cost: units(1), Effects: []kernel.Effect{kernel.Increment("nothing", value.Int(1))}},
		`action "" rejected: well_formed: invalid action: empty id`:                                       {Cost: units(1)},
	}
	for want, a := range cases {
		v := k.Evaluate(k.Start(), s, a)
		assert.Equal(t, want, v.Explain())
		var rej *kernel.RejectedError
		require.True(t, errors.As(v.Err(), &rej))
		assert.Equal(t, want, rej.Verdict.Explain())
	}
	ok := mustKernel(t, kernel.Config{Budget: units(1), MinActionCost: 1})
	assert.Equal(t, "", ok.Evaluate(ok.Start(), s, kernel.Action{ID: "fine", Cost: 1}).Explain())
	assert.Equal(t, `action "" rejected`, kernel.Verdict{}.Explain())
}

// TestVerdictExplainIsOneLine: whatever an invariant's name or suggestion
// holds (a line feed, NUL, a line or paragraph separator), Explain is one
// line.
func TestVerdictExplainIsOneLine(t *testing.T) {
	inv := kernel.Invariant{Name: "no\ndeletes\u2029", Check: func(kernel.State) bool { return false },
		Suggestion: "ask a human.\nThen retry.\u2028\x00\u0085"}
	k := mustKernel(t, kernel.Config{Budget: units(1), MinActionCost: 1, Invariants: []kernel.Invariant{inv}})
	v := k.Evaluate(k.Start(), mustState(t, nil), kernel.Action{ID: "delete", Cost: 1})
	got := v.Explain()
	assert.Equal(t, `action "delete" rejected: invariant no deletes : violated (ask a human. Then retry.   )`, got)
	assert.NotContains(t, got, "\n")
	assert.NotContains(t, got, "\u2028")
}

// TestStepLimitExplainedByMinCost: a refusal by the step limit says that
// the limit is the budget divided by min_cost.
func TestStepLimitExplainedByMinCost(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: units(2), MinActionCost: units(1)})
	m, s := k.Start(), mustState(t, nil)
	for i := range 2 {
		v := k.Evaluate(m, s, kernel.Action{ID: "a", Cost: units(1)})
		require.True(t, v.Allowed())
		var err error
		s, m, _, err = k.Commit(m, s, v, fmt.Sprint("x", i))
		require.NoError(t, err)
	}
	v := k.Evaluate(m, s, kernel.Action{ID: "a", Cost: units(1)})
	assert.Contains(t, v.Explain(), "step_limit: 2 of 2 steps taken (budget 2 / min_cost 1: every call costs at least min_cost)")
}
