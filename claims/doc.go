// Package claims checks what an AI agent asserts before anyone acts on it.
// The agent states its output as a ClaimBundle: claims of type FACT,
// INFERENCE or DECISION, each with its evidence, its uncertainty and the
// risk tier of what it would change. A chain of gates decides whether the
// bundle may be published (PUBLISH), must wait for a human (DEFER,
// ESCALATE) or is rejected (REFUSE); a Session records every decision on
// a trace.Log before it returns it.
//
// # Usage
//
//	policy := claims.DefaultPolicy()
//	policy.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"dba"}}
//	s, err := claims.NewSession(ctx, log, policy)
//
//	b, err := claims.DecodeBundle(agentOutput) // strict: every problem, with its JSON Pointer
//	ev, err := s.Evaluate(ctx, b, claims.Context{Actor: "db-agent", Clearance: claims.TierDelete})
//	switch ev.Decision {
//	case claims.DecisionPublish:  // act; show ev.Caveats with the output
//	case claims.DecisionEscalate: // ask ev.Pending, then s.Approve(ctx, ev.Bundle, …) — or, after a restart, approve what s.Pending lists
//	case claims.DecisionDefer:    // queue for a human; the agent must do better
//	case claims.DecisionRefuse:   // log ev.Reason; never act
//	}
//
// The package example runs this flow from the agent's JSON to the
// published bundle on the log. Evaluate is the same gate chain as a pure
// function, for callers that record elsewhere or only want the answer.
//
// # The contract
//
// A ClaimBundle holds Claims of three types (ClaimFact, ClaimInference,
// ClaimDecision), each with EvidencePointers, an Uncertainty (method,
// value in [0,1], interpretation, gate recommendation) and a RiskTier.
// After evaluation it also carries the decision, its reason, the required
// approvals and an AuditTrail (gates passed and failed, human approvals).
// The JSON field names are those of the specification, in snake_case.
//
// Every enum is closed and case-sensitive: "FACT" is a claim type, "fact"
// is not, and the empty string is no value of any enum, so a zero value
// never passes a gate. Risk tiers are ordered by Rank (READ_ONLY <
// WRITE_LIMITED < MODIFY < DELETE < PRIVILEGE) and always compared by
// rank, never as strings ("MODIFY" > "DELETE" as strings, yet MODIFY ranks
// lower).
//
// # Decoding and validation
//
// DecodeBundle (and DecodeClaim, DecodeEvidencePointer, DecodeUncertainty,
// DecodeApproval and DecodeRecord) are the one way to read the package's
// JSON. They read strict JSON (REFERENCE.md, "One way to read JSON":
// one value, no member twice, exact names, no unknown or missing member,
// the right JSON types), and reject besides unknown enum values, numbers
// outside [0,1] and timestamps that are not RFC 3339: all of them at once, each with its RFC 6901 JSON Pointer, in
// a *ValidationError wrapping ErrMalformed. Members that have a default in
// the specification's reference implementation may be omitted: decision
// DEFER, empty reason, lists and audit trail, gate_recommendation EXECUTE.
// Timestamps are normalised to UTC. Marshalling writes the specification's
// shape (empty lists as [], never null) and refuses unknown enum values.
// (json.Unmarshal into these types checks nothing the decoders check.)
//
// Decoding checks shape; Validate checks the rules, again reporting every
// violation with its path and rule, sorted, in a *ValidationError wrapping
// ErrInvalid: a bundle needs an id, a time, an origin agent and at least
// one claim; claim ids are unique; a FACT claim needs at least one
// evidence pointer with source_confidence ≥ 0.60 (0.60 passes); every
// pointer carries an evidence_hash of 64 lower-case hex digits (a SHA-256:
// the specification's own 32-digit example is rejected) and a retrieved_at
// time; INFERENCE evidence is optional but, when present, meets the same
// standard. Violation and ValidationError are the types every Verity
// validator reports with.
//
// # The gate chain
//
// Evaluate is a pure function from (bundle, Policy, Context) to an
// Evaluation holding the evaluated bundle. The gates run in this order and
// the first that does not pass stops the chain and decides:
//
//  1. validation: a bundle that breaks any rule of Validate other than
//     evidence strength is refused. An empty bundle is refused here, so it
//     is never published.
//  2. evidence: a FACT claim without evidence → REFUSE; a FACT or
//     INFERENCE claim with only weak evidence (all below 0.60) → DEFER.
//  3. uncertainty: a claim recommending REFUSE → REFUSE; a claim
//     recommending DEFER → DEFER; the highest claim uncertainty decides
//     against the policy's thresholds (defaults: ≤ 0.50 passes, ≤ 0.75
//     passes with a caveat, above 0.75 → DEFER; see "Where the rules come
//     from"). Each claim above the first threshold or recommending EXPLAIN
//     adds a caveat (a Note).
//  4. clearance: the Context's clearance must rank at least as high as
//     every claim's tier, else REFUSE.
//  5. the policy's own gates (the Gate interface, or GateFunc), in order.
//     A gate answers with a GateResult; any recommendation other than
//     EXECUTE, EXPLAIN, DEFER and REFUSE, the zero value included, refuses.
//  6. human_approval: a DELETE or PRIVILEGE claim requires the approvers
//     the policy names for that tier (ESCALATE, waiting for a policy that
//     names some, if it names none). Any rejection → REFUSE; anyone
//     pending → ESCALATE; all approved → pass. MODIFY claims pass
//     automatically and are flagged (a Note in Flags).
//
// If every gate passes the decision is PUBLISH, with the caveats recorded
// in the audit trail so that they travel with the output. Gate names go to
// gates_passed and gates_failed; caveats and flags are recorded in the
// audit trail's "caveats" and "flags" members, which extend the
// specification and are omitted when empty.
//
// Approvals are values too: RecordApproval returns a new bundle with one
// more human decision (approver, time, decision, reason) and leaves the old
// one untouched; evaluating that bundle again publishes it once every
// required approver has approved and refuses it on any rejection. An
// approval counts only from an approver the bundle already required when
// it was given. REFUSE is final: a bundle whose decision is REFUSE stays
// refused when evaluated again (evaluate the original bundle to judge the
// same claims under another policy or context).
//
// # Recording
//
// Session is the thin shell: it fills missing ids (UUIDv7) and times,
// evaluates with its policy, and appends every evaluation (kind
// "claims.evaluate") and every approval with the re-evaluation it caused
// (kind "claims.approve") to a trace.Log as canonical JSON, before
// returning the result; a decision that could not be recorded is not
// returned. One reading of the session's clock stamps both what a step
// records (the bundle's missing timestamp, the approval's time) and its
// trace entry. DecodeRecord reads an entry back.
//
// Every evaluation the gate chain returns can be recorded, whatever the
// bundle held: the record form (see Record) writes a valid bundle as the
// specification's JSON and the values the specification cannot hold
// (empty or unknown enum values, numbers outside [0,1], NaN, strings that
// are not UTF-8, times outside the years 0000-9999) without loss, each in
// one form. The evaluated bundle itself is in the form its JSON reads back
// as (times in UTC, no nil lists), so the entry decodes to exactly the
// bundle the caller got. A bundle the validation gate refuses is recorded
// like any other, and the Session returns its REFUSE together with a
// *ValidationError listing the violations with their paths.
//
// # Pending approvals
//
// A bundle evaluated DEFER or ESCALATE waits for people. The Session keeps
// it in a PendingStore — in memory by default; WithPending gives a durable
// one: NewLogPending keeps it in a trace.Log (a trace.File, say),
// claims/sqlpending in SQLite or PostgreSQL — until a later evaluation
// decides otherwise, and Approve accepts an approval only for the bundle
// that waits (as the last evaluation returned it), refusing any other with
// ErrNotPending. A Session restarted over a durable store lists the
// waiting bundles (Session.Pending, with who they still await) and takes
// their approvals. Several Sessions may share one store: an approval
// claims the waiting bundle in the store (CompareAndSwap or
// CompareAndDelete, conditional on the bundle it read) before it is
// recorded, so of two approvals of one bundle one is recorded and the
// other gets ErrNotPending — never two contradictory decisions, never a
// lost approval. The Session's log is the source of truth, and
// RebuildPending replays it into a store, to fill a new one or after a
// crash: an evaluation is recorded before the store is updated (a crash
// between leaves the store behind the log), an approval after (a crash
// between leaves a decision in the store that was never recorded nor
// returned; the rebuild makes the bundle wait again).
//
// # What it does not cover
//
// The package does not authenticate anyone. Human approvals inside a
// bundle are data: a host must only evaluate bundles whose audit trail it
// built (for instance through Session, whose log shows who approved what
// and when), or strip approvals from bundles it receives. It does not
// fetch or hash evidence (evidence_hash is checked for form, not against
// the source), and it does not estimate uncertainty: the uncertainty
// package produces the Uncertainty values claims carry. The Context's
// clearance is taken as given.
//
// # Where the rules come from
//
// Specification 000 states: the shape, field names and closed
// vocabularies; that a FACT claim needs a non-empty evidence_pointers list
// with at least one pointer of source_confidence ≥ 0.60, and that
// INFERENCE evidence, when present, meets the same standard (Evidence
// Requirements, validate_fact); what the recommendations mean (Gate
// Recommendations: DEFER and REFUSE stop the chain, REFUSE fails the
// bundle, EXPLAIN continues with a caveat); which tiers a human must
// approve (Risk Tiers: DELETE and PRIVILEGE; READ_ONLY and WRITE_LIMITED
// are auto-approved; MODIFY is not auto-approved but only "logged", read
// here as passing with a flag); and the defaults of its reference
// dataclasses (decision DEFER, gate_recommendation EXECUTE).
//
// Specification 000 does not state, and Verity chose, following the
// reference implementation's gate document (PROMETHEUS docs/GATES.md):
// the uncertainty thresholds 0.50 and 0.75 and that the highest claim
// uncertainty is compared with them (its explain_threshold and
// defer_threshold); that a FACT claim without evidence is refused while
// one with only weak evidence is deferred (validate_fact only fails both);
// and the clearance gate (its security gate's rule that the agent's tier
// ranks at least as high as every claim's). Verity's own choices: the gate
// order above (the reference's order, with validation first and the
// policy's gates where the reference has its adversarial gate), the
// 64-digit evidence_hash, and the caveat and flag members.
//
// The guarantees and the tests that check them are listed at the top of
// each test file (decode_test.go, validate_test.go, gate_test.go,
// property_test.go, approval_test.go, session_test.go, record_test.go,
// pending_test.go).
package claims
