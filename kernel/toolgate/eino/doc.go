// Package eino sends every tool call of a CloudWeGo eino agent through a
// Verity tool gate (kernel/toolgate): the budget that cannot be
// overspent, the invariants over call counters, the human approval of
// DELETE and PRIVILEGE calls, and the hash-chained log of every decision.
//
// It is a nested module, so that Verity's root module never imports a
// framework. It is written against github.com/cloudwego/eino v0.7.36.
//
// # Usage
//
// With an ADK agent, add the agent middleware:
//
//	agent, err := adk.NewChatModelAgent(ctx, &adk.ChatModelAgentConfig{
//		Name: "oncall", Description: "...", Model: chatModel,
//		ToolsConfig: adk.ToolsConfig{ToolsNodeConfig: compose.ToolsNodeConfig{Tools: tools}},
//		Middlewares: []adk.AgentMiddleware{eino.AgentMiddleware(gate)},
//	})
//	runner := adk.NewRunner(ctx, adk.RunnerConfig{Agent: agent, CheckPointStore: store})
//	events := runner.Query(eino.WithCaller(ctx, "alice"), "...", adk.WithCheckPointID(runID))
//
// With a ToolsNode of your own (a compose graph, a hand-written loop), add
// the tool middleware:
//
//	tn, err := compose.NewToolNode(ctx, &compose.ToolsNodeConfig{
//		Tools:               tools,
//		ToolCallMiddlewares: []compose.ToolMiddleware{eino.Middleware(gate)},
//	})
//
// # What happens to a call
//
// eino hands each tool call to the middleware as a compose.ToolInput
// (Name, Arguments, CallID). The middleware makes it a toolgate.Call —
// the tool's name, eino's tool-call id, the arguments as the tool will
// receive them, and the caller key — and asks the gate.
//
// An allowed call runs, and the gate records how it ended: the output,
// the error, and the cost the tool measured if it reported one with
// ReportCost (for rules with Reserve, which are settled at that cost).
// Streamed output is passed on chunk by chunk and recorded once the
// stream ends, before the reader sees the end.
//
// A refused call does not run. eino fails the whole run when a tool
// returns an error, so the refusal is returned as the tool's output
// instead: the model's next input holds it as the call's tool message,
// the gate's one line naming the rule and the condition that decided
// before the reason (Example prints it):
//
//	tool "read_file" (rule #0, kernel): action "read_file" rejected: budget: cost 1, remaining 0
//
// and the model can change course. A call the gate could not decide (its log
// failed) is refused the same way, with the error's text.
//
// A DELETE or PRIVILEGE call waits for a human through eino's
// interrupt and resume. The middleware interrupts the run with
// tool.StatefulInterrupt; the interrupt's Info is an *ApprovalInfo
// holding the question, and PendingApprovals finds them in an ADK
// event's Action.Interrupted.InterruptContexts or in
// compose.ExtractInterruptInfo's. Resume with the human's Answer as the
// resume data of the interrupt's id:
//
//	it, err := runner.ResumeWithParams(ctx, runID, &adk.ResumeParams{
//		Targets: map[string]any{p.InterruptID: eino.Approve("checked the path")},
//	})
//
// The middleware records the answer (Gate.Approve or Gate.Deny) and asks
// the gate again: an approved call runs, once — the approval is bound to
// the caller, the tool and the arguments, and used up by that run — and a
// denied call never runs; the model reads the denial. A resume without an
// answer leaves the call waiting and interrupts again, unless the request
// was decided through the gate meanwhile (an operator's console calling
// Gate.Approve, then Runner.Resume). The other calls of the same message
// are not run again: eino's ToolsNode keeps their outputs in the
// checkpoint.
//
// Identical calls of one message (one caller, tool and arguments) wait
// on one approval request, and each has its interrupt. The first answer
// recorded decides the request; a later one cannot be recorded
// (toolgate.ErrUnknownApproval). A late denial refuses its own call —
// "tool "delete_file" denied by human: ... (the answer came after its
// approval request was decided, and was not recorded)" — which never
// runs, nor takes the grant an approval gave the other call. A late
// approval records nothing: its call takes a grant the gate holds, is
// refused by a denial it holds, or waits on a new request.
//
// # Callers
//
// Each caller key has its own kernel session and budget in the gate. The
// key is found by CallerFrom: the context's (WithCaller), else the adk
// session value SessionCallerKey, which a Runner keeps in its
// checkpoints. WithCallerFunc chooses another. A call waiting for
// approval keeps its caller across the interrupt.
//
// Each call also carries a principal (toolgate.Call.Principal, which the
// policy's "principals" conditions read): the host's, put in the context
// with toolgate.WithPrincipal and found by PrincipalFrom
// (WithPrincipalFunc chooses another source). A call waiting for
// approval keeps its principal across the interrupt too.
//
// # Failures
//
// A tool's own error reaches eino unchanged, after the gate records it.
// A cost the tool reported that the gate cannot take (a negative one) is
// set aside: the call is recorded as unmeasured, settled at its
// reservation or charged its fixed cost, and the run ends with the
// toolgate.ErrInvalidResult. If the gate cannot record an allowed call's
// result, the output is withheld and the run ends with an
// *UnrecordedError: no output the log does not show reaches the model.
// When the gate could not settle the call, it keeps it open — the
// reservation held, or the fixed cost charged, so the budget errs toward
// spent — and the host closes it, once the log works again, with
// Gate.After(ctx, e.Call, e.Result). The middleware does not retry
// itself: a failure after a recorded refund would refund twice. A tool that interrupts the run itself
// (tool.Interrupt) ends its gated call; the resumed call is a new call
// through the gate.
//
// A call of a tool the ToolsNode does not have never reaches a tool, and
// eino does not pass it through tool middleware: the run fails, or
// ToolsNodeConfig.UnknownToolsHandler answers it unseen by the gate. A
// handler that does more than answer must be gated by its host.
//
// # Dependencies
//
// eino v0.7.36 requires github.com/bytedance/sonic v1.14.1, which does
// not build with Go 1.26; this module requires sonic v1.15.5.
package eino
