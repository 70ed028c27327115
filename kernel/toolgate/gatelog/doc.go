// Package gatelog is the tool gate's vocabulary on the log: the kinds of
// the entries kernel/toolgate appends beside its kernel's and claims',
// their payloads, and the codes they carry.
//
// A gate writes seven kinds of entry of its own:
//
//   - KindRefuse (Refuse): a call refused before the kernel saw it — a
//     tool no rule matches, a rule that refuses, a rate window that is
//     full, a denial, a duplicate call id — with the rule and the
//     Condition that decided;
//   - KindResult (Result): how an allowed call ended, what it was
//     charged, and its output's digest, size and first bytes;
//   - KindAsk (Ask): an approval request as the human was shown it
//     (with toolgate.WithDurableApprovals);
//   - KindExpire (Expire): a request, approval or denial that outlived
//     the policy's approval_ttl;
//   - KindRefuseAnswer (RefuseAnswer): a human's answer the gate refused,
//     with one of the Answer* reasons;
//   - KindTask (Task): an allowed call that continues as a task of its
//     server (the MCP Tasks extension), open until its result entry;
//   - KindSharedLabels (SharedLabels): flow labels read from a store
//     shared with other gates, recorded before the decision that relied
//     on them (toolgate.WithSharedLabels).
//
// A host that pins tool definitions (kernel/toolgate/pin) writes three
// more beside them: KindPin (Pin: a server's tools pinned, from a lock
// file or on first use), KindDrift (Drift: a listing that differs from
// the pins) and KindRepin (Repin: a person's re-approval of a changed
// definition). Their hashes are "sha256:" and 64 lower-case hex digits
// (ValidHash). A Refuse and a Result name, in their definition member,
// the pinned definition hash the call was decided against, when the host
// gave one (toolgate.Call.Definition).
// In their trace member they name the W3C trace id of the trace the call
// was made in (toolgate.Call.Trace: an MCP request's traceparent), when
// the host knew it, so that the log joins the agent's traces.
//
// A host serving MCP writes one more: KindProtocol (Protocol: a request
// refused before any decision because its HTTP headers disagree with its
// body, or a 2026-07-28 request lacks its protocol version in _meta).
//
// A proxy that relays its upstream's own requests to a client writes
// KindRelay (Relay: a URL-mode elicitation or a sampling request with
// tools, relayed, trimmed or refused).
//
// A gateway (several upstream servers behind one verity-mcp) writes
// three more: KindSpawn (Spawn: a stdio server started: command,
// arguments' hash, pid), KindConnect (Connect: a remote server reached:
// URL, TLS peer, protocol) and KindReload (Reload: a new gateway file and
// policy in effect, by their hashes).
//
// Decode reads any of them back, strictly (one JSON object, no unknown,
// duplicate or null member, every required member present), for the
// commands that read a log (verity inspect, view, summary), for the gate
// restarted over its log, and for anyone auditing one. Refuse and Result
// are written as canonical JSON (RFC 8785) by their AppendJSON methods,
// without a transform: the result entry is on every call's path.
//
// The Condition* codes name the part of a rule that decided a call; the
// same word is a toolgate.Ruling's and a toolgate.Decision's Condition
// and a Refuse entry's condition member. "paths/<k>", "flow/<k>",
// "principals", "call_id", "approval" and "kernel" name a path
// condition, a flow entry and the other checks without a constant.
//
// The package depends on no other part of the gate, so that a program
// reading a log needs only it, kernel and claims.
package gatelog
