package toolgate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// Call is one tool call an agent proposes: which tool, the framework's id
// for the call, its JSON arguments as sent, and the caller it belongs to.
type Call struct {
	// Tool is the tool's name as the agent called it.
	Tool string
	// ID is the framework's id for this call (MCP has none, ADK's
	// function-call id, eino's tool-call id). Before assigns a UUIDv7 when
	// it is empty and returns the call with it; After finds the call by
	// (Caller, ID).
	ID string
	// Arguments are the call's arguments exactly as the agent sent them,
	// usually a JSON object. They are recorded (see kernel.Action.Input)
	// and their SHA-256 binds an approval to the call.
	Arguments []byte
	// Caller is the key of the session the call belongs to: an MCP
	// session, an agent session, a tenant. Each caller has its own kernel
	// session, budget and counters; "" is a caller like any other. When
	// it is empty, Before charges the call to Principal.Key() (and
	// returns the call with Caller set to it).
	Caller string
	// Principal is who the call is made for, as the host authenticated
	// them: rules may be limited to subjects, groups or scopes (see
	// version 2's "principals").
	Principal Principal
	// Definition, when the host pins tool definitions
	// (kernel/toolgate/pin), is the pinned hash of the tool's definition
	// the call is made against, as pin.State.Check returned it
	// ("sha256:…"). The gate records it on the call's decision — the
	// refusal entry, the kernel execution's tag "definition:<hash>", the
	// result entry — so that the log names the definition each decision
	// trusted. The gate does not check it: the host refuses a call to an
	// unpinned definition before Before.
	Definition string
	// HintedTier is the tier the annotations of the tool's pinned
	// definition imply, as the host read them from that definition (the
	// MCP proxy: READ_ONLY for readOnlyHint true, MODIFY for
	// destructiveHint false, else DELETE, MCP's default). A rule with
	// TierFromHints reads it, and only when Definition is set: a hint is
	// trusted only from a definition a person pinned.
	HintedTier claims.RiskTier
	// Conversation is the conversation the host says the call belongs to,
	// read only under Policy.ConversationLabels: the call's labels are
	// carried by it, and its flows read them (see there for the trust it
	// asks). A handle over 128 bytes is kept as "sha256:" and its hex
	// digest.
	Conversation string
	// Server names the upstream server the tool is on, when the host
	// serves several (a gateway: kernel/toolgate/gateway); "" for one.
	Server string
	// Trace is the W3C trace id (32 lower-case hex digits, not all zero)
	// of the distributed trace the call was made in — an MCP request's
	// traceparent — when the host knows it. The gate records it on the
	// call's refusal and result entries (their trace member) and as the
	// kernel execution's tag "trace:<id>", so that the log joins the
	// agent's and the server's traces. One that is not a trace id is not
	// recorded.
	Trace string
}

// ArgumentsDigest is the lower-case hex SHA-256 of the call's arguments,
// the digest an approval is bound to.
func (c Call) ArgumentsDigest() string {
	sum := sha256.Sum256(c.Arguments)
	return hex.EncodeToString(sum[:])
}

// Verdict is the answer to "may the call run?": a Ruling's (the policy's
// alone) and a Decision's (the gate's, final).
type Verdict uint8

const (
	// Allow: the call was recorded as an execution; run the tool, then
	// call After.
	Allow Verdict = iota + 1
	// Refuse: the call must not run; Decision.Explanation says why, in
	// one line the model can read.
	Refuse
	// AskApproval: the call's risk tier needs a human. Ask them
	// (Decision.Approval.Question), record the answer with Approve or
	// Deny, then call Before again with the same call.
	AskApproval
)

// String returns "allow", "refuse" or "ask_approval".
func (v Verdict) String() string {
	switch v {
	case Allow:
		return "allow"
	case Refuse:
		return "refuse"
	case AskApproval:
		return "ask_approval"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// Decision is the gate's answer to the host for a call (Before, Resume,
// Unanswered): the call's Ruling carried through its life, with the final
// Verdict, recorded on the log before it is returned.
type Decision struct {
	Verdict Verdict
	// Call is the call decided on, its ID filled in.
	Call Call
	// Explanation says why a call is refused, or what the human is
	// asked, in one stable line. Empty when the call is allowed.
	Explanation string
	// ExecID is the kernel execution id of an allowed call.
	ExecID string
	// Seq is the trace entry that recorded the decision: the kernel's
	// execution or rejection, the gate's refusal, or, for AskApproval,
	// the claims evaluation that made the request (a call that asks
	// again while the request waits names that same entry).
	Seq uint64
	// Reserved: the tool's cost is known afterwards; Before charged an
	// upper bound that After settles.
	Reserved bool
	// Cost is what Before charged an allowed call: its rule's cost, or
	// the upper bound of a reserved one. Zero unless allowed.
	Cost kernel.Cost
	// ApprovalID names the approval an allowed call relied on.
	ApprovalID string
	// Approval is the request to put to a human (AskApproval only).
	Approval *ApprovalRequest
	// Rule is the rule that decided (Found false when no rule applies to
	// the tool); Condition the part of the decision that did: one of the
	// Condition constants, "paths/<k>", "flow/<k>", "approval",
	// "call_id" or "kernel" (the kernel's budget, step limit or
	// invariants; or, for a budget that renews, the period's budget or
	// step limit: a gatelog.KindRefuse whose reason is "budget" or
	// "step_limit").
	Rule      RuleRef
	Condition string

	when *gatelog.When // what the rules' when conditions answered, recorded with a refusal
}

// ApprovalRequest is a call waiting for a human. It is bound to the
// caller, the tool, the arguments' digest and the tier: the approval it
// leads to lets exactly that call run, once, while it needs that tier.
type ApprovalRequest struct {
	// ID identifies the request (it is the claims bundle's id); give it
	// to Approve or Deny.
	ID              string
	Caller          string
	Tool            string
	ArgumentsDigest string
	Tier            claims.RiskTier
	// Principal is the key (Principal.Key) of the principal the call was
	// made for, "" for none: who may not approve a PRIVILEGE call unless
	// Policy.SelfApproval.
	Principal string
	// Awaiting lists the approvers who have not decided yet; a k-of-n
	// group ("group:ops" named k times in Policy.Approvers) is named once
	// for each approval it still owes.
	Awaiting []string
	// Question is the sentence to put to the human.
	Question string
	// Arguments are the call's arguments as Question shows them: compact
	// JSON, in full, invisible characters escaped.
	Arguments string
	// Asked is when the gate asked; Expires when the request (or its
	// answer, not yet used) expires: zero without Policy.ApprovalTTL.
	Asked, Expires time.Time
}

// Result is what a tool returned, reported to After.
type Result struct {
	// Output is the tool's output as returned (JSON or text). The gate
	// records its SHA-256, its size and at most Policy.ResultTextLimit
	// bytes of it.
	Output []byte
	// Err is the tool's failure, nil when it succeeded.
	Err error
	// Actual is the measured cost of the call, when Measured is set. A
	// reserved call is settled at Actual (at its reservation when not
	// measured); a fixed-cost call measured below its cost is refunded
	// the difference.
	Actual   kernel.Cost
	Measured bool
}

// Outcome is After's account of a finished call.
type Outcome struct {
	ExecID string
	// Charged is what the call costs in the end, after any settlement or
	// refund.
	Charged kernel.Cost
	// Unpaid is the part of a measured cost above the reservation that
	// the budget had no room for (After then returns kernel.ErrOverrun
	// too): recorded, never hidden, never charged.
	Unpaid kernel.Cost
	// Speculative reports that result checking found a speculative
	// marker in the output (Finding says where): the output must not be
	// stored as grounded evidence.
	Speculative bool
	Finding     string
	// Seq is the toolgate.result entry that recorded the outcome.
	Seq uint64
}

// Rule is what the gate knows of a tool: which calls it applies to, what
// a call costs, how risky it is, and what to do with its result. It is
// an entry of a policy's "tools" (Policy.Tools), or its "default_rule"
// without Match and conditions; the file's member of each field is in
// parentheses. Version 2's members are Name and those after it.
type Rule struct {
	// Match ("match", required in tools) is the tool's name, or a pattern
	// of path.Match ("fs_*", "db_?elete"). The first rule of Policy.Tools
	// that applies to a call decides for it.
	Match string
	// Description ("description") says what the tools do.
	Description string
	// Cost ("cost", required unless the rule refuses) is what one call
	// costs (at least Policy.MinCost). With Reserve, it is the upper bound
	// charged before the call and settled afterwards at the measured cost.
	Cost kernel.Cost
	// CostFunc, when set, prices a call from its arguments instead of
	// Cost. An error refuses the call. It is Go only: no file holds it,
	// and Policy.MarshalJSON refuses a rule that has one.
	CostFunc func(Call) (kernel.Cost, error)
	// Reserve ("reserve"): the cost is known only afterwards (After's
	// Result.Actual).
	Reserve bool
	// Tier ("tier") is the call's risk tier (claims.TierReadOnly when
	// empty). claims.TierDelete and claims.TierPrivilege need a human's
	// approval.
	Tier claims.RiskTier
	// RefundOnError ("refund_on_error") gives a failed call's charge back
	// (a failed call still counts towards the per-tool counters).
	RefundOnError bool
	// CheckResult ("check_result") runs the speculative firewall over the
	// call's output (see Outcome.Speculative); Policy.CheckResults turns
	// it on for all.
	CheckResult bool
	// TierFromHints ("tier_from_hints") takes the call's tier from the
	// annotations of the tool's pinned definition (Call.HintedTier) instead
	// of Tier, which it excludes (a tier the policy names overrides every
	// hint): a call with no pinned definition, or whose definition gives
	// no tier, is DELETE, so it is asked about, never trusted.
	TierFromHints bool
	// Timeout ("timeout", a Go duration in [1ms, 24h]) is how
	// long a host that runs the tool (the MCP proxy) waits for it;
	// Policy.Timeout when zero. The gate itself times nothing: the host
	// reports a call that timed out to After as failed.
	Timeout time.Duration
	// CostFrom ("cost_from", with Reserve only) names the figure of the
	// tool's result the call is settled at: a JSON Pointer into the
	// result's structuredContent or _meta (ParseCostPointer). The gate
	// reads no result: the host measures it (CostPointer.Measure) and
	// reports Result.Actual.
	CostFrom string

	// Name ("name") names the rule in decisions, explanations and window
	// keys (`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`, unique, and not
	// "default", the default rule's id); without it the rule is named by
	// its index ("#2").
	Name string
	// Principals ("principals": {"issuers", "subjects", "groups",
	// "scopes"}), when set, limits the rule to calls whose principal it
	// admits; the rule does not apply to the others.
	Principals *PrincipalCondition
	// Arguments ("arguments"), when set, is a JSON Schema (draft 2020-12)
	// the call's arguments must satisfy for the rule to apply. It is
	// compiled once, by Compile.
	Arguments json.RawMessage
	// Paths ("paths": [{"argument", "under", "case_insensitive"}]) are
	// conditions on path arguments, all of which must hold for the rule
	// to apply (see PathCondition).
	Paths []PathCondition
	// Effect ("effect": "allow" or "refuse") is EffectAllow (the zero
	// value) or EffectRefuse: a call the rule applies to is refused, with
	// Reason ("reason"), so that rules placed before others make
	// deny-lists.
	Effect Effect
	Reason string
	// Rate ("rate": {"calls", "per": a Go duration such as "1m", "scope":
	// "tool" or "rule"}), when set, bounds how many calls of each caller
	// the rule allows in a sliding window.
	Rate *Rate
	// Labels ("labels") are attached to the caller's session by every
	// call the rule allows (see Snapshot).
	Labels []string
	// LabelTTL ("label_ttl", version 2, a Go duration in [1s, 366
	// days], with Labels) is how long the labels the rule attaches last:
	// a call's labels leave the caller's session exactly LabelTTL after the
	// call's recorded time (its kernel entry's), unless a later call
	// attached them again (counted from that one) or a rule without
	// LabelTTL did (for good). Zero: for good. Replay computes the same
	// from the recorded times.
	LabelTTL time.Duration
	// Flow ("flow": [{"after", "effect": "refuse" or "ask", "reason",
	// "tier"}]) refuses a call, or asks a human about it, once given
	// labels have been seen in the caller's session; the first entry
	// whose labels were all seen decides.
	Flow []FlowRule
	// When ("when": {"language", "text"}) is a condition in another
	// language (Cedar) that must permit a call for the rule to apply,
	// and may refuse it at the rule (see WhenCondition).
	When *WhenCondition
	// Server ("server"), when set, is a path.Match pattern ("github",
	// "team-*") on the name of the upstream server the call is on
	// (Call.Server, a gateway's: kernel/toolgate/gateway): the rule applies
	// only to calls on a server it matches. A call whose Server is "" (a
	// host with one upstream) never matches a rule that names a server.
	Server string

	// schema is Arguments as ParsePolicy compiled it, so that Compile
	// compiles each schema of a file once; it is used only while
	// Arguments still hold the text it was compiled from.
	schema *argumentSchema
}

// argumentSchema is an argument schema compiled from raw.
type argumentSchema struct {
	raw json.RawMessage
	s   *jsonschema.Schema
}

// Effect is what a rule does with the calls it applies to.
type Effect uint8

const (
	// EffectAllow: the call goes on to the rule's flow, rate, tier and
	// the kernel's checks.
	EffectAllow Effect = iota
	// EffectRefuse: the call is refused with the rule's reason.
	EffectRefuse
)

// String returns "allow" or "refuse".
func (e Effect) String() string {
	if e == EffectRefuse {
		return "refuse"
	}
	return "allow"
}

// PrincipalCondition admits a call's principal when every list given
// admits it: its issuer is one of Issuers, its subject one of Subjects,
// it is in at least one of Groups, and it holds every one of Scopes. An
// empty list admits everyone.
type PrincipalCondition struct {
	Issuers, Subjects, Groups, Scopes []string
}

// admits reports whether the condition admits p.
func (pc PrincipalCondition) admits(p Principal) bool {
	if len(pc.Issuers) > 0 && !slices.Contains(pc.Issuers, p.Issuer) {
		return false
	}
	if len(pc.Subjects) > 0 && !slices.Contains(pc.Subjects, p.Subject) {
		return false
	}
	if len(pc.Groups) > 0 && !slices.ContainsFunc(pc.Groups, func(g string) bool { return slices.Contains(p.Groups, g) }) {
		return false
	}
	for _, s := range pc.Scopes {
		if !slices.Contains(p.Scopes, s) {
			return false
		}
	}
	return true
}

// RateScope says what one window of a Rate counts.
type RateScope string

const (
	// RateScopeTool: each tool the rule matches has its own window.
	RateScopeTool RateScope = "tool"
	// RateScopeRule: all the rule's tools share one window.
	RateScopeRule RateScope = "rule"
)

// Rate is at most Calls calls of one caller in any window of length Per
// ending at a call's recorded time (the window (at-Per, at]); calls
// recorded after at, when the clock stepped back, count too.
type Rate struct {
	Calls int
	Per   time.Duration
	Scope RateScope // RateScopeTool when empty
}

// FlowRule is an entry of Rule.Flow: once every label of After has been
// seen in the caller's session, a call the rule applies to is refused
// (with Reason), or, with Ask, needs a human's approval at Tier
// (claims.TierPrivilege when empty).
type FlowRule struct {
	After  []string
	Ask    bool
	Reason string
	Tier   claims.RiskTier
}

// matches reports whether the rule applies to tool. A malformed pattern
// matches nothing (Compile refuses it first).
func (r Rule) matches(tool string) bool {
	if r.Match == tool {
		return true
	}
	ok, err := path.Match(r.Match, tool)
	return err == nil && ok
}

// price returns the rule's cost for c.
func (r Rule) price(c Call) (kernel.Cost, error) {
	if r.CostFunc != nil {
		return r.CostFunc(c)
	}
	return r.Cost, nil
}

// DefaultApprover is who approves DELETE and PRIVILEGE calls when
// Policy.Approvers is nil: the human at the client.
const DefaultApprover = "human"

// defaultMaxWaiting is how many calls of one caller may wait for a human
// at once by default.
const defaultMaxWaiting = 64

// defaultResultTextLimit is how many bytes of a result's output are
// recorded by default.
const defaultResultTextLimit = 1024
