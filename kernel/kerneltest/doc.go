// Package kerneltest provides rapid generators for kernel values and
// CheckTheorems, a property check that a kernel configuration — your own
// invariants, preconditions, emergency actions and action catalogue —
// keeps the guarantees T1–T8 of package kernel on random runs.
//
// # Usage
//
// In a test of your own package:
//
//	func TestMyAgentKeepsTheTheorems(t *testing.T) {
//		rapid.Check(t, func(rt *rapid.T) {
//			kerneltest.CheckTheorems(rt, kerneltest.Setup{
//				Kernel:  myKernel,                        // your invariants and emergency ids
//				Initial: myInitialState,                  // must satisfy the blocking invariants
//				Actions: rapid.SampledFrom(myCatalogue),  // or kerneltest.Action(keys)
//			})
//		})
//	}
//
// CheckTheorems drives a kernel.Session over an in-memory trace with a
// deterministic clock, and checks each theorem after every step (see its
// documentation for what each check is), then that the trace verifies, a
// tampered copy does not, and Replay rebuilds the same session. The
// generators (Int, Float, Scalar, Value, Keys, State, Effect, Effects,
// Cost, Action) are biased towards the edges where the kernel's rules
// bite: overflow, integral floats, -0, lists with duplicates, effects that
// do not fit.
package kerneltest
