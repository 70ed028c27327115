// This file checks the theorems T1–T8 of the specification, each by a
// rapid property named after it. Levels: proven by construction (holds for
// every input by the structure of the code), conditional (proven under the
// stated assumptions), or empirical. kerneltest.CheckTheorems runs all of
// them against a caller's own kernel and catalogue.
//
//   - T1 Budget safety — net spend ≤ B0 at all times. By construction: the
//     budget's charge refuses any cost beyond Limit − Net (integer
//     arithmetic, no overflow); Session holds its mutex across evaluate and
//     commit. Assumes a single Session per budget, or a SharedBudget whose
//     Charge is atomic. A reservation charges its upper bound at Reserve,
//     so T1 holds between Reserve and Settle with any number open; a
//     settlement above the reservation (an overrun) charges the excess only
//     up to what remains — the rest is recorded as Unpaid and returned as
//     ErrOverrun, never charged and never hidden. TestT1BudgetSafety,
//     TestSessionConcurrentNeverOverspends, TestSharedBudgetAcrossSessions,
//     TestT1ConcurrentReserveSettleRefund, TestReserveSettleOverrun,
//     TestSettleAndRefundNeverRefundMoreThanCharged.
//   - T2 Termination — at most floor(B0/ε) non-emergency executions.
//     Conditional on ε > 0 (New refuses anything else) and on emergency
//     actions terminating themselves; the bound is computed in integers,
//     and rollback never decrements the step counter. Emergency executions
//     are counted separately (Meter.EmergencySteps) and are not bounded.
//     TestT2Termination, TestT2BoundIsExactInIntegers,
//     TestVerdictCopiesCannotChangeTheCommit.
//   - T3 Invariant safety — if the initial state satisfies every blocking
//     invariant, so does every reached state. Conditional: the kernel does
//     not check the initial state (kerneltest.CheckTheorems does), and
//     predicates must be pure and deterministic. A panicking predicate is
//     recovered and counts as a violation. Monitoring invariants are
//     reported (Verdict.Warnings, the trace) and never block; T3 does not
//     cover them. TestT3InvariantSafety, TestEvaluateChecks.
//   - T4 Monotone gross spend — gross spend never decreases. By
//     construction: only a charge (and a settlement's overrun) adds to it;
//     refunds — Settle's difference, Refund's amount, Rollback's — add to
//     the refunded total, never beyond what an execution was charged.
//     TestT4MonotoneGrossSpend, TestBudgetRules,
//     TestSettleAndRefundNeverRefundMoreThanCharged.
//   - T5 Atomicity — a transition either changes state, budget, step count
//     and trace together or changes nothing. By construction: the core
//     returns new values and, on rejection, the old ones themselves; a
//     Verdict cannot be edited and Commit refuses one made for another
//     state or Meter; the Session replaces its values only after the trace
//     append succeeded (compensating a SharedBudget charge if it did not).
//     Even a nondeterministic predicate cannot split an action, because
//     there is no post-commit re-check. TestT5Atomicity,
//     TestRejectionChangesNothing,
//     TestNondeterministicPredicateCannotSplitAnAction,
//     TestCommitRefusesForgedOrStaleVerdicts, TestSessionSharedBudget,
//     TestSessionStateMachine.
//   - T6 Trace integrity — the log is append-only and hash-chained; any
//     change to a recorded entry is detected. Proven by package trace under
//     SHA-256 collision resistance; the kernel's part is that every
//     transition is recorded, as a typed Entry, before it takes effect.
//     TestT6TraceIntegrity, TestSessionRecordsEveryTransition,
//     TestSessionStampsOneInstant, TestReplayDetectsMismatch,
//     TestReplayRejectsDisagreeingFields.
//   - T7 Rollback exactness — rollback(execute(s, a)) == s exactly,
//     including int vs float, list order and duplicates, null vs absent,
//     -0 vs 0; the refund equals the execution's charge, once. By
//     construction over the model, and checked at runtime (the restored
//     fingerprint must equal the recorded one). TestT7RollbackExactness,
//     TestEffectRules, TestStatePersistentAgainstGoMap.
//   - T8 Emergency escape — a registered emergency action bypasses the
//     min-cost and step-limit checks, and only those. Conditional: a
//     zero-cost, effect-free emergency action (or one whose effects fit and
//     keep the invariants) is executable with the budget at zero and at
//     the step limit, and executing it keeps T1–T7 (it is charged its cost,
//     counted in EmergencySteps, and no assertion runs after a commit).
//     TestT8EmergencyEscape, TestT8ExhaustedBudgetAndSteps.
//
// TestCheckTheoremsOnGeneratedCatalogues and TestSessionStateMachine run
// all of them together over generated kernels and catalogues, and the
// fuzz targets (FuzzDecodeAction, FuzzDecodeState, FuzzParseCost,
// FuzzEvaluate, FuzzDecodeEntry) check that no input panics or is
// silently rounded.

package kernel_test

import (
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/kerneltest"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// run draws a kernel and an initial state and executes a random sequence
// of generated actions (with occasional rollbacks of the latest execution)
// on the pure core, calling check after every transition with the states
// before and after it.
type step struct {
	ks0, ks1 kernel.Meter
	s0, s1   kernel.State
	action   kernel.Action
	verdict  kernel.Verdict
	rolled   bool
	err      error
}

func run(t *rapid.T, setup kerneltest.Setup, n int, check func(step)) {
	k := setup.Kernel
	ks, s := k.Start(), setup.Initial
	var last *kernel.Record
	for i := range n {
		if last != nil && rapid.IntRange(0, 5).Draw(t, "rollback?") == 0 {
			s1, ks1, _, err := k.Rollback(ks, s, *last)
			check(step{ks0: ks, ks1: ks1, s0: s, s1: s1, rolled: true, err: err})
			ks, s, last = ks1, s1, nil
			continue
		}
		a := setup.Actions.Draw(t, "action")
		v := k.Evaluate(ks, s, a)
		s1, ks1, rec, err := k.Execute(ks, s, a, "exec-"+string(rune('a'+i%26))+itoa(i))
		check(step{ks0: ks, ks1: ks1, s0: s, s1: s1, action: a, verdict: v, err: err})
		if err == nil {
			last = &rec
		}
		ks, s = ks1, s1
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestT1BudgetSafety: net spend never exceeds B0, over random kernels and
// action sequences with rollbacks.
func TestT1BudgetSafety(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		setup := catalogue(t)
		run(t, setup, 40, func(st step) {
			b := st.ks1.Budget()
			if b.Net() > b.Limit() || b.Net() < 0 {
				t.Fatalf("net %s outside [0, %s]", b.Net(), b.Limit())
			}
			if st.err == nil && !st.rolled && st.action.Cost > st.ks0.Budget().Remaining() {
				t.Fatalf("committed cost %s with only %s remaining", st.action.Cost, st.ks0.Budget().Remaining())
			}
		})
	})
}

// TestT2Termination: with ε > 0 the number of non-emergency executions
// never exceeds floor(B0/ε) (computed in integers), and rollbacks never
// decrement the step counter.
func TestT2Termination(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		setup := catalogue(t)
		k := setup.Kernel
		if want := uint64(k.Start().Budget().Limit() / k.MinActionCost()); k.MaxSteps() != want {
			t.Fatalf("MaxSteps %d, floor(B0/ε) = %d", k.MaxSteps(), want)
		}
		run(t, setup, 60, func(st step) {
			if st.ks1.Steps() > k.MaxSteps() {
				t.Fatalf("%d steps > bound %d", st.ks1.Steps(), k.MaxSteps())
			}
			if st.ks1.Steps() < st.ks0.Steps() || st.ks1.EmergencySteps() < st.ks0.EmergencySteps() {
				t.Fatal("a step counter decreased")
			}
			if st.rolled && (st.ks1.Steps() != st.ks0.Steps()) {
				t.Fatal("rollback changed the step counter")
			}
		})
	})
	// ε ≤ 0 is refused: there would be no bound.
	for _, eps := range []kernel.Cost{0, -1} {
		if _, err := kernel.New(kernel.Config{Budget: 10, MinActionCost: eps}); !errors.Is(err, kernel.ErrInvalidConfig) {
			t.Fatalf("ε = %s accepted", eps)
		}
	}
}

// TestT2BoundIsExactInIntegers: B0 and ε chosen where float division would
// round (B0 = 0.3 units, ε = 0.1 units gives 2.9999… in floats).
func TestT2BoundIsExactInIntegers(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 300, MinActionCost: 100})
	if k.MaxSteps() != 3 {
		t.Fatalf("bound %d, want 3", k.MaxSteps())
	}
	ks, s := k.Start(), kernel.State{}
	a := kernel.Action{ID: "tick", Cost: 100}
	for i := range 3 {
		var err error
		if s, ks, _, err = k.Execute(ks, s, a, itoa(i)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	if _, _, _, err := k.Execute(ks, s, a, "x"); !errors.Is(err, kernel.CheckBudget) || !errors.Is(err, kernel.CheckStepLimit) {
		t.Fatalf("fourth step: %v", err)
	}
}

// TestT3InvariantSafety: if the initial state satisfies the blocking
// invariants, every reached state does; monitoring invariants are reported
// and never block.
func TestT3InvariantSafety(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		setup := catalogue(t)
		invs := setup.Kernel.Invariants()
		run(t, setup, 40, func(st step) {
			for _, inv := range invs {
				ok, _ := inv.Holds(st.s1)
				if !ok && inv.Enforcement == kernel.EnforcementBlocking {
					t.Fatalf("blocking invariant %q violated after %s", inv.Name, st.action.ID)
				}
			}
			if st.err == nil && !st.rolled {
				for _, w := range st.verdict.Warnings() {
					if w.Check != kernel.CheckInvariant {
						t.Fatalf("warning from %s", string(w.Check))
					}
				}
			}
		})
	})
}

// TestT4MonotoneGrossSpend: gross spend never decreases, including across
// rollbacks (which only increase the refunded total).
func TestT4MonotoneGrossSpend(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		run(t, catalogue(t), 40, func(st step) {
			b0, b1 := st.ks0.Budget(), st.ks1.Budget()
			if b1.Gross() < b0.Gross() || b1.Refunded() < b0.Refunded() {
				t.Fatalf("gross %s→%s refunded %s→%s", b0.Gross(), b1.Gross(), b0.Refunded(), b1.Refunded())
			}
			if st.rolled && st.err == nil && b1.Gross() != b0.Gross() {
				t.Fatal("rollback changed gross spend")
			}
		})
	})
}

// TestT5Atomicity: a transition is all or nothing. A rejection returns the
// very same state and meter; a commit changes the state to exactly
// the simulated next state and the budget by exactly the cost.
func TestT5Atomicity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		run(t, catalogue(t), 40, func(st step) {
			if st.rolled {
				return
			}
			if st.err != nil {
				if st.verdict.Allowed() {
					t.Fatalf("allowed verdict but Execute failed: %v", st.err)
				}
				if st.s1 != st.s0 || st.ks1 != st.ks0 {
					t.Fatal("rejection changed something")
				}
				return
			}
			if !st.s1.Equal(st.verdict.Next()) {
				t.Fatal("committed state is not the simulated state")
			}
			if st.ks1.Budget().Net()-st.ks0.Budget().Net() != st.action.Cost {
				t.Fatal("charge differs from the cost")
			}
			if st.ks1.Steps()+st.ks1.EmergencySteps() != st.ks0.Steps()+st.ks0.EmergencySteps()+1 {
				t.Fatal("step not counted exactly once")
			}
		})
	})
}

// TestRejectionChangesNothing: every rejected action leaves the session's
// state, meter and history untouched (the trace gains exactly one
// kernel.reject entry), whatever check rejected it.
func TestRejectionChangesNothing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		setup := catalogue(t)
		log := trace.NewMemoryLog()
		sess, err := kernel.NewSession(ctx, log, setup.Kernel, setup.Initial)
		if err != nil {
			t.Fatal(err)
		}
		for range 30 {
			s0, ks0, h0, head0 := sess.State(), sess.Meter(), len(sess.History()), log.Head()
			a := setup.Actions.Draw(t, "action")
			if _, err := sess.Execute(ctx, a); err != nil {
				if !errors.Is(err, kernel.ErrRejected) {
					t.Fatalf("unexpected error %v", err)
				}
				if sess.State() != s0 || sess.Meter() != ks0 || len(sess.History()) != h0 {
					t.Fatal("rejection changed the session")
				}
				if log.Head().Size != head0.Size+1 {
					t.Fatal("rejection not recorded exactly once")
				}
			}
		}
	})
}

// TestT6TraceIntegrity: the session's trace verifies, every rejection,
// execution and rollback is in it, and flipping any payload byte of any
// entry is detected.
func TestT6TraceIntegrity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		setup := catalogue(t)
		log := trace.NewMemoryLog()
		sess, err := kernel.NewSession(ctx, log, setup.Kernel, setup.Initial)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		for range 20 {
			rec, err := sess.Execute(ctx, setup.Actions.Draw(t, "action"))
			want++
			if err == nil && rapid.Bool().Draw(t, "rollback") {
				if _, err := sess.Rollback(ctx, rec.ExecID); err != nil {
					t.Fatal(err)
				}
				want++
			}
		}
		var entries []trace.Entry
		for e, err := range log.Entries(ctx, 0) {
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, e)
		}
		if len(entries) != want {
			t.Fatalf("%d entries, want %d", len(entries), want)
		}
		if _, err := trace.Verify(entries); err != nil {
			t.Fatal(err)
		}
		i := rapid.IntRange(0, len(entries)-1).Draw(t, "entry")
		p := append([]byte(nil), entries[i].Payload...)
		j := rapid.IntRange(0, len(p)-1).Draw(t, "byte")
		p[j] ^= byte(rapid.IntRange(1, 255).Draw(t, "flip"))
		entries[i].Payload = p
		var cb *trace.ChainBreakError
		if _, err := trace.Verify(entries); !errors.As(err, &cb) || cb.Index != uint64(i) {
			t.Fatalf("tampering with entry %d: %v", i, err)
		}
	})
}

// TestT7RollbackExactness: rollback(execute(s, a)) == s exactly, over
// random states and effect sequences — integers stay integers, lists keep
// duplicates and order, null stays distinct from absent — by both inverse
// mechanisms; the refund is exactly the cost, once; steps are kept.
func TestT7RollbackExactness(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		keys := kerneltest.Keys().Draw(t, "keys")
		s := kerneltest.State(keys).Draw(t, "state")
		effects := rapid.OneOf(kerneltest.Effects(s, keys, 8), rapid.SliceOfN(kerneltest.Effect(keys), 0, 6)).Draw(t, "effects")
		after, err := kernel.ApplyEffects(s, effects)
		if err != nil {
			if !errors.Is(err, kernel.CheckEffects) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		inv, err := kernel.InverseEffects(s, effects)
		if err != nil {
			t.Fatal(err)
		}
		back1, err := kernel.ApplyEffects(after, inv)
		if err != nil || !back1.Equal(s) || back1.Fingerprint() != s.Fingerprint() {
			t.Fatalf("algebraic inverse: %v\n s    = %s\n back = %s", err, s, back1)
		}
		back2, err := kernel.ApplyEffects(after, kernel.DiffInverse(s, after))
		if err != nil || !back2.Equal(s) {
			t.Fatalf("diff inverse: %v", err)
		}
		for _, key := range keys {
			v0, ok0 := s.Get(key)
			v1, ok1 := back1.Get(key)
			if ok0 != ok1 || v0.Kind() != v1.Kind() || !v0.Equal(v1) {
				t.Fatalf("%q: %v (%v) became %v (%v)", key, v0, ok0, v1, ok1)
			}
		}

		k := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: 1})
		a := kernel.Action{ID: "a", Effects: effects, Cost: kerneltest.Cost(10*kernel.Unit).Filter(func(c kernel.Cost) bool { return c >= 1 }).Draw(t, "cost")}
		ks0 := k.Start()
		s1, ks1, rec, err := k.Execute(ks0, s, a, "e1")
		if err != nil {
			t.Fatal(err)
		}
		s2, ks2, rr, err := k.Rollback(ks1, s1, rec)
		if err != nil {
			t.Fatal(err)
		}
		if !s2.Equal(s) || rr.Refund != a.Cost || ks2.Budget().Net() != 0 || ks2.Steps() != 1 || ks2.Budget().Gross() != a.Cost {
			t.Fatalf("rollback: state equal %v refund %s net %s steps %d", s2.Equal(s), rr.Refund, ks2.Budget().Net(), ks2.Steps())
		}
		if _, _, _, err := k.Rollback(ks2, s1, rec); !errors.Is(err, kernel.ErrAlreadyRolledBack) {
			t.Fatalf("second rollback: %v", err)
		}
		if !s1.Equal(s) {
			if _, _, _, err := k.Rollback(ks1, s, rec); !errors.Is(err, kernel.ErrFingerprintMismatch) {
				t.Fatalf("rollback on the wrong state: %v", err)
			}
		}
	})
}

// TestT8EmergencyEscape: a zero-cost, effect-free emergency action is
// allowed with the budget at zero and at the step limit, bypasses only the
// min-cost and step-limit checks, and executing it keeps T1–T4.
func TestT8EmergencyEscape(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		setup := catalogue(t)
		k := setup.Kernel
		hover := *setup.Emergency
		run(t, setup, 40, func(st step) {
			v := k.Evaluate(st.ks1, st.s1, hover)
			if !v.Allowed() {
				t.Fatalf("emergency refused: %v", v.Err())
			}
			for _, c := range v.Checks() {
				if (c.Check == kernel.CheckMinCost || c.Check == kernel.CheckStepLimit) != (c.Status == kernel.StatusSkipped) {
					t.Fatalf("check %s status %s", string(c.Check), c.Status)
				}
			}
			s2, ks2, _, err := k.Execute(st.ks1, st.s1, hover, "hover")
			if err != nil || !s2.Equal(st.s1) || ks2.Steps() != st.ks1.Steps() || ks2.EmergencySteps() != st.ks1.EmergencySteps()+1 ||
				ks2.Budget().Net() != st.ks1.Budget().Net() || ks2.Steps() > k.MaxSteps() {
				t.Fatalf("emergency execution broke a theorem: %v", err)
			}
		})
	})
}

// TestT8ExhaustedBudgetAndSteps pins T8 at the exact edge: zero budget
// (bound 0 steps) and a budget fully used.
func TestT8ExhaustedBudgetAndSteps(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 0, MinActionCost: 1, EmergencyActions: []string{"hover"},
		Invariants: []kernel.Invariant{nonNegative("x")}})
	ks, s := k.Start(), mustState(t, map[string]any{"x": 0})
	hover := kernel.Action{ID: "hover"}
	for i := range 3 {
		var err error
		if s, ks, _, err = k.Execute(ks, s, hover, itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	if ks.Steps() != 0 || ks.EmergencySteps() != 3 || ks.Steps() > k.MaxSteps() {
		t.Fatalf("steps %d emergency %d", ks.Steps(), ks.EmergencySteps())
	}
	// Invariants still apply to emergency actions.
	bad := kernel.Action{ID: "hover", Effects: []kernel.Effect{kernel.Set("x", value.Int(-1))}}
	if _, _, _, err := k.Execute(ks, s, bad, "bad"); !errors.Is(err, kernel.CheckInvariant) {
		t.Fatalf("emergency action bypassed an invariant: %v", err)
	}
	// A non-zero-cost emergency action is still bound by the budget.
	costly := kernel.Action{ID: "hover", Cost: 1}
	if _, _, _, err := k.Execute(ks, s, costly, "c"); !errors.Is(err, kernel.CheckBudget) {
		t.Fatalf("emergency action overspent: %v", err)
	}
}
