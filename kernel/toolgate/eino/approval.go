package eino

import (
	"fmt"
	"slices"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
)

// ApprovalInfo is the Info of the interrupt a call waiting for a human
// raises: what to put to them. Its fields copy the gate's
// toolgate.ApprovalRequest.
type ApprovalInfo struct {
	// ApprovalID is the gate's request id (g.Approve / g.Deny take it).
	ApprovalID string
	Caller     string
	Tool       string
	// CallID is the tool call's id.
	CallID          string
	ArgumentsDigest string
	Tier            claims.RiskTier
	// Awaiting lists the approvers who have not decided yet.
	Awaiting []string
	// Question is the sentence to put to the human.
	Question string
}

// String returns the question.
func (a *ApprovalInfo) String() string { return a.Question }

// approvalState is what an interrupted call keeps in the checkpoint: the
// request it waits on and the call it is, with the principal it was made
// for (a resumed call is the same call, whatever the resume's context
// carries).
type approvalState struct {
	ApprovalID string
	CallID     string
	Caller     string
	Principal  toolgate.Principal
}

func init() {
	// Checkpoints are gob-encoded: the interrupt's info and state travel
	// as interface values (schema.RegisterName[T any](name string),
	// schema/serialization.go).
	schema.RegisterName[*ApprovalInfo]("verity_toolgate_eino_approval_info")
	schema.RegisterName[*approvalState]("verity_toolgate_eino_approval_state")
}

func approvalInfo(d toolgate.Decision) *ApprovalInfo {
	a := d.Approval
	if a == nil { // AskApproval always carries its request; keep a question anyway
		return &ApprovalInfo{Caller: d.Call.Caller, Tool: d.Call.Tool, CallID: d.Call.ID, Question: d.Explanation}
	}
	return &ApprovalInfo{ApprovalID: a.ID, Caller: a.Caller, Tool: a.Tool, CallID: d.Call.ID,
		ArgumentsDigest: a.ArgumentsDigest, Tier: a.Tier, Awaiting: slices.Clone(a.Awaiting), Question: a.Question}
}

// Answer is a human's answer to an approval request: the resume data for
// the interrupt's id, as in
//
//	runner.ResumeWithParams(ctx, checkPointID, &adk.ResumeParams{
//		Targets: map[string]any{p.InterruptID: eino.Approve("checked the path")},
//	})
//
// A bool is read as Answer{Approved: b}; anything else that is not an
// Answer or *Answer is a denial (the call never runs on an answer that
// was not understood).
type Answer struct {
	Approved bool
	// Approver is who answers (the option WithApprover's name, by
	// default toolgate.DefaultApprover, when empty).
	Approver string
	// By, when set, is the authenticated principal who answers: the
	// answer is recorded as toolgate.Gate.ApproveAs or DenyAs records it
	// (for the approver it names, by key or group), and Approver is not
	// used. The principal a PRIVILEGE call was made for cannot approve it
	// unless the gate's Policy.SelfApproval allows it.
	By *toolgate.Principal
	// Reason is recorded with the answer; a denial's reason is part of
	// the refusal the model reads.
	Reason string
}

// Approve is an approving Answer.
func Approve(reason string) Answer { return Answer{Approved: true, Reason: reason} }

// Deny is a denying Answer.
func Deny(reason string) Answer { return Answer{Reason: reason} }

// answerOf reads resume data as an Answer.
func answerOf(data any) Answer {
	switch a := data.(type) {
	case Answer:
		return a
	case *Answer:
		if a != nil {
			return *a
		}
	case bool:
		return Answer{Approved: a}
	}
	return Answer{Reason: fmt.Sprintf("the answer (%T) was not understood", data)}
}

// Pending is a call waiting for a human, as found in an interrupt.
type Pending struct {
	// InterruptID is the key of the resume data that answers it
	// (adk.ResumeParams.Targets, compose.ResumeWithData).
	InterruptID string
	*ApprovalInfo
}

// PendingApprovals lists the approval requests among an interrupt's
// contexts: adk's AgentEvent.Action.Interrupted.InterruptContexts, or
// compose.ExtractInterruptInfo(err)'s InterruptContexts
// (adk.InterruptCtx is compose.InterruptCtx).
func PendingApprovals(ctxs []*compose.InterruptCtx) []Pending {
	var out []Pending
	for _, c := range ctxs {
		if c == nil || !c.IsRootCause {
			continue
		}
		if info, ok := c.Info.(*ApprovalInfo); ok && info != nil {
			out = append(out, Pending{InterruptID: c.ID, ApprovalInfo: info})
		}
	}
	return out
}
