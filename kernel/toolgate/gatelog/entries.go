package gatelog

import (
	"encoding/json"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
)

// The trace entry kinds the gate appends besides the kernel's and claims'.
const (
	// KindRefuse records a call refused before the kernel saw it: an
	// unknown tool, a cost that could not be computed, a call id already
	// open, or a human's denial.
	KindRefuse = "toolgate.refuse"
	// KindResult records how an allowed call ended.
	KindResult = "toolgate.result"
)

// Refuse is the payload of a KindRefuse entry: a call refused before
// the kernel saw it.
type Refuse struct {
	Session         string `json:"session"`
	Caller          string `json:"caller"`
	CallID          string `json:"call_id"`
	Tool            string `json:"tool"`
	Reason          string `json:"reason"` // unknown_tool, cost, duplicate_call, denied
	Explanation     string `json:"explanation"`
	ArgumentsSHA256 string `json:"arguments_sha256"`
	ArgumentsSize   int    `json:"arguments_size"`
	Approval        string `json:"approval,omitempty"` // the denied request
	// Rule is the rule that decided: "#" and its index in the policy's
	// tools, or "default"; RuleName its name; Condition the part of it
	// that refused (see toolgate.Ruling). Empty when no rule applied.
	Rule      string `json:"rule,omitempty"`
	RuleName  string `json:"rule_name,omitempty"`
	Condition string `json:"condition,omitempty"`
	// Definition is the pinned hash ("sha256:…", see KindPin) of the
	// tool's definition the call was decided against, when the host pins
	// definitions (toolgate.Call.Definition).
	Definition string `json:"definition,omitempty"`
	// Trace is the W3C trace id (32 lower-case hex digits) of the trace
	// the call was made in (toolgate.Call.Trace), when the host knew it:
	// it joins the log to the agent's and the server's traces.
	Trace string `json:"trace,omitempty"`
	// When is what the rules' conditions (a rule's "when": Cedar) saw
	// and answered for the call; nil when no rule with one was tried.
	When *When `json:"when,omitempty"`
}

// When is what a decision's conditions saw and answered: the input
// (toolgate.ConditionInput in its JSON form) and each rule's
// evaluation, in the order the rules were tried. The gate records it
// with the decision — the "when" member of a Refuse, a "when:" tag (this
// JSON after the prefix) on the kernel's execution or rejection — so
// that a replay evaluates the conditions again from it.
type When struct {
	Input       json.RawMessage  `json:"input"`
	Evaluations []WhenEvaluation `json:"evaluations"`
}

// WhenEvaluation is one rule's condition evaluated for a call.
type WhenEvaluation struct {
	// Rule is the rule's id: "#" and its index in the policy's tools.
	Rule string `json:"rule"`
	// Language names the condition's language ("cedar"); TextSHA256 is
	// the lower-case hex SHA-256 of its text, the policy's other
	// members being hashed with the policy.
	Language   string `json:"language"`
	TextSHA256 string `json:"text_sha256"`
	// Answer is "applies", "misses", "refuses" or "error".
	Answer string `json:"answer"`
	// Policies are the ids in the text that determined the answer (Cedar
	// policy ids); Error the evaluation's error.
	Policies []string `json:"policies,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// Result is the payload of a KindResult entry: how an allowed call
// ended. Costs are written as kernel.Cost writes them, exact decimal
// strings ("0.1").
type Result struct {
	Session string `json:"session"`
	Caller  string `json:"caller"`
	CallID  string `json:"call_id"`
	ExecID  string `json:"exec_id"`
	Tool    string `json:"tool"`
	OK      bool   `json:"ok"`
	// Error is the tool's failure, cut to the result text limit.
	Error        string `json:"error,omitempty"`
	OutputSHA256 string `json:"output_sha256"`
	OutputSize   int    `json:"output_size"`
	// OutputText holds the output's first bytes (at most the result text
	// limit, cut at a character boundary) when it is valid UTF-8,
	// OutputBase64 when it is not.
	OutputText   string      `json:"output_text,omitempty"`
	OutputBase64 string      `json:"output_base64,omitempty"`
	Truncated    bool        `json:"truncated,omitempty"`
	Charged      kernel.Cost `json:"charged"`
	Unpaid       kernel.Cost `json:"unpaid,omitempty"`
	Measured     bool        `json:"measured,omitempty"`
	Actual       kernel.Cost `json:"actual,omitempty"`
	Speculative  bool        `json:"speculative,omitempty"`
	Finding      string      `json:"finding,omitempty"`
	// Definition is the pinned hash of the tool's definition the call
	// ran against (toolgate.Call.Definition), when the host pins them.
	Definition string `json:"definition,omitempty"`
	// Trace is the W3C trace id of the call's trace (toolgate.Call.Trace),
	// as in Refuse.
	Trace string `json:"trace,omitempty"`
}

// The trace entry kinds of approvals answered out of band (an approval
// inbox): a request as it was asked, and a request or approval that
// expired.
const (
	// KindAsk records an approval request as the human is shown it
	// (Ask), with toolgate.WithDurableApprovals: what a restarted gate shows
	// again.
	KindAsk = "toolgate.ask"
	// KindExpire records a request, approval or denial that was not
	// used within toolgate.Policy.ApprovalTTL (Expire).
	KindExpire = "toolgate.expire"
)

// Ask is the payload of a KindAsk entry.
type Ask struct {
	Approval        string          `json:"approval"`
	Session         string          `json:"session"`
	Caller          string          `json:"caller"`
	Principal       string          `json:"principal,omitempty"` // see toolgate.ApprovalRequest.Principal
	CallID          string          `json:"call_id"`
	Tool            string          `json:"tool"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	Tier            claims.RiskTier `json:"tier"`
	Arguments       string          `json:"arguments"` // as shown: see toolgate.ApprovalRequest.Arguments
	Question        string          `json:"question"`
	Asked           time.Time       `json:"asked"`
	Expires         *time.Time      `json:"expires,omitempty"`
}

// Expire is the payload of a KindExpire entry: State is what
// expired — "waiting" (a request nobody answered), "approved" (an
// approval no call used) or "denied" (a denial no call was refused with).
type Expire struct {
	Approval        string          `json:"approval"`
	Session         string          `json:"session"`
	Caller          string          `json:"caller"`
	Tool            string          `json:"tool"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	Tier            claims.RiskTier `json:"tier"`
	State           string          `json:"state"`
	Asked           time.Time       `json:"asked"`
	Expires         time.Time       `json:"expires"`
}

// KindDeclassify records an approver clearing a flow label from a
// caller's session (toolgate.Gate.Declassify): a Declassify.
const KindDeclassify = "toolgate.declassify"

// Declassify is the payload of a KindDeclassify entry: Approver (a
// principal's key, or an approver name) cleared Label from Caller's
// session, for Reason.
type Declassify struct {
	Session  string `json:"session"`
	Caller   string `json:"caller"`
	Label    string `json:"label"`
	Approver string `json:"approver"`
	Reason   string `json:"reason"`
}

// KindRefuseAnswer records a human's answer the gate refused (a
// RefuseAnswer): one to no question it asked — forged, replayed, or
// brought back with another call than the one asked about — or one by
// a principal who may not give it (not an approver, an approver who
// answered already, the call's own principal approving a PRIVILEGE
// call). Such an answer changes no request.
const KindRefuseAnswer = "toolgate.refuse_answer"

// ConditionAnswer is the toolgate.Decision.Condition of a call Resume refused
// because the answer it came back with was refused (KindRefuseAnswer).
const ConditionAnswer = "answer"

// The reasons of a RefuseAnswer.
const (
	// AnswerUnasked: no question the gate asked waits for this answer —
	// none was asked for the call, or the request was answered and used
	// already (a replay), or the gate restarted and holds it no more.
	AnswerUnasked = "unasked"
	// AnswerOtherCall: the request was asked about another call (another
	// caller, tool, arguments or tier) than the one the answer came back
	// with.
	AnswerOtherCall = "other_call"
	// AnswerDecided: a denial of a request approved already.
	AnswerDecided = "decided"
	// AnswerNotApprover: the approver is none the request waits for.
	AnswerNotApprover = "not_an_approver"
	// AnswerAnsweredAlready: the principal or approver answered the
	// request already (one principal is one approver).
	AnswerAnsweredAlready = "answered_already"
	// AnswerSelfApproval: the call's own principal approving a PRIVILEGE
	// call, which toolgate.Policy.SelfApproval does not allow.
	AnswerSelfApproval = "self_approval"
)

// RefuseAnswer is the payload of a KindRefuseAnswer entry.
type RefuseAnswer struct {
	Session string `json:"session"`
	Caller  string `json:"caller"`
	// Approval is the request the answer named, "" when it named none.
	Approval string `json:"approval,omitempty"`
	// CallID, Tool and ArgumentsSHA256 describe the call the answer came
	// back with (toolgate.Gate.Resume); empty for an answer given through the gate's Approve,
	// ApproveAs, Deny or DenyAs.
	CallID          string `json:"call_id,omitempty"`
	Tool            string `json:"tool,omitempty"`
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	// Approver is who answered: the principal's key (ApproveAs, DenyAs,
	// Answer.By) or the approver name; Decision what they answered
	// (APPROVED, REJECTED). Both are empty for a call resumed without an
	// answer.
	Approver string `json:"approver,omitempty"`
	Decision string `json:"decision,omitempty"`
	// Reason is one of the Answer* reasons; Explanation says it in words.
	Reason      string `json:"reason"`
	Explanation string `json:"explanation"`
}

// The conditions a toolgate.Ruling names: which part of the rule decided.
const (
	ConditionMatch       = "match"        // the rule applied and nothing refused the call
	ConditionUnknownTool = "unknown_tool" // no rule matches the tool
	ConditionNoRule      = "no_rule"      // rules match the tool, but none admits the call
	ConditionArguments   = "arguments"    // the arguments cannot be read one way
	ConditionEffect      = "effect"       // a refusing rule
	ConditionRate        = "rate"         // the rule's window is full
	ConditionCost        = "cost"         // the rule's price could not be computed
	ConditionTier        = "tier"         // the rule's tier needs a human
	ConditionWhen        = "when"         // the rule's when condition forbids the call, or failed
	// "paths/<k>" and "flow/<k>" name a path condition or a flow entry.
)

// The trace entry kinds of tool definitions pinned (kernel/toolgate/pin):
// a definition trusted, one seen that differs from its pin, and a person's
// re-approval of a changed one. A hash is "sha256:" and the lower-case
// hex SHA-256 of the RFC 8785 canonical form of a tool's definition as
// the server listed it (or of a server's instructions as a JSON string).
const (
	// KindPin records the definitions a server's tools are pinned to: a
	// lock file loaded (source "lock"), or the first listing of a server
	// with no lock file (source "first_use", trust on first use).
	KindPin = "toolgate.pin"
	// KindDrift records a listing whose definition of a tool differs from
	// what the log last said of it (Drift.Change).
	KindDrift = "toolgate.drift"
	// KindRepin records a person's re-approval of a tool's changed (or
	// new) definition: calls then run against the new one.
	KindRepin = "toolgate.repin"
)

// Pin is the payload of a KindPin entry. It replaces every pin of the
// server: Tools holds each pinned tool's hash by name, Instructions the
// hash of the server's instructions ("" when it gave none).
type Pin struct {
	Server       string            `json:"server"`
	Source       string            `json:"source"` // "lock" or "first_use"
	Tools        map[string]string `json:"tools"`
	Instructions string            `json:"instructions,omitempty"`
	// Lock is "sha256:" and the hex SHA-256 of the lock file's bytes, for
	// source "lock".
	Lock string `json:"lock,omitempty"`
}

// Drift is the payload of a KindDrift entry: a listing showed Tool of
// Server at Seen while it is pinned at Pinned. Change is "changed" (both
// set, different), "new" (no pin), "removed" (the server no longer lists
// it: Seen empty), "restored" (listed again at its pinned hash) or
// "instructions" (the server's instructions; Tool empty).
type Drift struct {
	Server string `json:"server"`
	Tool   string `json:"tool,omitempty"`
	Change string `json:"change"`
	Pinned string `json:"pinned,omitempty"`
	Seen   string `json:"seen,omitempty"`
}

// Repin is the payload of a KindRepin entry: Approver re-pinned Tool of
// Server from Old ("" for a tool that had no pin) to New, for Reason.
// RequestedBy is the principal whose call asked for it, "" when none
// did; it is never the approver.
type Repin struct {
	Server      string `json:"server"`
	Tool        string `json:"tool"`
	Old         string `json:"old,omitempty"`
	New         string `json:"new"`
	Approver    string `json:"approver"`
	RequestedBy string `json:"requested_by,omitempty"`
	Reason      string `json:"reason"`
}

// KindBudget records an approver's change to one caller's budget that
// renews (toolgate.Policy.BudgetPeriod): a grant adds Amount to the
// budget of the period the entry's time falls in (of the rolling windows
// holding it), a reset forgives everything the caller spent and was
// granted before it. The entry's time is when it applies.
const KindBudget = "toolgate.budget"

// Budget is the payload of a KindBudget entry: Action is "grant" (Amount
// positive) or "reset" (no Amount); Approver names who changed the
// budget and Reason why; Period names the period it applied to, as the
// gate showed it.
type Budget struct {
	Session  string      `json:"session"`
	Caller   string      `json:"caller"`
	Action   string      `json:"action"`
	Amount   kernel.Cost `json:"amount,omitempty"`
	Approver string      `json:"approver"`
	Reason   string      `json:"reason"`
	Period   string      `json:"period,omitempty"`
}
