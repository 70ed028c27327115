// Package belief keeps an agent's belief honest while it diagnoses: a
// session declares a fixed set of hypotheses, evidence can only eliminate
// them, obligations gate exit, conclusion and termination, and every
// accepted step is an event of an append-only, hash-chained audit log from
// which anyone can rebuild the session (the CMBS belief protocol).
//
// # Usage
//
//	srv, err := belief.NewServer(ctx, belief.NewMemoryStorage()) // or NewFileStorage(dir, trace.FileOptions{})
//	defer srv.Close()
//	sess, st, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"disk", "network", "config"}})
//	head, _ := st.Head()
//
//	r, st, err := sess.Eliminate(ctx, belief.EliminateRequest{
//		SourceID: "adapter://sre", ObservationID: "probe-1", Eliminated: []string{"disk", "network"},
//	}, belief.ExpectHead(head)) // optional: only if nobody moved the session meanwhile
//	t, st, err := sess.RequestTermination(ctx, belief.TerminationRequest{}) // approved: one survivor
//
//	evs, err := sess.Events(ctx, "")   // AUDIT_TRACE
//	rebuilt, err := belief.Replay(evs) // verifies every event and re-executes it
//
// ExampleNewServer runs this; ExampleDeclare, ExampleState_Eliminate and
// ExampleReplay show the pure core. belief/server serves the same over
// HTTP/JSON.
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
// receiver itself, an error wrapping one sentinel (CodeOf maps it to the
// protocol code of §3.2) and no event: nothing applied, nothing recorded.
// The snapshot of a response is next.Snapshot(); it is O(survivors) and
// left to the caller so that a transition costs one survivors hash.
//
// # Errors
//
// An invalid request (INVALID_REQUEST) is a *ValidationError wrapping
// ErrInvalidRequest: every Violation found, each an RFC 6901 JSON Pointer
// into the request ("" for all of it, "/hypotheses/2",
// "/context/force"; "/event_id" and "/ts" for the Stamp), a rule and a
// message, sorted by path. It is the type every Verity validator returns,
// so one errors.As serves them all. The rules are stable names: RuleSyntax,
// RuleType, RuleRequired, RuleRange, RuleUTF8, RuleUnknownField,
// RulePathMismatch and RuleDuplicate (the last three only from
// belief/server's decoders). Every other rejection is an *Error: its
// sentinel, a message and details (INVALID_HYPOTHESIS_ID lists
// details.unknown_ids). A replay that fails is a *ReplayError naming the
// event. Every message starts with "belief: ", once.
//
// # Decisions where the specification is open
//
//   - An empty hypothesis list is INVALID_REQUEST; duplicates are removed
//     and DECLARE_SESSION records the de-duplicated list sorted by code
//     point. Ids are opaque strings: "", " " and "😀" are valid.
//   - A session may have an owner (DeclareRequest.Owner, State.Owner): the
//     principal a transport authenticated when the session was declared.
//     DECLARE_SESSION records it in its payload ("owner", absent when
//     empty) and checkpoints carry it, so every storage keeps it; the core
//     never interprets it (belief/server answers 404 to anyone else).
//   - ELIMINATE with an id outside the declared set is
//     INVALID_HYPOTHESIS_ID (details.unknown_ids) and rejects the whole
//     call. Declared ids already eliminated are ignored_eliminated.
//   - The idempotence key is the pair (source_id, observation_id). The same
//     key with the same body (eliminated as a set, and justification)
//     returns the first applied/ignored/audit_event_id again (with the
//     current snapshot) and records nothing; the same key with another
//     body is CONFLICT. A new key that eliminates nothing new is recorded
//     with an empty delta.
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
//     true and Policy.AllowForce (off by default: the zero Policy refuses
//     force); another type for force is INVALID_REQUEST. The event records
//     the policy, so replay decides alike.
//   - After termination every mutating verb is SESSION_TERMINATED and
//     records nothing; reads still work.
//
// # The audit log
//
// Every accepted mutation appends one AuditEntry (§1.1): seq, event_id,
// session_id, ts (RFC 3339 UTC), verb, payload (the request), outcome (the
// verb's result), delta.eliminated, notes, survivors_before_hash,
// survivors_after_hash, prev_event_hash and event_hash. Digests are
// trace.Hash values.
//
// The survivors hash is SHA-256 over the RFC 8785 canonical JSON object
// {"prev_event_hash":"<hex>","session_id":…,"survivors":[sorted ids]}
// (see SurvivorsHash), so no id, whatever it contains, can make two
// different survivor sets hash alike. An event's survivors_after_hash is
// bound to the previous event's hash; its survivors_before_hash is the
// previous event's survivors_after_hash, so the survivor states chain.
// event_hash is SHA-256 over the canonical JSON of all other members
// (AuditEntry.Canonical); prev_event_hash links each event to the one
// before (zero for DECLARE_SESSION).
//
// AuditEntry.MarshalJSON writes the AUDIT_TRACE wire form;
// DecodeAuditEntry and DecodeAuditLog are the one way to read it back
// (strictly: duplicate keys, lossy integers and unknown members are
// refused). AuditEntry has no UnmarshalJSON, so json.Unmarshal does not
// read it.
//
// # Replay
//
// Replay verifies each event — hash, seq, link, session, and that no event
// id repeats in the log — and re-executes it from its payload, id and
// time; the produced event must equal the recorded one member by member.
// State.Apply, its step, does the same for one event, except the check
// for repeated ids, which needs the whole log. The rebuilt State has the
// same snapshot, head, obligations and idempotence table as the original.
//
// # The shell
//
// Server manages many sessions concurrently, each a Session with its own
// mutex. NewServer(ctx, storage, opts...) takes a Storage (MemoryStorage,
// FileStorage, or belief/sqlstorage for a SQL database), which holds one
// trace.Log per session, and the options WithClock, WithIDs (UUIDv7 by
// default), WithPolicy, WithCacheSize and WithCheckpointEvery. The
// Server's clock is the one clock: each event and the trace entry that
// records it carry the same instant (trace.At), and the entry's payload is
// the event's canonical bytes, so the trace chain covers the whole event.
// The trace kind is Verb.Kind() ("belief.eliminate").
//
// NewServer reads nothing, so it starts at once over any number of
// sessions. A session is opened on first use — Server.Session, or an
// operation on a *Session — and kept in a cache of WithCacheSize idle
// sessions (DefaultCacheSize, 256), from which the least recently used is
// closed; a session an operation is using is never closed, and a *Session
// whose session was closed opens it again on its next operation. A log
// that does not verify or replay is an error naming its session when the
// session is used (code INTERNAL over HTTP).
//
// Before every operation a Session catches up with entries another
// process appended to its store (by Apply) and appends only after the
// head it has seen (trace.After); on trace.ErrConflict it catches up and
// retries (32 times, then CONFLICT). A store whose head no longer extends
// the session's (cut back or rewritten) is an error wrapping
// trace.ErrTruncated. A caller may pass the audit head it expects
// (ExpectHead); a mismatch is CONFLICT (ErrStaleHead).
//
// # Checkpoints
//
// After every WithCheckpointEvery-th audit event (DefaultCheckpointEvery,
// 1000; 0 for none) the Server appends a checkpoint to the session's log:
// an entry of kind KindCheckpoint ("belief.checkpoint"), covered by the
// same trace chain, stamped with the instant of the event it follows,
// whose canonical JSON payload holds the state after the events before
// it — the declared hypotheses and ontology, the survivors, the
// obligations, the terminated flag, the number of events, the audit head
// (event id and event hash) and its survivors hash — and the idempotence
// records added since the previous checkpoint, which it names (so the
// checkpoints of a log hold each record once). A checkpoint that cannot be
// written (another writer appended first) is skipped.
//
// Opening a session reads its whole log and verifies the trace chain of
// every entry, then restores the state from the latest checkpoint (the
// idempotence table from all of them) and replays only the events after
// it: it trusts that checkpoint, which the chain covers and which a Server
// wrote after replaying every event before it, and it refuses one the
// events after it do not replay on. Catching up with entries another
// process appended replays each event and compares each checkpoint among
// them with the state reached, refusing one that disagrees. VerifyLog, and
// Session.Verify on a session's own log, trust nothing: they replay every
// event and compare every checkpoint. The events before the checkpoint a
// session was restored from are not held in memory: Session.Events reads
// them from the log (verifying the chain up to the session's head), and
// the State of such a session answers Events for them with an error.
//
// Checkpoints are not audit events: AUDIT_TRACE and Events do not show
// them, AuditEntry seq counts audit events only, and Replay takes the
// audit events as before. A checkpoint is a trace entry that a reader of
// the trace log meets between the audit events (trace seq and audit seq
// differ once there is one).
//
// # What it does not cover
//
// No causal-graph handling, weights, constraint propagation or probe
// selection (the specification's non-goals). Event ids must be unique
// within a session: the shell guarantees it, Replay checks it, the bare
// core trusts its caller. The audit events of every open session since
// the checkpoint it was opened from are held in memory. DESIGN.md says how
// the hot path is kept cheap, and what starting a Server costs.
package belief
