// Package belief implements belief sessions of the CMBS protocol: a fixed
// set of hypotheses that evidence can only eliminate, obligations that
// gate exit, conclusion and termination, and an append-only, hash-chained
// audit log from which every session can be rebuilt.
//
// # The pure core
//
// State is an immutable session value. Declare creates one; each verb of
// the protocol is a method that returns the new State, the response and
// the AuditEntry to record, and never changes the receiver:
//
//	DECLARE_SESSION      Declare(sessionID, DeclareRequest, Stamp)
//	ELIMINATE            State.Eliminate(EliminateRequest, Stamp)
//	QUERY_BELIEF         State.Snapshot()
//	AUDIT_TRACE          State.Events(sinceEventID)
//	ENTER_OBLIGATION     State.EnterObligation(ObligationRequest, Stamp)
//	REQUEST_EXIT         State.RequestExit(ExitRequest, Stamp)
//	DECLARE_CONCLUSION   State.DeclareConclusion(ConclusionRequest, Stamp)
//	REQUEST_TERMINATION  State.RequestTermination(TerminationRequest, Policy, Stamp)
//
// Ids and times are inputs (Stamp); the core reads no clock, draws no
// randomness, takes no lock and does no I/O. A rejected call returns the
// receiver itself, a *Error wrapping one sentinel (CodeOf maps it to the
// protocol code of §3.2) and no event: nothing applied, nothing recorded.
// The snapshot of a response is next.Snapshot(); it is O(survivors) and
// left to the caller so that a transition costs one survivors hash.
//
// # Decisions where the specification is open
//
//   - An empty hypothesis list is INVALID_REQUEST; duplicates are removed
//     and DECLARE_SESSION records the de-duplicated list sorted by code
//     point. Ids are opaque strings: "", " " and "😀" are valid.
//   - ELIMINATE with an id outside the declared set is
//     INVALID_HYPOTHESIS_ID (details.unknown_ids) and rejects the whole
//     call. Declared ids already eliminated are ignored_eliminated.
//   - The idempotence key is the pair (source_id, observation_id). The same
//     key with the same body (eliminated as a set, and justification)
//     returns the first applied/ignored/audit_event_id again (with the
//     current snapshot) and records nothing; the same key with another body is CONFLICT. A new key that
//     eliminates nothing new is recorded with an empty delta.
//   - Eliminating every survivor is allowed: n_survivors 0 is a visible
//     contradiction, and such a session only terminates with force.
//   - One obligation is active at a time (a second is CONFLICT), an
//     obligation id is used once per session, min_total_eliminations ≥ 0.
//     REQUEST_EXIT is approved iff the hypotheses actually eliminated since
//     entry reach the minimum; an id that is not the active obligation is
//     OBLIGATION_NOT_FOUND. Refused exits, conclusions and terminations are
//     recorded with their outcome.
//   - DECLARE_CONCLUSION is accepted iff no obligation is active.
//     REQUEST_TERMINATION is approved iff no obligation is active and
//     exactly one survivor remains, or context.force is the JSON boolean
//     true and Policy.AllowForce (off by default); another type for force
//     is INVALID_REQUEST. The event records the policy, so replay decides
//     alike.
//   - After termination every mutating verb is SESSION_TERMINATED and
//     records nothing; reads still work.
//
// # The audit log
//
// Every accepted mutation appends one AuditEntry (§1.1): seq, event_id,
// session_id, ts (RFC 3339 UTC), verb, payload (the request), outcome (the
// verb's result), delta.eliminated, notes, survivors_before_hash,
// survivors_after_hash, prev_event_hash and event_hash.
//
// The survivors hash is SHA-256 over the RFC 8785 canonical JSON object
// {"prev_event_hash":"<hex>","session_id":…,"survivors":[sorted ids]}
// (see SurvivorsHash). Canonical JSON is injective, so no id, whatever it
// contains, can make two different survivor sets hash alike (the "\n"-join
// of the specification's sketch could). An event's survivors_after_hash is
// bound to the previous event's hash; its survivors_before_hash is the
// previous event's survivors_after_hash, so the survivor states chain.
//
// event_hash is SHA-256 over the canonical JSON of all other members
// (AuditEntry.Canonical); prev_event_hash links each event to the one
// before (zero for DECLARE_SESSION). The shell records exactly those
// canonical bytes as the payload of a trace entry of kind Verb.Kind()
// ("belief.eliminate"), so the trace chain covers the whole entry too.
//
// # Replay
//
// Replay verifies each event — hash, seq, link, session, and that no event
// id repeats in the log — and re-executes it from its payload, id and
// time; the produced event must equal the recorded one member by member.
// State.Apply, its step, does the same for one event, except the check
// for repeated ids, which needs the whole log.
// Whatever does not verify or disagrees with a recorded outcome is a
// *ReplayError naming the event's index and id. The rebuilt State has the
// same snapshot, head, obligations and idempotence table as the original.
//
// # The shell
//
// Server manages many sessions concurrently, each a Session with its own
// mutex, a clock and an id source (UUIDv7 by default). Each session is
// one trace.Log obtained from a Storage (MemoryStorage, FileStorage).
// Before every operation a Session catches up with entries another
// process appended to its store (by Apply) and appends with
// trace.Log.AppendAfter; on trace.ErrConflict it catches up and retries
// (32 times, then CONFLICT). A store whose head no longer
// extends the session's (cut back or rewritten) is an error wrapping
// trace.ErrTruncated.
// A caller may pass the audit head it expects (ExpectHead); a mismatch is
// CONFLICT. Opening a Server over a FileStorage replays every session.
// The HTTP transport lives in belief/server.
//
// # Guarantees and the tests that check them
//
//   - Monotonicity, survivors_next ⊆ survivors_prev (§4.1): TestMonotonicity.
//   - Idempotence of ELIMINATE (§4.1): TestIdempotence.
//   - Order independence of eliminations (§4.1): TestOrderIndependence.
//   - Replayability, the log rebuilds the snapshot (§4.1): TestReplayability,
//     TestReplayErrorsNameTheEvent, TestFileStorageConformance (Restart).
//   - All verbs against a naive model: TestStateMachine.
//   - Decisions above: TestDeclareRules, TestEliminateRules,
//     TestObligationRules, TestConclusionRules, TestTerminationRules,
//     TestTerminatedSessionRejectsMutations, TestSnapshotFormat.
//   - Injective, canonical survivors hash (§4.2): TestSurvivorsHashInjective,
//     TestSurvivorsHashIsCanonicalJSON.
//   - Many goroutines over many sessions (-race): TestServerConcurrent.
//   - Optimistic concurrency on the audit head: TestExpectHead.
//   - Every event recorded in the session's trace log: TestServerRecordsEveryEventInTrace.
//   - Two processes over one store stay consistent (belief/storagetest, run
//     by TestMemoryStorageConformance and, for SQL, belief/sqlstorage):
//     TestConcurrentOpenKeepsOneSession.
//
// # Performance
//
// A survivors hash is one SHA-256 pass over the canonical encodings of
// the surviving ids, which are precomputed per session and laid end to
// end so that a run of survivors is one write; survivors are a bitmap over
// the declared ids; the idempotence table is a persistent hash trie. An
// applied ELIMINATE through the shell costs about one survivors hash
// (BenchmarkEliminate reports x_hash, the ratio to BenchmarkSurvivorsHash).
// BenchmarkReplay and BenchmarkReplayTrace replay a 100,000-event log.
//
// The fixed cost of an event, which dominates small sessions, is kept
// down as follows. Catching up compares the store's head with the
// session's and reads entries only when they differ. The shell takes the
// recorded entry from the core without the published copy. ELIMINATE
// writes its payload and outcome in stack scratch space, and the entry
// points into its canonical bytes rather than holding copies; payloads
// the core built canonical are not checked again when the entry is
// encoded (the trace log still checks what it appends). The survivors
// hasher is pooled and allocates nothing, trie nodes are allocated with
// their slots, and trace kinds are constants. (trace.Memory starts each
// log with a 16-entry chunk, so a short session holds little.)
// What remains is mostly hashing (the survivors, the entry, the trace
// entry) and the trace log's own validation and copy of the payload.
//
// # What it does not cover
//
// No causal-graph handling, weights, constraint propagation or probe
// selection (the specification's non-goals). Event ids must be unique
// within a session: the shell guarantees it, Replay checks it, the bare
// core trusts its caller. The audit log of every open session is held in
// memory.
package belief
