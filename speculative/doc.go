// Package speculative is the epistemic firewall between the speculative
// lane (alternative hypotheses, analogies, edge cases: ideas an agent may
// have) and the grounded lane (validation evidence and epistemic status:
// what the system may believe). It implements the specification's
// Speculative Lane Contract, whose core invariant is "no implicit
// promotion": a speculative artifact never becomes grounded evidence
// without re-verification. The contract is enforced by code, not by trust.
//
// # One detection vocabulary
//
// IsSpeculative, Detect and Check decide whether a value carries a
// speculative marker; every guard in the package uses them. A value is a
// decoded JSON value (maps, slices, strings, numbers), a json.RawMessage
// or []byte holding JSON, or any Go value encoding/json can encode. The
// markers are:
//
//   - an "epistemic_status" or "lane" key whose value reads "speculative"
//     (a string, or a string inside an array) — RuleStatus;
//   - any key of the speculative_context family: speculative_context and
//     every key that folds to something starting with it
//     (speculativeContextID) — RuleContext;
//   - a key naming a speculative artifact: experiment_hints, alternatives,
//     analogies, edge_cases — RuleArtifact.
//
// Keys are normalised as NormalizeKey does (lower-case, '-' → '_',
// camelCase split: epistemicStatus, Epistemic-Status, EPISTEMIC_STATUS
// all read epistemic_status), and then compared on their letters and digits
// alone, case-folded: separators, punctuation, white space, control and
// zero-width characters and combining marks are ignored, and full-width
// letters, the Kelvin sign and the long s count as their ASCII twins
// ("@lane", "epistemic__status", "epistemic\u200bstatus" are markers too).
// Values are trimmed and lower-cased the same way (" Speculative " and
// "speculative." read speculative). Escapes in JSON text are decoded first
// ("\u0065pistemic_status" is a marker).
//
// Strings are looked into. A string that holds a JSON object or array is
// parsed and checked like any other value, and a string that is itself a
// JSON string literal is decoded and checked again, layer after layer, up
// to MaxEncodings layers (a Finding says how many layers it crossed). JSON
// is read as agent runtimes read it, so the literals NaN, Infinity and
// -Infinity do not turn a structure into text. A string that is not JSON
// goes to the specification's last-resort wire (RuleQuoted): it trips when
// any stretch between two quote characters (' or ") reads "speculative",
// epistemic_status, a context key or an artifact key (\uXXXX escapes in the
// stretch decoded). Findings carry the JSON path of the marker
// (params.l[0].alternatives; a JSON text held in a string continues the
// path of that string). Object keys are strings too: a key that is not a
// marker but contains a quote character is checked as a string value is.
// A []byte anywhere in a Go value is read as a JSON text, as a top-level
// []byte is (encoding/json would write it as base64).
//
// False-positive profile. The vocabulary errs on the side of rejecting:
//
//   - prose with the bare word is not a marker ("the idea was speculative
//     at first");
//   - a quoted token is (`the agent called it "speculative"`, also with
//     single quotes, so Python reprs such as {'lane': 'speculative'} are
//     caught), even in an innocent sentence;
//   - the artifact keys are markers whatever their value, so grounded
//     documents must not use "alternatives", "analogies", "edge_cases" or
//     "experiment_hints" (or any spelling that folds to them) as keys;
//   - "lane" and "epistemic_status" with any other value are fine, and so
//     are "speculative" as a key and as a plain string value elsewhere
//     (["speculative"] under "tags").
//
// TestFalsePositiveProfile pins the clean cases, TestBypassCases and
// TestKeyNormalisationMatches the caught ones. Everything the
// specification's own algorithm flags is flagged
// (TestDetectCoversSpecReference, FuzzIsSpeculative); wrapping a
// speculative value in containers or JSON-encoding it keeps it detected
// (TestWrappingKeepsDetected, TestJSONEncodingKeepsDetected); removing
// every marker makes a document clean (TestRemovingEveryMarkerMakesClean);
// a JSON text and its decoded value get the same answer
// (TestDetectRawAgreesWithDecoded).
//
// # Bounded work
//
// A check walks each value once, visits the text of each JSON-in-string
// layer once (so its cost is linear in the input, times at most
// MaxEncodings+1), makes a single allocation on the clean path of an
// ordinary document (its own state, with room for 24 path steps; strings
// with escapes and strings holding JSON cost one more each), and never
// recurses deeper than MaxDepth. The limits are:
//
//   - MaxDepth (512) nested objects and arrays, counted through layers;
//   - MaxEncodings (8) JSON-in-string layers;
//   - MaxWork (64 Mi) units of work: one per value plus one per byte of
//     every string and JSON text examined.
//
// Exceeding a limit is a rejection, not a pass: IsSpeculative reports true
// and Detect returns a *LimitError (ErrLimit) naming the limit and where.
// So does a Go value that encoding/json cannot encode (ErrMalformed). A
// million nested brackets, a self-referencing map or a string encoded nine
// times are rejected without exhausting the stack (TestLimitDepth,
// TestLimitEncodings, TestLimitWork, TestNestedEncodingsAreLinear,
// TestExceedingALimitIsARejection).
// BenchmarkIsSpeculativeClean100KB and BenchmarkIsSpeculativeClean1MB
// measure the clean path, the one every write takes.
//
// # Guards
//
//   - Guard 1 (hard): ParseEvidence and Steward.PersistEvidence reject
//     validation evidence that Check flags, with an error that says why
//     and where (a *SpeculativeError inside the *ValidationError).
//   - Guard 2 (hard): ClaimID takes the claim id from "claim_id", then
//     "claim-id", then "proposition_id" — the first that is present
//     decides — and never from "entity_id"; a blank or non-string id is
//     an error, never a crash.
//   - Guard 3: only a Steward executes write intents. A Backend receives
//     Write values, whose fields are unexported and which only a Steward
//     constructs after its guards and the promotion policy have passed; the
//     zero Write, the only one other code can build, is refused
//     (ErrNotSteward). There is no other write path.
//   - Guard 4: speculative hypotheses are written as hypotheses, scoped to
//     a session (a blank session is a hard failure), and read back only by
//     session; Backend.Evidence never returns them.
//
// Failure modes follow the specification's table. Hard failures abort the
// write, persist nothing and are recorded as speculative.reject. Soft
// failures — today, linking a hypothesis to a claim that has no
// proposition — leave the artifact persisted, are listed in the receipt
// (HypothesisReceipt.SoftFailures) and are recorded as
// speculative.soft_fail.
//
// # The bridge: hints in, specs out
//
// ExtractHints turns a speculative Brainstorm into ExperimentHints: claim
// id, candidate mechanisms, discriminative predictions, sensitivity axes,
// prior suggestions and falsification criteria; its epistemic status is
// always speculative, and its JSON form says so, so that Guard 1 catches
// hints wherever they leak. Hints are never persisted; Steward.Design
// records only their Digest.
//
// Digest is SHA-256 over DigestDocument: the RFC 8785 canonical JSON
// (internal/canon) of the seven fields, every string list sorted by UTF-8
// bytes with duplicates kept, and prior_suggestions kept as whole objects
// sorted by their canonical bytes. Canonical JSON is injective, so two
// hints share a digest only when they are equal up to the order of their
// lists (TestDigestOrderIndependent, TestDigestCollisionSafe,
// TestDigestKeepsPriorSuggestionsWhole), and hints keep their digest
// through their JSON form (TestDigestSurvivesJSON). Vectors, checked with an
// independent implementation (TestExperimentHintsDigestVectors):
//
//	ExperimentHints{}
//	  {"candidate_mechanisms":[],"claim_id":"","discriminative_predictions":[],"epistemic_status":"speculative","falsification_criteria":[],"prior_suggestions":[],"sensitivity_axes":[]}
//	  28abc2ce8a93feb6b0334332a51f50ec357148c0806769645e37666eba7588b1
//	ExperimentHints{ClaimID: "c1"}
//	  807468ae6d62a3fe376c3fe125f35211398ed9915421f58c7a0c0a734e825e6e
//	ExperimentHints{ClaimID: "c2", CandidateMechanisms: {"😀", "ｚ", "é", "a", "a"}, SensitivityAxes: {"x"},
//	    PriorSuggestions: {{Parameter: "k", Distribution: "beta", Params: {"a": 0.5, "b": 2.5}, Rationale: `small "n"`}}}
//	  {"candidate_mechanisms":["a","a","é","ｚ","😀"],"claim_id":"c2","discriminative_predictions":[],"epistemic_status":"speculative","falsification_criteria":[],"prior_suggestions":[{"distribution":"beta","parameter":"k","params":{"a":0.5,"b":2.5},"rationale":"small \"n\""}],"sensitivity_axes":["x"]}
//	  13b0790ea9d3597fd11d5f41457f63aa2b76da669a75c27f795d9d8df68316b9
//
// DecodeExperimentSpec is the no-residue rule: it rejects speculative
// residue at any depth with the same vocabulary — strings holding JSON
// included — and, stricter, any epistemic_status key at all; it requires
// non-blank claim_id and scope_lock_id, a template_qid matching
// ^[a-z0-9_]+@\d+\.\d+\.\d+$, and no unknown top-level field; it reports
// every violation, sorted by path (params.l[0].alternatives).
//
// Design is the legal crossing point. It builds an ExperimentSpec from a
// Claim and optional hints: hints whose sensitivity axes name some of the
// claim's variables select the sensitivity suite over those variables,
// otherwise the numeric-consistency template is used. Hints choose; they
// do not travel: no string, number or digest of theirs reaches the spec
// (TestDesignNothingOfHintsSurvives), and the spec is validated before it
// is returned.
//
// # Epistemic status and promotion
//
// Status has five values, ordered refuted < speculative < unresolved <
// supported < proven; ParseStatus ignores case and rejects anything else.
// DeriveStatus reads a body of evidence: only successful experiments
// count; any refutation → refuted; any contradiction → unresolved; none →
// speculative; at least two supporting experiments with variance ≤ 0.1 →
// proven; otherwise supported. Specification 001 lists the five statuses
// (proven, supported, unresolved, speculative, refuted) without ordering
// them or saying how evidence yields one; the order and these derivation
// rules are Verity's choice, following the reference implementation's
// EpistemicStatus.from_evidence (see DeriveStatus for where it differs).
//
// Promote is the promotion policy as a pure function. Any upgrade needs
// grounded validation evidence for the claim with success true and enough
// of it that DeriveStatus reaches the target, passed non-fragility checks
// (Feynman checks passed, no sensitivity failure) and an approved write
// intent. speculative → proven is never allowed directly. Leaving refuted
// also needs new evidence (evidence ids are content digests, so "new" is
// objective) and the approval of a human. Downgrades are always allowed,
// and recorded like every transition. All reasons for a refusal are
// reported (TestSpeculativeNeverProvenDirectly,
// TestDowngradesAlwaysAllowed,
// TestUpgradeNeedsGroundedEvidenceChecksAndApproval, TestPromoteRules).
//
// # The Steward
//
// Steward is the shell: a mutex, an id source (UUIDv7), a Backend (Memory
// is the reference; speculative/backendtest is the conformance suite for
// other implementations) and a trace.Log. Every write intent
// (speculative.intent), approval (speculative.approve, by a person or by
// the steward's policy), rejection (speculative.reject), soft failure
// (speculative.soft_fail), persisted artifact (speculative.persist) and
// experiment design (speculative.design, with the hints digest only) is
// recorded. Evidence, propositions and hypotheses are approved by policy
// once their guards pass; status changes go through ProposeStatus,
// Approve or Reject, and Execute, which re-reads the evidence through the
// guards and applies Promote. TestStewardStateMachine checks random call
// sequences against a deliberately naive model.
//
// The rows of the specification's traceability matrix (section G) are
// tests of the same names: TestV22P11GuardSpeculativeEvidence,
// TestV22P11GuardNestedSpeculative, TestV22P11GuardJSONStringSpeculative,
// TestV22P11GuardJSONStringKebabSpeculative,
// TestV22P11GuardMissingClaimID,
// TestV22P11MissingClaimIDDoesNotFallbackToEntityID,
// TestV22P11ClaimIDKebabCaseAccepted,
// TestV22P11SpeculativeHappyPathWithProposition,
// TestV22P11SpeculativeNoPropositionNoLink,
// TestV22P11SpeculativeSegregation, TestExperimentHintsDigestIsStable,
// TestExperimentSpecRejectsExperimentHintsField,
// TestExperimentSpecRejectsNestedSpeculativeContent,
// TestSpeculativeAgentExtractExperimentHints,
// TestStewardRejectsExperimentHintsInEvidenceViaEpistemicStatus,
// TestVerifyAgentDesignUsesHintsForTemplateSelection and
// TestVerifyAgentDesignFallsBackWithoutHints.
//
// # What it does not cover
//
//   - Meaning. Detection is lexical: speculative content rephrased with no
//     marker ("an untested guess: ...") is not detected, and neither are
//     homoglyph spellings (a Cyrillic "е" in "epistemic") beyond the case
//     folds and full-width forms above, nor markers hidden in encodings
//     other than JSON (base64, URL encoding, compression).
//   - The backend's own integrity. Guard 3 guarantees that nothing in this
//     package writes except through a Steward; code holding the backend's
//     underlying database can still write to it directly.
//   - Whether an approval really came from a person: Approval.Human is
//     what the caller says, recorded in the log for audit.
//
// # Usage
//
//	log := trace.NewMemoryLog()
//	st, _ := speculative.NewSteward(speculative.NewMemory(), log)
//	hints, _ := speculative.ExtractHints(brainstorm)      // speculative lane
//	spec, _ := st.Design(ctx, claim, &hints, scopeLockID)  // the crossing
//	// ... run spec in the grounded lane, producing an evidence document ...
//	if _, err := st.PersistEvidence(ctx, evidence); err != nil {
//		// hard failure: nothing persisted, rejection recorded
//	}
//	id, _ := st.ProposeStatus(ctx, claim.ID, speculative.StatusSupported, checks)
//	_ = st.Approve(ctx, id, speculative.Approval{By: "reviewer", Human: true})
//	transition, err := st.Execute(ctx, id)
package speculative
