package kernel_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/kerneltest"
)

// catalogue is a generated kernel configuration, initial state and action
// generator over a few variables, with a blocking and a monitoring
// invariant and an emergency action.
func catalogue(t *rapid.T) kerneltest.Setup {
	keys := kerneltest.Keys().Draw(t, "keys")
	eps := kernel.Cost(rapid.Int64Range(1, 2000).Draw(t, "eps"))
	budget := kernel.Cost(rapid.Int64Range(0, 20_000).Draw(t, "budget"))
	k, err := kernel.New(kernel.Config{
		Budget:        budget,
		MinActionCost: eps,
		Invariants: []kernel.Invariant{
			nonNegative(keys[0]),
			{Name: "small list", Enforcement: kernel.EnforcementMonitoring, Check: func(s kernel.State) bool {
				v, _ := s.Get(keys[len(keys)-1])
				return v.Len() < 3
			}},
		},
		EmergencyActions: []string{"safe_hover"},
	})
	if err != nil {
		t.Fatal(err)
	}
	initial := kerneltest.State(keys).Filter(func(s kernel.State) bool {
		ok, _ := nonNegative(keys[0]).Holds(s)
		return ok
	}).Draw(t, "initial")
	hover := kernel.Action{ID: "safe_hover", Name: "hover"}
	return kerneltest.Setup{
		Kernel:    k,
		Initial:   initial,
		Actions:   rapid.OneOf(kerneltest.Action([]string{"a", "b", "safe_hover"}, keys, 3*kernel.Unit), rapid.Just(hover)),
		Emergency: &hover,
	}
}

// TestCheckTheoremsOnGeneratedCatalogues runs the exported CheckTheorems
// helper over generated kernels, states and catalogues.
func TestCheckTheoremsOnGeneratedCatalogues(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		kerneltest.CheckTheorems(t, catalogue(t))
	})
}
