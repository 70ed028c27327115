// Package scenario reads and runs the cases files of `verity policy
// test`: what a policy is expected to decide, one call at a time, and
// what a Gate running it is expected to do over a call's whole life —
// asked, answered, expired, run, settled, restarted — with the entries
// each event appends to the log. The same files are the tests of the
// gate's lifecycle (testdata/scenarios) and the tests a user writes for a
// policy.
//
// # Usage
//
//	policy, err := toolgate.LoadPolicy("policy.json")
//	…
//	cases, err := scenario.Load("policy.cases.json") // *toolgate.ValidationError, every problem
//	…
//	r, err := scenario.NewRunner(policy)
//	…
//	for _, c := range cases {
//		res := r.Run(ctx, c)
//		for _, f := range res.Failures {
//			fmt.Println(c.Name(), f.Where(), strings.Join(f.Problems, "; "), f.Got)
//		}
//	}
//
// # A cases file
//
// A cases file is one JSON object, {"cases": [...]} (and, for editors, an
// optional "$schema"). A case without "steps" is one call, decided by the
// policy's decision core (toolgate.Compiled.Decide) for a caller whose
// session already holds "labels" and the calls of "before" (in order, one
// second apart, each allowed one adding its labels and rate windows as the
// gate would), at "at" (RFC 3339; 2026-01-01T12:00:00Z when absent):
//
//	{"name": "a write needs the owner's approval",
//	 "tool": "write_file", "arguments": {"path": "/srv/notes/a.md"},
//	 "principal": {"issuer": "idp", "subject": "alice", "groups": ["eng"], "scopes": ["fs:write"]},
//	 "labels": ["untrusted_input"],
//	 "before": [{"tool": "read_text_file", "arguments": {"path": "/srv/notes/b.md"}}],
//	 "expect": "ask_approval", "rule": "writes", "condition": "tier"}
//
// expect is the verdict (allow, refuse, ask_approval); rule (the rule's
// name, "#index", "default" or "none"), condition, reason (the refusal's
// code) and explanation (a substring of the one-line explanation) are
// checked when given. Such a case never touches a gate or a log.
//
// # Scenarios
//
// A case with "steps" is a scenario: its steps are played, in order, on
// a toolgate.Gate built from the policy over a fresh memory log. The
// gate's clock is a fake one that starts at "start" (2026-01-01T12:00:00Z
// when absent) and moves only when a step says so; its ids are id-1,
// id-2, … in the order the gate asks for them (call ids not given,
// approval requests, kernel executions), across restarts. So the entries
// a scenario expects are the same at every run. A scenario's settings are
// the gate's options: "durable_approvals" (toolgate.WithDurableApprovals),
// "caller_limit" (WithCallerLimit) and "idle_callers" (WithIdleCallers, a
// Go duration). A policy's shared budget is not used: every scenario runs
// alone.
//
// A step is one event, and may have a "name" by which later steps refer
// to it:
//
//   - "call": {"tool", "arguments", "id", "caller", "principal"} — Before.
//     Without a caller the call is charged to the principal's key, as the
//     gate does; without an id the gate gives it one. "arguments_text"
//     instead of "arguments" gives them as sent, in a string: arguments
//     a strict file cannot hold, a member twice say (a single-call case
//     and its before calls take it too).
//   - "resume": {"call": {…}, "request" or "request_id", "answer":
//     {"approved", "approver" or "by", "reason"}} — Resume: the call
//     brought back with the id of the request put to the human and the
//     human's answer. request names the step whose decision asked;
//     request_id gives an id as it is, for an answer to no question.
//   - "approve", "deny": {"request" or "request_id", "approver" or "by",
//     "reason"} — Approve or Deny by an approver's name ("human" when
//     none is given), ApproveAs or DenyAs by a principal (by), not both.
//   - "advance": "10m" — the clock moves on (a Go duration, positive).
//   - "expire": {} — ExpireApprovals.
//   - "unanswered": {"call": step, "waited": "5m"} — Unanswered for the
//     decision of the step named.
//   - "result": {"call": step, "output", "error", "cost"} — After for the
//     call of the step named: the tool returned output, or failed with
//     error; cost is the measured cost (a decimal string), absent when
//     none was measured.
//   - "declassify": {"caller", "label", "approver" or "by", "reason"} —
//     Declassify: an approver clears a label from the caller's session.
//   - "restart": {} — a new Gate, over a new trace.Log on the same store:
//     the process restarted, and the gate reads back from the log what it
//     knows (spend, rate windows, labels, durable approvals).
//
// # Expectations
//
// A step's "expect" says what it must do; only what is given is checked.
//
//   - Of a decision (call, resume, unanswered): "verdict", "rule",
//     "condition", "explanation" as for one call, and "request": the
//     step asks with the same request as the step named.
//   - "reason": the reason member of the toolgate.refuse or
//     toolgate.refuse_answer entry the step appended ("" when none):
//     denied, duplicate_call, rate, flow, unasked, self_approval, ….
//   - "approved" (approve): whether the call may now run.
//   - "error": the step failed with an error containing this text. A
//     step that fails without it fails the case. An overrun is no error
//     here: its outcome says it (unpaid).
//   - "charged", "unpaid" (result): the outcome, as decimal strings.
//   - "expired" (expire): how many requests and answers expired.
//   - "waiting": the requests waiting for a human after the step.
//   - "budget": the budget left, after the step, to the step's caller, or
//     to "caller" when given.
//   - "callers": {"live", "evicted"}: LiveCallers after the step.
//   - "entries": every entry the step appended, in order — as many as
//     listed, each of the kind its "kind" names, and each other member
//     given equal to the payload's: an object's members are matched the
//     same way (those given only), any other value as canonical JSON.
//     [] says the step appended nothing. Within a string of an expected
//     entry, {request STEP} stands for the id of the request the step
//     named asked, and {call STEP} for the id of its call: a file that
//     names ids so does not depend on the order the gate takes them in
//     ("approval:{request ask}").
//
// # Reading
//
// Parse and Load read a file as strict JSON, as every Verity file is
// read (REFERENCE.md, "One way to read JSON"). Then what types cannot
// say is checked: a verdict
// spelled exactly, times, durations and costs that parse, one event a
// step, a case that is one call or a scenario and not both, step names
// used once and referring to an earlier call or resume step. A file is
// refused with every problem it has, as a *toolgate.ValidationError
// wrapping ErrInvalid, each violation at its JSON Pointer with its rule.
// No input makes Parse panic (FuzzParseScenarios).
//
// # The gate's lifecycle, in files
//
// testdata/scenarios holds the gate's lifecycle as scenarios, one
// behaviour a file, all run against testdata/policy.json by
// TestScenarioFiles: ask, approve and run once (approve.json); deny, then
// ask again (deny.json); expiry by sweep and when a call meets it
// (expiry.json); a call id already open (duplicate_call_id.json); rate
// windows and labels read back after a restart (rate_restart.json,
// flow_restart.json); durable approvals across a restart, and without
// them fail-closed (durable_approval.json); a forged, a misdirected and a
// replayed answer through Resume (forged_answer.json); reservations
// settled, refunded and overrun (overrun.json); a held call nobody
// answers (unanswered.json); callers let go and resumed (eviction.json);
// group approvers and self-approval (approvers.json); arguments that
// cannot be read one way (arguments.json). Each expectation bites:
// TestScenarioFilesCanFail changes every one of them in turn and requires
// the run to fail at its step, and TestScenarioFilesPinTheGate fails
// every file with a policy that behaves otherwise.
//
// # What it does not cover
//
// A scenario runs one gate in one goroutine: it says nothing of
// concurrent calls, of shared budgets and windows held outside the
// process, of durability over a file log or of a crash between an entry
// and its fsync (see kernel/toolgate's own tests for those).
package scenario
