// Package mcp puts a toolgate.Gate in front of the tools of an MCP server
// built with the official MCP Go SDK (github.com/modelcontextprotocol/go-sdk,
// v1.8.0): every tools/call the server receives is decided by the gate — a
// budget that cannot be overspent, invariants over per-tool counters,
// human approvals for DELETE and PRIVILEGE calls — and every decision and
// result is on a hash-chained trace log. Its command, cmd/verity-mcp, does
// the same for any MCP server in any language, as a proxy.
//
// The package is a nested module, so that Verity's root module never
// imports the SDK. Its name clashes with the SDK's; import it under
// another:
//
//	import (
//		sdk "github.com/modelcontextprotocol/go-sdk/mcp"
//		gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
//	)
//
// # Usage
//
//	comp, err := policy.Compile()                // policy from toolgate.LoadPolicy, or built in Go
//	gate, err := toolgate.New(ctx, log, comp)
//	guard, err := gatemcp.New(gate, gatemcp.Options{})
//	srv := sdk.NewServer(impl, nil)
//	sdk.AddTool(srv, ...)                        // the server's tools, unchanged
//	srv.AddReceivingMiddleware(guard.Middleware())
//
// The middleware is a receiving middleware (Server.AddReceivingMiddleware):
// it sees every request before the server's handlers, and acts on
// tools/call only.
//
// # What a call is
//
// A tools/call becomes a toolgate.Call: the tool's name, its arguments as
// the client sent them (CallToolParamsRaw.Arguments, raw JSON, whose
// SHA-256 an approval is bound to), and a caller key. MCP gives a call no
// id, so the gate assigns one (a UUIDv7).
//
// The caller key names whose budget and counters a call is charged to
// (see Guard.Caller): Options.Caller when set; otherwise the MCP session's
// id (ServerSession.ID(), the Mcp-Session-Id of a streamable HTTP
// session); and for a session without one — stdio, in-memory — a key the
// Guard makes for the connection ("conn:" and a UUIDv7) and forgets when
// it ends. A stateless HTTP server makes a session per request: give it an
// Options.Caller (the authenticated user, say), or each request would have
// a budget of its own.
//
// The call's principal (toolgate.Call.Principal, read by the policy's
// "principals" conditions) is Options.Principal's when set; otherwise
// DefaultPrincipal's: the host's toolgate.WithPrincipal from the request's
// context, else the bearer token the SDK verified (auth.RequireBearerToken
// on a streamable HTTP server: subject, scopes and the "iss" the verifier
// put in TokenInfo.Extra), else none. The Guard does not authenticate;
// the server in front of it does.
//
// # Refusals
//
// A refused call never reaches the tool's handler. The model reads the
// gate's one-line explanation as the tool's result, a CallToolResult with
// IsError set, rather than a protocol error, so it can change course. The
// explanation names the rule and the condition that decided before the
// reason (ExampleGuard prints these):
//
//	tool "delete_file" (rule #1, approval): DELETE denied by human: declined
//	tool "search" (rule #0, kernel): action "search" rejected: budget: cost 1, remaining 0
//
// and a tool no rule matches is "tool \"rm_rf\" is not in the gate's
// catalogue". A call the gate could not decide (the log failed) is
// refused the same way, with the error.
//
// # Approvals
//
// A call the gate answers with AskApproval is put to the human at the
// client through MCP elicitation (form mode): the gate's question, and an
// optional "reason" field recorded with the answer. How depends on the
// protocol version the request runs on:
//
//   - From 2026-07-28 on (MultiRoundTripVersion), a server may not send
//     requests to the client while serving one: it asks through the
//     multi round-trip requests of SEP-2322. The Guard returns an
//     input-required result whose InputRequests hold the elicitation
//     under InputKey and whose RequestState names the call and the
//     approval request. The client fulfils the input request (the SDK's
//     client does it with its ElicitationHandler and retries on its own)
//     and retries the call with the answer in InputResponses and the
//     state echoed back; the Guard hands the answer, the request the
//     state names and the call to toolgate.Gate.Resume.
//   - Before it, the Guard asks with ServerSession.Elicit while the call
//     waits, and hands the answer to Gate.Resume the same way.
//
// "accept" is an approval; "decline", "cancel", no answer, or an
// elicitation that failed are a denial. The human who answers an
// elicitation is the session's user: in a session with an authenticated
// principal (a verified bearer token: DefaultPrincipal) the answer is
// that principal's, recorded as Gate.ApproveAs records it, and counts
// only when the request awaits that principal, by key or group; the
// principal a PRIVILEGE call was made for cannot approve it — the answer
// is refused and recorded, and the call waits for another approver
// (toolgate.Policy.SelfApproval allows it). A session without one
// answers under Options.Approver (toolgate.DefaultApprover by default)
// (TestElicitationAnswersAsTheSessionsUser).
//
// Only the questions the gate asked wait (toolgate's section of that
// name): a retry whose state the Guard did not issue, or issued for other
// arguments, a retry replayed after its answer was used, and an answer
// the gate refuses run nothing, are recorded (a "toolgate.refuse_answer"
// entry), and make no request and cancel none
// (TestOnlyQuestionsTheGateAskedWait, TestInputRequiredResult).
//
// An approved call runs once and a denied call never runs (toolgate's
// "Approvals": what an approval is bound to, who may give it). A
// client that does not advertise form elicitation cannot ask its human:
// the call is refused and says so, and its request stays pending in the
// gate (Gate.Pending), where a host may approve it out of band.
//
// With Options.Hold and a policy approval_timeout (Policy.ApprovalTimeout)
// such a call — and one whose request waits for approvers other than
// Options.Approver — is held instead, while its request is answered out
// of band (an approval inbox: Gate.ApproveAs, Gate.DenyAs): approved, it
// runs once; denied, it is refused with the approver's reason; unanswered
// within the timeout, or when the client stops waiting, it is refused
// (Gate.Unanswered: a "toolgate.refuse" entry with the reason
// "approval_timeout") and its request still waits, so that the same call
// made again after an approval runs (TestHeldCallRunsOnceApprovedElsewhere,
// TestHeldCallTimesOut).
//
// When the policy names other approvers for the tier too
// (Policy.Approvers), the human's approval leaves the request waiting for
// them: the call is refused ("approved here, still awaiting bob"), and
// the same call again is refused ("awaiting approval from bob") without
// putting it to the human, who has answered, until the others decide
// (Gate.Approve or Gate.Deny, out of band); then it runs once.
//
// Identical calls made at the same time (one caller, tool and arguments)
// wait on one approval request, and each is put to the human. The first
// answer decides it; a later one — to a request already decided, or that
// the human has answered and others still await — is refused: the
// Guard logs it as a warning (Options.Logger; the trace log holds it as
// a "toolgate.refuse_answer" entry), and when it is a decline refuses its
// call ("tool \"delete_file\" denied by human: declined (after another
// answer to the same request)"), which never runs on the other answer's
// approval. A late accept runs its call on the approval the first answer
// gave if no identical call used it yet, and is refused otherwise; it
// never asks again.
//
// The request state (requeststate.go) is "vg2." and base64url of a
// random nonce and the AES-256-GCM sealing of what it names — the call,
// the approval request, the SHA-256 of the principal's key, of the caller
// key and of the tool, the arguments' digest, an expiry and a random id —
// under a key derived from Options.StateKey, so that it is integrity
// protected and unreadable to the client, as the specification's multi
// round-trip requests ask ("servers MUST protect its integrity (e.g.
// HMAC or AEAD) and MUST reject state that fails verification"). A retry
// whose state the Guard did not issue, or that was altered, has expired
// (Options.StateTTL, DefaultStateTTL by default, never beyond the
// policy's approval_ttl), was issued to another principal or for another
// caller, tool or arguments, or was used already, is refused: the client
// gets a JSON-RPC error, -32602 (invalid params), one line saying which
// (ErrRequestState); the gate records the refused answer (a
// "toolgate.refuse_answer" entry); the Guard logs a warning; nothing
// runs and no budget changes (TestForgedStateRefused,
// TestRequestStateIsBoundAndSingleUse, FuzzOpenRequestState). Single
// use is the Guard's own doing ("these measures … do not by themselves
// guarantee single-use"): it keeps the id of each state it accepted
// until the state expires, at most 65,536 at once, and refuses a retry
// rather than forget one that has not expired
// (TestRequestStateUsedSetIsBounded). A state is a few hundred bytes
// however long the caller key or the tool's name
// (TestRequestStateSizeBounded); one over the 4096 bytes a retry may
// echo back is never issued (TestSealRefusesOversized). The key is
// random per Guard unless Options.StateKey sets one (verity-mcp
// -state-key FILE); servers behind a load balancer that serve one
// another's retries share a key, and each keeps its own used set — a
// state replayed to another replica within its expiry is refused there
// by the gate when the approval was used (its requests live in one
// gate's memory, or on its log with toolgate.WithDurableApprovals), so
// replicas should share a log or route a retry to the gate that asked.
// A retry that reaches another gate, or the same one after a restart,
// answers no question and is refused (fail closed); the call made again
// is asked about again.
//
// Verity's state and an upstream's never mix. A retry whose state begins
// with "vg2." (or "vg1.", the format before, refused) is the Guard's:
// opened, never forwarded. Any other state is the upstream's: the retry
// is relayed unchanged — less an input response under InputKey, the
// Guard's, which is never forwarded — and never opened. An upstream's
// input-required result whose state begins with the Guard's prefix, or
// that asks for input under InputKey, is refused rather than relayed
// (TestUpstreamStateNeverMixes). Every result the Guard or the Proxy
// makes itself — a refusal, an upstream error, an input-required result
// — carries its resultType ("complete", "input_required"); the
// upstream's results pass with theirs (TestProxyResultsCarryResultType).
//
// The SDK sets the result type that marks a result input-required only
// for results a tool handler returns (Server.callTool, through an
// unexported field); a receiving middleware wraps the handlers from
// outside, so the Guard builds its input-required result with
// CallToolResult.UnmarshalJSON, the exported way to set that field.
//
// # Results
//
// An allowed call runs (the next handler: the SDK's tool dispatch) and
// its outcome goes to Gate.After: the result's text (its JSON when it
// holds anything but text) as the output, and the text as the failure
// when IsError is set, or the handler's error. A result that comes back
// after the client cancelled is still recorded. The result itself goes
// back to the client unchanged.
//
// # Proxying
//
// Forward serves the tools of an upstream session (a ClientSession to
// another MCP server) from a server: each forwarded tool passes the raw
// arguments through and returns the upstream's result unchanged. With a
// Guard's middleware on that server, any MCP server gets a budget,
// invariants, approvals and an audit log without changing a line; the
// verity-mcp command (cmd/verity-mcp) is exactly that, over stdio and
// streamable HTTP, with a policy file, a log file, and a budget shared by
// several proxies through a SQL database.
//
// Over streamable HTTP, the proxy authenticates its clients with OAuth
// bearer tokens when given -jwks (package bearer in this module: JWTs
// checked against the issuer's keys, the RFC 9728 metadata document, 401
// and 403 insufficient_scope): each token's principal, issuer and
// subject, is then one caller with one budget, whatever session it uses,
// and DefaultPrincipal hands its subject, scopes, issuer and groups to
// the gate. Without -jwks it serves loopback addresses only (unless told
// -insecure-no-auth) and every session is the one caller "http" (or
// -http-caller KEY), which a new session does not reset;
// -caller-per-session gives each session a budget of its own instead.
// Either way, with -db the policy's shared_budget bounds every caller of
// every session, and of every proxy on that database, together.
//
// # Two eras of MCP
//
// A Guard serves clients of MCP 2026-07-28, which have no session (each
// request carries its protocol version, client info and capabilities in
// _meta), and of 2025-11-25 and before, which do, at once; ProtocolVersions
// names the ones a proxy should accept. Guard.Caller keys a request that
// came over HTTP outside any session (Stateless) by its principal, never
// by the session the SDK makes for it alone (a key per request would be a
// fresh budget per request) nor by the clientInfo it declares;
// unauthenticated, such requests share AnonymousCaller. On a connection
// whose client speaks 2026-07-28, a request without its _meta version is
// refused with -32602 and recorded (RefuseProtocol, gatelog.KindProtocol).
// CheckHeaders compares a POST's Mcp-Method, Mcp-Name, Mcp-Param-* (the
// x-mcp-header annotations of the upstream's listing: Proxy.ParamHeaders)
// and Mcp-Protocol-Version headers with its body, decoded as the SDK
// decodes it, for the HTTP front that routes each request to the SDK's
// stateless or stateful handler. A tools/list the Guard filtered for its
// caller is cacheScope "private". A traceparent in a tools/call's _meta
// (TraceMetaKey) is the remote parent of the gate's OpenTelemetry spans,
// and its trace id the call's toolgate.Call.Trace, on its log entries.
//
// # Faithful to the upstream
//
// Proxy is the forwarder verity-mcp runs (Forward, which serves the
// tools through the SDK's own types, remains for in-process use). The
// SDK's client decodes a result into CallToolResult, whose UnmarshalJSON
// reads a lone UTF-16 surrogate ("x\ud800y") as U+FFFD, and a Go server
// lists the tools it holds sorted and re-encoded through Tool; so the
// Proxy takes each response's result off the upstream's connection as
// received (Proxy.Transport wraps the sdk.Connection: the SDK writes a
// request with its call's context, which names where the result goes)
// and answers tools/list and tools/call in a receiving middleware with a
// RawResult, JSON the SDK writes as it is (whitespace aside). tools/list
// is the upstream's — its order, its members (execution included),
// nothing added — except that a Guard, by default when the gate refuses
// unknown tools (Options.Listing), leaves out the tools the caller's
// principal may never call (Compiled.MayCall), the rest kept as written. The
// Proxy follows the upstream's notifications/tools/list_changed and tells
// its own clients; a call of a tool the upstream does not list is refused
// by the Guard (Options.Listed) before the gate's rules: never asked of
// a human, never charged, and recorded on the gate's log as a refusal
// (Gate.RefuseNoSuchTool). The upstream's own requests — elicitation/create,
// sampling/createMessage, roots/list — go to a real client through
// RelayMiddleware (relay.go), never answered by the Proxy: elicitation
// and sampling to the one whose call is in progress (else the one heard
// from last), roots to the first connected client that offers them.
// Roots are offered upstream only while a client offers them
// (DownstreamMiddleware follows the clients; RelayOptions.Renew starts
// the upstream again when the first arrives); a sampling request's tools
// are checked against the policy (RelayOptions.MayCall: Guard.MayCall),
// a URL-mode elicitation's URL against an https allow-list (ParseOrigin),
// both recorded as gatelog.KindRelay (Proxy.SetRelay).
//
// # Several servers behind one
//
// A Mux serves several upstreams' tools behind one server, each through
// a Proxy of its own: a tool is named its server's name,
// gateway.Separator ("__") and its own name; tools/list is the servers
// in the order added, each server's tools in its order; a call goes to
// the server its name names, under the tool's own name; a server that is
// down (Detach) leaves the list and its calls fail before any upstream,
// uncharged. A Guard with Options.Mux sets each call's
// toolgate.Call.Server and checks it against that server's Pins.
// verity-mcp -config is built on it.
//
// # Pinned definitions
//
// A tool's definition — its description, schemas, annotations — is an
// instruction to the model, which the server may change after it was
// reviewed. Pins (Proxy.SetPins, Options.Pins) holds what each of the
// upstream's tools is trusted to be, as kernel/toolgate/pin's pure
// pin.State, and enforces it: the SHA-256 of the RFC 8785 form of each
// tool's whole definition as the upstream listed it, pinned from a lock
// file (PinOptions.Lock) or, without one, from the first complete
// listing (trust on first use, a gatelog.KindPin entry). Every listing is
// checked — the whole of it at Attach (start, every restart and
// reconnect) and on tools/list_changed, and each page a client asks for
// — and a difference from the pins is recorded (gatelog.KindDrift)
// before any client hears of it. A tool whose listed definition is not
// its pinned one, changed or new, is left out of the tools/list a client
// receives, the others as the upstream wrote them, and a call of it is
// refused before the gate with a reason naming the tool and both hashes
// ("tool \"echo\" refused: its definition is not the one pinned (pinned
// sha256:…, listed sha256:…): a person must re-approve it"): never asked
// of a human, never charged, recorded as a gatelog.KindRefuse entry with
// the reason ReasonDrift. The rest of the server keeps working. A
// listing that cannot be checked (a definition that is not a JSON object
// with a name, a name listed twice) or a drift that cannot be recorded
// hides and refuses every tool until one can (fail closed).
//
// A person re-pins a changed tool (Pins.Repin: a gatelog.KindRepin entry
// naming the approver), having seen the two definitions (Pins.Reviews;
// verity-mcp's approval inbox renders pin.Compare's diff, in which
// invisible and look-alike characters are written as visible escapes);
// the re-pin names the two hashes reviewed, and is refused when either
// moved since. A principal whose call was refused on the tool may not
// re-pin it. Every call the Guard lets through records its tool's pinned
// hash (toolgate.Call.Definition): the gate writes it on the call's
// execution (tag "definition:sha256:…"), result and refusal entries, so
// that the log says, for each decision, which definition it trusted.
// Pins are rebuilt from the log (NewPins replays the pin entries): a
// restarted proxy keeps the pins trusted on first use and the re-pins;
// a lock file whose digest the log's last pin names already keeps the
// re-pins made since, and a new lock file replaces them.
//
// The upstream's instructions (its initialize result's) are pinned and
// their drift recorded, but change nothing: the proxy does not pass them
// on to its clients. A call held for an approval (Options.Hold) was
// checked when it arrived; a drift while it waits does not recall it.
// Only Proxy (verity-mcp) pins; Forward does not.
//
// Annotations — readOnlyHint, destructiveHint, idempotentHint,
// openWorldHint — are hints the server writes about itself. They are
// part of the pinned definition, so a server that flips destructiveHint
// is a drift like any other. A rule feeds them to the policy only when
// it says so ("tier_from_hints": true, toolgate.Rule.TierFromHints,
// typically on the default rule of "unknown_tools": "allow"): the call's
// tier is then READ_ONLY for readOnlyHint true, MODIFY for
// destructiveHint false, DELETE otherwise (MCP's defaults), read by
// Pins.HintedTier from the definition whose hash the call records
// (Call.HintedTier) — never from an unpinned or drifted one, which is
// refused anyway; without a pinned definition the call is DELETE. A rule
// that names a tier cannot also take one from hints: the policy's tiers
// override them, and a rule without tier_from_hints reads none.
//
// # Honest about failures
//
// A call runs within its rule's timeout (policy "timeout", per rule or
// for all; Gate.Timeout): one that times out is an IsError result "timed
// out after …", recorded as failed and settled by its rule (refunded
// under refund_on_error, charged otherwise). A call the Proxy never wrote
// to an upstream — none attached, the connection closed, the process
// being restarted — is settled at nothing: a call is charged only once
// its request was written to the upstream. A reserved rule with
// "cost_from" (a JSON Pointer into the result's structuredContent or
// _meta, toolgate.ParseCostPointer) is settled at the figure the result
// reports; a missing or invalid figure settles at the reservation, and
// the result entry says measured false; the Guard's log line says
// "measured", "unmeasured", "unreached" or "fixed".
//
// # Guarantees and their tests
//
// Through the SDK's real client and server (in-memory transports):
// allowed calls pass (TestCallsPass); unknown tools are refused and never
// run (TestUnknownToolRefused); the budget runs out and the model reads why
// (TestBudgetRunsOutAndTheModelSeesWhy); a DELETE call asks the human once
// and runs once when approved, never when declined or cancelled, on both
// protocols (TestDeleteRunsOnceWhenApproved, TestDeleteNeverRunsWhenRefused,
// TestNoElicitationNoDelete); approvers besides the client's human are
// still awaited, and the human who answered is not asked again while
// they decide (TestOtherApproversStillAwaited,
// TestHumanNotAskedAgainWhileOthersDecide); a late decline to a request
// already decided refuses its call (TestLateDeclineNeverRuns); the
// input-required result on the wire, a
// replayed answer never running a call twice (TestInputRequiredResult);
// forged, tampered, expired, replayed and misdirected states refused
// (TestForgedStateRefused, TestTamperedRequestStateRefused,
// TestRequestStateIsBoundAndSingleUse, FuzzOpenRequestState); a state's
// size bounded whatever the caller key (TestRequestStateSizeBounded,
// TestLongCallerKeyApproves, TestSealRefusesOversized,
// TestOversizedStateRefused); parallel calls never overspend
// (TestParallelCallsNeverOverspend, rapid); one budget per connection
// (TestEachConnectionHasItsOwnBudget). Each test checks that the log
// verifies and that the caller's kernel session replays from it
// (kernel.Replay) to the gate's budget and steps. Through a Proxy whose
// upstream is stopped and started at random, a caller is charged for
// exactly the calls that reached it (TestUnreachedCallsAreNeverCharged,
// rapid); a tool the upstream lacks never reaches the gate's rules and
// is recorded as a refusal (Gate.RefuseNoSuchTool;
// TestUnlistedToolIsRecordedNeverDecided); filtering a tools/list never
// panics (FuzzFilterTools). A call runs only against a definition whose
// hash is pinned at that moment, and records that hash, whatever the
// sequence of listings, client pages, re-pins and restarts
// (TestCallRunsOnlyAgainstAPinnedDefinition, rapid, against a naive
// model); a listing that cannot be checked hides every tool
// (TestUnreadableListingHidesEverything); a page shown to a client holds
// only pinned definitions (FuzzPinsListing). The proxy's tests, with a real upstream
// server process, are listed in cmd/verity-mcp.
//
// # Tasks
//
// The MCP Tasks extension (io.modelcontextprotocol/tasks, 2026-07-28;
// tasks.go) lets a server answer a tools/call with a task handle and the
// client poll it (tasks/get), answer its questions (tasks/update) and
// cancel it (tasks/cancel). The SDK has no support for it and refuses a
// method it does not know before any middleware runs (mcp/shared.go's
// checkRequest); Proxy.ServeTasks registers the three methods on the
// proxy's server and client (sdk.AddReceivingCustomMethod,
// AddSendingCustomMethod) and relays them, and declares the extension
// upstream only on the calls of a client that declared it. The Guard:
//
//   - keeps a call the upstream turned into a task open: its decision
//     charged it (a reservation under a rule with reserve, else its fixed
//     cost), and a "toolgate.task" entry (gatelog.Task, Gate.RecordTask)
//     records the task, its owner and its expiry before the handle
//     reaches the client;
//   - gives a task to its creator only: another principal (without one,
//     another caller) asking for it — get, update or cancel — gets the
//     answer an unknown task gets, -32602 "Failed to retrieve task: Task
//     not found", logged, nothing changed
//     (TestOtherPrincipalsTaskIsUnknown);
//   - refuses a task past createdAt + ttlMs with -32602 "Failed to
//     retrieve task: Task has expired" and settles its call at its
//     reservation (TestExpiredTaskRefused);
//   - lets a tasks/update through only when it answers input requests
//     the task made (relayed by a tasks/get) and not yet answered, never
//     the Guard's InputKey (an approval is never given through a task),
//     and the policy still lets the task's principal call its tool;
//   - settles the call once, when it first sees the task end: completed
//     at the cost its result reports (cost_from on the result, as for a
//     call that returns at once), failed at its reservation (nothing
//     under refund_on_error), cancelled at the cost the cancelled task
//     reports (cost_from on the task object), else at its reservation —
//     after a tasks/cancel the Guard polls once itself, and a task not
//     yet terminal is settled then at its reservation
//     (TestTaskReservedPolledUpdatedCompletedSettled,
//     TestTaskCancelledSettles, TestTaskFailedSettlesAtReservation);
//   - after a restart, takes up every task on its log that has no result
//     (Guard.ResumeTasks, Gate.OpenTasks): the same owner, the call open,
//     its reservation still charged (TestTaskResumesAfterRestart); a proxy
//     process killed with SIGKILL loses no task handle or settlement it
//     acknowledged (TestKillNineLosesNothingAcknowledged).
//
// Whatever the interleaving of tasks and plain calls of several
// principals, completed, failed, cancelled or polled by strangers across
// restarts, each principal's spend is the sum of its settled costs plus
// its open reservations, never above its budget
// (TestTaskSpendIsTheSumOfSettledCosts, rapid, against a naive model).
//
// # What it does not cover
//
// A tool handler that itself returns input requests (its own multi
// round-trip) is a new call to the gate on each round: each round is
// decided and charged. Forward (not Proxy) lists the upstream's tools
// once and relays nothing. With several clients on one Proxy, an
// upstream's request made outside any call goes to the client heard from
// last. On protocol 2026-07-28 and later a server may not send requests
// while it serves a call, so a relay to such a client fails; an upstream
// on that protocol asks through input-required results, which pass
// through. Prompts and resources are not gated. A task of a client
// without an authenticated principal is bound to its caller key, which
// for a stdio or in-memory connection is the connection's: after a
// restart such a client cannot reach its task again, and its
// reservation stays charged (the safe direction) until the task expires.
// A task no one polls again is settled at its reservation once expired,
// when the Guard next handles any task (TestForgottenTaskSettlesWhenItExpires);
// one with no ttlMs stays open. notifications/tasks and subscriptions/listen are not relayed;
// clients poll.
//
// # Durability, and what it costs
//
// A call is durable at two points, its decision before its tool starts
// and its result before the client is answered, and calls in flight
// share fsyncs; Options.SyncWhileRunning makes it one fsync a call at a
// stated cost. What a crash can lose, either way, is explained once, in
// toolgate's "Durability: what a crash can lose".
//
// BenchmarkDurableGate measures it (a 1 ms tool; the SDK's in-memory
// transports; direct, a bare pass-through proxy, the durable Guard, in
// one run): the latency a lone call gains, in nanoseconds and in fsyncs,
// and the throughput with eight calls in flight as a fraction of the
// pass-through's, with the CPU time per call and the fsyncs per call.
// Its nofsync reference (never synced, not durable) splits the gate's
// cost into its own work and its fsyncs': on two shared cores the
// reference is within the noise of the pass-through, and the gap is the
// fsyncs' — each costs 0.2–0.4 ms of system CPU on the virtual machine
// measured besides its latency, and eight calls in flight are CPU bound.
// A lone call's two fsyncs are the guarantee's floor (two durable points,
// one after the tool); only SyncWhileRunning brings it to one.
//
// # Cost
//
// In-process, over in-memory transports, the gate adds about 50
// allocations (9 KB) to the SDK's 250 per call and no latency that stands
// out of the SDK's own (BenchmarkGuardedCall against BenchmarkUnguardedCall,
// both 0.3–1.5 ms per call on a loaded 2-core machine). BenchmarkGuardCall
// is the gate's own CPU per call as the Proxy runs it — a goroutine per
// request, the decision and the result written to a trace.File, the
// decision log's lines — around a tool that answers at once: about 45 µs,
// 70 allocations and 6 KB on two shared cores. Two things kept it there:
// a plain text result is read by one pass of canon's Scanner rather than
// the SDK's CallToolResult, whose decoder allocates 32 KiB a value; and
// the call's goroutine grows its stack once, at the top of the call,
// rather than twice deep in the kernel (growStack). The proxy's added
// latency per call over stdio, against a pass-through on the same SDK,
// is measured by cmd/verity-mcp's BenchmarkProxyVsPassThrough.
package mcp
