// Package toolgate puts Verity's kernel between an agent and its tools.
// Every tool call an agent proposes goes through a Gate: Before decides
// it, the tool runs only when allowed, After settles and records how it
// ended. Every decision is on a trace.Log before the caller sees it.
//
// # Usage
//
//	comp, err := toolgate.Policy{ // or toolgate.LoadPolicy("policy.json")
//		Budget:  10 * kernel.Unit,
//		MinCost: kernel.Unit / 100,
//		Tools: []toolgate.Rule{
//			{Match: "read_*", Cost: kernel.Unit / 100},
//			{Match: "search", Cost: 2 * kernel.Unit, Reserve: true}, // priced afterwards
//			{Match: "delete_*", Cost: kernel.Unit, Tier: claims.TierDelete},
//		},
//		GoInvariants: []kernel.Invariant{kernel.AtMost("at-most-3-deletes", "calls/delete_file", 3)},
//	}.Compile() // every problem at once, each at its JSON Pointer
//	g, err := toolgate.New(ctx, log, comp)
//
//	d, err := g.Before(ctx, toolgate.Call{Tool: name, ID: callID, Arguments: args, Caller: sessionKey})
//	switch d.Verdict {
//	case toolgate.Allow:
//		out, err := runTool(name, args)
//		g.After(ctx, d.Call, toolgate.Result{Output: out, Err: err})
//	case toolgate.Refuse:
//		// give d.Explanation to the model as the tool's result
//	case toolgate.AskApproval:
//		// ask the human d.Approval.Question, then g.Approve or g.Deny,
//		// then Before again with d.Call
//	}
//
// A policy file (ParsePolicy, LoadPolicy, policy.schema.json) configures
// the same without Go: it is read into the same Policy, and Policy.Compile
// is the one check of either, naming every problem at its JSON Pointer
// (a policy built in Go is checked by the file's rules). Two members are
// Go only and have no file form: a rule's CostFunc and GoInvariants.
// Each member of a policy is explained once, on its field of Policy or
// Rule (and the types they hold), with its file name in parentheses; the
// order in which a rule's members decide a call is in "A call's life"
// below.
//
// # What a call is
//
// A Call is a tool name, the framework's call id, the JSON arguments as
// sent and a caller key (an MCP session, an agent session, a tenant). Each
// caller has its own kernel session — its own budget B0, step limit and
// counters — named SessionPrefix + caller, started on its first call, or
// resumed with kernel.Replay when the log already holds it (a gate
// restarted over a durable log keeps every caller's spend). WithSharedBudget
// puts all of them under one budget held outside the process, so a fleet of
// gates on many machines spends at most that together.
//
// # Callers come and go; memory stays flat
//
// A caller's session keeps no record of past calls (kernel.WithHorizon(0):
// the gate never rolls back) — only its counters, its budget's totals and
// the ledger entries of its open calls, each held (kernel.WithHeldExecutions)
// from Before until After records how it ended. The gate keeps the sessions
// of at most WithCallerLimit callers (4096 by default) and lets go
// of a caller idle longer than WithIdleCallers (15 minutes by
// default) or, over the limit, the least recently used idle ones first.
// A caller with a call in flight or open, an approval request waiting for
// a human, or an approval or denial not yet used is never let go. A caller
// that returns after it was let go is resumed from the log with
// kernel.Replay, as after a restart: its spend counts exactly as recorded,
// its budget never resets. Resuming reads the log from its start, so it
// costs as much as a restart does for one caller; LiveCallers says how
// many are held and how many were let go. What grows with the number of
// distinct callers ever seen is one map entry each (which sessions are
// already on the log); the log store keeps its own index (trace.File: 8
// bytes an entry).
//
// Each allowed call is one kernel action: its id is the tool's name, its
// cost the rule's (Rule.Cost or Rule.CostFunc), its effects count the call
// in "calls" and "calls/"+tool (kernel.Count: nothing to declare), its
// input the arguments (recorded with their digest and size, see
// kernel.Action.Input), its tags "call:"+id, the rule's, labels' and
// windows' (see below) and, when a human approved it, "approval:"+the
// approval's id. The kernel's checks (budget, minimum
// cost and step limit, the user's invariants over the counters) decide;
// a rejection comes back as Refuse with kernel.Verdict.Explain's one line.
//
// # Three words
//
// The gate, the kernel and these pages use three words, each for one
// thing:
//
//   - a verdict is the answer to "may it run?": the gate's Verdict is
//     Allow, Refuse or AskApproval; the kernel's (kernel.Verdict) is its
//     answer for one action, with the checks behind it;
//   - a ruling is what the pure decision core says of a call (a Ruling,
//     from Compiled.Decide): a verdict, the rule and condition that
//     decided, the price; the same ruling for the same inputs, and
//     nothing written;
//   - a decision is what the gate answers the host for a call (a
//     Decision, from Before or Resume): the ruling carried through the
//     call's life — approvals, shared windows, the kernel — with the
//     final verdict, recorded on the log before it is returned.
//
// (The claims package's decisions — PUBLISH, ESCALATE, REFUSE — are its
// own gate's, about a bundle of claims; the gate uses them only to ask
// humans. A human's answer to an approval request is claims' word too,
// a claims.ApprovalDecision, approve or reject: the "decision" member of
// a gatelog.RefuseAnswer and of verity-mcp's inbox answers is that.)
//
// # The decision core
//
// Which rule applies to a call and what it decides is a pure function,
// Compiled.Decide: of the compiled rules (Policy.Compile),
// what the caller's session has seen (a Snapshot: the labels of its
// calls that ran, the times of its calls in each rate window), the call
// and its time. It returns a Ruling — the verdict, the rule and the
// condition that decided, the price, the tier, the windows the call
// counts in and the labels it carries — and changes nothing. A host with
// its own concurrency model can call Decide directly.
//
// # A call's life
//
// What happens around the ruling — a call id already open, a request
// made, waited on, answered, expired, an approval or a denial used, a
// call run, reported, closed, a caller let go and resumed — is one pure
// state machine per caller, in lifecycle.go: a caller's life (its
// Snapshot, open calls, waiting requests, approvals and denials not yet
// used, their expiries), the typed log entries that change it (kernel
// executions and reservations, gatelog.KindAsk, claims evaluations and
// approvals, gatelog.KindExpire, gatelog.KindRefuse, gatelog.KindResult), and the steps that say
// what to do next: arrive (a call with its Ruling and time: refuse,
// ask, wait, record an answer, or run), ended (how After settles or
// refunds), due (what expires at a time). The state changes only by
// applying what the log records. Gate is the shell: it reads the clock
// once per decision, locks the caller, steps, performs the effects
// (entries appended, the kernel session's execution or settlement, the
// claims session's evaluation or approval, the shared windows), applies
// the entries it wrote, unlocks, and waits for durability. A gate
// restarted over its log, or a caller resumed after it was let go,
// replays the caller's entries through the same apply functions, so
// restart is a replay of the same lifecycle
// (TestReplayYieldsTheLiveState, TestLifecycleMatchesModel). Two things
// are not on the log and do not survive a restart: a call allowed before
// it is no longer open (After reports ErrUnknownCall; its charge stands),
// and, without WithDurableApprovals, a waiting request (the call is
// asked about again).
//
// In order, for a call: the first rule whose match, principals, argument
// schema and path conditions all hold applies (none: see below);
// arguments that are not one JSON value every reader reads the same way
// (duplicate members, two members of one object whose names differ only
// in case, at any depth, invalid UTF-8, integers beyond 2^53), met by a
// rule that looks at them, and a path the gate cannot read one way
// (PathCondition) refuse the call at that rule — never passing it on to a
// later, more lenient one; a refusing rule (EffectRefuse) refuses with its
// reason; the rule's flow refuses, or asks a human, when given labels were
// seen in the caller's session; its rate window refuses a call beyond its
// limit; its price is computed; a DELETE or PRIVILEGE tier (the rule's or
// an asking flow's) needs an approval of exactly this call; a shared rate
// window (WithSharedWindows) must admit it; then the kernel decides
// (budget, minimum cost, step limit, invariants). A call id already
// running is refused.
//
// Rules are therefore first-match-wins lists: refusing rules with
// conditions placed first make deny-lists, allowing rules with
// conditions make allow-lists, and principals limit a rule to subjects,
// issuers, groups or scopes. Call.Principal is who the call is made for,
// as the host authenticated them; a call without a Caller is charged to
// Principal.Key().
//
// A call no rule applies to is refused, unless Policy.AllowUnknown
// applies Policy.DefaultRule to it, and the refusal says why: a tool no
// rule matches is "not in the gate's catalogue" (condition
// unknown_tool); a tool some rules match, none of which admits the call,
// is refused with condition no_rule, naming each such rule and the
// condition that did not hold for it (the allowing rules, or the
// refusing ones when no allowing rule matches; at most four):
//
//	tool "read_file": no rule admits the call: rule #0 "reads" (paths/0: "/etc/passwd" is not under /srv/data)
//
// Member names that differ only in case matter because Go's
// encoding/json matches names to struct fields case-insensitively, the
// last one winning: read_file {"path": "/srv/data/a", "Path":
// "/etc/passwd"} is checked by the gate as /srv/data/a and read by a Go
// tool as /etc/passwd. The reason names both members ("members \"Path\"
// and \"path\" differ only in case"). Such arguments are refused where
// they are read: by every rule that looks at them (an argument schema or
// a path condition, even one that would not apply), and by the approval
// question, which refuses rather than shows a human arguments that can
// be read two ways. A rule that looks only at the tool's name (and
// principals) does not refuse them, by design: it admits every value of
// the arguments, so every reading of them is one it admits, and
// decoding every call's arguments for it would make such rules pay for
// a check that cannot change their answer. The adapters do not read
// arguments themselves: verity-mcp and eino hand the gate the bytes the
// agent sent, ADK the map its framework decoded (case-sensitively, so
// "path" and "Path" stay two members) encoded again; the gate is where
// they are read.
//
// # Rate windows and labels, from the log
//
// A Rate is at most Calls calls of one caller in any window of length Per
// ending at the call's time, per tool or for the whole rule. A rule's
// Labels are attached to the caller's session by each call the rule
// allows, once the kernel has recorded it as executed (whether the tool
// then succeeds or not: a failed call may still have read what it read).
// Both are on the log — an execution's tags name its rule ("rule:#2" or
// "rule:"+name), each label ("label:private_data") and each window
// ("window:rule:#2|tool:read_file") — and the execution is recorded at the
// decision's time (or, when the log's last entry is later, at that
// entry's: a log's times never go back, trace.Log), and counted at its
// recorded time, so that a gate restarted over the log, or a caller
// resumed after it was let go, knows the same labels and windows and
// decides every later call as the gate before it would have.
//
// Labels end when the rule says so: with Rule.LabelTTL ("label_ttl", its
// tag "label_ttl:10m0s") a call's labels leave the session exactly that
// long after the call's recorded time, unless a later call attached them
// again; the end is computed from the recorded times, so replay agrees
// (TestLabelsExpireExactlyTTLAfterTheRecordedTime). An approver of the
// policy may clear a label sooner (Declassify: a gatelog.KindDeclassify
// entry naming who and why, applied again by replay), so that, say, a
// session whose untrusted input was reviewed may open a pull request. Flows make
// the toxic-flow defence deterministic and replayable: "refuse
// create_pull_request once untrusted_input and private_data were both
// seen" is a flow on the pull-request rule. Windows shared by several
// gates live outside the process (RateWindows, kernel/sqlbudget), under
// SharedWindowKey; so do labels (WithSharedLabels: a replica records the
// labels it read and did not carry, gatelog.KindSharedLabels, before the
// decision that relied on them, so that its own log replays alone).
//
// # Budgets that renew
//
// By default a caller's budget is for its whole life on the log: spent,
// every later call is refused, across restarts. Policy.BudgetPeriod
// ("budget_period") makes it renew, by calendar period in a time zone
// ({"calendar": "month", "time_zone": "Europe/Paris"}) or as a rolling
// window ({"every": "24h"}): what the calls decided within one period
// (within any window of that length) were charged — reservations at
// their upper bound until settled, less refunds — never exceeds Budget,
// nor their number Budget/MinCost, plus what approvers granted for that
// period. Each caller's life keeps a ledger of the spend still counted,
// checked before the kernel runs a call (a refusal is a gatelog.KindRefuse
// with reason "budget" or "step_limit", saying when the budget comes
// back) and rebuilt, on a restart or a caller's return, from the times
// and amounts the log recorded: executions, reservations, settlements,
// refunds and gatelog.KindBudget entries. The caller's kernel session
// (its id followed by "#renewing") then records every charge under a
// budget that never binds. Gate.Grant records an approver's grant or
// reset; Budgets reads every caller's period from a log, as `verity
// budget show` prints it. A shared budget with a calendar Period
// (SharedBudgetSpec) charges each call to the row of the period its
// recorded time falls in (kernel/sqlbudget's SharedBudget.ForPeriod),
// the same row for every replica. The ledger holds one entry (about 64
// bytes) per call its period still counts: a caller that makes a million
// calls within one period holds some 64 MB until they leave it.
//
// # Attribution
//
// Every Decision names the rule that decided (Decision.Rule: its index and
// name) and the condition (Decision.Condition: "match", "effect",
// "paths/0", "flow/1", "rate", "tier", "approval", "kernel",
// "unknown_tool", "no_rule", …). Its explanation says the same in one line —
// tool "open_pr" (rule #5 "pr", flow/0): private data after untrusted input
// — and so does its log entry: a gatelog.KindRefuse entry (gatelog.Refuse) has rule,
// rule_name and condition members; a kernel execution or rejection carries
// the rule's tag. Explanations are one line whatever text went into them:
// control characters and the line and paragraph separators U+2028 and
// U+2029 become spaces (OneLine, and kernel.Verdict.Explain).
//
// # Approvals
//
// A call whose rule's tier is claims.TierDelete or claims.TierPrivilege
// needs a human. Before evaluates a claims bundle for it — one DECISION
// claim of that tier naming the tool and the arguments' SHA-256 — which the
// claims gate chain escalates to the approvers Policy.Approvers names
// (DefaultApprover for both tiers when nil), and returns AskApproval with
// the request. Every approver named for the tier must approve before the
// call runs, and one denial refuses it; one principal is one approver,
// even when the policy names it both by key and through a group. Its question shows the arguments in full, as compact JSON
// with invisible characters escaped, so that what the human approves is
// what runs: arguments that cannot be shown so — not one JSON value a
// reader would read one way (duplicate keys, names that differ only in
// case, invalid UTF-8), or longer than 4096 bytes — are refused
// instead, and so is a call beyond
// Policy.MaxWaiting requests of its caller already waiting. The host asks
// the human and records the answer with Approve
// or Deny (claims approvals, on the log), then calls Before again with the
// same call. An approval is bound to the caller, the tool, the
// arguments' digest and the tier it was asked at, and is used once: the
// next Before of exactly that call executes, its tags naming the approval
// (a call that now needs another tier, a flow asking, is asked about
// again). A denial refuses the next Before
// of that call with the approver's reason; a call is asked about again
// after that. While a request waits, Before of the same call returns the
// same request.
//
// Approvers may be named by group: "group:security" in Policy.Approvers
// (or the policy's approvers) is answered by any principal of that group
// through ApproveAs or DenyAs, recorded under the group's name with who
// answered. A tier that names one group k times ({"group": "ops",
// "count": 2} in a file) waits for k distinct members: each approval is a
// claims approval of its own (under "group:ops#1" … "#k"), one principal
// counts once, the self-approval rule applies to each, a denial by any
// member denies, and the call runs once the k-th is recorded
// (TestKOfNNeverRunsWithFewerThanKDistinctNonSelfApprovers).
//
// Nobody is asked about a call the kernel would refuse now: before a
// request is made, the kernel evaluates the call without charging or
// recording anything (kernel.Session.Evaluate: budget, step limit,
// invariants), and a call it rejects is refused (condition "kernel",
// "nobody was asked to approve it"). A call that runs on its approval is
// checked again, exactly, by the kernel's execution: spend may have
// changed meanwhile.
//
// A PRIVILEGE call cannot be approved by the principal it was made for
// (ApprovalRequest.Principal, or its caller key): not by its key, not for
// a group it belongs to, not through an approver name equal to its key
// (ErrSelfApproval). Another approver must answer, unless
// Policy.SelfApproval (the policy's "self_approval": true) allows it.
// Denying one's own call, and approving one's own DELETE call, are
// allowed. Every answer the gate refuses — self-approval, a principal who
// is not an approver or answered already, a request decided already or
// never asked — is recorded as a gatelog.KindRefuseAnswer entry
// (gatelog.RefuseAnswer) and changes nothing.
//
// This section and the next two are the one account of approvals; the
// adapters' docs say only how their framework asks and answers, and
// verity-mcp's "Approval inbox" how its page does.
//
// # Only the questions the gate asked wait
//
// A request enters Pending only when Before decides that a call needs a
// human. A framework that brings a call back with a human's answer (ADK's
// tool confirmation, eino's resume, an MCP elicitation result or retry)
// hands both to Resume, with the id of the request it put to the human,
// instead of calling Before: Resume never makes a request, and counts the
// answer only for a request the gate made and still waits on, for
// exactly that call — caller, tool, arguments and tier. A forged answer
// (no question, or an unknown one), a replayed one (the request was
// answered and used), one brought back with other arguments than those
// asked about, or one the approver may not give, is recorded
// (gatelog.KindRefuseAnswer), refuses the call it came with
// (Decision.Condition gatelog.ConditionAnswer), and neither makes, decides nor
// cancels a request: the question the gate did ask stays waiting and
// answerable (TestOnlyQuestionsTheGateAskedWait,
// TestForgedAnswerLeavesTheQuestionAnswerable). The adapters in
// kernel/toolgate/adk, eino and mcp all resume through it.
//
// Waiting requests and approvals not yet used live in memory: after a
// restart the call is asked about again (fail closed), unless the gate
// was made WithDurableApprovals: then each request is recorded as it was
// asked (gatelog.KindAsk: its question and arguments as shown), and a gate
// restarted over the same log restores from it every request that was
// neither used nor expired — waiting ones in Pending, with the approvals
// already given, and approvals or denials for the next Before of their
// call. Without Policy.ApprovalTTL (policy "approval_ttl") a request and
// an approval not yet used never expire, and Deny withdraws a request
// nobody will answer; with it they expire that long after the request
// was asked, each recorded as a gatelog.KindExpire entry (Before expires what it
// meets, ExpireApprovals sweeps the rest), and the call is asked about
// again.
//
// A host whose humans answer elsewhere than where the call was made (an
// approval inbox: a page listing Pending, answering with ApproveAs and
// DenyAs) holds the call: Await returns once the request is decided, and
// after Policy.ApprovalTimeout (policy "approval_timeout") Unanswered
// refuses the call, recorded as a gatelog.KindRefuse entry with the reason
// "approval_timeout" and the request's id. The request itself still
// waits: an approval given later is used by the next Before of the same
// call.
//
// # After
//
// After finds the call by (Caller, ID). A reserved call (Rule.Reserve,
// charged its upper bound by kernel.Session.Reserve) is settled at the
// measured cost, or at the reservation when none was measured; a
// measured cost above the reservation is charged up to what remains and the
// rest is Unpaid (kernel.ErrOverrun), so net spend never exceeds B0 (T1). A
// fixed-cost call measured below its cost is refunded the difference; a
// failed call under RefundOnError is refunded in full, and still counted.
// The outcome — ok or the error, the output's SHA-256, size and first
// ResultTextLimit bytes, what was charged — is a gatelog.KindResult entry
// (gatelog.Result). With Rule.CheckResult or Policy.CheckResults the output
// goes through the speculative firewall (speculative.Detect) and
// Outcome.Speculative says whether a host that stores tool output as
// evidence must not.
//
// Rule.Timeout and Rule.CostFrom are for the host that runs the tools;
// the gate only keeps them (Compiled.RuleOf applies Policy.Timeout).
// Compiled.MayCall (of Gate.Compiled) tells a host which tools to list to
// a principal: those some call of may be allowed.
//
// # Durability: what a crash can lose
//
// Before returns a decision only once its log entries are durable, and
// After returns an outcome only once the settlement or refund and the
// result entry are: nothing the gate acknowledged is lost by any crash,
// and the decision to run a tool is on disk before the host can run it.
// Over a trace.File with SyncGroup (group commit, what verity-mcp opens)
// the gate takes each decision under the caller's locks, writes it there
// and waits for the fsync after releasing them (trace.DeferDurability),
// so concurrent calls, of one caller or of many, share fsyncs: a lone
// call pays one fsync for its decision and one for its result, n calls in
// flight about two per burst between them. After shares one fsync among
// its settlement and its result.
//
// What a crash may lose is what nobody was told: a decision written but
// not yet durable (its Before had not returned, so its tool had not run)
// and a result not yet durable (the host ran the tool, but its After had
// not returned). The log then ends with the call's execution and no
// result: the call stays charged in full (a reservation at its upper
// bound), the direction that never overspends, and a gate restarted over
// the log resumes the caller with that spend. A crash of the process
// alone loses nothing written (TestKilledGateKeepsEveryAcknowledgedCall:
// real processes, SIGKILL): only a machine crash loses unsynced
// bytes, always a suffix of the log (see trace's package documentation).
// If the fsync fails, Before and After return an error (the store is then
// broken, trace.ErrBroken, and refuses every later append until the log
// is reopened): the host must not run the tool.
//
// A host must answer a call only once After has returned: the MCP Guard
// answers a call whose result the log could not make durable with an
// error saying that the tool ran (TestResultNotDurableIsNotAnswered), so
// a client never reads a result a crash could lose.
//
// BeforeWritten trades that order for latency: it returns an allowed
// decision once written, with a wait for its fsync, so the host runs the
// tool while the fsync runs and a lone call's critical path holds one
// fsync, not two. Nothing acknowledged is lost still (the host answers
// only after the wait and After), but a machine crash during the tool
// may lose the decision, charge and rate-window count of a tool that
// ran, so that the budget reads as if the call had not been made; a
// crash of the process alone still loses nothing, the decision being
// written before the tool starts. The MCP Guard's SyncWhileRunning
// option (verity-mcp -sync-while-running) uses it, off by default: a
// tool that ends within 10 ms has its decision made durable by its
// result's fsync, one fsync a call in all; a slower tool's decision gets
// an fsync of its own at 10 ms, so the window in which a crash can lose
// it is the tool's first 10 ms or, for a tool that ends sooner, until
// its result is durable.
//
// This section is the one account of what a crash can lose through the
// gate; the log's own guarantee beneath it (what an fsync covers, a torn
// final record) is trace's "Durability and group commit", and what it
// costs is measured by kernel/toolgate/mcp's BenchmarkDurableGate.
//
// # Concurrency
//
// A Gate is safe for concurrent use. Each caller's kernel session
// serialises its decisions (the kernel's atomic path), so concurrent calls
// never overspend and never fork the log; different callers share only the
// log.
//
// # Observing the gate
//
// WithObserver has the gate tell an Observer of every decision
// (DecisionEvent: the Decision or Before's error, how long Before took,
// the caller's budget after it) and every outcome (OutcomeEvent: the
// Outcome, the allow that opened the call, when the tool started and
// ended as the gate saw it, the budget after it), on the caller's
// goroutine once the entry is on the log. LogObserver writes one
// log/slog line for each; the nested module kernel/toolgate/otel records
// OpenTelemetry spans (the GenAI "execute_tool" span) and metrics from
// the same events, for every adapter alike. Without an Observer the gate
// reads no clock for it and makes no event: the call costs what it did.
package toolgate
