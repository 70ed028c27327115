// Package speculative is the epistemic firewall between the speculative
// lane (alternative hypotheses, analogies, edge cases: ideas an agent may
// have) and the grounded lane (validation evidence and epistemic status:
// what the system may believe). Its invariant is "no implicit promotion":
// a speculative artifact never becomes grounded evidence without
// re-verification, and code, not trust, enforces it.
//
// Usage:
//
//	st, err := speculative.NewSteward(ctx, log, speculative.NewMemory())
//	// Guard 1: speculative content never becomes evidence, however deep.
//	_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true,
//		"payload": `{"lane":"speculative"}`}) // errors.Is(err, speculative.ErrSpeculative)
//	// Grounded evidence is persisted, and a promotion is proposed,
//	// approved by a person and executed; every step is in the log.
//	_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
//	id, err := st.ProposeStatus(ctx, "c1", speculative.StatusSupported, speculative.NonFragility{FeynmanPassed: true})
//	err = st.Approve(ctx, id, speculative.Approval{By: "alice", Human: true})
//	t, err := st.Execute(ctx, id) // t.From speculative, t.To supported
//
//	// The bridge: hints choose the experiment; they never travel into it.
//	hints, err := speculative.ExtractHints(brainstorm)
//	spec, err := st.Design(ctx, claim, &hints, "scope-lock-1")
//
//	// A guard of your own: nil, a *SpeculativeError or a *LimitError.
//	err = speculative.Check(doc)
//
// The package Example runs the first part.
//
// # Detection
//
// Detect says whether a value carries a speculative marker and where;
// Check turns its answer into the error a guard returns. Every guard in
// the package uses them. A value is a decoded JSON value (maps, slices,
// strings, numbers), a json.RawMessage or []byte holding JSON, or any Go
// value encoding/json can encode. The markers are:
//
//   - an "epistemic_status" or "lane" key whose value reads "speculative"
//     (a string, or a string inside an array) — RuleStatus;
//   - any key of the speculative_context family: speculative_context and
//     every key that folds to something starting with it
//     (speculativeContextID) — RuleContext;
//   - a key naming a speculative artifact: experiment_hints, alternatives,
//     analogies, edge_cases — RuleArtifact.
//
// Keys are compared on their letters and digits alone, case-folded:
// epistemicStatus, Epistemic-Status, EPISTEMIC_STATUS, "epistemic__status"
// and "epistemic\u200bstatus" all read epistemic_status; full-width
// letters, the Kelvin sign and the long s count as their ASCII twins.
// Values are trimmed and folded the same way (" Speculative " and
// "speculative." read speculative). Escapes in JSON text are decoded first.
//
// Strings are looked into. A string that holds a JSON object or array is
// parsed and checked like any other value, and a string that is itself a
// JSON string literal is decoded and checked again, layer after layer, up
// to MaxEncodings layers (Finding.Encodings says how many were crossed).
// JSON is read as agent runtimes read it, so NaN, Infinity and -Infinity
// do not turn a structure into text. A string that is not JSON goes to the
// specification's last-resort wire (RuleQuoted): it trips when a stretch
// between two quote characters (' or ") reads "speculative",
// epistemic_status, a context key or an artifact key. Object keys are
// strings too, and a []byte anywhere in a Go value is read as JSON text.
//
// Finding.Path, like every path the package reports, is an RFC 6901 JSON
// Pointer (/params/l/0/alternatives). A JSON text held in a string
// continues the pointer of that string: /payload/lane is the member lane
// of the object that the string at /payload holds.
//
// The vocabulary errs on the side of rejecting. Prose with the bare word
// is not a marker ("the idea was speculative at first"), but a quoted
// token is, even in an innocent sentence; the artifact keys are markers
// whatever their value, so grounded documents must not use them; "lane"
// and "epistemic_status" with any other value are fine.
//
// A check walks each value once, in time linear in its size, and never
// deeper than MaxDepth; it spends at most MaxWork units of work. Exceeding
// a limit is a rejection, not a pass: Detect and Check return a
// *LimitError (ErrLimit), as they return ErrMalformed for a Go value
// encoding/json cannot encode.
//
// # Guards
//
//   - Guard 1 (hard): DecodeEvidence and Steward.PersistEvidence reject
//     validation evidence that Check flags, with a *ValidationError whose
//     violation names the marker's path and wraps the *SpeculativeError.
//   - Guard 2 (hard): the claim id of evidence is the value of
//     "claim_id", then "claim-id", then "proposition_id" — the first that
//     is present decides — and never of "entity_id"; a blank or
//     non-string id is an error (ErrMissingClaimID), never a crash.
//   - Guard 3: only a Steward executes write intents. A Backend receives
//     Write values, whose fields are unexported and which only a Steward
//     constructs after its guards and the promotion policy have passed;
//     the zero Write, the only one other code can build, is refused
//     (ErrNotSteward).
//   - Guard 4: speculative hypotheses are written as hypotheses, scoped to
//     a session (a blank session is a hard failure, ErrSession), and read
//     back only by session; Backend.Evidence never returns them.
//
// Hard failures abort the write, persist nothing and are recorded as a
// RejectEntry. Soft failures — linking a hypothesis to a claim that has no
// proposition — leave the artifact persisted, are listed in
// HypothesisReceipt.SoftFailures and are recorded as a SoftFailEntry.
//
// # The bridge: hints in, specs out
//
// ExtractHints turns a speculative Brainstorm into ExperimentHints. Their
// JSON form always says "epistemic_status": "speculative", so Guard 1
// catches hints wherever they leak; they are never persisted, and the
// Steward records only their Digest (a trace.Hash over their canonical
// JSON, independent of the order of their lists).
//
// DecodeExperimentSpec applies the no-residue rule: no speculative marker
// at any depth, and no epistemic_status key at all; it also checks the
// spec's fields and reports every violation. Design is the legal crossing
// point: hints whose sensitivity axes name some of the claim's variables
// select the sensitivity suite over those variables, otherwise the
// numeric-consistency template is used; no string, number or digest of the
// hints reaches the spec.
//
// # Epistemic status and promotion
//
// Status has five values, ordered refuted < speculative < unresolved <
// supported < proven; its zero value is invalid and never read as
// grounded. DeriveStatus says what a body of evidence supports on its own;
// Promote is the promotion policy as a pure function. Any upgrade needs
// grounded evidence with success true for the claim, enough of it that
// DeriveStatus reaches the target, passed non-fragility checks and an
// approved write intent; speculative → proven is never allowed directly;
// leaving refuted also needs new evidence and the approval of a person.
// Downgrades are always allowed and recorded. Specification 001 names the
// statuses; their order and the derivation rules follow the reference
// implementation (see DeriveStatus).
//
// # The Steward
//
// Steward is the shell: a mutex, a clock, an id source, a Backend (Memory
// is the reference; speculative/backendtest is the conformance suite for
// others) and a trace.Log. Each call reads the clock once, runs the
// exported core (DecodeEvidence's guards, Design, Promote), writes through
// the backend, and records typed entries — IntentEntry, ApproveEntry,
// RejectEntry, PersistEntry, SoftFailEntry, DesignEntry — stamped with that
// one instant; DecodeEntry reads them back. Evidence, propositions and
// hypotheses are approved by the Steward's policy once their guards pass;
// status changes go through ProposeStatus, Approve or Reject, and Execute,
// which re-reads the evidence through the guards and applies Promote.
//
// The log is the Steward's memory; nothing else is persisted for it. A
// Steward opened over a log that holds entries (NewSteward) replays it:
// status intents proposed and not finished are open again, with their
// approvals (Pending lists them), and a write that a stop interrupted
// between its intent and its outcome is finished from what the backend
// holds (Backend.Applied). In memory the Steward keeps the open status
// intents only. Compare rebuilds from the log what the backend must hold
// and names the first disagreement (a *MismatchError). speculative/sqlbackend
// is a Backend in SQLite or PostgreSQL.
//
// # What it does not cover
//
//   - Meaning. Detection is lexical: speculative content rephrased with no
//     marker ("an untested guess: ...") is not detected, and neither are
//     homoglyph spellings (a Cyrillic "е" in "epistemic") beyond the folds
//     above, nor markers hidden in encodings other than JSON (base64, URL
//     encoding, compression).
//   - The backend's own integrity. Guard 3 guarantees that nothing in this
//     package writes except through a Steward; code holding the backend's
//     underlying database can still write to it directly.
//   - Whether an approval really came from a person: Approval.Human is
//     what the caller says, recorded in the log for audit.
//
// The tests that check each guarantee are listed at the top of the test
// files that hold them (matrix_test.go holds the specification's
// traceability matrix); DESIGN.md has the design and performance notes and
// the digest test vectors.
package speculative
