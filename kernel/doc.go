// Package kernel is Verity's safety kernel: it decides whether an AI
// agent's proposed action may run, commits it atomically, records it, and
// can undo it exactly — under a budget, a bound on the number of steps and
// declared invariants. It is the Go reference for the specification's
// theorems T1–T8.
//
// # Usage
//
//	k, err := kernel.New(kernel.Config{
//		Budget:        5 * kernel.Unit, // B0
//		MinActionCost: kernel.Unit / 2, // ε: at most floor(B0/ε) = 10 steps
//		Invariants: []kernel.Invariant{{Name: "at most 2 e-mails", Check: func(s kernel.State) bool {
//			n, _ := s.Int("sent")
//			return n <= 2
//		}}},
//		EmergencyActions: []string{"halt"},
//	})
//	initial, err := kernel.NewState(map[string]any{"sent": 0})
//	sess, err := kernel.NewSession(ctx, log, k, initial) // log is a *trace.Log
//
//	send := kernel.Action{ID: "send", Cost: kernel.Unit,
//		Effects: []kernel.Effect{kernel.Increment("sent", value.Int(1))}} // value is kernel/value
//	rec, err := sess.Execute(ctx, send)    // a *RejectedError lists every failed check
//	rr, err := sess.Rollback(ctx, rec.ExecID) // exact undo, refunded once
//	again, err := kernel.Replay(ctx, log, k, sess.ID())
//
// The package Example runs this. Hosts with their own concurrency model
// call the pure core directly: Kernel.Evaluate, Commit (or Execute, both
// at once) and Rollback take a Meter and a State and return new ones.
//
// # Values and states
//
// The values are those of package kernel/value: a value.Value is an
// immutable JSON value with strict typing (the integer 1, the float 1.0
// and the string "1" are different), built with value.Int, value.String,
// value.List, value.Of and the others. A State maps variable names to
// Values, and a variable holding null is different from an absent one;
// State.Int, Float, Bool and Text read one variable of one kind. States
// are persistent: changing k variables of an n-variable state costs
// O(k log n) and shares everything else with the old state, which stays
// valid. Nothing is aliased: constructors copy their input and accessors
// copy their output. Every State carries a Fingerprint (a multiset hash,
// updated in O(k); see DESIGN.md).
//
// The JSON forms (State.MarshalJSON, Action.MarshalJSON, the trace
// payloads) are RFC 8785 canonical JSON that keeps the strict typing: a
// float whose canonical text would read as an int is written
// {"$float":"1"}, an int beyond ±(2^53−1) {"$int":"…"}. value.Decode,
// DecodeState, DecodeAction and DecodeEntry read strict JSON in one pass
// (REFERENCE.md, "One way to read JSON"), straight into Values and typed
// entries, naming each problem by its JSON Pointer; an inexact cost is
// refused too (ErrDecode, ErrInvalidCost), never guessed.
//
// # Effects and their inverses
//
// An Action's Effects (Set, Increment, Decrement, Multiply, Append, Remove,
// Delete) apply in sequence, each to the state the previous one produced.
// Integer arithmetic is exact and overflow is a rejection; a variable keeps
// its type (see Effect). An effect that does not fit the value it meets is
// a rejection with an *EffectError; no input makes the kernel panic.
// InverseEffects computes the inverse from the effects and the prior state
// (Execute stores it in the Record, Rollback applies it and checks the
// restored fingerprint), DiffInverse from the two states alone.
//
// # Costs, the budget and the Meter
//
// A Cost is an int64 number of thousandths of a unit. ParseCost
// rejects a negative, non-finite, out-of-range or inexact
// amount ("0.0005") instead of rounding it. A Meter is what the kernel
// counts, as an immutable value: the Budget (limit B0, gross, refunded and
// net totals, and a ledger of what each execution was charged and
// refunded) and the step counters.
//
// # Evaluate, Commit, Rollback
//
// A Kernel is an immutable configuration (B0, ε, invariants,
// preconditions, emergency action ids). Evaluate runs every check in a
// fixed order (well_formed, min_cost, budget, step_limit, effects, each
// invariant on the simulated next state, each precondition) and returns a
// Verdict: allowed or not, every CheckResult, the simulated next state. A
// Verdict cannot be edited, and Commit accepts only a Verdict this kernel
// made for exactly that State and Meter (ErrStaleVerdict otherwise).
// Everything is computed before the commit and nothing is checked after
// it. Rollback checks it is given the state the execution produced,
// restores the prior state exactly, refunds exactly that execution's
// charge once, and leaves the step counters alone.
//
// # Session: the thin shell
//
// A Session holds the current State and Meter and, under one mutex, reads
// its clock once (WithClock), calls Kernel.Evaluate and Kernel.Commit (or
// Kernel.Rollback, Reserve, Settle, Refund), appends the Entry —
// StartEntry, ExecuteEntry, RejectEntry, RollbackEntry, ReserveEntry,
// SettleEntry or RefundEntry, kinds kernel.start, kernel.execute,
// kernel.reject, kernel.rollback, kernel.reserve, kernel.settle,
// kernel.refund — stamped with that instant (trace.At),
// and only then replaces its values: the log and the session never
// disagree, and a Record's Time is its entry's. DecodeEntry reads an entry
// back; Replay rebuilds a Session from its log, re-executing every entry
// and checking what was recorded.
//
// # The horizon: what a Session keeps
//
// A Session's memory stays flat over a long life: it keeps the Records of
// its last WithHorizon executions (1024 by default) and forgets the
// older ones, with their ledger entries. That horizon is how far back it
// can act on an execution: Rollback (so at most that many rollbacks in a
// row), Refund and Settle of an execution within it work as they would
// with no horizon; of one beyond it they fail with ErrBeyondHorizon, never
// with a wrong result. Open reservations are kept until settled at any
// age, and so are executions held under WithHeldExecutions until
// Release. The budget's totals and the step counters are never
// forgotten, so T1–T8 do not depend on the horizon; History returns the
// Records within it. Replay with at least the horizon the session was
// recorded with.
//
// # Tool calls
//
// An agent acts through tool calls: a name, JSON arguments, a result, and
// often a price known only afterwards. Action.Input carries the call's
// arguments: the Session records them with the execution or rejection —
// any bytes, even what canonical JSON refuses, as text or base64 with
// their SHA-256 digest and size, and beyond WithInputLimit the digest and
// size only — and a Record's Seq and Hash name its trace entry, a receipt
// for the caller. Reserve charges an upper bound after the usual checks
// and leaves the call open (Reservations; rebuilt by Replay after a
// crash); Settle records the actual cost and refunds the difference. An
// actual above the reservation is charged only up to what remains of the
// budget, the rest is recorded as Unpaid, and Settle returns ErrOverrun:
// never hidden, and net spend never above B0 (T1). Refund gives back part
// of any past execution's charge, for a reason, touching only the budget
// (a failed call still counts towards a rate limit; T4). Count is a
// counter that needs no declaration ("calls/" + tool). AtMost,
// AtMostEach, Within, OneOf and Matches are ready-made invariants;
// Config.InvariantTimeout (and Invariant.Timeout) bound a predicate's
// running time, a predicate past it failing closed. Verdict.Explain words
// a rejection in one stable line for the model and the human:
//
//	action "delete" rejected: budget: cost 1, remaining 0.5; invariant at-most-3-deletes: deletes would be 4, at most 3 (ask a human)
//
// The kernel stays pure, so time is an input: for a rate limit over a
// window the host puts the window in the action — Count("calls/search/"
// + window, 1, 0) with window the current minute, say, and AtMostEach
// over the prefix "calls/search/" — or sets a "now" variable the
// invariants read. Replay re-reads the recorded effects, not the clock.
//
// WithSharedBudget connects a SharedBudget (for example one held in a SQL
// database and shared by several processes, kernel/sqlbudget). Inside the
// atomic path, after the kernel's own checks pass, the Session charges it
// (zero-cost actions do not consult it, so an unreachable shared budget
// cannot block T8's emergency escape); a refused charge is a rejection
// recorded with the check shared_budget; if the append fails after a
// charge, the Session refunds it (even when ctx was cancelled); a rollback, settlement or refund is
// recorded first and then refunded (or an overrun charged, under the
// execution id + "/overrun") through it.
//
// # Guarantees
//
// T1 budget safety (net spend ≤ B0), T2 termination (at most floor(B0/ε)
// non-emergency executions), T3 invariant safety, T4 monotone gross spend,
// T5 atomicity, T6 trace integrity, T7 rollback exactness and T8 emergency
// escape hold as stated, with their assumptions and the tests that check
// them, in the header of theorems_test.go; kerneltest.CheckTheorems checks
// them against a caller's own kernel and action catalogue. What they do
// not cover: the gap between an action's declared effects and what it does
// in the world; external side effects (Rollback restores the model, not
// sent e-mails); the quality of an allowed decision; fingerprints chosen
// by an adversary (the trace's hash chain is the tamper-evident record);
// several processes without a SharedBudget; code in the same process; and
// the initial state, which the kernel does not check against the
// invariants (T3's assumption). DESIGN.md has the design and performance
// notes.
package kernel
