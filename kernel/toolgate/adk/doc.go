// Package adk puts Verity's tool gate (kernel/toolgate) in front of the
// tools of agents built with Google's Agent Development Kit for Go
// (google.golang.org/adk/v2). It is a nested module, so that the root
// module never depends on ADK.
//
// # Usage
//
//	comp, err := toolgate.Policy{ // or toolgate.LoadPolicy("policy.json")
//		Budget:  10 * kernel.Unit,
//		MinCost: kernel.Unit / 100,
//		Tools: []toolgate.Rule{
//			{Match: "read_*", Cost: kernel.Unit / 10},
//			{Match: "delete_file", Cost: kernel.Unit, Tier: claims.TierDelete},
//			{Match: "transfer_to_agent", Cost: kernel.Unit / 100},
//		},
//	}.Compile()
//	gate, err := toolgate.New(ctx, log, comp)
//	guard, err := adk.New(gate)
//
//	// Either on one agent (llmagent.Config.BeforeToolCallbacks and
//	// AfterToolCallbacks, the guard's first):
//	cfg := llmagent.Config{Name: "assistant", Model: m, Tools: tools}
//	guard.Install(&cfg)
//
//	// or on every agent a runner runs (runner.Config.PluginConfig), the
//	// form ADK's documentation recommends for security policies:
//	p, err := guard.Plugin()
//	r, err := runner.New(runner.Config{..., PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
//
// Every tool ADK calls through llmagent's flow is then decided by the
// gate, the agent's own tools and the framework's (transfer_to_agent
// too: give it a rule, or the gate refuses it as unknown).
//
// # What the model sees
//
// An allowed call runs as usual and its result goes to the model
// unchanged; AfterTool reports it to the gate (the result map's JSON as
// the output, the tool's error as the failure), which records it and
// settles what the call cost. A refused call never runs: its result is
// {"error": explanation}, the gate's one line, which names the rule and
// the condition that decided before the reason (Example prints it):
//
//	tool "send" (rule #0, kernel): action "send" rejected: budget: cost 3, remaining 2
//
// The model reads it in its next request like any tool error. The
// refusal is a result rather than an error so that ADK's OnToolError
// callbacks, meant for tools that failed, do not take it for one (see
// BeforeTool).
//
// # Approvals
//
// A DELETE or PRIVILEGE call waits for a human through ADK's own
// confirmation flow: the guard calls ctx.RequestConfirmation with the
// gate's question, ADK emits an adk_request_confirmation function call
// and ends the turn. The client answers with a FunctionResponse for it,
// {"confirmed": true} or {"confirmed": false}; ADK calls the tool again
// with the same function call id and the confirmation on its context,
// and the guard records the answer as the claims approval (Gate.Approve
// or Gate.Deny; the approver is toolgate.DefaultApprover unless
// WithApprover says otherwise). A confirmed call runs, once: the same
// call later asks again. A rejected call is refused with the human's
// denial and never runs.
//
// ADK resumes a call with any answer to any adk_request_confirmation
// call in the session, including one the model wrote itself with a
// harmless hint, naming any call id and arguments. So the guard hands a
// resumed call to the gate's Resume (see toolgate's "Only the questions
// the gate asked wait") with the request it showed for that call id: the
// answer counts only while the gate waits on that request, and only for
// exactly the arguments asked about, once. A forged request, one over
// other arguments than those asked about (the question about
// delete_file /tmp/ok, a forgery for the same call id over /etc/passwd),
// an answer sent twice, or one that comes back after a restart runs
// nothing, is recorded (gatelog.KindRefuseAnswer), makes no request and
// cancels none: the question the guard put still waits in Gate.Pending
// and its answer still counts (TestForgedConfirmationNeverRuns,
// TestForgedConfirmationOverAskedCall, TestConfirmationReplayRunsOnce,
// TestConfirmationAfterRestart, TestOnlyQuestionsTheGateAskedWait). The
// model reads that the confirmation answers no question asked; making the
// call again asks the human the gate's question. (A request made while
// ADK resumes a call is never shown to the user, so the guard does not
// ask there.) The approver recorded is WithApprover's name; for a
// PRIVILEGE call, a name that is the call's own principal's key is a
// self-approval the gate refuses unless the policy allows it
// (TestPrivilegeSelfConfirmationRefused).
//
// ADK puts one question per call to the user. When the gate names
// several approvers (Policy.Approvers), the confirmation records one
// approval, the model reads that the call waits for the others, who
// approve through the gate (Gate.Pending, Gate.Approve), and the call
// runs when the model makes it again. A tool that asks for its own
// confirmation (functiontool's RequireConfirmation) is charged only for
// the run that follows the answer.
//
// # Callers, concurrency, telemetry
//
// Each ADK session (app, user and session id: SessionCaller) is one
// caller of the gate, with its own kernel session and budget; WithCaller
// chooses another key. Each call carries a principal (SessionPrincipal:
// the host's toolgate.WithPrincipal from the run's context, else the ADK
// app and user), which the policy's "principals" conditions read;
// WithPrincipal chooses another. ADK runs the function calls of one model turn
// concurrently, one goroutine each; the gate decides each caller's calls
// one at a time on one log, so they never overspend the budget (T1) and
// the log never forks (TestConcurrentToolCallsNeverOverspend drives
// that through the real runner).
//
// ADK opens an OpenTelemetry span for each tool call ("execute_tool
// <name>") before the callbacks run; the guard puts the gate's verdict,
// the execution id, the decision's trace sequence number and, after the
// call, the result entry's sequence number and the charge on it
// (AttrVerdict, AttrExecID, AttrSeq, AttrResultSeq, AttrCharged). With no
// tracer provider installed these are no-ops. For the rest — the rule,
// the principal, the remaining budget, and the gate's metrics — give the
// gate the Observer of kernel/toolgate/otel with AnnotateSpan set: it
// writes the same verity.* keys on this same span.
//
// # What it does not cover
//
// Streaming tools (toolinternal.StreamingFunctionTool) and live
// sessions' stop_streaming are run by ADK without tool callbacks, so
// without the gate; so are tools run outside llmagent's flow.
//
// An agent wrapped by agenttool runs in a runner agenttool builds, with
// no plugins: the runner plugin does not guard it. Install the guard on
// every llmagent an agenttool wraps (TestAgentToolGuardedByInstall;
// TestPluginAloneMissesAgentTool shows the gap).
//
// A plugin whose after-tool callback returns a result makes ADK skip the
// later plugins' and the agent's after callbacks, the guard's among them.
// The plugin form's AfterRun then reports every call still open when the
// run ends as failed ("result never reported"), settled at its
// reservation (TestAfterRunSettlesStarvedCalls); a guard installed only
// on agents has no such hook and leaves the call open, so add the plugin
// too. A call whose after callbacks never run for another reason (a tool
// that panics) stays open in the gate.
//
// Waiting approvals, and the guard's record of the questions it put,
// live in memory: after a restart, a confirmation that comes back answers
// nothing and the call is asked again (fail closed).
package adk
