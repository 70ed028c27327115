package toolgate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// ErrSelfApproval: the principal a PRIVILEGE call was made for tried to
// approve it, and Policy.SelfApproval is not set.
var ErrSelfApproval = errors.New("toolgate: a PRIVILEGE call cannot be approved by the principal that made it")

// Answer is a human's answer that a framework brings back with the call
// it was asked about: ADK's tool confirmation, eino's resume data, an MCP
// elicitation result. See Resume.
type Answer struct {
	Approved bool
	// By is the authenticated principal who answered, as in ApproveAs;
	// when nil, Approver is the approver name answered for, as in
	// Approve.
	By       *Principal
	Approver string
	// Reason is recorded with the answer.
	Reason string
}

// resumption is what Resume adds to Before: the request the adapter put
// to the human for the call, and the answer.
type resumption struct {
	request string
	answer  *Answer
}

// Resume decides a call that a framework brings back after the gate
// asked about it: the call, the id of the request the adapter put to the
// human for it (ApprovalRequest.ID, "" when it put none) and the human's
// answer (nil when the call comes back without one). Only questions the
// gate asked wait, and only their answers count:
//
//   - Resume never makes a request: a call that needs a human and has no
//     question waiting for it is refused, never asked.
//   - The answer counts only for a request the gate made and still waits
//     on, for exactly this call (caller, tool, arguments, tier); it is
//     recorded as Approve, ApproveAs (By), Deny or DenyAs would record
//     it, and the call is then decided as Before decides it: it runs on
//     its approval, is refused on a denial, or still waits (AskApproval,
//     the same request) for other approvers.
//   - Any other answer — to no question asked, to a request answered and
//     used already (a replay), to a question about other arguments, by
//     someone who may not give it — is recorded (gatelog.KindRefuseAnswer) and
//     the call refused (Condition gatelog.ConditionAnswer); no request is made,
//     decided or cancelled, and the question the gate did ask stays
//     waiting and answerable.
//
// A request decided through the gate meanwhile (Approve from Pending)
// is used by the call it was asked about: a call resumed without an
// answer, or with an approval, runs on it. With request "" and no answer
// the call is decided as Before decides it, except that it is refused
// rather than asked when it needs a human: a framework resuming a call
// for a question of its own (a tool's own confirmation) goes through
// unchanged.
func (g *Gate) Resume(ctx context.Context, c Call, request string, answer *Answer) (Decision, error) {
	if answer != nil {
		a := *answer
		if a.By != nil {
			p := a.By.clone()
			a.By = &p
		}
		answer = &a
	}
	res := &resumption{request: request, answer: answer}
	if g.obs == nil {
		return g.before(ctx, c, time.Time{}, res, nil)
	}
	return g.observeBefore(ctx, c, res, nil)
}

// request returns a copy of the request ap waits on.
func (ap *approval) request() *ApprovalRequest {
	req := ap.req
	req.Awaiting = slices.Clone(req.Awaiting)
	return &req
}

// refusalOf is the refusal entry of the answer res brings with c.
func refusalOf(c *Call, res *resumption, reason, why string) *gatelog.RefuseAnswer {
	e := &gatelog.RefuseAnswer{Caller: c.Caller, Approval: res.request, CallID: c.ID, Tool: c.Tool,
		ArgumentsSHA256: c.ArgumentsDigest(), Reason: reason, Explanation: why}
	if a := res.answer; a != nil {
		e.Approver, e.Decision = a.Approver, string(claims.ApprovalRejected)
		if a.By != nil {
			e.Approver = a.By.Key()
		}
		if a.Approved {
			e.Decision = string(claims.ApprovalApproved)
		}
	}
	return e
}

// recordAnswerRefusal appends e (gatelog.KindRefuseAnswer) and returns its
// sequence number.
func (g *Gate) recordAnswerRefusal(ctx context.Context, e gatelog.RefuseAnswer, at time.Time) (uint64, error) {
	e.Session = g.SessionID(e.Caller)
	e.Explanation = OneLine(e.Explanation)
	b, err := canon.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("toolgate: recording a refused answer: %w", err)
	}
	entry, err := g.log.Append(ctx, gatelog.KindRefuseAnswer, b, trace.At(at))
	if err != nil {
		return 0, fmt.Errorf("toolgate: recording a refused answer: %w", err)
	}
	return entry.Seq, nil
}

// answerEntry is the refusal entry of an answer given through the gate's
// API (Approve, ApproveAs, Deny, DenyAs) to request id, ap when the gate
// holds it.
func answerEntry(id string, ap *approval, approver string, by *Principal, dec claims.ApprovalDecision, reason, why string) gatelog.RefuseAnswer {
	e := gatelog.RefuseAnswer{Approval: id, Approver: approver, Decision: string(dec), Reason: reason, Explanation: why}
	if by != nil {
		e.Approver = by.Key()
	}
	if ap != nil {
		e.Caller, e.Tool, e.ArgumentsSHA256 = ap.req.Caller, ap.req.Tool, ap.req.ArgumentsDigest
	}
	return e
}

// isAnswerRefusal reports whether err refuses an answer for who gave it
// or when (not a failure of the log or the claims session).
func isAnswerRefusal(err error) bool {
	return errors.Is(err, ErrNotAnApprover) || errors.Is(err, ErrSelfApproval) || errors.Is(err, ErrUnknownApproval) ||
		errors.Is(err, claims.ErrNotRequired) || errors.Is(err, claims.ErrAlreadyDecided)
}

// answerReason is the gatelog.RefuseAnswer reason of an answer refusal.
func answerReason(err error) string {
	switch {
	case errors.Is(err, ErrSelfApproval):
		return gatelog.AnswerSelfApproval
	case errors.Is(err, claims.ErrAlreadyDecided), errors.Is(err, errAnsweredAlready):
		return gatelog.AnswerAnsweredAlready
	case errors.Is(err, ErrUnknownApproval):
		return gatelog.AnswerUnasked
	}
	return gatelog.AnswerNotApprover
}

// errAnsweredAlready marks the ErrNotAnApprover of a principal who
// answered already.
var errAnsweredAlready = errors.New("answered already")

// explainAnswer is err's text without the package prefixes, for a log
// entry.
func explainAnswer(err error) string {
	return strings.TrimPrefix(err.Error(), "toolgate: ")
}
