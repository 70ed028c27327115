// Package sqlapproval shares a tool gate's waiting approval requests,
// and the answers humans give them, among several gates — the replicas
// of one gateway — through a SQL database (PostgreSQL for several
// machines, SQLite for several processes on one machine), so that an
// approval given at any replica's inbox releases the call wherever it
// waits, exactly once.
//
// # Who does what
//
// Each replica keeps its own toolgate.Gate and its own log; the gate
// stays the authority over its calls. The database is only where the
// replicas meet:
//
//   - The replica whose gate asks (the one holding the call) publishes
//     the request (Publish; FromGate builds it from the gate's
//     toolgate.ApprovalRequest): its id, the replica, caller, tool, tier,
//     the arguments' digest and what the human is shown, the approvers
//     the tier needs, when it expires.
//   - Every replica's inbox lists every replica's pending requests
//     (Pending) and takes answers for them (Give).
//   - The holding replica picks the answers to its requests up
//     (Unapplied), applies each to its gate (Gate.ApproveAs or Approve,
//     Gate.DenyAs or Deny), which records it on the replica's log, marks
//     it applied (MarkApplied), and closes the request once its gate no
//     longer waits on it (Close). The call then runs, or is refused, as
//     it would had the answer been given at that replica.
//
// # Exactly once
//
// Give is one decision, pure (give), over the request as it stands:
// only a pending, unexpired request takes answers; an answerer answers
// for the first awaited approver that is its key or "group:" and one of
// its groups; each principal answers a request once (one principal is
// one approver, so a k-of-n group counts k distinct principals whichever
// replicas they answer at); the principal a PRIVILEGE call was made for
// may not approve it without self_approval; a denial decides the
// request, and so does the last awaited approval. The new state and the
// answer are written in one transaction whose UPDATE is conditional on
// the version the decision read:
//
//	UPDATE verity_approval_requests SET awaiting = ?, answered = ?, state = ?, version = version + 1
//	 WHERE request_id = ? AND version = ? AND state = 'pending'
//
// so of two answers read from one version exactly one is written, and
// the other is decided again over what the first left — a second answer
// to a decided request is refused (ErrDecided, naming who decided it and
// at which replica), a second answer of the same principal too
// (ErrAnsweredAlready; the answers table's UNIQUE (request_id, by_key)
// restates it). On the holding replica the gate applies each answer
// once more under its own rules: an answer it refuses (the request was
// answered there directly meanwhile, through the client's own
// elicitation) is recorded on its log as a refused answer, marked
// "refused: …", and the request follows the gate (Reopen, Close). The
// gate's approvals are used once by the call they were asked for, so the
// call runs at most once whatever the database holds.
//
// # Crashes
//
// A replica killed while holding a call leaves its request pending in
// the database, listed and answerable at every other replica until it
// expires. Started again on its log with durable approvals
// (toolgate.WithDurableApprovals), its gate waits on the request again,
// and the replica applies the answers given meanwhile, once: the call
// made again runs on the approval. A crash between the gate's recording
// an answer and MarkApplied leaves the answer to be applied again after
// the restart; the gate refuses it then (answered already), recorded on
// its log, and the approval counts once.
//
// # Tables
//
// Two tables (component "approvals" in the version table verity_schema,
// created and migrated by Open as sqlstore.Migrate does the trace
// tables):
//
//	verity_approval_requests (request_id, replica, caller, tool, tier, arguments_sha256,
//	                          arguments, question, principal, self_approval, approvers,
//	                          awaiting, answered, asked_ns, expires_ns, state, version)
//	verity_approval_answers  (request_id, seq, by_key, issuer, subject, groups_json, name,
//	                          decision, reason, replica, given_ns, applied)
//
// Lists of names are JSON arrays of strings, read back strictly
// (decodeNames: a column this package did not write is an error, never a
// panic). Times are Unix nanoseconds, 0 for none. Expiry is checked with
// the answering replica's clock: replicas' clocks should agree to well
// within the policy's approval_ttl.
//
// The package imports no SQL driver; verity-mcp opens it on its -db
// database together with -approvals.
package sqlapproval
