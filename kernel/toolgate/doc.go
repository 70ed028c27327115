// Package toolgate puts Verity's kernel between an agent and its tools.
// Every tool call an agent proposes goes through a Gate: Before decides
// it, the tool runs only when allowed, After settles and records how it
// ended. Every decision is on a trace.Log before the caller sees it.
//
// # Usage
//
//	g, err := toolgate.New(ctx, log, toolgate.Config{
//		Budget:  10 * kernel.Unit,
//		MinCost: kernel.Unit / 100,
//		Rules: []toolgate.Rule{
//			{Match: "read_*", Cost: kernel.Unit / 100},
//			{Match: "search", Cost: 2 * kernel.Unit, Reserve: true}, // priced afterwards
//			{Match: "delete_*", Cost: kernel.Unit, Tier: claims.TierDelete},
//		},
//		Invariants: []kernel.Invariant{kernel.AtMost("at-most-3-deletes", "calls/delete_file", 3)},
//	})
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
// the same without Go.
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
// of at most WithCallerLimit callers (DefaultCallerLimit, 4096) and lets go
// of a caller idle longer than WithIdleCallers (DefaultIdleCallers, 15
// minutes) or, over the limit, the least recently used idle ones first.
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
// kernel.Action.Input), its tags "call:"+id and, when a human approved it,
// "approval:"+the approval's id. The kernel's checks (budget, minimum
// cost and step limit, the user's invariants over the counters) decide;
// a rejection comes back as Refuse with kernel.Verdict.Explain's one line.
//
// # Order of the checks
//
// Before refuses a tool no rule matches (unless Config.AllowUnknown, which
// applies Config.DefaultRule), a call whose cost function fails, and a call
// id already running; a DELETE or PRIVILEGE call then needs an approval;
// then the kernel decides. A refusal's explanation is one line, whatever
// text went into it. Refusals the kernel does not make are recorded
// as KindRefuse entries (RefuseEntry); the kernel records its own
// executions and rejections.
//
// # Approvals
//
// A call whose rule's tier is claims.TierDelete or claims.TierPrivilege
// needs a human. Before evaluates a claims bundle for it — one DECISION
// claim of that tier naming the tool and the arguments' SHA-256 — which the
// claims gate chain escalates to the approvers Config.Approvers names
// (DefaultApprover for both tiers when nil), and returns AskApproval with
// the request. Its question shows the arguments in full, as compact JSON
// with invisible characters escaped, so that what the human approves is
// what runs: arguments that cannot be shown so — not one JSON value a
// reader would read one way (duplicate keys, invalid UTF-8), or longer
// than MaxShownArguments — are refused instead, and so is a call beyond
// Config.MaxWaiting requests of its caller already waiting. The host asks
// the human and records the answer with Approve
// or Deny (claims approvals, on the log), then calls Before again with the
// same call. An approval is bound to the caller, the tool and the
// arguments' digest, and is used once: the next Before of exactly that call
// executes, its tags naming the approval. A denial refuses the next Before
// of that call with the approver's reason; a call is asked about again
// after that. While a request waits, Before of the same call returns the
// same request.
//
// Waiting requests and approvals not yet used live in memory: after a
// restart the call is asked about again (fail closed). An approval not yet
// used does not expire; Deny withdraws a request nobody will answer.
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
// ResultTextLimit bytes, what was charged — is a KindResult entry
// (ResultEntry). With Rule.CheckResult or Config.CheckResults the output
// goes through the speculative firewall (speculative.Detect) and
// Outcome.Speculative says whether a host that stores tool output as
// evidence must not.
//
// # Concurrency
//
// A Gate is safe for concurrent use. Each caller's kernel session
// serialises its decisions (the kernel's atomic path), so concurrent calls
// never overspend and never fork the log; different callers share only the
// log.
package toolgate
