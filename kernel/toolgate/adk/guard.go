package adk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// PluginName is the name of the runner plugin Plugin returns. ADK refuses
// two plugins of one name in a runner.
const PluginName = "verity_toolgate"

// The attributes the guard sets on the span ADK opens for each tool call
// ("execute_tool <name>", started by telemetry.StartExecuteToolSpan in
// internal/llminternal/base_flow.go's handleFunctionCalls before the
// callbacks run).
const (
	// AttrVerdict is the gate's verdict: "allow", "refuse" or
	// "ask_approval".
	AttrVerdict = attribute.Key("verity.toolgate.verdict")
	// AttrCaller is the caller key the call was decided under.
	AttrCaller = attribute.Key("verity.toolgate.caller")
	// AttrExecID is the kernel execution id of an allowed call.
	AttrExecID = attribute.Key("verity.toolgate.exec_id")
	// AttrSeq is the sequence number of the trace entry that recorded the
	// decision.
	AttrSeq = attribute.Key("verity.trace.seq")
	// AttrApprovalID names the approval an allowed call used, or the
	// request a call waits on.
	AttrApprovalID = attribute.Key("verity.toolgate.approval_id")
	// AttrExplanation is the line a refused call's model reads.
	AttrExplanation = attribute.Key("verity.toolgate.explanation")
	// AttrResultSeq is the sequence number of the toolgate.result entry
	// that recorded how an allowed call ended.
	AttrResultSeq = attribute.Key("verity.toolgate.result_seq")
	// AttrCharged is what the call cost in the end, in thousandths of a
	// unit (kernel.Cost).
	AttrCharged = attribute.Key("verity.toolgate.charged")
)

// Guard sends every tool call of an ADK agent through a toolgate.Gate.
// Install its two callbacks on an agent (Install, or BeforeTool and
// AfterTool by hand), or its Plugin on a runner to guard every agent the
// runner runs. A Guard is safe for concurrent use: ADK runs the calls of
// one model turn on one goroutine each.
type Guard struct {
	gate      *toolgate.Gate
	caller    func(agent.ReadonlyContext) string
	principal func(agent.ReadonlyContext) toolgate.Principal
	approver  func(agent.Context, toolgate.ApprovalRequest) string
	measure   func(agent.Context, tool.Tool, map[string]any, map[string]any, error) (kernel.Cost, bool)
	onError   func(agent.Context, toolgate.Call, error)

	mu    sync.Mutex
	open  map[openKey]openCall                 // allowed calls whose result is not reported yet
	asked map[openKey]toolgate.ApprovalRequest // the request each confirmation the guard requested showed, by (caller, function call id)
}

type openKey struct{ caller, id string }

type openCall struct {
	call    toolgate.Call
	actions *session.EventActions // identifies the one tool invocation
	run     runKey                // the runner invocation the call belongs to
}

// runKey names one runner invocation: the session it runs in and its id.
type runKey struct{ app, user, session, invocation string }

// Option configures a Guard.
type Option func(*Guard)

// WithCaller sets how a call's caller key is derived from its context:
// each key has its own kernel session and budget in the gate. The default
// is SessionCaller(ctx.AppName(), ctx.UserID(), ctx.SessionID()): one
// budget per ADK session.
func WithCaller(key func(ctx agent.ReadonlyContext) string) Option {
	return func(g *Guard) { g.caller = key }
}

// WithPrincipal sets how a call's principal (toolgate.Call.Principal,
// which the policy's "principals" conditions read) is derived from its
// context. The default is SessionPrincipal.
func WithPrincipal(principal func(ctx agent.ReadonlyContext) toolgate.Principal) Option {
	return func(g *Guard) { g.principal = principal }
}

// SessionPrincipal is the default principal of a call: the one the host
// put in the run's context with toolgate.WithPrincipal (the context given
// to runner.Run reaches the tool's), else the ADK user: issuer "adk:"
// followed by the app name (ADK's user ids are the app's), subject the
// user id (agent.ReadonlyContext's AppName and UserID; the session is
// the caller key's). ADK does not authenticate its
// users; the host that does passes what it verified with
// toolgate.WithPrincipal.
func SessionPrincipal(ctx agent.ReadonlyContext) toolgate.Principal {
	if p, ok := toolgate.PrincipalFrom(ctx); ok {
		return p
	}
	return toolgate.Principal{Issuer: "adk:" + ctx.AppName(), Subject: ctx.UserID()}
}

// WithApprover sets whose approval a confirmed ADK tool confirmation
// records (Gate.Approve's approver, and Deny's for a rejection). The
// default is toolgate.DefaultApprover, the approver the gate awaits when
// its Policy.Approvers is nil; a gate that names its approvers needs
// this option (for example the ADK user id, ctx.UserID()).
func WithApprover(name func(ctx agent.Context, req toolgate.ApprovalRequest) string) Option {
	return func(g *Guard) { g.approver = name }
}

// WithMeasure reports what a finished call actually cost (the gate
// settles a reserved call at it and refunds a fixed-cost call measured
// below its price). measure returns false when it has no figure.
func WithMeasure(measure func(ctx agent.Context, t tool.Tool, args, result map[string]any, err error) (kernel.Cost, bool)) Option {
	return func(g *Guard) { g.measure = measure }
}

// WithErrorHandler receives the errors of recording a finished call
// (Gate.After: a log that failed, or kernel.ErrOverrun when a measured
// cost beyond a reservation could not be paid). The tool has run by
// then, so the guard hands its result to the model unchanged; the error
// is also recorded on the tool call's span. The default does nothing
// more.
func WithErrorHandler(handle func(ctx agent.Context, c toolgate.Call, err error)) Option {
	return func(g *Guard) { g.onError = handle }
}

// New returns a Guard over gate.
func New(gate *toolgate.Gate, opts ...Option) (*Guard, error) {
	if gate == nil {
		return nil, errors.New("adk: nil gate")
	}
	g := &Guard{
		gate: gate,
		caller: func(ctx agent.ReadonlyContext) string {
			return SessionCaller(ctx.AppName(), ctx.UserID(), ctx.SessionID())
		},
		principal: SessionPrincipal,
		approver:  func(agent.Context, toolgate.ApprovalRequest) string { return toolgate.DefaultApprover },
		open:      map[openKey]openCall{},
		asked:     map[openKey]toolgate.ApprovalRequest{},
	}
	for _, o := range opts {
		o(g)
	}
	if g.caller == nil || g.approver == nil || g.principal == nil {
		return nil, errors.New("adk: nil caller, principal or approver function")
	}
	return g, nil
}

// Gate returns the gate the guard sends calls through.
func (g *Guard) Gate() *toolgate.Gate { return g.gate }

// SessionCaller is the default caller key: the ADK app, user and session
// ids, each path-escaped and joined with "/", so that distinct sessions
// never share a key.
func SessionCaller(appName, userID, sessionID string) string {
	return url.PathEscape(appName) + "/" + url.PathEscape(userID) + "/" + url.PathEscape(sessionID)
}

// Install puts the guard's callbacks first in cfg's BeforeToolCallbacks
// and AfterToolCallbacks. First matters: ADK stops at the first
// callback that returns a result, so a callback before the guard's after
// callback could keep the gate from hearing how a call ended.
//
// Installed on an agent alone, the guard can still be starved: ADK runs
// the runner plugins' after-tool callbacks before the agent's and skips
// the agent's when a plugin returns a result (Flow.callTool in
// internal/llminternal/base_flow.go), so such a plugin leaves the call
// open in the gate and a reservation held. Add the guard's Plugin to the
// runner as well: its AfterRun closes every call still open when the run
// ends (see AfterRun), and the call is still decided once.
//
// Install is required on every llmagent that an agenttool wraps
// (tool/agenttool): agenttool runs it in a runner of its own, without the
// outer runner's plugins, so Plugin alone does not guard it.
func (g *Guard) Install(cfg *llmagent.Config) {
	cfg.BeforeToolCallbacks = append([]llmagent.BeforeToolCallback{g.BeforeTool}, cfg.BeforeToolCallbacks...)
	cfg.AfterToolCallbacks = append([]llmagent.AfterToolCallback{g.AfterTool}, cfg.AfterToolCallbacks...)
}

// Plugin returns a runner plugin (runner.Config.PluginConfig.Plugins)
// whose tool callbacks are the guard's: every tool call of every agent the
// runner runs through llmagent's flow goes through the gate. ADK runs
// plugin callbacks before an agent's own and stops at the first plugin
// that returns a result, so put this plugin first. Its AfterRun callback
// (AfterRun) closes, when a run ends, the calls whose result no after
// callback reported. When the guard is both a plugin and on agents
// (Install), the second to see a call passes it through (the call is
// decided once).
//
// The plugin does not reach agents wrapped by agenttool:
// agenttool.Run (tool/agenttool/agent_tool.go) builds a fresh runner,
// with its own in-memory session, and no plugins. Install the guard on
// every llmagent that an agenttool wraps (TestAgentToolGuardedByInstall);
// its calls are then decided under that inner session's caller key (by
// default the wrapped agent's name as the app, the user, and the inner
// session id: a budget of its own, unless WithCaller maps it).
func (g *Guard) Plugin() (*plugin.Plugin, error) {
	return plugin.New(plugin.Config{
		Name:               PluginName,
		BeforeToolCallback: g.BeforeTool,
		AfterToolCallback:  g.AfterTool,
		AfterRunCallback:   g.AfterRun,
	})
}

// BeforeTool is an llmagent.BeforeToolCallback,
//
//	func(ctx agent.Context, tool tool.Tool, args map[string]any) (map[string]any, error)
//
// that asks the gate whether the call may run. ADK runs the tool only
// when every before callback returns (nil, nil); a non-nil result
// replaces the tool's (internal/llminternal/base_flow.go, Flow.callTool).
//
//   - Allow: returns (nil, nil); the tool runs and AfterTool reports how
//     it ended.
//   - Refuse: returns {"error": explanation}, the gate's one line, as the
//     tool's result. ADK makes a returned error into the same
//     {"error": text} function response, but it would run the
//     OnToolError callbacks first, which take a refusal for a failed tool
//     (the retry-and-reflect plugin would tell the model to try the call
//     again); a result skips them, the run continues and the model reads
//     the explanation in its next request.
//   - AskApproval: the call's tier needs a human. The guard asks through
//     ADK's confirmation flow (ctx.RequestConfirmation with the gate's
//     question as the hint and the request as the payload) and returns
//     {"error": "waiting for approval: ..."}. ADK then emits an
//     adk_request_confirmation function call and stops the turn. When the
//     user answers with a FunctionResponse for it ({"confirmed": true} or
//     false), ADK calls the tool again with the same function call id and
//     ctx.ToolConfirmation() set; the guard records the answer as the
//     claims approval (Gate.Approve, or Gate.Deny on a rejection) and asks
//     the gate again: a confirmed call runs, once; a rejected one is
//     refused and never runs.
//
// The guard remembers each confirmation it requested, by caller and
// function call id, with the gate's request it showed, and hands a
// resumed call to Gate.Resume with that request and the answer: it counts
// only while the gate waits on that very request, for exactly the
// arguments asked about, once. Any other confirmation — on an
// adk_request_confirmation call the model wrote with a hint or arguments
// of its own (ADK resumes the call it names just the same), an answer
// sent a second time, an answer that comes back after a restart — is
// recorded and refused by the gate: nothing runs, no request is made or
// cancelled, and the question the guard put still waits for its answer.
//
// An error of the gate (a log that failed, a cancelled context) refuses
// the call with its text: nothing runs that the log does not hold.
func (g *Guard) BeforeTool(ctx agent.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	c := toolgate.Call{Tool: t.Name(), ID: ctx.FunctionCallID(), Caller: g.caller(ctx), Principal: g.principal(ctx)}
	span := oteltrace.SpanFromContext(ctx)
	span.SetAttributes(AttrCaller.String(c.Caller))
	key := openKey{caller: c.Caller, id: c.ID}
	actions := ctx.Actions()
	g.mu.Lock()
	oc, dup := g.open[key]
	g.mu.Unlock()
	if dup && actions != nil && oc.actions == actions {
		// The same tool invocation, reaching a second installation of
		// the guard (plugin and agent callbacks): it was decided once.
		return nil, nil
	}
	c.Arguments = encodeArguments(args)

	var d toolgate.Decision
	var err error
	resumed := false
	if conf := ctx.ToolConfirmation(); conf != nil {
		// ADK resumes a call with the answer to an adk_request_confirmation
		// call, whoever wrote that call: RequestConfirmationRequestProcessor
		// (internal/llminternal/request_confirmation_processor.go) takes
		// the call to resume — its id, name and arguments — from the
		// adk_request_confirmation call's "originalFunctionCall", and the
		// ToolConfirmation from the user's function response. The model
		// can write such a call naming any call id and arguments, and a
		// client can send an answer twice. The gate's Resume counts the
		// answer only for the request the guard put for this call id, while
		// it waits, and for exactly the arguments it asked about; any
		// other is recorded and refused, makes no request and cancels
		// none, so that the question put stays answerable.
		g.mu.Lock()
		req, ok := g.asked[key]
		g.mu.Unlock()
		if !ok {
			// No question of the guard's: a tool's own confirmation
			// (functiontool's RequireConfirmation) goes through; a call
			// that needs the gate's human is refused, never asked here.
			d, err = g.gate.Resume(ctx, c, "", nil)
		} else {
			ans := &toolgate.Answer{Approved: conf.Confirmed, Approver: g.approver(ctx, req),
				Reason: confirmationReason(conf.Confirmed, conf.Payload, c.ID)}
			d, err = g.gate.Resume(ctx, c, req.ID, ans)
		}
		if err == nil && d.Verdict == toolgate.Refuse && d.Condition == gatelog.ConditionAnswer {
			setDecision(span, d)
			return g.notAsked(d), nil
		}
		if ok && err == nil {
			// The answer counted: the question is settled for this guard.
			g.mu.Lock()
			if g.asked[key].ID == req.ID {
				delete(g.asked, key)
			}
			g.mu.Unlock()
			resumed = true
		}
	} else {
		d, err = g.gate.Before(ctx, c)
	}
	if err != nil {
		return g.refused(span, fmt.Sprintf("tool %q was not run: %v", c.Tool, err)), nil
	}
	setDecision(span, d)
	switch d.Verdict {
	case toolgate.Allow:
		g.mu.Lock()
		g.open[key] = openCall{call: d.Call, actions: actions,
			run: runKey{app: ctx.AppName(), user: ctx.UserID(), session: ctx.SessionID(), invocation: ctx.InvocationID()}}
		g.mu.Unlock()
		return nil, nil
	case toolgate.AskApproval:
		req := *d.Approval
		if resumed {
			// The answer recorded one approval and the gate awaits
			// more approvers. ADK asks once per call: a confirmation
			// requested while it resumes one is never put to the user
			// (RequestConfirmationRequestProcessor yields the resumed
			// calls' responses without the adk_request_confirmation
			// event that Flow's model turn makes with
			// generateRequestConfirmationEvent). The others approve
			// through the gate (Gate.Approve); the call runs when the
			// model makes it again.
			return map[string]any{"error": fmt.Sprintf("waiting for approval by %s: %s",
				strings.Join(req.Awaiting, ", "), req.Question)}, nil
		}
		payload := map[string]any{
			"approval_id":      req.ID,
			"tool":             req.Tool,
			"tier":             string(req.Tier),
			"arguments_sha256": req.ArgumentsDigest,
			"awaiting":         req.Awaiting,
		}
		if err := ctx.RequestConfirmation(req.Question, payload); err != nil {
			return g.refused(span, fmt.Sprintf("tool %q needs a human's approval, which cannot be asked: %v", c.Tool, err)), nil
		}
		g.mu.Lock()
		g.asked[key] = req
		g.mu.Unlock()
		return map[string]any{"error": "waiting for approval: " + req.Question}, nil
	default:
		return map[string]any{"error": d.Explanation}, nil
	}
}

// notAsked is the result of a resumed call whose confirmation the gate
// refused (gatelog.ConditionAnswer, recorded on the log): an
// adk_request_confirmation call the model wrote itself, an answer sent
// again after it was used, one that comes back after a restart or over
// other arguments than those asked about. Nothing runs, and no request is
// made: the question the guard put, if any, still waits for its answer;
// otherwise the human is asked when the model makes the call again (a
// confirmation requested while ADK resumes a call is never shown to the
// user, see BeforeTool).
func (g *Guard) notAsked(d toolgate.Decision) map[string]any {
	return map[string]any{"error": "the confirmation received answers no question asked for this call: " + d.Explanation}
}

// confirmationReason is the reason recorded with a human's answer: the
// payload's "reason" when the client sent one, else a line naming ADK's
// confirmation of the call.
func confirmationReason(confirmed bool, payload any, callID string) string {
	if m, ok := payload.(map[string]any); ok {
		if r, ok := m["reason"].(string); ok && r != "" {
			return r
		}
	}
	if confirmed {
		return fmt.Sprintf("confirmed through ADK tool confirmation of call %s", callID)
	}
	return fmt.Sprintf("rejected through ADK tool confirmation of call %s", callID)
}

func (g *Guard) refused(span oteltrace.Span, explanation string) map[string]any {
	span.SetAttributes(AttrVerdict.String(toolgate.Refuse.String()), AttrExplanation.String(explanation))
	return map[string]any{"error": explanation}
}

func setDecision(span oteltrace.Span, d toolgate.Decision) {
	attrs := []attribute.KeyValue{AttrVerdict.String(d.Verdict.String()), AttrSeq.Int64(int64(d.Seq))}
	if d.ExecID != "" {
		attrs = append(attrs, AttrExecID.String(d.ExecID))
	}
	switch {
	case d.ApprovalID != "":
		attrs = append(attrs, AttrApprovalID.String(d.ApprovalID))
	case d.Approval != nil:
		attrs = append(attrs, AttrApprovalID.String(d.Approval.ID))
	}
	if d.Verdict == toolgate.Refuse {
		attrs = append(attrs, AttrExplanation.String(d.Explanation))
	}
	span.SetAttributes(attrs...)
}

// AfterTool is an llmagent.AfterToolCallback,
//
//	func(ctx agent.Context, tool tool.Tool, args, result map[string]any, err error) (map[string]any, error)
//
// that reports how an allowed call ended to the gate (Gate.After: the
// output is the JSON of result, the error the tool's). ADK runs the after
// callbacks for every call, also one a before callback refused; the guard
// reports only the calls it allowed. It returns (nil, nil): the result
// goes to the model as the tool returned it. A tool that only asked for
// ADK's confirmation, or was rejected by it (tool.ErrConfirmationRequired,
// tool.ErrConfirmationRejected), did nothing: it is reported measured at
// zero, so its charge is given back.
//
// The gate records the result even when the invocation's context is
// cancelled: the tool has run.
func (g *Guard) AfterTool(ctx agent.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error) {
	key := openKey{caller: g.caller(ctx), id: ctx.FunctionCallID()}
	actions := ctx.Actions()
	g.mu.Lock()
	oc, ok := g.open[key]
	if ok && oc.actions == actions {
		delete(g.open, key)
	}
	g.mu.Unlock()
	if !ok || oc.actions != actions {
		return nil, nil
	}
	r := toolgate.Result{Output: encodeResult(result), Err: err}
	switch {
	case errors.Is(err, tool.ErrConfirmationRequired), errors.Is(err, tool.ErrConfirmationRejected):
		r.Actual, r.Measured = 0, true
	case g.measure != nil:
		r.Actual, r.Measured = g.measure(ctx, t, args, result, err)
	}
	g.report(ctx, oteltrace.SpanFromContext(ctx), oc.call, r)
	return nil, nil
}

// report records r as how c ended (Gate.After, which records it even when
// ctx is cancelled: the tool has run). A Result the gate cannot record
// (toolgate.ErrInvalidResult: a negative figure from WithMeasure) would
// leave the call open in the gate, its reservation never settled; it is
// recorded again unmeasured, settled at the reserved or fixed cost, and
// the figure's error goes to the error handler.
func (g *Guard) report(ctx agent.Context, span oteltrace.Span, c toolgate.Call, r toolgate.Result) {
	out, aerr := g.gate.After(context.WithoutCancel(ctx), c, r)
	if errors.Is(aerr, toolgate.ErrInvalidResult) {
		g.failed(ctx, span, c, aerr)
		r.Actual, r.Measured = 0, false
		out, aerr = g.gate.After(context.WithoutCancel(ctx), c, r)
	}
	if out.Seq != 0 || aerr == nil {
		span.SetAttributes(AttrResultSeq.Int64(int64(out.Seq)), AttrCharged.Int64(int64(out.Charged)))
	}
	if aerr != nil {
		g.failed(ctx, span, c, aerr)
	}
}

func (g *Guard) failed(ctx agent.Context, span oteltrace.Span, c toolgate.Call, err error) {
	span.RecordError(err)
	if g.onError != nil {
		g.onError(ctx, c, err)
	}
}

// errNeverReported is the failure recorded for a call whose after
// callbacks ADK never ran.
var errNeverReported = errors.New("adk: result never reported: the tool's after callbacks did not run")

// AfterRun is a plugin.AfterRunCallback,
//
//	func(agent.InvocationContext)
//
// which the runner defers at the start of each Run (runner/runner.go,
// runner/run_node.go: defer pluginManager.RunAfterRunCallback). By then
// every tool call of the invocation has returned, so a call it allowed
// that is still open had its result never reported: ADK runs the
// plugins' after-tool callbacks first and skips the agent's own when a
// plugin returns a result (internal/llminternal/base_flow.go,
// Flow.callTool), and stops at the first plugin that does. AfterRun
// reports each such call to the gate as failed (errNeverReported,
// unmeasured: a reservation is settled at what was reserved, a fixed cost
// refunded only when its rule says RefundOnError), so that no call stays
// open and no reservation is held for ever.
func (g *Guard) AfterRun(ic agent.InvocationContext) {
	s := ic.Session()
	if s == nil {
		return
	}
	run := runKey{app: s.AppName(), user: s.UserID(), session: s.ID(), invocation: ic.InvocationID()}
	var orphans []toolgate.Call
	g.mu.Lock()
	for k, oc := range g.open {
		if oc.run == run {
			orphans = append(orphans, oc.call)
			delete(g.open, k)
		}
	}
	g.mu.Unlock()
	if len(orphans) == 0 {
		return
	}
	ctx, ok := ic.(agent.Context)
	if !ok {
		ctx = agent.NewContext(ic)
	}
	span := oteltrace.SpanFromContext(ctx)
	slices.SortFunc(orphans, func(a, b toolgate.Call) int { return strings.Compare(a.ID, b.ID) })
	for _, c := range orphans {
		g.report(ctx, span, c, toolgate.Result{Output: []byte("null"), Err: errNeverReported})
	}
}

// encodeArguments is the call's arguments as the gate records them: the
// JSON of args (encoding/json sorts map keys, so equal arguments encode
// equally and bind the same approval), {} when there are none. Arguments
// that are no JSON value (an earlier callback may have put a NaN, a
// channel or a cycle there) are recorded as the encoder's error text: the
// gate accepts any bytes, so such a call is still decided and recorded.
func encodeArguments(args map[string]any) []byte {
	if args == nil {
		return []byte("{}")
	}
	return encodeJSON(args)
}

// encodeResult is a tool's result as the gate records it, in the same
// way; "null" when the tool returned none.
func encodeResult(result map[string]any) []byte {
	if result == nil {
		return []byte("null")
	}
	return encodeJSON(result)
}

func encodeJSON(m map[string]any) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Appendf(nil, "unencodable: %v", err)
	}
	return b
}
