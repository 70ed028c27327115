// Package kernel is Verity's safety kernel: it decides whether an AI
// agent's proposed action may run, commits it atomically, and can undo it
// exactly, under a budget, a step bound and declared invariants. It is the
// Go reference for the specification's theorems T1–T8.
//
// # Values and states
//
// A Value is an immutable JSON value with strict typing: the integer 1, the
// float 1.0 and the string "1" are different, and a variable holding null
// is different from an absent one. A State maps variable names to Values.
// States are persistent (a hash array mapped trie with path copying):
// changing k variables of an n-variable state costs O(k log n) and shares
// everything else with the old state, which stays valid
// (TestPersistentMapAgainstGoMap, TestOwnedBuildersNeverChangePublishedStates).
// Nothing is aliased: constructors copy their input and accessors copy
// their output (TestNoAliasing, TestSessionRecordsAreNotAliased).
//
// Every State carries a Fingerprint: SHA-256 over a domain tag, the number
// of variables and the sum modulo 2^256 of one domain-separated SHA-256 per
// (name, value) entry — a multiset hash, updated in O(k) when k variables
// change instead of rehashing the state.
//
// # JSON
//
// The JSON forms (State.MarshalJSON, Action.MarshalJSON, the trace
// payloads) are RFC 8785 canonical JSON (internal/canon) that keeps the
// strict typing: a number literal with a fraction or exponent is a float
// and one without is an int, read from its exact digits; a float whose
// canonical text would read as an int is written {"$float":"1"} (and -0 as
// {"$float":"-0"}); a user object whose only key is "$int", "$float" or
// "$object" is wrapped as {"$object":{…}}. An int beyond ±(2^53−1) is
// written {"$int":"9223372036854775807"}, even one that is exactly a
// double: canonical JSON would write that double with the shortest digits
// that identify it (2^60 as 1152921504606847000), not the int's, whereas
// within ±(2^53−1) the literal is the int's exact digits, which every
// reader, double or int64, reads back as the same int. Decoding is strict:
// duplicate keys, invalid UTF-8, unknown action fields and inexact costs are
// errors (ErrDecode, ErrInvalidCost), never guesses.
//
// # Effects and their inverses
//
// An Action's Effects (set, increment, decrement, multiply, append, remove,
// delete) apply in sequence, each to the state the previous one produced.
// Integer arithmetic is exact and overflow is a rejection; the mixing rule
// is that a variable keeps its type (see Effect). An effect that does not
// fit the value it meets makes Evaluate reject with an *EffectError naming
// the effect and the reason; no input makes the kernel panic.
//
// Both inverse mechanisms of the specification are implemented:
// InverseEffects computes the inverse from the effects and the prior state
// (integer increments invert to decrements, everything else to a set of the
// prior value or a delete), and DiffInverse computes it from the two states
// alone (skipping the structure they share). Execute stores the first in
// the Record; Rollback applies it and checks the result's fingerprint.
//
// # Costs and the budget
//
// A Cost is an int64 number of thousandths of a unit (the specification's
// ×1000 scale). ParseCost and CostFromFloat reject a negative, non-finite,
// out-of-range or inexact amount ("0.0005") instead of rounding it. Budget
// is an immutable value with gross, refunded and net totals and a ledger of
// what each execution was charged and refunded.
//
// # Evaluate, Execute, Rollback
//
// A Kernel is an immutable configuration (B0, ε, invariants,
// preconditions, emergency action ids). Its methods are pure functions of
// a Meter (budget and step counters) and a State:
//
//   - Evaluate returns a Verdict with one CheckResult per check, in this
//     order: well_formed, min_cost, budget, step_limit, effects, one
//     invariant check per invariant (on the simulated next state), one
//     precondition check per precondition (on the current state); and the
//     simulated next state. All checks are run and reported.
//   - Execute commits an allowed action: it returns the next State, the
//     next Meter and the Record to log, or the old values and a
//     *RejectedError. Everything is computed before the commit and nothing
//     is checked after it.
//   - Commit is Execute for a Verdict already in hand; it accepts only a
//     Verdict this kernel made for exactly that State and Meter
//     (ErrStaleVerdict otherwise), and trusts only the Verdict's private
//     record of the decision, so editing a Verdict cannot force a commit.
//   - Rollback checks that it is given the state the execution produced,
//     restores the prior state exactly, refunds exactly that execution's
//     charge once, and leaves the step counters alone.
//
// # Session: the thin shell
//
// A Session owns the current State and Meter, runs evaluate and
// commit under one mutex (the specification's atomic path), and records
// every start, execution, rejection and rollback in a trace.Log with all
// their fields (kinds kernel.start, kernel.execute, kernel.reject,
// kernel.rollback; the payloads are built directly as canonical JSON and
// appended with AppendCanonical). A state change happens only after its
// entry is appended, so the log and the session never disagree. A
// rollback the kernel refuses changes nothing and is returned as an error
// without an entry. Replay
// rebuilds a Session from its log, re-executing every entry and checking
// the recorded fingerprints, budget totals and step counters.
//
// WithSharedBudget connects a SharedBudget (for example one held in a SQL
// database and shared by several processes). Inside the atomic path, after
// the kernel's own checks pass, the Session charges it (zero-cost actions
// do not consult it, so an unreachable shared budget cannot block T8's
// emergency escape); if the charge
// fails the action is rejected (recorded as check shared_budget) and
// nothing changes; if the trace append fails after a successful charge,
// the Session refunds it (compensation) and nothing changes; a rollback is
// recorded first and then refunded through it (if that refund fails, the
// rollback stands and the error says so: the shared balance then
// overstates spending, the safe direction).
//
// # Cost of an operation
//
// Evaluate and Execute cost O(k log n) for an action with k effects on an
// n-variable state (plus the invariants' own cost), Rollback the same, and
// the recorded fingerprint O(k) hashing; none of them copies or rehashes
// the state. The benchmarks (BenchmarkSessionExecute at 10, 1,000 and
// 10,000 variables, BenchmarkEvaluate, BenchmarkRollback,
// BenchmarkBuildState, BenchmarkVerify100k, and BenchmarkTraceShare, the
// trace's part of a Session execution) report wall-clock and CPU time and
// allocations per operation.
//
// # The theorems, their guarantee level, and the tests that check them
//
// Levels: proven by construction (holds for every input by the structure
// of the code), conditional (proven under the stated assumptions), or
// empirical. Every theorem is also checked by a rapid property test; the
// exported kerneltest.CheckTheorems runs all of them against a caller's own
// kernel and action catalogue.
//
//   - T1 Budget safety — net spend ≤ B0 at all times. By construction:
//     Budget.Charge refuses any cost beyond Limit − Net (integer
//     arithmetic, no overflow), Session holds its mutex across evaluate and
//     commit. Assumes a single Session per budget, or a SharedBudget whose
//     Charge is atomic. TestT1BudgetSafety,
//     TestSessionConcurrentNeverOverspends, TestSharedBudgetAcrossSessions.
//   - T2 Termination — at most floor(B0/ε) non-emergency executions.
//     Conditional on ε > 0 (New refuses anything else) and on emergency
//     actions terminating themselves; the bound is computed in integers,
//     and rollback never decrements the step counter. Emergency executions
//     are counted separately (EmergencySteps) and are not bounded.
//     TestT2Termination, TestT2BoundIsExactInIntegers.
//   - T3 Invariant safety — if the initial state satisfies every blocking
//     invariant, so does every reached state. Conditional: the kernel does
//     not check the initial state (kerneltest.CheckTheorems does), and
//     predicates must be pure and deterministic. A panicking predicate is
//     recovered and counts as a violation. EnforcementMonitoring invariants are
//     reported (Verdict.Warnings, the trace) and never block; T3 does not
//     cover them. TestT3InvariantSafety, TestEvaluateChecks.
//   - T4 Monotone gross spend — gross spend never decreases. By
//     construction: only Charge adds to it; refunds add to the refunded
//     total. TestT4MonotoneGrossSpend, TestBudgetRules.
//   - T5 Atomicity — a transition either changes state, budget, step count
//     and trace together or changes nothing. By construction: the core
//     returns new values and, on rejection, the old ones themselves; the
//     Session replaces its values only after the trace append succeeded
//     (compensating a SharedBudget charge if it did not). Even a
//     nondeterministic predicate cannot split an action, because there is
//     no post-commit re-check. TestT5Atomicity, TestRejectionChangesNothing,
//     TestNondeterministicPredicateCannotSplitAnAction,
//     TestSessionSharedBudget, TestSessionStateMachine.
//   - T6 Trace integrity — the log is append-only and hash-chained; any
//     change to a recorded entry is detected. Proven by package trace under
//     SHA-256 collision resistance; the kernel's part is that every
//     transition is recorded before it takes effect. TestT6TraceIntegrity,
//     TestSessionRecordsEveryTransition, TestReplayDetectsMismatch.
//   - T7 Rollback exactness — rollback(execute(s, a)) == s exactly,
//     including int vs float, list order and duplicates, null vs absent,
//     -0 vs 0; the refund equals the execution's charge, once. By
//     construction over the model, and checked at runtime (the restored
//     fingerprint must equal the recorded one). TestT7RollbackExactness,
//     TestEffectRules, TestPersistentMapAgainstGoMap.
//   - T8 Emergency escape — a registered emergency action bypasses the
//     min-cost and step-limit checks, and only those. Conditional: a
//     zero-cost, effect-free emergency action (or one whose effects fit and
//     keep the invariants) is executable with the budget at zero and at
//     the step limit, and executing it keeps T1–T7 (it is charged its cost,
//     counted in EmergencySteps, and no assertion runs after a commit).
//     TestT8EmergencyEscape, TestT8ExhaustedBudgetAndSteps.
//
// TestCheckTheoremsOnGeneratedCatalogues and TestSessionStateMachine run
// all of them together over generated kernels and catalogues, and the Fuzz
// targets (FuzzDecodeAction, FuzzDecodeState, FuzzParseCost, FuzzEvaluate)
// check that no input panics or is silently rounded.
//
// # What is not covered
//
//   - The spec-reality gap: the theorems hold over the declared model
//     (States and Effects). If an action's declared effects do not match
//     what it does in the world, the model is safe and the world may not be.
//   - External side effects: Rollback restores the model and refunds the
//     budget; e-mails sent, API calls made and files written are not
//     undone. Real reversibility needs compensating actions.
//   - LLM decision quality: the kernel bounds what executes, not whether an
//     allowed action is a good one.
//   - Adversarial fingerprints: the multiset-hash fingerprint detects
//     accidental mismatches; it is not collision-resistant against an
//     adversary who chooses very many state entries (generalised-birthday
//     attacks on additive hashes). The hash chain of the trace is the
//     tamper-evident record.
//   - Several processes: without a SharedBudget, each Session has its own
//     budget; with one, T1 across processes rests on the SharedBudget's
//     Charge being atomic. Trace entries of several processes are not
//     merged by this package.
//   - Memory-level attacks: code running in the same process can bypass
//     anything (unsafe, reflection).
//   - The initial state: the kernel does not check that it satisfies the
//     invariants (T3's assumption); check it before starting a Session.
//
// # Usage
//
//	k, err := kernel.New(kernel.Config{
//		Budget:           100 * kernel.Unit,
//		MinActionCost:    kernel.Unit / 10,
//		Invariants:       []kernel.Invariant{{Name: "balance >= 0", Check: balanceNonNegative}},
//		EmergencyActions: []string{"safe_hover"},
//	})
//	sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, initial)
//	rec, err := sess.Execute(ctx, action)      // *RejectedError explains a refusal
//	_, err = sess.Rollback(ctx, rec.ExecID)    // exact undo, refunded once
//	again, err := kernel.Replay(ctx, log, k, sess.ID())
//
// Hosts with their own concurrency model use Kernel.Evaluate, Execute and
// Rollback directly: they are pure, and safe to call from any goroutine.
package kernel
