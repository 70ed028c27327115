package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

// summarizers give a one-line summary of an entry's payload, keyed by the
// prefix of the kinds each recording package writes. Each reads the
// payload with its package's own decoder and returns the decoded value
// too (kernel.Entry, belief.AuditEntry, claims.Record, speculative.Entry),
// so that a caller needing it decodes once.
var summarizers = []struct {
	prefix string
	fn     func(trace.Entry) (string, any, error)
}{
	{"kernel.", kernelSummary},
	{"belief.", beliefSummary},
	{"claims.", claimsSummary},
	{"speculative.", speculativeSummary},
	{"toolgate.", toolgateSummary},
}

// summarize returns the one-line summary of e. A payload its package
// cannot read is summarised as that package's error, and a kind no
// package claims as its payload, shortened.
func summarize(e trace.Entry) string {
	line, _ := describe(e)
	return line
}

// describe returns the one-line summary of e and its payload as its
// package decoded it (nil if it could not, or no package claims the kind).
func describe(e trace.Entry) (string, any) {
	for _, s := range summarizers {
		if strings.HasPrefix(e.Kind, s.prefix) {
			line, v, err := s.fn(e)
			if err != nil {
				return "unreadable payload: " + err.Error(), nil
			}
			return line, v
		}
	}
	return shorten(string(e.Payload), 120), nil
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 { // do not cut a UTF-8 sequence
		n--
	}
	return s[:n] + "…"
}

// jsonObject reads JSON text as a generic object, numbers as
// json.Number.
func jsonObject(p []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(p))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("payload is not an object")
	}
	return m, nil
}

func kernelSummary(e trace.Entry) (string, any, error) {
	x, err := kernel.DecodeEntry(e)
	if err != nil {
		return "", nil, err
	}
	return kernelLine(x), x, nil
}

func kernelLine(x kernel.Entry) string {
	switch v := x.(type) {
	case kernel.StartEntry:
		return fmt.Sprintf("session %s starts: budget %s, min cost %s, %d invariants, %d state variables",
			v.Session, v.Budget, v.MinCost, len(v.Invariants), v.State.Len())
	case kernel.ExecuteEntry:
		s := fmt.Sprintf("executed %s (exec %s) cost %s → %s, steps %d", v.Action.ID, v.ExecID, v.Action.Cost, budgetText(v.Budget), v.Steps)
		if v.Emergency {
			s += ", emergency"
		}
		return s + warnedText(v.Warnings) + definitionText(tagDefinition(v.Action.Tags))
	case kernel.RejectEntry:
		var failed []string
		for _, c := range v.Checks {
			if c.Status == kernel.StatusFailed {
				failed = append(failed, checkReason(c))
			}
		}
		return fmt.Sprintf("rejected %s (cost %s): %s", v.Action.ID, v.Action.Cost, strings.Join(failed, "; "))
	case kernel.RollbackEntry:
		return fmt.Sprintf("rolled back exec %s, refund %s → %s", v.ExecID, v.Refund, budgetText(v.Budget))
	case kernel.ReserveEntry:
		s := fmt.Sprintf("reserved %s for %s (exec %s) → %s, steps %d", v.Action.Cost, v.Action.ID, v.ExecID, budgetText(v.Budget), v.Steps)
		return s + warnedText(v.Warnings) + definitionText(tagDefinition(v.Action.Tags))
	case kernel.SettleEntry:
		return fmt.Sprintf("settled exec %s: reserved %s, actual %s, refund %s, overrun %s, unpaid %s → %s",
			v.ExecID, v.Reserved, v.Actual, v.Refund, v.Overrun, v.Unpaid, budgetText(v.Budget))
	case kernel.RefundEntry:
		return fmt.Sprintf("refunded %s to exec %s (%s) → %s", v.Amount, v.ExecID, v.Reason, budgetText(v.Budget))
	}
	return fmt.Sprintf("%T", x)
}

// checkReason words a failed check once. The kernel's reasons are its
// errors' messages, which name the check and the invariant or
// precondition themselves ("kernel: invariant "x" violated"): the reason
// is given without the package's prefix, and the check's name is added
// only where the reason does not begin with it.
func checkReason(c kernel.CheckResult) string {
	r := strings.TrimPrefix(c.Reason, "kernel: ")
	words := strings.ReplaceAll(string(c.Check), "_", " ")
	if strings.HasPrefix(r, words) || strings.HasPrefix(r, string(c.Check)) {
		return r
	}
	name := string(c.Check)
	if c.Name != "" && !strings.Contains(r, strconv.Quote(c.Name)) {
		name += " " + strconv.Quote(c.Name)
	}
	return name + ": " + r
}

// warnedText lists the monitoring checks that warned.
func warnedText(warnings []kernel.CheckResult) string {
	var s string
	for _, w := range warnings {
		s += fmt.Sprintf("; warned: %s %s", string(w.Check), w.Name)
	}
	return s
}

func budgetText(b kernel.BudgetSnapshot) string {
	return fmt.Sprintf("budget net %s (gross %s, refunded %s) of %s", b.Gross-b.Refunded, b.Gross, b.Refunded, b.Limit)
}

func beliefSummary(e trace.Entry) (string, any, error) {
	if e.Kind == belief.KindCheckpoint {
		return fmt.Sprintf("checkpoint: the session's state after the events before it (%d bytes)", len(e.Payload)), nil, nil
	}
	a, err := belief.DecodeAuditEntry(e.Payload)
	if err != nil {
		return "", nil, err
	}
	s := fmt.Sprintf("%s session %s event %d", a.Verb, a.SessionID, a.Seq)
	out, _ := jsonObject(a.Outcome)
	switch a.Verb {
	case belief.VerbEliminate:
		s += fmt.Sprintf(": applied [%s]", strings.Join(a.Eliminated, " "))
		if ign, ok := out["ignored_eliminated"].([]any); ok && len(ign) > 0 {
			s += fmt.Sprintf(", ignored %d", len(ign))
		}
	default:
		if len(a.Outcome) > 0 && string(a.Outcome) != "{}" {
			s += ": " + shorten(string(a.Outcome), 100)
		}
	}
	return s, a, nil
}

func claimsSummary(e trace.Entry) (string, any, error) {
	r, err := claims.DecodeRecord(e.Payload)
	if err != nil {
		return "", nil, err
	}
	b := r.Bundle
	s := fmt.Sprintf("bundle %s: %s", b.ID, b.Decision)
	if b.Reason != "" {
		s += " (" + b.Reason + ")"
	}
	if r.Approval != nil {
		// The approver decided on the actor's bundle; the result follows.
		s = fmt.Sprintf("approver %s %s bundle %s for %s → %s", r.Approval.Approver, r.Approval.Decision, b.ID, r.Actor, b.Decision)
		if b.Reason != "" {
			s += " (" + b.Reason + ")"
		}
	} else {
		s += " for " + r.Actor
	}
	if len(b.RequiredApprovals) > 0 {
		s += fmt.Sprintf(", approvals required: %s, given: %d", strings.Join(b.RequiredApprovals, " "), len(b.AuditTrail.HumanApprovals))
	}
	return s, r, nil
}

func speculativeSummary(e trace.Entry) (string, any, error) {
	x, err := speculative.DecodeEntry(e)
	if err != nil {
		return "", nil, err
	}
	return speculativeLine(x), x, nil
}

func speculativeLine(x speculative.Entry) string {
	switch v := x.(type) {
	case speculative.IntentEntry:
		return words("intent", v.Intent+":", "write", v.Write.String(), v.ClaimID)
	case speculative.ApproveEntry:
		return fmt.Sprintf("intent %s approved by %s", v.Intent, v.By)
	case speculative.RejectEntry:
		return fmt.Sprintf("REFUSED intent %s (write %s): %s", v.Intent, v.Write, strings.Join(v.Reasons, "; "))
	case speculative.PersistEntry:
		return words("persisted", v.Write.String(), v.ID, v.ClaimID)
	case speculative.SoftFailEntry:
		return fmt.Sprintf("soft failure of intent %s: %s", v.Intent, v.Reason)
	case speculative.DesignEntry:
		return fmt.Sprintf("experiment designed for %s: template %s", v.ClaimID, v.TemplateQID)
	}
	return fmt.Sprintf("%T", x)
}

// words joins the non-empty words with spaces.
func words(ws ...string) string {
	return strings.Join(slices.DeleteFunc(ws, func(w string) bool { return w == "" }), " ")
}

// definitionText is ", definition <hash>" for a decision that names the
// pinned definition it trusted, "" otherwise.
func definitionText(def string) string {
	if def == "" {
		return ""
	}
	return ", definition " + def
}

// tagDefinition is the definition an execution's tags name.
func tagDefinition(tags []string) string {
	for _, t := range tags {
		if def, ok := strings.CutPrefix(t, definitionTag); ok {
			return def
		}
	}
	return ""
}

// toolgateSummary words every entry a tool gate writes itself: a
// refusal, a result, a refused answer, a request asked of a human and
// one that expired.
func toolgateSummary(e trace.Entry) (string, any, error) {
	v, err := gatelog.Decode(e)
	if err != nil {
		return "", nil, err
	}
	switch r := v.(type) {
	case gatelog.Refuse:
		return fmt.Sprintf("refused %s call %s for %q (%s): %s", r.Tool, r.CallID, r.Caller, r.Reason, shorten(r.Explanation, 160)) + definitionText(r.Definition), r, nil
	case gatelog.Pin:
		s := fmt.Sprintf("pinned %d tools of server %s (%s)", len(r.Tools), pin.Visible(r.Server), r.Source)
		if r.Instructions != "" {
			s += ", instructions " + r.Instructions
		}
		if r.Lock != "" {
			s += ", lock file " + r.Lock
		}
		return s, r, nil
	case gatelog.Drift:
		if r.Change == pin.Instructions {
			return fmt.Sprintf("drift: server %s's instructions listed %s, pinned %s", pin.Visible(r.Server), orNone(r.Seen), orNone(r.Pinned)), r, nil
		}
		return fmt.Sprintf("drift: tool %s of server %s %s: listed %s, pinned %s", pin.Visible(r.Tool), pin.Visible(r.Server), r.Change, orNone(r.Seen), orNone(r.Pinned)), r, nil
	case gatelog.Repin:
		s := fmt.Sprintf("re-pinned tool %s of server %s: %s → %s, approved by %q", pin.Visible(r.Tool), pin.Visible(r.Server), orNone(r.Old), r.New, r.Approver)
		if r.RequestedBy != "" {
			s += fmt.Sprintf(" (asked by %q)", r.RequestedBy)
		}
		return s + ": " + shorten(pin.Visible(r.Reason), 160), r, nil
	case gatelog.Protocol:
		s := fmt.Sprintf("refused %s %q for %q before any decision (%s", r.Method, r.Name, r.Caller, r.Reason)
		if r.Header != "" {
			s += " " + r.Header
		}
		return s + fmt.Sprintf(", %d): %s", r.Code, shorten(r.Explanation, 160)), r, nil
	case gatelog.RefuseAnswer:
		return fmt.Sprintf("refused answer %s by %q to request %s for %q (%s): %s", r.Decision, r.Approver, r.Approval, r.Caller, r.Reason, shorten(r.Explanation, 160)), r, nil
	case gatelog.Ask:
		s := fmt.Sprintf("asked %s approval %s of %s call %s for %q: %s", r.Tier, r.Approval, r.Tool, r.CallID, r.Caller, shorten(r.Question, 160))
		if r.Expires != nil {
			s += ", expires " + trace.FormatTime(*r.Expires)
		}
		return s, r, nil
	case gatelog.Expire:
		return fmt.Sprintf("expired %s request %s (%s) of %s for %q, asked %s", r.State, r.Approval, r.Tier, r.Tool, r.Caller, trace.FormatTime(r.Asked)), r, nil
	case gatelog.Result:
		status := "ok"
		if !r.OK {
			status = "failed: " + shorten(r.Error, 80)
		}
		s := fmt.Sprintf("%s call %s for %q %s, charged %s (exec %s), output %d bytes", r.Tool, r.CallID, r.Caller, status, r.Charged, r.ExecID, r.OutputSize)
		if r.Unpaid > 0 {
			s += fmt.Sprintf(", %s unpaid", r.Unpaid)
		}
		if r.Speculative {
			s += ", speculative: " + r.Finding
		}
		return s + definitionText(r.Definition), r, nil
	case gatelog.Spawn:
		return fmt.Sprintf("started server %s: %s (arguments sha256 %s), pid %d, protocol %s", pin.Visible(r.Server), pin.Visible(r.Command), r.ArgumentsSHA256, r.PID, orNone(r.Protocol)), r, nil
	case gatelog.Connect:
		s := fmt.Sprintf("connected to server %s at %s, protocol %s", pin.Visible(r.Server), pin.Visible(r.URL), orNone(r.Protocol))
		if r.TLSSHA256 != "" {
			s += fmt.Sprintf(", TLS peer %s (sha256 %s)", pin.Visible(r.TLSSubject), r.TLSSHA256)
		}
		return s, r, nil
	case gatelog.Task:
		s := fmt.Sprintf("%s call %s for %q became task %s (exec %s, rule %s", r.Tool, r.CallID, r.Caller, pin.Visible(r.TaskID), r.ExecID, r.Rule)
		if r.Reserved {
			s += ", reserved " + r.Cost.String()
		} else {
			s += ", charged " + r.Cost.String()
		}
		if r.Owner != "" {
			s += fmt.Sprintf(", owner %q", r.Owner)
		}
		if r.Expires != nil {
			s += ", expires " + trace.FormatTime(*r.Expires)
		}
		return s + ")", r, nil
	case gatelog.Relay:
		s := fmt.Sprintf("%s the upstream's %s for %q", r.Action, r.Method, r.Caller)
		if r.Origin != "" {
			s += " to " + pin.Visible(r.Origin)
		}
		if len(r.Tools) > 0 {
			s += fmt.Sprintf(", tools %v", r.Tools)
		}
		if r.Reason != "" {
			s += ": " + shorten(pin.Visible(r.Reason), 160)
		}
		return s, r, nil
	case gatelog.SharedLabels:
		ls := make([]string, len(r.Labels))
		for i, l := range r.Labels {
			ls[i] = pin.Visible(l.Label)
			if !l.Until.IsZero() {
				ls[i] += " until " + trace.FormatTime(l.Until)
			}
		}
		s := fmt.Sprintf("labels shared by another gate for %q: %s", r.Caller, strings.Join(ls, ", "))
		if r.Conversation != "" {
			s += fmt.Sprintf(" (conversation %q)", r.Conversation)
		}
		return s, r, nil
	case gatelog.Declassify:
		return fmt.Sprintf("declassified label %s of %q, by %q: %s", pin.Visible(r.Label), r.Caller, r.Approver, shorten(pin.Visible(r.Reason), 160)), r, nil
	case gatelog.Budget:
		s := fmt.Sprintf("budget %s for %q", r.Action, r.Caller)
		if r.Amount != 0 {
			s += " by " + r.Amount.String()
		}
		if r.Period != "" {
			s += ", period " + r.Period
		}
		return s + fmt.Sprintf(", by %q: %s", r.Approver, shorten(pin.Visible(r.Reason), 160)), r, nil
	case gatelog.Reload:
		return fmt.Sprintf("reloaded gateway sha256 %s, policy sha256 %s (added %v, removed %v, restarted %v)", r.GatewaySHA256, r.PolicySHA256, r.Added, r.Removed, r.Restarted), r, nil
	}
	return "", nil, fmt.Errorf("unexpected toolgate entry %T", v)
}
