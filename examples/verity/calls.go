package main

import (
	"strings"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// callRow is one tool call a tool gate decided, as the page's "tool
// calls" table shows it. It is made from the gate's entries: the kernel's
// execution, reservation or rejection of the call (tagged "call:ID",
// "rule:R" and, when a human approved it, "approval:BUNDLE"), the gate's
// own refusal (toolgate.refuse) and the call's result (toolgate.result).
type callRow struct {
	Seq     uint64 `json:"seq"` // the decision's entry
	Time    string `json:"time"`
	Caller  string `json:"caller"`
	Tool    string `json:"tool"`
	CallID  string `json:"call_id"`
	Verdict string `json:"verdict"` // allowed, approved, refused, denied
	Reason  string `json:"reason,omitempty"`
	// Rule is the policy rule that decided: its name, or "#" and its
	// index; "" when the entries name none.
	Rule string `json:"rule"`
	// Cost is what the call was charged: its result's charge once the
	// result is on the log, else the rule's cost as executed or reserved;
	// "0" for a refusal.
	Cost     string   `json:"cost"`
	Outcome  string   `json:"outcome,omitempty"` // ok, failed: …, or "" until the result is on the log
	Approver []string `json:"approvers,omitempty"`
	// Definition is the pinned hash of the tool's definition the call
	// was decided against, when the host pins definitions.
	Definition string `json:"definition,omitempty"`
}

// calls gathers the tool calls of a log as it is read.
type calls struct {
	rows      []callRow
	open      map[string]int      // session + "\x00" + call id → the row of its last decision
	approvers map[string][]string // claims bundle id → who approved it
	counts    map[string]int      // verdict → calls
}

func newCalls() *calls {
	return &calls{open: map[string]int{}, approvers: map[string][]string{}, counts: map[string]int{}}
}

// add reads one verified entry, decoded by its package.
func (c *calls) add(e trace.Entry, decoded any) {
	switch x := decoded.(type) {
	case claims.Record:
		for _, a := range x.Bundle.AuditTrail.HumanApprovals {
			if a.Decision == claims.ApprovalApproved {
				c.approvers[x.Bundle.ID] = appendNew(c.approvers[x.Bundle.ID], a.Approver)
			}
		}
	case kernel.ExecuteEntry:
		c.decided(e, x.Session, x.Action, "", "")
	case kernel.ReserveEntry:
		c.decided(e, x.Session, x.Action, "", "")
	case kernel.RejectEntry:
		var why []string
		for _, ck := range x.Checks {
			if ck.Status == kernel.StatusFailed {
				why = append(why, checkReason(ck))
			}
		}
		c.decided(e, x.Session, x.Action, "refused", strings.Join(why, "; "))
	case gatelog.Refuse:
		verdict := "refused"
		if x.Reason == "denied" {
			verdict = "denied"
		}
		rule := x.RuleName
		if rule == "" {
			rule = x.Rule
		}
		c.push(x.Session, callRow{Seq: e.Seq, Time: trace.FormatTime(e.Time), Caller: x.Caller, Tool: x.Tool, CallID: x.CallID,
			Verdict: verdict, Reason: x.Explanation, Rule: rule, Cost: "0", Definition: x.Definition})
	case gatelog.Result:
		i, ok := c.open[x.Session+"\x00"+x.CallID]
		if !ok {
			return
		}
		r := &c.rows[i]
		r.Cost = x.Charged.String()
		r.Outcome = "ok"
		if !x.OK {
			r.Outcome = "failed: " + shorten(x.Error, 80)
		}
	}
}

// decided adds the kernel's decision on a call of a gate's session; an
// action without a "call:" tag is not a tool call and is left out.
func (c *calls) decided(e trace.Entry, session string, a kernel.Action, verdict, reason string) {
	caller, ok := strings.CutPrefix(session, toolgate.SessionPrefix)
	if !ok {
		return
	}
	r := callRow{Seq: e.Seq, Time: trace.FormatTime(e.Time), Caller: caller, Tool: a.ID, Verdict: verdict, Reason: reason, Cost: a.Cost.String()}
	for _, t := range a.Tags {
		k, v, _ := strings.Cut(t, ":")
		switch k {
		case "call":
			r.CallID = v
		case "rule":
			r.Rule = v
		case "definition":
			r.Definition = v
		case "approval":
			r.Approver = c.approvers[v]
			if r.Approver == nil {
				r.Approver = []string{"(approval " + v + ")"}
			}
		}
	}
	if r.CallID == "" {
		return
	}
	switch {
	case verdict == "refused":
		r.Cost = "0"
	case r.Approver != nil:
		r.Verdict = "approved"
	default:
		r.Verdict = "allowed"
	}
	c.push(session, r)
}

func (c *calls) push(session string, r callRow) {
	c.open[session+"\x00"+r.CallID] = len(c.rows)
	c.rows = append(c.rows, r)
	c.counts[r.Verdict]++
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}
