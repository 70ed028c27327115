// Command verity-mcp puts a Verity tool gate in front of any MCP server.
//
//	verity-mcp -policy policy.json -log PATH [-db postgres://…|sqlite:PATH]
//	           [-http ADDR [-jwks FILE|URL -issuer ISS -resource URL [-scopes S] | -http-caller KEY | -caller-per-session] [-insecure-no-auth]]
//	           [-approvals ADDR [-approvals-insecure-no-auth] [-replica NAME]]
//	           [-caller KEY] [-approver NAME] [-list auto|all|callable] [-upstream-exit]
//	           [-sync-while-running] [-pins first-use|off|pins.json [-pins-server NAME]]
//	           [-trace-spans FILE] [-state-key FILE [-state-ttl D]]
//	           [-roots relay|off [-roots-wait D]] [-sampling-tools refuse|drop] [-elicit-url-origin ORIGIN]…
//	           -- <upstream command and args>
//	verity-mcp -config gateway.json -log PATH [-require-all] [the flags above but -policy, -pins, -pins-server, -upstream-exit]
//	verity-mcp pin review|approve -inbox URL …
//	verity-mcp client list|call TOOL ARGS [-yes|-no] [-url URL [-token-file F]] [-- <server command>]
//
// The last form is a small MCP client for the terminal: it lists a
// server's tools or calls one, answering an approval asked by elicitation
// on the terminal, so that a proxy (or any server) can be tried without a
// desktop client; `verity-mcp client -h` says how, and its exit codes.
//
// It starts the upstream MCP server as a child process over stdio, lists
// its tools, and serves the same tools to its own client over stdio (and
// over streamable HTTP at ADDR with -http). Every call goes through a
// toolgate.Gate configured by the policy file (toolgate.LoadPolicy): a
// refused call never reaches the upstream and the model reads why as the
// tool's error; a DELETE or PRIVILEGE call is asked of the client's human
// through MCP elicitation and runs once if approved, never if declined;
// every decision and result is on the hash-chained log at PATH. The
// upstream, in any language, needs no change.
//
// Without -jwks the client's human answers as -approver (default "human",
// the toolgate.DefaultApprover a policy without "approvers" expects). When
// the policy has DELETE or PRIVILEGE rules and -approver is an approver of
// none of their tiers, the command exits 2 naming the approvers the
// policy expects; when it approves one tier but not the other, it warns
// that the other's calls wait for their approvers, out of band. With
// -jwks the human answers as the session's authenticated principal, who
// must be one of the approvers the policy names (by key or group), and
// -approver is not used.
//
// # Faithful to the upstream
//
// Clients see the upstream's own answers (gatemcp.Proxy): tools/list as
// the upstream wrote it, in its order and with all its members, and each
// result as the upstream wrote it, byte for byte up to whitespace — a
// lone UTF-16 surrogate ("x\ud800y") included. -list callable (the
// default, auto, when the policy refuses unknown tools) leaves out of
// tools/list the tools the caller may never call under the policy, the
// others untouched; -list all shows every tool. When the upstream sends
// notifications/tools/list_changed the proxy reads its tools again and
// tells its clients. A call of a tool the upstream does not list is
// refused as an error result before the gate: no human is asked, nothing
// is charged. The upstream's own requests to its client — elicitation,
// sampling, roots/list — are relayed to a real client and its answers
// sent back; the proxy never answers one itself.
//
// # Relayed requests: roots, sampling, URL elicitation
//
// Roots. The upstream is offered roots only when a client connected at
// the time it starts offers them ("roots": {"listChanged": true}); the
// proxy starts the upstream before any client, so when the first client
// offering roots arrives the upstream is started again, offered roots
// (that client's requests wait for it, calls in progress end first, up
// to 10s). A server that takes its directories from its client's roots —
// the reference filesystem server run without directories — so lists
// the client's. roots/list goes to the client offering roots that
// connected first of those still connected: one upstream sees one
// client's roots. The upstream is sent notifications/roots/list_changed
// when that client's roots change, when it leaves and another offering
// roots remains, and when one arrives after none was left. A roots/list
// while no client offering roots is connected waits up to -roots-wait
// (10s) for one, then fails; an upstream that was not offered roots and
// asks anyway is refused. -roots off never offers them.
//
// Sampling. A sampling/createMessage that offers the model tools is
// relayed only with tools the caller may call (the policy's rules for
// the caller's principal, as -list callable reads them); with one it
// may not call it is refused (-sampling-tools refuse, the default) or
// relayed without them (-sampling-tools drop; refused still when it
// requires a tool and none is left).
//
// URL elicitation. A URL-mode elicitation (the client's human sent to a
// web page) is relayed only for an https URL whose origin is on the
// allow-list (-elicit-url-origin https://host[:port], repeatable; none:
// all refused). URLs with user information, backslashes,
// percent-encoded or non-ASCII hosts (write an IDN in punycode) are
// refused. Form-mode elicitation is relayed as before.
//
// On 2026-07-28 an upstream asks for input inside a tools/call result
// (input-required, multi round-trip): the result goes to the client as
// written when its requests pass the same checks (a sampling request that
// -sampling-tools drop would trim is refused: such a result is relayed
// whole or not at all), and the client's retry goes back with its
// responses and the upstream's requestState; the proxy's own client
// never fulfils one (roots included).
//
// Refusals reach the upstream as an error, one line naming why (inside a
// result: the client gets a tool error instead). Every
// URL-mode elicitation and every sampling request with tools is recorded
// on the log as toolgate.relay (gatelog.Relay: method, caller, action
// relayed, dropped or refused, origin or tools, reason).
//
// # Pinned definitions
//
// Every tool the upstream lists is pinned to the hash of its definition
// (gatemcp.Pins, kernel/toolgate/pin: the SHA-256 of the RFC 8785 form
// of the whole definition as listed). With -pins pins.json (a lock file
// `verity pin` writes from a live server, reviewed and committed) the
// lock file's pins are trusted; by default (-pins first-use) the
// upstream's first complete listing is, recorded on the log as its pin
// (a toolgate.pin entry); -pins off pins nothing. The upstream is named
// among the pins by -pins-server (default: the lock file's only server,
// or without one the upstream command's base name). A lock file that
// cannot be read, is not a regular file, is malformed or tampered with
// (an unknown member, a bad hash, a tool named twice, a definition that
// does not hash to its pin) or does not name the upstream exits 2 with
// one line saying why, before the upstream starts.
//
// Drift is checked at start, on every tools/list, on
// notifications/tools/list_changed and after every restart of the
// upstream, and recorded (toolgate.drift). A changed or new tool is left
// out of the tools/list clients receive (the rest as the upstream wrote
// it) and a call of it is refused — naming the tool and both hashes,
// charging nothing, recorded as a toolgate.refuse entry with the reason
// definition_drift — while the rest of the server keeps working. With
// -approvals, the inbox's page /pins lists each such tool with the diff
// of its two definitions, invisible and look-alike characters (Unicode
// TAG characters, zero-width and bidirectional controls, Cyrillic
// look-alikes) written as visible escapes, and the warnings; an approver
// — authenticated as for calls, and not a principal whose call was
// refused on it — re-pins it there, or from a terminal with `verity-mcp
// pin approve -inbox URL -tool NAME` (`verity-mcp pin review -inbox URL`
// prints the reviews). The re-pin is a toolgate.repin entry naming the
// approver; the tool's next call runs, once per call, against the new
// definition. Every call's execution, result and refusal entries name
// the definition hash it was decided against. Without -approvals a
// changed tool stays hidden until a lock file pins it: `verity pin -o`
// (or `verity pin approve` on an existing one), then -pins with it.
//
// # Failures
//
// The policy's "timeout" (for every tool, and per rule) bounds how long
// a call waits for the upstream: a call that times out returns an error
// result, is recorded as failed, and is settled by its rule (refunded
// with refund_on_error, charged otherwise). A call that never reached the
// upstream (its request was never written to it) is never charged. When
// the upstream process exits, the proxy logs "upstream exited; restarting
// it" at error level and starts it again after 100 ms, doubling the wait
// after each restart up to 10 s (an upstream that ran a minute or more
// starts the count again), then logs "upstream restarted"; calls made
// meanwhile fail, uncharged. With -upstream-exit it logs "upstream
// exited; stopping (-upstream-exit)" instead and exits 1, after closing
// the log. A reserved rule's "cost_from" settles each call at the figure
// the tool's result reports (see toolgate's policy).
//
// # One gateway for several servers
//
// With -config gateway.json (package kernel/toolgate/gateway; exclusive
// with -policy, a command after --, -pins, -pins-server and
// -upstream-exit, which the file sets per server) the proxy serves the
// tools of every server the file names behind one server
// (gatemcp.Mux), under the one policy the file names, on the one log:
//
//   - Names and order. A server's tool is served as the server's name,
//     "__" (gateway.Separator) and the tool's own name, which is what
//     the policy's rules match; tools/list is the servers in the file's
//     order, each server's tools in its own order, each definition as the
//     server wrote it but its name, in one page. An upstream that lists a
//     name twice is refused, in one line naming the server and the tool.
//   - Stdio servers ("command") start in "dir" (relative to the file's
//     directory; a relative command is found from verity-mcp's working
//     directory, or from "dir"), with an environment of only the
//     variables "env" names (from verity-mcp's own) and "set_env"'s
//     secrets (a file of at most 64 KiB, its trailing newline dropped,
//     or a variable that is set); a secret that cannot be read fails that
//     server's start, in one line naming the server and the variable.
//   - Remote servers ("url", streamable HTTP through the SDK's client,
//     which sets the 2026-07-28 Mcp-Method and Mcp-Name headers) need
//     https, or http to a loopback address; TLS 1.2 or later is verified
//     against the system's CAs or, with "ca_file", only the file's; no
//     redirect is followed. Upstream credentials ("auth") are refused by
//     this build.
//   - Each server is started, restarted and timed out on its own:
//     "start_timeout" (30s) bounds the start or connection and the first
//     tools/list; "call_timeout" bounds each of its calls whose rule
//     sets no "timeout" of its own, in place of the policy's "timeout"; when it exits or its connection
//     ends, its tools leave the list (clients are sent
//     notifications/tools/list_changed, as they are for any upstream's
//     list_changed) and, under "restart": {"policy": "always"} (the
//     default), it is started again after "min_backoff" (100ms), doubling
//     after each try that failed or ran less than a minute, up to
//     "max_backoff" (10s); under "never" it stays down. A call of a
//     server that is down is refused before the gate, naming the server,
//     and charged nothing; the other servers' calls go on.
//   - At start, a server that cannot be reached (a command that does not
//     start, a URL that does not answer, a TLS failure, a 401, a missing
//     secret) is one error line naming it ("server unreachable at
//     start"), and the proxy serves the others and retries it under its
//     restart policy (never: it stays down); with -require-all the proxy
//     exits 1 instead, naming it.
//   - The log records each start of a command (toolgate.spawn: server,
//     command, the SHA-256 of its arguments, pid, protocol version) and
//     each connection to a remote server (toolgate.connect: server, URL,
//     the TLS peer certificate's subject and SHA-256, protocol version),
//     before any call reaches it: a call's server is the last such entry
//     of the server its tool names.
//   - SIGHUP reads the gateway file and the policy again. A valid new
//     version serves the next call (toolgate.Gate.Reload: spend, windows
//     and waiting requests are kept; a new budget, min_cost,
//     budget_period, shared_budget, invariants or approvers need a
//     restart and are refused), starts the servers it adds, stops those
//     it removes, restarts those whose entry changed, and is recorded
//     (toolgate.reload, with the SHA-256 of both files); an invalid one is
//     refused, each reason one error line ("reload refused"), and the
//     running version stays. The Guard's -list filter and approval hold
//     keep the values they were started with.
//   - Pins are per server ("pins": first-use, off, or a lock file),
//     keyed by the server's name; the inbox's /pins page is not served
//     for a gateway (re-pin with a lock file).
//
// BenchmarkGatewayVsFlags serves one upstream both ways in one run: p50
// 1.12 ms behind a one-server gateway file, 1.11 ms behind the flags
// (medians of five runs of 2000 calls; the ratio 0.99 to 1.01 in each;
// two shared cores, log on tmpfs).
//
// # Callers and budgets
//
// Each caller key has its own budget (the policy's "budget") and its own
// counters: the stdio client is the caller -caller (default "stdio"),
// whichever protocol it speaks. Over streamable HTTP:
//
//   - with -jwks (see "Authentication" below), each principal — the
//     token's issuer and subject — is one caller, keyed by
//     toolgate.Principal.Key ("ISSUER|SUBJECT"): all its sessions, its
//     requests of protocol 2026-07-28 (which have none), and all its
//     tokens, share one budget, and a new session resets nothing;
//   - without, every session is the one caller "http" (or the KEY of
//     -http-caller KEY): they share its budget and counters, and a new
//     session resets nothing. (Being one caller, they share its
//     approvals too: an approval bound to the caller, a tool and its
//     arguments may be used by an identical call from another session.)
//     With -caller-per-session each session is instead the caller named
//     by its Mcp-Session-Id, with a budget of its own — which a client
//     resets by initializing a new session, so ask for it only when the
//     clients are trusted to. A request of protocol 2026-07-28 has no
//     session: unauthenticated, it is charged to the -http-caller key
//     ("http") like the sessions, and with -caller-per-session to "http".
//
// # Protocol eras
//
// Clients of MCP 2026-07-28 (no session; version, client info and
// capabilities in each request's _meta; server/discover) and of
// 2025-11-25 and 2025-06-18 (initialize, sessions) are served at once, on
// stdio and -http; server/discover advertises exactly those versions and
// the tools capability. Over -http each request's Mcp-Method, Mcp-Name,
// Mcp-Param-* and Mcp-Protocol-Version headers are compared with its body
// before anything is decided; a mismatch is answered 400 with JSON-RPC
// error -32020, a 2026-07-28 request without its _meta version 400 with
// -32602 (on stdio too), each logged ("refused: header_mismatch",
// "refused: missing_version") and recorded as a toolgate.protocol entry,
// with no budget touched. A tools/list filtered for its caller is
// cacheScope "private". A traceparent in a request's _meta continues into
// the gate's OpenTelemetry spans (-trace-spans FILE writes them as JSON
// lines) and its trace id is on the call's log entries.
//
// Either way, with -db the policy's shared_budget bounds all callers of
// all sessions together. A durable log keeps what each caller spent:
// started again over the same log, the proxy resumes the stdio caller's
// budget (and the HTTP callers') where it stopped.
//
// When a caller's budget is spent, each of its calls is refused before
// it reaches the upstream, and the model reads why and when the budget
// comes back. Without the policy's budget_period it never comes back:
// the budget is for the caller's whole life on the log (start a new
// log, or pass another -caller, for a fresh one). With budget_period it
// renews: {"calendar": "day"|"week"|"month", "time_zone": "Europe/Paris"}
// gives the whole budget back at the period's first instant, {"every":
// "24h"} bounds what the calls of any 24 hours spend, spend coming back
// as it leaves the window; periods are counted from the times on the
// log, so a restart changes nothing. An approver adds to a caller's
// budget for the current period, or resets it, through the approval
// inbox (POST /api/budget; `verity budget grant -inbox URL`), recorded
// on the log with who and why.
//
// # Authentication
//
// Without -jwks anyone who reaches -http may call the tools, so -http
// then accepts only a loopback address (127.0.0.1:PORT, [::1]:PORT,
// localhost:PORT); any other, or an empty host (every interface), exits
// 2 unless -insecure-no-auth is given, which says what it does.
//
// With -jwks FILE|URL, -issuer ISS and -resource URL, the HTTP server is
// an OAuth 2.1 protected resource as the MCP authorization
// specification describes (package kernel/toolgate/mcp/bearer): every
// request needs "Authorization: Bearer TOKEN", a JWT signed RS256, ES256
// or EdDSA by a key of the JWKS (a URL is fetched again every
// -jwks-refresh and when a token names an unknown kid, at most every
// 10 s), whose iss is ISS, whose aud names URL, and whose exp and nbf
// hold within -token-leeway (30s). A missing or refused token is
// answered 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
// (error="invalid_token" first when a token was presented) and no
// reason; a token without every scope of -scopes is answered 403
// with error="insufficient_scope". The RFC 9728 metadata document
// (resource, authorization_servers, scopes_supported,
// bearer_methods_supported) is served without a token at
// /.well-known/oauth-protected-resource (and that path followed by the
// resource's path). The token's subject, scopes, issuer and groups (the
// claim -groups-claim, default "groups") are the call's
// toolgate.Principal, which the policy's "principals" conditions read.
// A JWKS file that cannot be read, is not a regular file (a FIFO, a
// device) or is over 1 MiB, or a malformed JWKS, exits 2 at start.
//
// With -db, the policy's shared_budget (id and limit) is a row in that
// database (kernel/sqlbudget) that every caller of every proxy pointed at
// it draws on too: several proxies on one PostgreSQL database — or on one
// SQLite file, on one machine — never spend more than its limit together.
// -db takes postgres://… (or postgresql://…) or sqlite:PATH. A
// shared_budget with a calendar "period" renews too: each period is the
// row ID@KEY (kernel/sqlbudget's ForPeriod; KEY the period's first day,
// "2026-11-30", or month, "2026-11"), the same row for every proxy.
//
// # Replicas
//
// N proxies behind one address (a load balancer spreading sessions or
// requests over them), each with its own upstream and its own -log, are
// one gate when they share -db: through its kernel/sqlbudget tables they
// share
//
//   - the shared_budget: no interleaving of replicas spends more than its
//     limit (a conditional UPDATE per charge);
//   - the rules' rate windows: "at most N calls per duration" counts the
//     calls of a caller on every replica (toolgate.WithSharedWindows,
//     keyed by caller and window);
//   - the callers' flow labels: a label a call attaches on one replica is
//     seen by the next decision for that caller on any replica, within its
//     label_ttl and, with conversation_labels, in its conversation, so
//     that a toxic flow whose first call lands on replica 1 and last on
//     replica 3 is refused. A replica records the labels it read and did
//     not carry (a toolgate.shared_labels entry) before the decision that
//     relied on them, so that its own log replays alone
//     (toolgate.WithSharedLabels). A label an approver clears at one
//     replica's inbox is cleared on all: a replica whose session carried
//     it records the declassification before its next decision;
//   - with -pins first-use, the pins: the first complete listing any
//     replica claims is the pin of all (a replica whose upstream lists
//     something else has that drift refused), and a re-pin approved at one
//     replica's inbox applies on all, each recording it on its own log
//     (a toolgate.repin entry naming the approver) before the tool's next
//     call; drift from it is still refused where an upstream lists
//     otherwise. With a lock file every replica loads the same file.
//
// A caller is the same caller on every replica when its key is: the
// principal of a token (-jwks), or -http-caller; -caller-per-session
// keys each session, which a load balancer must then keep on one
// replica. Each replica writes its own log, and an acknowledged call is
// on the log of the replica that answered it: kill -9 of one replica
// loses nothing acknowledged (replicas_test.go checks it on PostgreSQL).
// A database that cannot be reached refuses the calls that need it, as
// an unwritable log does. Without -db each replica is a gate of its own.
//
// # Approval inbox
//
// Many MCP clients cannot elicit: without more, their DELETE and
// PRIVILEGE calls are refused. With -approvals ADDR the proxy serves a
// page at http://ADDR/ listing every call that waits for a human — its
// tool, tier, caller, the arguments in full exactly as the gate shows
// them (toolgate.ApprovalRequest.Arguments), who must approve and who
// has — where an approver approves or denies it, with a reason. The
// page is plain HTML and a small script served from the binary, with a
// Content-Security-Policy allowing only its own files and API; it sets
// every text it shows as text, never as HTML (the arguments were written
// by a model).
//
// Authentication is -http's: with -jwks the page asks for a bearer
// token, which its script sends in the Authorization header of every
// API request (so a page of another site, which cannot read the token,
// cannot answer), and the answer is recorded as the token's principal
// (toolgate.Gate.ApproveAs: an approver the policy names by key,
// "ISSUER|SUBJECT", or as "group:" and one of the token's groups); a
// principal the request does not await, or the principal that made a
// PRIVILEGE call approving it (toolgate.ErrSelfApproval), is answered 403
// with the reason, and no approval is recorded. A PRIVILEGE tier with two approvers needs two principals:
// the page says so, shows the first approval, and takes the second from
// another principal (one principal is one approver). Without -jwks the
// inbox binds loopback addresses only (any other exits 2 unless
// -approvals-insecure-no-auth), answers as -approver, and refuses a
// request whose Host is not its own address. An answer is a JSON POST
// (cross-origin requests refused); its body is read by the strict JSON
// reader every Verity decoder uses, members named exactly ("ID" is not
// id), and refused 400 with every problem named by its member's JSON
// Pointer and rule (a duplicate or unknown member, a wrong type, a
// decision other than approve or deny, a reason with hidden characters:
// "invalid answer: 1 violation: /reason: character: …"), which the page
// shows.
//
// A call that needs an approval its client cannot give — the client
// does not elicit, or the request waits for approvers other than
// -approver — is held while its request waits in the inbox, for at most
// the policy's approval_timeout: approved, it runs once and its result
// is the call's; denied, it is refused with the approver's reason;
// unanswered, it is refused ("no answer within 5m0s; the request waits
// until …: call again once it is approved"), recorded on the log as a
// toolgate.refuse entry with the reason approval_timeout. A policy
// without approval_timeout holds them for 5m with -approvals (at most its
// approval_ttl); without -approvals such calls are refused at once. The
// refusal names the inbox's URL. The client's own request timeout must
// be longer than the hold, or the client gives up first: the TypeScript
// SDK's default is 60 s (pass a longer timeout in its RequestOptions). A request, and an approval given but not used,
// expire approval_ttl after they were asked (a toolgate.expire entry).
//
// Requests and unused approvals survive a restart over the same -log
// (toolgate.WithDurableApprovals). A call held when the proxy stops ends
// with it: its client sees the refusal above or, if the connection went
// first, a transport error. The restarted proxy lists the request again,
// as it was asked; once approved there, the client's same call — same
// caller (with -jwks the same principal; over stdio the same -caller),
// tool and arguments — made again runs once. Made again before the
// approval, it is held again on the same request.
//
// Several replicas behind one address share their waiting requests and
// the answers given to them through -db (kernel/toolgate/sqlapproval;
// with -approvals, -db needs no shared_budget): an approval given at any
// replica's inbox releases the call wherever it is held, exactly once.
// Each replica, named by -replica (default HOST:LOGPATH, the same after a
// restart on the same log), publishes the requests its gate waits on;
// every inbox lists every replica's pending requests, the page naming
// the replica holding each ("held at"); an answer is written to the
// database once, by an UPDATE conditional on the request's version, under
// the gate's rules (an awaited approver, one principal one approver — a
// k-of-n group counts distinct principals whichever replicas they answer
// at — no self-approval of PRIVILEGE, approval_ttl), and a second answer
// to a decided request, at any replica, is answered 409 naming who
// decided it and where. The holding replica picks answers up every
// 200 ms (polling, on PostgreSQL as on SQLite: database/sql has no
// LISTEN), applies each to its gate — on its own log, the reason ending
// "[answered at replica R]" — and the held call runs once or is refused.
// A replica killed while holding leaves its request pending, answerable
// at the others until its approval_ttl; started again on its log, it
// applies the answers given meanwhile, once, and the call made again
// runs on the approval.
//
// # Bounds on -http
//
// No HTTP client can hold the proxy: a streamable HTTP session with no
// request for -session-timeout (10m) is closed, with what it holds (its
// client gets 404 and initializes anew); at most -max-sessions (1024)
// sessions are live at once: an initialize past them closes the session
// idle longest (none of its POSTs in progress; its client likewise gets
// 404), or is answered 503 when every session has a request in progress;
// request headers must arrive
// within -read-header-timeout (10s) and be at most -max-header-bytes
// (64 KiB), a body within -read-timeout (30s) and be at most -max-body
// (4 MiB); each write of an answer or event stream must reach its
// client within -write-timeout (60s), while the stream itself stays open
// as long as its session or call; a connection idle between requests is
// closed after -idle-timeout (60s); at most -max-conns (256) connections
// are open at once, the one idle longest closed to let a new one in, and
// a new one finding only requests in progress waits -conn-wait (1s) for
// room before it is closed; at most -max-conns-per-client (64) are open
// from one client address, and one more from a client whose connections
// are all in requests is closed at once. None can be switched off (0 is
// a usage error).
//
// # Output
//
// Logs go to stderr (log/slog, text); the upstream's stderr is passed
// through. Each decision and each result is one line (toolgate.LogObserver:
// msg="toolgate decision" with tool, call_id, caller, principal, verdict,
// rule, condition, seq, cost, remaining, approval, explanation and
// duration; msg="toolgate result" with charged, ok, remaining,
// tool_duration); -decision-log=false leaves them out.
//
// # Metrics
//
// With -metrics ADDR the proxy serves Prometheus metrics at
// http://ADDR/metrics (kernel/toolgate/otel's instruments through the
// OpenTelemetry Prometheus exporter): verity_toolgate_calls_total by
// verdict, tool and caller; verity_toolgate_spend_total (units charged,
// after settlements and refunds) by tool and caller;
// verity_toolgate_budget_remaining by caller;
// verity_toolgate_approvals_waiting; verity_toolgate_callers_live;
// gen_ai_execute_tool_duration_seconds, the upstream's latency as the
// gate sees it (from the allow to the result), by tool and error_type;
// verity_toolgate_decision_duration_seconds (the gate's, its fsyncs
// included) by verdict; verity_trace_sync_duration_seconds, each fsync of
// the log. Callers and tools are unbounded, so the first
// -metrics-max-callers callers and -metrics-max-tools tools (100 each)
// are labelled and every later one is counted as "_other": totals stay
// exact, the series bounded. Like -http without tokens, -metrics binds
// loopback addresses only unless -insecure-metrics, for the metrics name
// callers, tools and spend; its server has -http's default bounds
// (internal/httpguard). On exit the proxy writes the log's head — its last sequence
// number and hash, "SEQ:HASH" as examples/verity prints it — which a later
// `verity verify` can check the log against.
//
// # Cost
//
// Each forwarded call adds a second stdio hop and the gate's two log
// entries (the decision and the result), each durable before the tool
// runs or the client is answered. The log is opened with group commit
// (trace.SyncGroup): calls in flight at once share fsyncs, so with eight
// in flight the log costs about 0.6 fsyncs a call rather than two
// (kernel/toolgate/mcp's BenchmarkDurableGate). Measured before group
// commit with one
// harness in one run (BenchmarkDirectCall, BenchmarkProxiedCall: the SDK's
// client calling the same upstream tool over stdio, directly or through
// this command; medians of five, on a 2-core machine under a load
// average near 10): 0.60 ms per call direct, 2.8 ms proxied with the log
// on disk, 1.6 ms with the log on tmpfs — the proxy adds about 2.2 ms, of
// which the two fsyncs are about 1.2 ms. The client's allocations are the
// same either way (63–64 allocs, 140 KB per call).
//
// BenchmarkProxyVsPassThrough compares the proxy, in one run, with a
// minimal pass-through proxy on the same SDK (internal/passthrough) over
// the same stdio upstream, a direct call and a bare fsync. Measured on
// two shared cores (load average 4–6): p50 0.51 ms direct, 1.01 ms
// through the pass-through, 1.24 ms through verity-mcp with its log on
// tmpfs (1.23×), 1.94 ms with the durable log on the disk (two fsyncs a
// call, 0.31 ms each, a bare one 0.29 ms); with eight calls in flight,
// 104 % of the pass-through's calls/s on tmpfs, 80 % durable. Its CPU a
// call is within a few percent of the pass-through's: the gate's own
// (BenchmarkGuardCall, about 45 µs) is what the proxy saves by setting
// GOGC to 400 when the environment sets none — the SDK's decoder makes
// about 450 KB of garbage a call, and at Go's default the collector ran
// every few calls. GOGC in the environment wins.
//
// A call alone waits for two fsyncs: its decision's before the tool
// starts, its result's before the client is answered. -sync-while-running
// (off by default) makes it one, at the cost that a machine crash during
// the tool may lose that call's decision and charge, never anything the
// client was answered; what a crash can lose is explained once, in
// toolgate's "Durability: what a crash can lose" (go doc
// github.com/verity-go/verity/kernel/toolgate).
// The startup line "serving" says which mode runs (sync_while_running).
//
// With -sign-key FILE (a key from `verity keygen`), the proxy keeps a
// signed checkpoint of the log's head beside it, in LOG.checkpoint (the
// C2SP tlog-checkpoint text, origin the key's name; see trace's "Signed
// checkpoints" for what it proves), replaced atomically every
// -checkpoint-every entries (100) and on exit; `verity verify LOG
// -checkpoint LOG.checkpoint -pubkey PREFIX.pub` checks the log against
// it. Copy it somewhere the log's holder cannot change.
//
// -log is held with the log's one-writer lock (trace.OpenFile) for as
// long as the proxy runs: a second verity-mcp on the same log exits 1 at
// once, naming the process that holds it, before it starts the upstream,
// so two proxies never spend one budget twice or fork the log.
//
// Exit status: 0 after a clean shutdown (the stdio client went away, or
// with -http an interrupt), 1 on a failure at run time (the log cannot be
// opened or is in use by another proxy, the upstream does not start, a
// database error, the upstream exited under -upstream-exit, a server not
// reached at start under -require-all), 2 on a configuration error: a bad flag or argument, a
// policy file that cannot be read (or is not a regular file) or does not
// decode, a -pins lock file refused, an -approver the policy does not expect, -db without the
// policy's shared_budget (and without -approvals) or the other way round, -replica without -db and -approvals, a gateway file that
// cannot be read or breaks its rules (each problem one line naming the
// server).
//
// # Tasks
//
// An upstream that speaks the MCP Tasks extension
// (io.modelcontextprotocol/tasks, 2026-07-28) may answer a tools/call
// with a task handle rather than a result; the proxy advertises the
// extension, relays tasks/get, tasks/update and tasks/cancel (which the
// SDK alone would refuse as unknown methods) and declares the extension
// upstream only on the calls of a client that declared it. A call that becomes a task is charged
// when it is decided — its reservation under a rule with "reserve", else
// its cost — and a "toolgate.task" entry on -log names the task and the
// principal that made it. The call is settled once, when the proxy first
// sees the task end: completed at the cost its result reports (the
// rule's "cost_from"), failed at its reservation, cancelled at the cost
// the cancelled task reports, else at its reservation (after a
// tasks/cancel the proxy asks the upstream once itself, so a client that
// does not poll again is still settled). Only the principal that made a
// task may get, update or cancel it; anyone else gets exactly the answer
// an unknown task gets (-32602 "Failed to retrieve task: Task not
// found"). A task past its ttlMs is refused (-32602 "Failed to retrieve
// task: Task has expired") and settled at its reservation. A
// tasks/update may answer only the questions the task asked, never the
// proxy's own approval key, and only while the policy still lets its
// principal call the tool. A proxy restarted — or killed — while tasks
// run takes them up again from -log at start ("tasks resumed"), each
// still charged, its owner unchanged, and settles them when they end.
// Give tasks a rule with "reserve" and "cost_from": a fixed-cost task is
// charged its cost, refunded only under "refund_on_error" when it fails,
// and not at all once resumed after a restart.
//
// # Request state
//
// On 2026-07-28 an approval is asked by an input-required result whose
// requestState the client echoes back. The proxy seals it (AES-256-GCM)
// with the principal, the call and an expiry (-state-ttl, 15m by
// default, never beyond the policy's approval_ttl), and accepts each
// once: a forged, altered, expired, replayed or another principal's state
// is refused with -32602 and one line, recorded on -log, and changes no
// budget. The key is random for each process unless -state-key FILE
// gives one (32 bytes or more, readable by its owner only; `head -c 32
// /dev/urandom > FILE`), which replicas serving one another's retries
// share. An upstream's own requestState is relayed unchanged and never
// opened; one that imitates the proxy's ("vg2." or "vg1.") is refused.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite" // registers "sqlite"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

// version is what the proxy calls itself in MCP's implementation info.
const version = "v0.1.0"

func main() {
	tuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr) // "client": client.go
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	policy     string
	log        string
	db         string
	http       string
	httpCaller string
	httpConfig httpConfig // the -http server's bounds (http.go)
	caller     string
	approver   string
	upstream   []string
	// upstreamExit: when the upstream dies, exit 1 instead of restarting
	// it (-upstream-exit).
	upstreamExit bool
	// syncWhileRunning: run a decision's fsync beside its tool
	// (-sync-while-running, gatemcp.Options.SyncWhileRunning).
	syncWhileRunning bool
	listing          string        // -list: auto, all or callable
	sign             signConfig    // -sign-key, -checkpoint-every (sign.go)
	auth             authConfig    // -jwks, -issuer, -resource, … (auth.go)
	observe          observeConfig // -metrics, -decision-log, … (metrics.go)
	inbox            inboxConfig   // -approvals (inbox.go)
	pins             pinsConfig    // -pins, -pins-server (pins.go)
	state            stateConfig   // -state-key, -state-ttl (state.go)
	relay            relayConfig   // -roots, -sampling-tools, -elicit-url-origin, … (relay.go)
	spans            spansConfig   // -trace-spans (spans.go)
	shared           sharedConfig  // -replica (inbox_shared.go)
	gateway          gatewayConfig // -config, -require-all (gateway_serve.go)
}

const usage = `usage: verity-mcp -policy policy.json -log PATH [-db postgres://…|sqlite:PATH] [-http ADDR [-jwks FILE|URL -issuer ISS -resource URL [-scopes S]] [-http-caller KEY|-caller-per-session] [-insecure-no-auth]] [-approvals ADDR [-approvals-insecure-no-auth] [-replica NAME]] [-caller KEY] [-approver NAME] [-sign-key FILE [-checkpoint-every N]] [-metrics ADDR [-insecure-metrics]] [-list auto|all|callable] [-upstream-exit] [-sync-while-running] [-pins first-use|off|pins.json [-pins-server NAME]] [-trace-spans FILE] [-state-key FILE [-state-ttl D]] [-roots relay|off [-roots-wait D]] [-sampling-tools refuse|drop] [-elicit-url-origin ORIGIN]… -- command [args...]
       verity-mcp -config gateway.json -log PATH [-require-all] [the flags above but -policy, -pins, -pins-server, -upstream-exit]
       verity-mcp pin review|approve -inbox URL …
       verity-mcp client list|call TOOL ARGS … -- command [args...]   (try a server from the terminal: verity-mcp client -h)`

const exitHelp = `
exit status: 0 clean shutdown, 1 run-time failure (the log cannot be opened
or another proxy holds it, the upstream does not start, a database error,
the upstream exited under -upstream-exit; without it the upstream is
restarted with backoff),
2 configuration error (bad flag or argument, unreadable or invalid policy,
an -approver the policy does not expect, -db and shared_budget mismatched,
a -sign-key file that is malformed, unreadable or readable by others,
-http on a non-loopback address without -jwks or -insecure-no-auth,
-approvals on one without -jwks or -approvals-insecure-no-auth, a
-jwks that cannot be read or is malformed, a -pins lock file that cannot
be read, is malformed or tampered with, or does not name the upstream)

-http without -jwks serves anyone who reaches it: it binds loopback
addresses only (unless -insecure-no-auth) and charges every session to
one caller ("http", or -http-caller; -caller-per-session for one budget
per session). With -jwks, -issuer and -resource it requires OAuth bearer
tokens, and each token's principal (issuer and subject) is one caller.

A caller whose budget is spent is refused every call, told why and when
the budget comes back. Without the policy's budget_period it never does
(a restart resumes the spend from -log). With "budget_period":
{"calendar": "day"} (week, month; "time_zone": "Europe/Paris") the whole
budget comes back at the next period's start; with {"every": "24h"}
spend comes back as it leaves the 24-hour window. An approver may add to
it meanwhile: verity budget grant -inbox URL (POST /api/budget).

-approvals serves a page listing the calls that wait for a human, to
approve or deny them; it is authenticated as -http is (loopback only
without -jwks, unless -approvals-insecure-no-auth). Held calls wait up to
the policy's approval_timeout (5m when it has none); a client's own
request timeout must be longer (the TypeScript SDK's is 60s by default).
`

// parseArgs reads the command line; the upstream command follows "--".
func parseArgs(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("verity-mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, usage)
		fs.PrintDefaults()
		fmt.Fprint(stderr, exitHelp)
	}
	fs.StringVar(&c.policy, "policy", "", "the policy file (toolgate.LoadPolicy; see policy.schema.json)")
	fs.StringVar(&c.log, "log", "", "the trace log file, created when missing, resumed when present")
	fs.StringVar(&c.db, "db", "", "the database the replicas share (the policy's shared budget, rate windows, flow labels, first-use pins): postgres://… or sqlite:PATH")
	fs.StringVar(&c.http, "http", "", "also serve streamable HTTP at this address (host:port)")
	fs.StringVar(&c.httpCaller, "http-caller", "", "without -jwks, charge every streamable HTTP session to this one caller key (default \""+DefaultHTTPCaller+"\")")
	addHTTPFlags(fs, &c.httpConfig)
	addSignFlags(fs, &c.sign)
	addAuthFlags(fs, &c.auth)
	addObserveFlags(fs, &c.observe)
	addInboxFlags(fs, &c.inbox)
	addPinsFlags(fs, &c.pins)
	addStateFlags(fs, &c.state)
	addRelayFlags(fs, &c.relay)
	addSpansFlags(fs, &c.spans)
	addSharedApprovalFlags(fs, &c.shared)
	addGatewayFlags(fs, &c.gateway)
	fs.StringVar(&c.caller, "caller", "stdio", "the caller key the stdio client's calls are charged to")
	fs.StringVar(&c.approver, "approver", toolgate.DefaultApprover, "the approver name the client's human answers as")
	fs.BoolVar(&c.upstreamExit, "upstream-exit", false, "when the upstream exits, exit 1 instead of restarting it")
	fs.BoolVar(&c.syncWhileRunning, "sync-while-running", false, "run a decision's fsync while its tool runs, not before: one fsync less on a call's path; a machine crash during the tool may lose that call's decision and charge (never an answered call)")
	fs.StringVar(&c.listing, "list", "auto", "what tools/list shows: all (the upstream's list), callable (without the tools the caller may never call), or auto (callable when the policy refuses unknown tools)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if _, err := parseListing(c.listing); err != nil {
		return c, err
	}
	c.upstream = fs.Args()
	if err := c.gateway.check(&c); err != nil { // -config: the policy and the upstreams from a gateway file
		return c, err
	}
	switch {
	case c.policy == "":
		return c, errors.New("-policy is required")
	case c.log == "":
		return c, errors.New("-log is required")
	case len(c.upstream) == 0 && !c.gateway.enabled():
		return c, errors.New("no upstream command after --")
	case c.approver == "":
		return c, errors.New("-approver may not be empty")
	case c.httpCaller != "" && c.http == "":
		return c, errors.New("-http-caller needs -http")
	}
	if err := c.auth.check(c.http, c.httpCaller); err != nil {
		return c, err
	}
	if err := c.inbox.check(c.auth); err != nil {
		return c, err
	}
	if err := c.httpConfig.check(); err != nil {
		return c, err
	}
	if err := c.observe.check(); err != nil {
		return c, err
	}
	if err := c.pins.check(); err != nil {
		return c, err
	}
	if err := c.shared.check(c); err != nil {
		return c, err
	}
	if err := c.sign.check(fs); err != nil {
		return c, err
	}
	if c.db != "" {
		if _, err := parseDB(c.db); err != nil {
			return c, err
		}
	}
	return c, nil
}

// run is the command: it returns the exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "pin" {
		return runPin(ctx, args[1:], stdout, stderr) // pin_cli.go
	}
	c, err := parseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "verity-mcp: %v\n%s\n", err, usage)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	policy, compiled, err := loadPolicy(c.policy)
	if err == nil {
		policy, compiled, err = c.inbox.withDefaultTimeout(policy, compiled)
	}
	if err == nil {
		err = checkShared(c, policy)
	}
	if err == nil {
		err = c.sign.load()
	}
	if err == nil {
		err = c.pins.load(c.upstream)
	}
	if err == nil {
		err = c.state.load()
	}
	if err == nil {
		err = c.auth.load(ctx, c.http, logger)
	}
	if err != nil {
		fmt.Fprintf(stderr, "verity-mcp: %v\n%s\n", err, usage)
		return 2
	}
	var warnings []string
	if c.auth.enabled() {
		// With -jwks a session's human answers as the session's
		// authenticated principal (and approvers at -approvals as theirs):
		// the policy's approvers name principals and groups, which only a
		// token can show, so -approver names nobody.
		if c.approver != toolgate.DefaultApprover {
			warnings = append(warnings, fmt.Sprintf("-approver %q is not used with -jwks: each session's authenticated user answers as itself", c.approver))
		}
	} else {
		warnings, err = checkApprover(policy, c.approver, c.policy)
	}
	if err != nil {
		fmt.Fprintf(stderr, "verity-mcp: %v\n%s\n", err, usage)
		return 2
	}
	for _, w := range warnings {
		logger.Warn(w)
	}
	if err := serve(ctx, c, policy, compiled, stdin, stdout, stderr, logger); err != nil {
		logger.Error("verity-mcp failed", "err", err)
		return 1
	}
	return 0
}

// loadPolicy reads the policy file and compiles it for the gate.
func loadPolicy(path string) (toolgate.Policy, *toolgate.Compiled, error) {
	policy, err := toolgate.LoadPolicy(path)
	if err != nil {
		return toolgate.Policy{}, nil, err
	}
	// Rules may have conditions in Cedar ("when": {"language": "cedar"}).
	policy.Conditions = append(policy.Conditions, cedar.Language{})
	compiled, err := policy.Compile()
	if err != nil {
		return toolgate.Policy{}, nil, err
	}
	return policy, compiled, nil
}

// checkShared checks that -db is given exactly when the policy has a
// shared_budget.
func checkShared(c config, policy toolgate.Policy) error {
	switch {
	case c.db != "" && policy.Shared == nil && !c.inbox.enabled():
		return fmt.Errorf("-db names a database but %s has no shared_budget (and -approvals, whose requests it would share, is not given)", c.policy)
	case c.db == "" && policy.Shared != nil:
		return fmt.Errorf("%s has a shared_budget (%q): give its database with -db", c.policy, policy.Shared.ID)
	}
	return nil
}

// approvalTiers are the tiers whose calls need an approval.
var approvalTiers = []claims.RiskTier{claims.TierDelete, claims.TierPrivilege}

// checkApprover checks -approver against the approvers the policy expects
// for the tiers its rules use that need an approval (Policy.Approvers, or
// toolgate.DefaultApprover for both when the policy names none, as
// toolgate.New reads it): an approver of none of them is a usage error
// naming them, since the client's human could never approve a call. For
// each such tier it cannot approve, a warning says that its calls wait
// for their approvers, out of band.
func checkApprover(cfg toolgate.Policy, approver, policyPath string) (warnings []string, err error) {
	rules := cfg.Tools
	if cfg.AllowUnknown && cfg.DefaultRule != nil {
		rules = append(slices.Clone(rules), *cfg.DefaultRule)
	}
	used := map[claims.RiskTier]bool{}
	for _, r := range rules {
		used[r.Tier] = true
	}
	approvers := cfg.Approvers
	if approvers == nil {
		approvers = map[claims.RiskTier][]string{}
		for _, t := range approvalTiers {
			approvers[t] = []string{toolgate.DefaultApprover}
		}
	}
	var expected []string
	approves := false
	for _, t := range approvalTiers {
		if !used[t] {
			continue
		}
		names := approvers[t]
		if slices.Contains(names, approver) {
			approves = true
			continue
		}
		expected = append(expected, strings.Join(names, ", ")+" for "+string(t))
		warnings = append(warnings, fmt.Sprintf("-approver %q cannot approve %s calls (%s): they wait for approval out of band",
			approver, t, strings.Join(names, ", ")))
	}
	if len(expected) > 0 && !approves {
		return nil, fmt.Errorf("-approver %q approves no call of %s: it expects %s", approver, policyPath, strings.Join(expected, "; "))
	}
	return warnings, nil
}

// serve runs the proxy until the stdio client leaves (or, with -http,
// until ctx ends), then closes everything and reports the log's head.
func serve(ctx context.Context, c config, policy toolgate.Policy, compiled *toolgate.Compiled, stdin io.Reader, stdout, stderr io.Writer, logger *slog.Logger) (err error) {
	stopMetrics, err := c.observe.start(logger)
	if err != nil {
		return err
	}
	defer func() {
		if merr := stopMetrics(ctx); merr != nil && err == nil {
			err = merr
		}
	}()
	stopSpans, err := c.spans.start()
	if err != nil {
		return err
	}
	defer func() {
		if serr := stopSpans(ctx); serr != nil && err == nil {
			err = serr
		}
	}()
	opts := append(c.observe.gateOptions(logger), c.spans.gateOptions()...)
	if c.inbox.enabled() {
		opts = append(opts, toolgate.WithDurableApprovals())
	}
	if c.db != "" {
		dbOpts, closeDB, err := c.openDB(ctx, policy, logger)
		if err != nil {
			return err
		}
		defer closeDB()
		opts = append(opts, dbOpts...)
	}

	// Group commit: concurrent calls share fsyncs; every decision and
	// result is still durable before it is acted on or answered.
	store, err := trace.OpenFile(c.log, c.observe.fileOptions(trace.FileOptions{Sync: trace.SyncGroup}))
	if err != nil {
		return fmt.Errorf("opening the log: %w", err)
	}
	signed, err := c.sign.wrap(ctx, store, c.log)
	if err != nil {
		_ = store.Close()
		return fmt.Errorf("opening the log: %w", err)
	}
	log, err := trace.NewLog(signed)
	if err != nil {
		_ = signed.Close()
		return fmt.Errorf("opening the log: %w", err)
	}
	defer func() {
		head := log.Head()
		if cerr := log.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the log: %w", cerr)
		}
		logHead(logger, c.log, head)
		if c.sign.signer != nil {
			logger.Info("checkpoint", "path", checkpointPath(c.log), "origin", c.sign.signer.Name(), "entries", head.Size)
		}
	}()

	gate, err := toolgate.New(ctx, log, compiled, opts...)
	if err != nil {
		return err
	}
	if err := c.observe.watch(gate); err != nil {
		return err
	}
	if c.gateway.enabled() {
		return serveGateway(ctx, c, policy, gate, log, stdin, stdout, stderr, logger) // gateway_serve.go
	}

	// The upstream: a child process over stdio (mcp.CommandTransport),
	// served faithfully by a Proxy and restarted when it dies.
	proxy := gatemcp.NewProxy(logger)
	pins, err := c.pins.open(ctx, log, logger)
	if err != nil {
		return err
	}
	proxy.SetPins(pins)
	srv := sdk.NewServer(&sdk.Implementation{Name: "verity-mcp", Version: version},
		proxy.ServerOptions(serverOptions())) // both eras and the Tasks extension: state.go, eras.go
	start := func(ctx context.Context) (*sdk.ClientSession, error) {
		cmd := exec.Command(c.upstream[0], c.upstream[1:]...)
		cmd.Stderr = stderr
		client := proxy.Client(&sdk.Implementation{Name: "verity-mcp", Version: version})
		if err := proxy.ServeTasks(srv, client); err != nil { // the Tasks extension, relayed and policed (gatemcp tasks.go)
			return nil, err
		}
		up, err := client.Connect(ctx, proxy.Transport(&sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}), nil)
		if err != nil {
			return nil, fmt.Errorf("starting the upstream %q: %w", c.upstream[0], err)
		}
		if _, err := proxy.Attach(ctx, srv, up); err != nil {
			_ = up.Close()
			return nil, err
		}
		return up, nil
	}
	up, err := start(ctx)
	if err != nil {
		return err
	}
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	sup := newSupervisor(up, start, c.upstreamExit, logger, stopRun)
	go sup.run(runCtx)
	defer func() {
		if serr := sup.stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	names := proxy.Tools()

	listing, _ := parseListing(c.listing)
	inboxLn, inboxURL, err := c.inbox.listen()
	if err != nil {
		return err
	}
	guard, err := gatemcp.New(gate, gatemcp.Options{
		Inbox:    inboxURL,
		Approver: c.approver,
		Logger:   logger,
		Listed:   proxy.Listed,
		Pins:     pins,
		Listing:  listing,
		Hold:     c.inbox.enabled(),
		// -sync-while-running: the decision's fsync runs beside the tool.
		SyncWhileRunning: c.syncWhileRunning,
		StateKey:         c.state.key, // -state-key (state.go)
		StateTTL:         c.state.ttl,
		// An HTTP request is, with -jwks, the caller its token's
		// principal keys (issuer and subject), whatever its session or
		// era; without, the one caller -http-caller names (by default
		// DefaultHTTPCaller), or with -caller-per-session the one its
		// session id names. The one stdio connection is the caller
		// -caller names. (eras.go)
		Caller: c.callerOf,
		// Requests refused for their headers or a missing _meta version
		// are recorded on the log (gatelog.KindProtocol).
		Log: log,
	})
	if err != nil {
		return err
	}
	srv.AddReceivingMiddleware(guard.Middleware(), proxy.Middleware())
	if err := c.relay.apply(proxy, guard, srv, log, sup); err != nil { // relay.go
		return err
	}
	if n, err := guard.ResumeTasks(ctx); err != nil { // tasks open on the log (gatemcp tasks.go)
		logger.Error("tasks not all resumed", "tasks", n, "err", err)
	} else if n > 0 {
		logger.Info("tasks resumed", "tasks", n)
	}
	// Closing a session waits for its calls: a call held for the inbox
	// ends when the proxy stops (its request still waits, on the log).
	stopHolding := context.AfterFunc(ctx, guard.StopHolding)
	defer stopHolding()
	logger.Info("serving", "upstream", c.upstream[0], "tools", len(names), "names", names, "log", c.log,
		"sync_while_running", guard.SyncWhileRunning())

	return serveClients(ctx, runCtx, c, srv, &eraFront{params: proxy.ParamHeaders, guard: guard, callerKey: c.httpCallerKey},
		inboxLn, policy, gate, pins, stdin, stdout, logger)
}

// serveClients serves srv to its clients until runCtx ends: the inbox
// with -approvals (pins: the server whose re-pins its /pins page takes,
// nil for none), streamable HTTP with -http behind front (its header
// checks), and the stdio client; the inbox and the HTTP server are
// stopped when it returns.
func serveClients(ctx, runCtx context.Context, c config, srv *sdk.Server, front *eraFront, inboxLn net.Listener,
	policy toolgate.Policy, gate *toolgate.Gate, pins *gatemcp.Pins, stdin io.Reader, stdout io.Writer, logger *slog.Logger) (err error) {
	if c.inbox.enabled() {
		stopInbox, err := startInbox(c, inboxLn, policy, gate, pins, logger)
		if err != nil {
			return err
		}
		defer func() {
			if ierr := stopInbox(ctx); ierr != nil && err == nil {
				err = ierr
			}
		}()
	}
	if c.http != "" {
		stopHTTP, err := serveHTTP(c.http, srv, c.httpConfig, c.auth.protect, logger, front)
		if err != nil {
			return err
		}
		defer func() {
			if herr := stopHTTP(ctx); herr != nil && err == nil {
				err = herr
			}
		}()
	}

	t := &sdk.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if rerr := srv.Run(runCtx, t); rerr != nil && !errors.Is(rerr, context.Canceled) && !errors.Is(rerr, io.EOF) {
		logger.Warn("stdio session ended", "err", rerr)
	}
	if c.http != "" {
		<-runCtx.Done() // the HTTP clients are served until an interrupt
	}
	return nil
}

// logHead writes the log's head: its last entry's sequence number and
// hash.
func logHead(logger *slog.Logger, path string, h trace.Head) {
	if h.Size == 0 {
		logger.Info("log head", "log", path, "entries", 0)
		return
	}
	logger.Info("log head", "log", path, "seq", h.Size-1, "hash", h.Hash.String(), "head", h.String())
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
