package eino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/cloudwego/eino/adk"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// SessionCallerKey is the adk session value CallerFrom reads when the
// context carries no caller: a run started with
// adk.WithSessionValues(map[string]any{SessionCallerKey: "alice"}) keeps
// its caller in its checkpoints, across interrupts and resumes.
//
// Note that ChatModelAgent's default GenModelInput formats the
// instruction as an f-string whenever session values are present, so an
// instruction with literal braces then needs a GenModelInput of its own.
const SessionCallerKey = "verity.caller"

// Option configures Middleware and AgentMiddleware.
type Option func(*options)

type options struct {
	caller    func(context.Context) string
	principal func(context.Context) toolgate.Principal
	approver  string
}

// WithCallerFunc sets how a call's caller key (toolgate.Call.Caller) is
// found from the tool call's context; CallerFrom by default.
func WithCallerFunc(f func(context.Context) string) Option {
	return func(o *options) { o.caller = f }
}

// WithPrincipalFunc sets how a call's principal (toolgate.Call.Principal,
// which the policy's "principals" conditions read) is found from the
// tool call's context; PrincipalFrom by default.
func WithPrincipalFunc(f func(context.Context) toolgate.Principal) Option {
	return func(o *options) { o.principal = f }
}

// PrincipalFrom returns the principal the host put in ctx with
// toolgate.WithPrincipal (pass that context to Runner.Run, Graph.Invoke,
// ToolsNode.Invoke, and again to Runner.Resume), else the zero
// Principal: eino knows no user of its own.
func PrincipalFrom(ctx context.Context) toolgate.Principal {
	p, _ := toolgate.PrincipalFrom(ctx)
	return p
}

// WithApprover names who answers approval requests when the resume
// answer names nobody (toolgate.DefaultApprover by default). It must be
// one of the gate's Policy.Approvers for the tier.
func WithApprover(name string) Option {
	return func(o *options) { o.approver = name }
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller key of the calls made under
// it: pass it to Runner.Run, Graph.Invoke, ToolsNode.Invoke, and again
// to Runner.Resume.
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFrom returns the caller key WithCaller put in ctx, else the adk
// session value SessionCallerKey when it is a string, else "".
func CallerFrom(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(string); ok {
		return c
	}
	if v, ok := adk.GetSessionValue(ctx, SessionCallerKey); ok {
		if c, ok := v.(string); ok {
			return c
		}
	}
	return ""
}

type costKey struct{}

// costCell carries the cost a tool measured back to the middleware.
type costCell struct {
	mu     sync.Mutex
	actual kernel.Cost
	set    bool
}

// ReportCost tells the gate what the running call actually cost (for a
// rule with Reserve, or to be refunded below a fixed cost; see
// toolgate.Result.Actual). A tool calls it from its InvokableRun or
// StreamableRun with the context it was given; the last report wins. It
// reports false when the call does not run under the gate.
func ReportCost(ctx context.Context, actual kernel.Cost) bool {
	cell, ok := ctx.Value(costKey{}).(*costCell)
	if !ok {
		return false
	}
	cell.mu.Lock()
	cell.actual, cell.set = actual, true
	cell.mu.Unlock()
	return true
}

// Middleware returns the ToolsNode middleware that sends every tool call
// through g, for compose.ToolsNodeConfig.ToolCallMiddlewares. It covers
// the four kinds of tool eino runs (invokable, streamable and their
// enhanced variants), so no call reaches a tool unseen.
//
// For each call, Middleware builds a toolgate.Call from the
// compose.ToolInput it is given (Name, Arguments, CallID) and the caller
// key, and asks g.Before:
//
//   - Allow: the tool runs, and g.After records how it ended (the output,
//     the error, the cost the tool reported with ReportCost). A streamed
//     output is passed on as it comes and recorded when it ends, before
//     the reader sees its end.
//   - Refuse: the tool does not run; the refusal's explanation is returned
//     as the tool's output, the tool message the model reads next. (An
//     error would end the whole run: eino fails the ToolsNode on any tool
//     error.) An error of g.Before is refused the same way, with its text.
//   - AskApproval: the run is interrupted with tool.StatefulInterrupt; the
//     interrupt's Info is an *ApprovalInfo holding the question. Resume
//     the run targeting the interrupt's id with an Answer (see
//     PendingApprovals): Middleware hands the resumed call, the request
//     its checkpoint names and the answer to g.Resume, so the call runs
//     once when approved and never when denied. A resume that does not
//     answer leaves the call waiting and interrupts again, unless the
//     request was decided through the gate meanwhile. The answer counts
//     only while the gate waits on that request, for exactly the call it
//     asked about: a checkpoint rewritten to other arguments or to
//     another call's request, or resumed again after its answer was used,
//     runs nothing, is recorded (gatelog.KindRefuseAnswer) and makes no
//     request, and the question asked still waits
//     (TestResumesAnswerOnlyTheQuestionAsked,
//     TestOnlyQuestionsTheGateAskedWait). A denial that comes after the
//     request was decided (identical calls of one message share a
//     request, and another call's answer decided it) cannot be recorded,
//     and refuses its call all the same: it never runs, nor takes the
//     grant another answer gave. An Answer By a principal is recorded as
//     g.ApproveAs records it; the principal a PRIVILEGE call was made for
//     cannot approve it (TestPrivilegeSelfApprovalRefused).
//
// A tool error passes through unchanged (after g.After records it), as
// does an interrupt raised by the tool itself; the gate then counts the
// call as ended, and the resumed call is a new call. A cost reported
// with ReportCost that the gate cannot take (negative:
// toolgate.ErrInvalidResult) is recorded as unmeasured — the call is
// settled at its reservation or charged its fixed cost — and the error
// ends the run. When g.After fails to record (a log failure) the call's
// output is withheld and an *UnrecordedError ends the run; it says what
// the gate may still hold open. kernel.ErrOverrun is not a failure (it
// is recorded).
func Middleware(g *toolgate.Gate, opts ...Option) compose.ToolMiddleware {
	m := &guard{g: g, opts: options{caller: CallerFrom, principal: PrincipalFrom, approver: toolgate.DefaultApprover}}
	for _, opt := range opts {
		opt(&m.opts)
	}
	if m.opts.caller == nil {
		m.opts.caller = CallerFrom
	}
	if m.opts.principal == nil {
		m.opts.principal = PrincipalFrom
	}
	if m.opts.approver == "" {
		m.opts.approver = toolgate.DefaultApprover
	}
	return compose.ToolMiddleware{
		Invokable:          m.invokable,
		Streamable:         m.streamable,
		EnhancedInvokable:  m.enhancedInvokable,
		EnhancedStreamable: m.enhancedStreamable,
	}
}

// AgentMiddleware returns Middleware as an adk.AgentMiddleware, for
// adk.ChatModelAgentConfig.Middlewares: every tool call of the agent goes
// through g.
func AgentMiddleware(g *toolgate.Gate, opts ...Option) adk.AgentMiddleware {
	return adk.AgentMiddleware{WrapToolCall: Middleware(g, opts...)}
}

// guard is the middleware's state: the gate and the options.
type guard struct {
	g    *toolgate.Gate
	opts options
}

// admit decides a call. It returns the decision (Allow: run it; Refuse:
// Explanation is the output) or an error to return from the endpoint —
// the approval interrupt.
func (m *guard) admit(ctx context.Context, in *compose.ToolInput) (toolgate.Decision, error) {
	c := toolgate.Call{Tool: in.Name, ID: in.CallID, Arguments: []byte(in.Arguments), Caller: m.opts.caller(ctx), Principal: m.opts.principal(ctx)}
	// tool.GetInterruptState / tool.GetResumeContext (components/tool/
	// interrupt.go):
	//
	//	func GetInterruptState[T any](ctx context.Context) (wasInterrupted bool, hasState bool, state T)
	//	func GetResumeContext[T any](ctx context.Context) (isResumeTarget bool, hasData bool, data T)
	//
	// the state this call saved when it was interrupted for approval, and
	// the answer the resume brought it. A resumed call goes to the gate's
	// Resume with the request it was interrupted on: the answer counts
	// only for that request while it waits, and only for exactly this
	// call; any other is recorded and refused, and makes no request.
	var d toolgate.Decision
	var err error
	if was, has, st := tool.GetInterruptState[*approvalState](ctx); was && has && st != nil {
		c.ID, c.Caller, c.Principal = st.CallID, st.Caller, st.Principal
		var ans *toolgate.Answer
		if target, hasData, data := tool.GetResumeContext[any](ctx); target && hasData {
			a := answerOf(data)
			ans = &toolgate.Answer{Approved: a.Approved, Approver: a.Approver, By: a.By, Reason: a.Reason}
			if ans.Approver == "" {
				ans.Approver = m.opts.approver
			}
		}
		d, err = m.g.Resume(ctx, c, st.ApprovalID, ans)
		if err == nil && ans != nil && !ans.Approved && d.Verdict == toolgate.Refuse && d.Condition == gatelog.ConditionAnswer {
			// The human denied this call, after its request was decided
			// — by the answer to an identical call of the same message,
			// which shares it, or through the gate — or the gate forgot it
			// (a restart). It never runs, and the model reads the denial.
			who := ans.Approver
			if ans.By != nil {
				who = ans.By.Key()
			}
			return lateDenial(c, who, ans.Reason), nil
		}
	} else {
		d, err = m.g.Before(ctx, c)
	}
	if err != nil {
		return refusal(c, err), nil
	}
	if d.Verdict == toolgate.AskApproval {
		info := approvalInfo(d)
		st := &approvalState{ApprovalID: info.ApprovalID, CallID: d.Call.ID, Caller: d.Call.Caller, Principal: d.Call.Principal}
		// tool.StatefulInterrupt(ctx, info, state any) error
		// (components/tool/interrupt.go): the ToolsNode gathers it into
		// its CompositeInterrupt and keeps the outputs of the other calls.
		return d, tool.StatefulInterrupt(ctx, info, st)
	}
	return d, nil
}

// refusal is the decision for a call Before could not decide: it does
// not run, and the model reads why.
func refusal(c toolgate.Call, err error) toolgate.Decision {
	msg := strings.ReplaceAll(err.Error(), "\n", "; ")
	return toolgate.Decision{Verdict: toolgate.Refuse, Call: c,
		Explanation: fmt.Sprintf("tool %q was not run: %s", c.Tool, msg)}
}

// lateDenial is the refusal of a call whose human denied it after its
// approval request was decided: the denial could not be recorded in the
// gate, so the explanation says so.
func lateDenial(c toolgate.Call, who, reason string) toolgate.Decision {
	why := fmt.Sprintf("tool %q denied by %s", c.Tool, who)
	if reason != "" {
		why += ": " + strings.ReplaceAll(reason, "\n", "; ")
	}
	return toolgate.Decision{Verdict: toolgate.Refuse, Call: c,
		Explanation: why + " (the answer came after its approval request was decided, and was not recorded)"}
}

// run prepares the context of an allowed call: the cell ReportCost fills.
func run(ctx context.Context) (context.Context, *costCell) {
	cell := &costCell{}
	return context.WithValue(ctx, costKey{}, cell), cell
}

// finish records how an allowed call ended: nil when the gate recorded
// it (an overrun included), else the error that ends the run with the
// output withheld.
//
// A cost the gate cannot take (a negative ReportCost,
// toolgate.ErrInvalidResult) leaves the call open in the gate, so finish
// records it again unmeasured — settled at its reservation, or charged
// its fixed cost — and returns the ErrInvalidResult: the call is closed
// and the tool's bad report still ends the run.
//
// Any other failure is an *UnrecordedError and is not retried here: the
// gate may have settled or refunded the call already, and a second
// settlement or refund must not follow blindly. See UnrecordedError for
// what it leaves behind.
func (m *guard) finish(ctx context.Context, d toolgate.Decision, cell *costCell, output []byte, toolErr error) error {
	r := toolgate.Result{Output: output, Err: toolErr}
	cell.mu.Lock()
	r.Actual, r.Measured = cell.actual, cell.set
	cell.mu.Unlock()
	// The tool ran: its record is written even when the run is being
	// cancelled.
	ctx = context.WithoutCancel(ctx)
	_, err := m.g.After(ctx, d.Call, r)
	if err == nil || errors.Is(err, kernel.ErrOverrun) {
		return nil
	}
	if errors.Is(err, toolgate.ErrInvalidResult) {
		// Gate.After checks the measured cost before it settles or
		// refunds anything, and reopens the call: recording it unmeasured
		// is its first settlement.
		bad := err
		r.Actual, r.Measured = 0, false
		_, err = m.g.After(ctx, d.Call, r)
		if err == nil || errors.Is(err, kernel.ErrOverrun) {
			return fmt.Errorf("toolgate/eino: tool %q reported a cost the gate cannot take, so it was recorded at its reserved or fixed cost: %w",
				d.Call.Tool, bad)
		}
		err = errors.Join(bad, err)
	}
	return &UnrecordedError{Call: d.Call, Result: r, Err: err}
}

// UnrecordedError is the error that ends a run when the gate could not
// record how an allowed call ended (Gate.After failed, typically because
// its log did). The tool ran; its output was withheld from the model.
//
// What the gate holds then depends on where After failed. When the
// settlement or refund is recorded and only the result entry is not, the
// call is closed. When the settlement or refund itself could not be
// recorded, the gate keeps the call open for a retry: a reserved call's
// reservation stays held, a fixed-cost call stays charged its full cost
// (the budget errs on the side of spent, never overspent). The
// middleware does not retry — a failure after the gate recorded a refund
// would be refunded twice — so the host closes such a call, once its log
// works again, with
//
//	g.After(ctx, e.Call, e.Result)
//
// which answers toolgate.ErrUnknownCall when the call was closed already.
type UnrecordedError struct {
	// Call is the call as the gate knows it (caller and id).
	Call toolgate.Call
	// Result is what the middleware asked the gate to record.
	Result toolgate.Result
	// Err is Gate.After's error.
	Err error
}

func (e *UnrecordedError) Error() string {
	return fmt.Sprintf("toolgate/eino: tool %q (call %q of caller %q) ran but its result could not be recorded: %v",
		e.Call.Tool, e.Call.ID, e.Call.Caller, e.Err)
}

func (e *UnrecordedError) Unwrap() error { return e.Err }

// ended reports how an endpoint's error ends a call: an interrupt the
// tool raised itself is recorded as the call's failure like any error.
func ended(err error) error {
	if _, ok := compose.IsInterruptRerunError(err); ok {
		return fmt.Errorf("interrupted: %w", err)
	}
	return err
}

func (m *guard) invokable(next compose.InvokableToolEndpoint) compose.InvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
		d, err := m.admit(ctx, in)
		if err != nil {
			return nil, err
		}
		if d.Verdict != toolgate.Allow {
			return &compose.ToolOutput{Result: d.Explanation}, nil
		}
		rctx, cell := run(ctx)
		out, err := next(rctx, in)
		var text string
		if out != nil {
			text = out.Result
		}
		if ferr := m.finish(ctx, d, cell, []byte(text), ended(err)); ferr != nil {
			return nil, errors.Join(ferr, err)
		}
		return out, err
	}
}

func (m *guard) enhancedInvokable(next compose.EnhancedInvokableToolEndpoint) compose.EnhancedInvokableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedInvokableToolOutput, error) {
		d, err := m.admit(ctx, in)
		if err != nil {
			return nil, err
		}
		if d.Verdict != toolgate.Allow {
			return &compose.EnhancedInvokableToolOutput{Result: textResult(d.Explanation)}, nil
		}
		rctx, cell := run(ctx)
		out, err := next(rctx, in)
		var res *schema.ToolResult
		if out != nil {
			res = out.Result
		}
		if ferr := m.finish(ctx, d, cell, resultBytes(res), ended(err)); ferr != nil {
			return nil, errors.Join(ferr, err)
		}
		return out, err
	}
}

func (m *guard) streamable(next compose.StreamableToolEndpoint) compose.StreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.StreamToolOutput, error) {
		d, err := m.admit(ctx, in)
		if err != nil {
			return nil, err
		}
		if d.Verdict != toolgate.Allow {
			return &compose.StreamToolOutput{Result: schema.StreamReaderFromArray([]string{d.Explanation})}, nil
		}
		rctx, cell := run(ctx)
		out, err := next(rctx, in)
		if err != nil || out == nil || out.Result == nil {
			if ferr := m.finish(ctx, d, cell, nil, ended(err)); ferr != nil {
				return nil, errors.Join(ferr, err)
			}
			return out, err
		}
		return &compose.StreamToolOutput{Result: relay(out.Result, func(chunks []string, err error) error {
			return m.finish(ctx, d, cell, []byte(strings.Join(chunks, "")), err)
		})}, nil
	}
}

func (m *guard) enhancedStreamable(next compose.EnhancedStreamableToolEndpoint) compose.EnhancedStreamableToolEndpoint {
	return func(ctx context.Context, in *compose.ToolInput) (*compose.EnhancedStreamableToolOutput, error) {
		d, err := m.admit(ctx, in)
		if err != nil {
			return nil, err
		}
		if d.Verdict != toolgate.Allow {
			return &compose.EnhancedStreamableToolOutput{
				Result: schema.StreamReaderFromArray([]*schema.ToolResult{textResult(d.Explanation)})}, nil
		}
		rctx, cell := run(ctx)
		out, err := next(rctx, in)
		if err != nil || out == nil || out.Result == nil {
			if ferr := m.finish(ctx, d, cell, nil, ended(err)); ferr != nil {
				return nil, errors.Join(ferr, err)
			}
			return out, err
		}
		return &compose.EnhancedStreamableToolOutput{Result: relay(out.Result, func(chunks []*schema.ToolResult, err error) error {
			all := &schema.ToolResult{}
			for _, c := range chunks {
				if c != nil {
					all.Parts = append(all.Parts, c.Parts...)
				}
			}
			return m.finish(ctx, d, cell, resultBytes(all), err)
		})}, nil
	}
}

// errReaderClosed is the failure recorded for a stream its reader closed
// before its end.
var errReaderClosed = errors.New("the reader closed the output stream before its end")

// relay passes src's chunks on as they come and calls done with all of
// them and how the stream ended (nil at io.EOF) before the returned
// reader sees its end; an error of done is the stream's last item. When
// the reader closes early, src is closed and done gets errReaderClosed.
func relay[T any](src *schema.StreamReader[T], done func([]T, error) error) *schema.StreamReader[T] {
	// schema.Pipe[T](cap int) (*StreamReader[T], *StreamWriter[T]);
	// StreamWriter.Send(chunk T, err error) (closed bool) (schema/stream.go).
	dst, w := schema.Pipe[T](1)
	go func() {
		defer w.Close()
		defer src.Close()
		var chunks []T
		var end error
		for {
			v, err := src.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				end = err
				break
			}
			chunks = append(chunks, v)
			if w.Send(v, nil) {
				end = errReaderClosed
				break
			}
		}
		var zero T
		if err := done(chunks, end); err != nil {
			w.Send(zero, err)
		} else if end != nil && !errors.Is(end, errReaderClosed) {
			w.Send(zero, end)
		}
	}()
	return dst
}

// textResult is an enhanced tool's output of one text part.
func textResult(text string) *schema.ToolResult {
	return &schema.ToolResult{Parts: []schema.ToolOutputPart{{Type: schema.ToolPartTypeText, Text: text}}}
}

// resultBytes is what the gate records of an enhanced tool's output: its
// JSON, or nothing when there is none.
func resultBytes(r *schema.ToolResult) []byte {
	if r == nil {
		return nil
	}
	b, err := json.Marshal(r)
	if err != nil {
		return []byte(fmt.Sprintf("(output not encodable: %v)", err))
	}
	return b
}
