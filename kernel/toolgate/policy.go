package toolgate

import (
	"time"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// newestPolicyVersion is the newest version of the policy format this package
// reads (the file's "version"). Version 1 files load as they always
// have; version 2 adds rule names, principals, argument and path
// conditions, refusing rules, rate windows, labels and flows.
const newestPolicyVersion = 2

// policySchemaID is the $id of policy.schema.json.
const policySchemaID = "https://github.com/verity-go/verity/kernel/toolgate/policy.schema.json"

// maxPolicySize is the largest policy file ParsePolicy and LoadPolicy
// read, in bytes.
const maxPolicySize = 1 << 20

// maxPolicyCost is the largest cost a policy file may write:
// 999999999999999.999 units (15 integer digits, 3 decimals).
const maxPolicyCost kernel.Cost = 999_999_999_999_999_999

// maxPolicyWaiting is the largest max_waiting of a policy file.
const maxPolicyWaiting = 1 << 20

// maxResultTextLimit is the largest result_text_limit of a policy file:
// a trace entry's payload limit (trace.MaxPayloadLen), 16 MiB.
const maxResultTextLimit = 16 << 20

// maxSharedIDLen is the longest shared budget id in bytes,
// kernel/sqlbudget.MaxIDLen (a test keeps them equal).
const maxSharedIDLen = 256

// policyMaxSafeInt is 2^53−1: the largest n an at_most invariant may
// name, and the largest int a one_of value may be, so that every JSON
// reader reads the same number.
const policyMaxSafeInt = 1<<53 - 1

// ErrInvalidPolicy is wrapped by the *ValidationError of a policy file or
// a Policy that ParsePolicy, LoadPolicy or Policy.Compile refuse.
var ErrInvalidPolicy = errors.New("toolgate: invalid policy")

// Violation is one problem of a policy: an RFC 6901 JSON Pointer into the
// file ("/tools/2/cost", "" for the whole file), the rule broken (see
// ParsePolicy) and a message. It is the type every Verity validator
// reports (claims.Violation, contracts.Violation).
type Violation = violation.Violation

// ValidationError carries every violation of a policy, sorted by path
// (array indices numerically), then rule. errors.Is(err, ErrInvalidPolicy)
// holds for it; use errors.As to read the violations.
type ValidationError = violation.ValidationError

// The rules a policy Violation names. The schema says the first group
// too; the second group is what a schema cannot say; the third refuses
// the text as a whole, or (number) stops the reading.
const (
	policyRuleType           = violation.RuleType         // wrong JSON type
	policyRuleUnknownField   = violation.RuleUnknownField // a member the format does not define
	policyRuleRequired       = violation.RuleRequired     // a missing member, an empty string or list
	policyRuleEnum           = "enum"                     // a tier, unknown_tools, enforcement or approvers key outside its set
	policyRuleVersion        = "version"                  // version is not newestPolicyVersion
	policyRuleCost           = "cost"                     // not an exact decimal amount in [0, maxPolicyCost]
	policyRuleRange          = "range"                    // an integer outside its range
	policyRuleDuplicate      = "duplicate"                // an approver named twice for one tier
	policyRuleInvariantForm  = "invariant_form"           // not exactly one of at_most, at_most_each, within, one_of, matches
	policyRuleDefaultUnused  = "default_rule_unused"      // default_rule without "unknown_tools": "allow"
	policyRuleID             = "id"                       // a shared budget id with NUL or over 256 characters
	policyRuleMinCost        = "min_cost"                 // min_cost not positive, or a cost below it
	policyRuleBudget         = "budget"                   // budget below min_cost
	policyRuleGlob           = "glob"                     // match is not a path.Match pattern
	policyRuleDuplicateMatch = "duplicate_match"          // the same match as an earlier rule
	policyRuleShadowed       = "shadowed"                 // a tool name an earlier pattern already matches
	policyRuleRegex          = "regex"                    // a matches pattern that does not compile
	policyRuleDuplicateName  = "duplicate_name"           // two invariants with one name
	policyRuleBounds         = "bounds"                   // within with min above max
	policyRuleValue          = "value"                    // a one_of int beyond ±(2^53−1)
	policyRuleApprovers      = "approvers"                // a DELETE or PRIVILEGE rule whose tier approvers does not name
	policyRuleIDLength       = "id_length"                // a shared budget id over 256 bytes
	policyRuleSize           = "size"                     // a file over maxPolicySize
	policyRuleSyntax         = violation.RuleSyntax       // not one strict JSON text
	policyRuleDuplicateKey   = violation.RuleDuplicateKey // an object with a key twice
	policyRuleNumber         = "number"                   // a number literal over 100 characters or with an exponent beyond ±1000

	// Version 2's rules (all beyond what the schema says).
	policyRuleDuration      = "duration"            // a rate's per that is no Go duration, or outside [1ms, 366 days]
	policyRuleCostFrom      = "cost_from"           // cost_from on a rule without reserve
	policyRuleRuleName      = "rule_name"           // a rule name not ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$, or "default"
	policyRuleDuplicateRule = "duplicate_rule_name" // two rules with one name
	policyRuleArgSchema     = "argument_schema"     // an arguments schema that does not compile
	policyRulePointer       = "pointer"             // a path condition's argument that is no JSON Pointer
	policyRulePath          = "path"                // an under directory that is not absolute and plain
	policyRuleLabel         = "label"               // a label not ^[A-Za-z][A-Za-z0-9_.:-]{0,63}$
	policyRuleUnknownLabel  = "unknown_label"       // a label not declared, or a flow label no rule attaches
	policyRuleFlowTier      = "flow_tier"           // a tier on a flow entry that refuses
	policyRuleTierFromHints = "tier_from_hints"     // tier_from_hints beside a tier, or on a rule that refuses
	policyRuleLanguage      = "language"            // a when condition's language not registered on Policy.Conditions
	policyRuleCondition     = "condition"           // a when condition's text its language refuses (its error, located), or a file not read
	policyRuleWhenForm      = "when_form"           // a when condition with both text and file

	// self_approval's rule.
	policyRuleSelfApprovalUnused = "self_approval_unused" // self_approval with no PRIVILEGE rule or flow to apply to
)

// Policy is what a gate enforces, and the one description of a policy
// file, so that a gate can be configured with or without Go — each caller's budget, the least a
// call may cost, the tools' rules (names or path.Match patterns, the first
// match deciding), who approves DELETE and PRIVILEGE calls, the kernel's
// ready-made invariants over the call counters, and a shared budget for
// hosts that keep one in a database:
//
//	{
//	  "$schema": "https://github.com/verity-go/verity/kernel/toolgate/policy.schema.json",
//	  "version": 1,
//	  "budget": "10",
//	  "min_cost": "0.01",
//	  "tools": [
//	    {"match": "read_*", "cost": "0.01", "tier": "READ_ONLY"},
//	    {"match": "delete_*", "cost": "1", "tier": "DELETE"},
//	    {"match": "search", "cost": "2", "reserve": true, "refund_on_error": true}
//	  ],
//	  "invariants": [
//	    {"name": "at-most-3-deletes", "at_most": {"key": "calls/delete_file", "n": 3}},
//	    {"name": "each-tool-at-most-50", "at_most_each": {"prefix": "calls/", "n": 50}}
//	  ]
//	}
//
// Version 2 adds, on the entries of tools, a name, conditions that limit
// a rule to some calls (principals, an argument schema, path conditions),
// refusing rules, rate windows, labels and flows (see Rule and
// the package doc), and a top-level list of the labels in use:
//
//	{
//	  "version": 2, "budget": "10", "min_cost": "0.01",
//	  "labels": ["untrusted_input", "private_data"],
//	  "tools": [
//	    {"name": "no-secrets", "match": "read_*", "effect": "refuse", "reason": "secrets stay put",
//	     "paths": [{"argument": "/path", "under": ["/srv/data/secrets"]}]},
//	    {"name": "data", "match": "read_*", "cost": "0.01", "labels": ["private_data"],
//	     "paths": [{"argument": "/path", "under": ["/srv/data"]}], "rate": {"calls": 60, "per": "1m"}},
//	    {"name": "issues", "match": "get_issue", "cost": "0.01", "labels": ["untrusted_input"]},
//	    {"name": "sql-read", "match": "sql", "cost": "0.05", "principals": {"scopes": ["db:read"]},
//	     "arguments": {"properties": {"q": {"type": "string", "pattern": "^SELECT "}}, "required": ["q"]}},
//	    {"name": "pr", "match": "create_pull_request", "cost": "0.1",
//	     "flow": [{"after": ["untrusted_input", "private_data"], "effect": "refuse", "reason": "no leaks"}]}
//	  ]
//	}
//
// A version 1 file reads as it always has; Compile makes a file's rules
// ready to decide, and answers a linter's questions.
//
// policy.schema.json (PolicySchema) documents the format as a JSON Schema
// (draft 2020-12) for editors and other languages;
// testdata/policy/example.json is a complete example, a filesystem MCP
// server's policy. ParsePolicy and LoadPolicy read a file and
// MarshalJSON writes one; Compile checks a Policy, from a file or built
// in Go, and makes the Compiled form that New takes.
//
// The fields mirror the file's members (in parentheses). Costs are exact
// amounts of units, a decimal string ("0.01") or a JSON number, never
// rounded. Lists that are empty in the file are nil here.
type Policy struct {
	// Schema ("$schema") names the schema the file follows, for editors;
	// it is kept, not checked.
	Schema string
	// Version ("version", required in a file) is 1 or 2; a policy
	// built in Go may leave it 0, which means 2, the newest.
	Version int
	// Budget ("budget", required) is each caller's budget B0
	// (kernel.Config.Budget); at least MinCost.
	Budget kernel.Cost
	// BudgetPeriod ("budget_period") makes Budget, and the step limit
	// floor(budget/min_cost), renew: each caller may spend Budget per
	// period (a calendar day, week or month in a time zone, or any
	// rolling window of a length). Nil: Budget is for the caller's whole
	// life on the log. See BudgetPeriod.
	BudgetPeriod *BudgetPeriod
	// MinCost ("min_cost", required) is ε, the least a call may cost
	// (kernel.Config.MinActionCost); positive, and no cost of the policy
	// is below it. It also bounds how many calls a caller may make,
	// whatever they cost: the kernel's step limit is floor(budget/min_cost)
	// calls (budget 5 and min_cost 1 allow 5 calls even at a cost of 0.5
	// each), and a call beyond it is refused naming step_limit and that
	// quotient.
	MinCost kernel.Cost
	// AllowUnknown ("unknown_tools": "allow"; "refuse", the default, is
	// false) runs tools no rule matches under DefaultRule; by default they
	// are refused.
	AllowUnknown bool
	// DefaultRule ("default_rule") is the rule of unknown tools: required
	// when AllowUnknown, refused otherwise, and without a match or any
	// condition.
	DefaultRule *Rule
	// Approvers ("approvers") names who must approve calls of the tiers
	// needing approval (DELETE, PRIVILEGE, the only keys allowed; claims
	// Policy.Approvers): nil names DefaultApprover for both; present, a
	// tier some rule uses must be named. Each name of a tier must approve
	// (a "group:G" name: any one member of G, GroupPrefix). A tier that
	// names one group k times and nothing else ({"group": "ops",
	// "count": 2} in a file; at most 16) waits for k distinct members of
	// the group: one principal counts once however often it answers, the
	// self-approval rule applies to each, a denial by any member denies,
	// and the call runs once the k-th approval is recorded. Any other name
	// given twice is refused (duplicate).
	Approvers map[claims.RiskTier][]string
	// Tools ("tools") are the rules, in order: the first that applies to a
	// call decides.
	Tools []Rule
	// Invariants ("invariants") are checked over each caller's state.
	Invariants []InvariantSpec
	// ResultTextLimit ("result_text_limit") bounds how many bytes of a
	// result's output (and of its error) are recorded: 0 for 1024
	// bytes, -1 for the whole output, at most 16 MiB (trace.MaxPayloadLen). A result entry that would exceed
	// trace.MaxPayloadLen keeps the output's digest and size only.
	ResultTextLimit int
	// MaxWaiting ("max_waiting") bounds how many different calls of one
	// caller may wait for a human at once: 0 for 64, -1 for no
	// bound, at most 2^20. Beyond it a call that needs
	// approval is refused, so an agent cannot pile up requests nobody
	// answers. Deny clears them.
	MaxWaiting int
	// CheckResults ("check_results") runs the speculative firewall over
	// every result.
	CheckResults bool
	// ApprovalTimeout ("approval_timeout", a Go duration such as "5m")
	// is how long a host that waits for an answer from elsewhere (an
	// approval inbox: Gate.Await) holds a call that needs one before it
	// refuses it (Gate.Unanswered); in [1s, 24h], at most
	// ApprovalTTL when both are given. Zero: calls are not held.
	ApprovalTimeout time.Duration
	// ApprovalTTL ("approval_ttl", a Go duration) is how long a request,
	// and an approval or denial of it not yet used, lasts from when it
	// was asked: past it, it expires (a gatelog.KindExpire entry) and the call is
	// asked about again. In [1s, 366 days]; zero: never.
	ApprovalTTL time.Duration
	// SelfApproval ("self_approval") lets the principal a PRIVILEGE call
	// was made for approve it too. By default it may not: an approval of a
	// PRIVILEGE call by its own principal (by key, or for a group it
	// belongs to) is refused with ErrSelfApproval and recorded
	// (gatelog.KindRefuseAnswer). DELETE calls may always be approved by their
	// own principal.
	SelfApproval bool
	// ConversationLabels ("conversation_labels") keeps flow
	// labels per conversation: a call's labels are carried by the
	// conversation its host names (Call.Conversation), and a flow reads
	// the labels of the call's conversation and those attached with no
	// conversation — so a new conversation starts clean, while a caller's
	// labels stay the caller's by default. Trust: the host chooses the
	// handle (verity-mcp reads it from the request's _meta, which a model
	// cannot write, only the client), so this trusts the client not to
	// start a new conversation to escape a flow; use it only with clients
	// you trust, and label_ttl or Gate.Declassify otherwise. A caller
	// whose labels span more than 1024 conversations has the labels of
	// further ones attached caller-wide, to every conversation (stricter,
	// never looser).
	ConversationLabels bool
	// Timeout ("timeout", a Go duration in [1ms, 24h]) is how
	// long a host that runs the tools waits for one whose rule has no
	// Timeout; zero: as long as the caller waits. The gate times nothing
	// itself.
	Timeout time.Duration
	// Labels ("labels", version 2) declares the flow labels the rules may
	// use: when present, a label no entry names is refused (unknown_label).
	Labels []string
	// Shared ("shared_budget") is a budget every caller and every process
	// using it spends together. The gate does not open it: a host that
	// keeps shared budgets (kernel/sqlbudget's Store.OpenOrCreate(ctx,
	// Shared.ID, Shared.Limit)) passes it to New with WithSharedBudget.
	Shared *SharedBudgetSpec

	// GoInvariants are invariants written in Go (any kernel.Invariant;
	// kernel.AtMost, AtMostEach and friends are ready-made) over each
	// caller's counters: "calls" (all calls) and "calls/"+tool, counted
	// with kernel.Count. They have no file form: MarshalJSON refuses a
	// policy that has any rather than write a file that decides
	// otherwise (so does a Rule's CostFunc). New checks them with the
	// kernel's invariants.
	GoInvariants []kernel.Invariant

	// Conditions are the languages the rules' when conditions may be
	// written in (a rule's When names one; kernel/toolgate/cedar supplies
	// Cedar). They are the host's, not the file's: a file names a
	// language, Compile compiles each rule's text with it and refuses a
	// rule whose language is not here.
	Conditions []ConditionLanguage
}

// InvariantSpec is one entry of "invariants": a name and exactly one of
// the kernel's ready-made invariants (AtMost, AtMostEach, Within, OneOf,
// Matches), with how it is enforced and what the agent should do instead.
type InvariantSpec struct {
	// Name ("name", required) is unique in the policy.
	Name string
	// Description ("description"), when not empty, replaces the one the
	// ready-made invariant writes ("calls/delete_file is at most 3").
	Description string
	// Enforcement ("enforcement": "blocking", the default, or
	// "monitoring").
	Enforcement kernel.Enforcement
	// Suggestion ("suggestion") is told to the agent with a refusal.
	Suggestion string

	AtMost     *AtMostSpec     // "at_most": kernel.AtMost
	AtMostEach *AtMostEachSpec // "at_most_each": kernel.AtMostEach
	Within     *WithinSpec     // "within": kernel.Within
	OneOf      *OneOfSpec      // "one_of": kernel.OneOf
	Matches    *MatchesSpec    // "matches": kernel.Matches
}

// AtMostSpec is {"key": …, "n": …}: the int variable Key is at most N
// (an absent counter counts 0). N is in [0, 2^53−1].
type AtMostSpec struct {
	Key string
	N   int64
}

// AtMostEachSpec is {"prefix": …, "n": …}: every int variable whose name
// starts with Prefix is at most N ("calls/": each tool's counter).
type AtMostEachSpec struct {
	Prefix string
	N      int64
}

// WithinSpec is {"key": …, "min": …, "max": …}: the numeric variable Key
// lies in [Min, Max], Min ≤ Max.
type WithinSpec struct {
	Key      string
	Min, Max float64
}

// OneOfSpec is {"key": …, "values": […]}: the variable Key holds one of
// Values. Values are JSON scalars: strings, booleans, null, ints (a
// number literal without fraction or exponent, within ±(2^53−1)) and
// floats (with a fraction or an exponent: 1.0 is not the int 1).
type OneOfSpec struct {
	Key    string
	Values []value.Value
}

// MatchesSpec is {"key": …, "pattern": …}: the string variable Key
// matches Pattern, a Go (RE2) regular expression, anywhere unless
// anchored with ^…$.
type MatchesSpec struct {
	Key     string
	Pattern string
}

// SharedBudgetSpec is "shared_budget": {"id": …, "limit": …}. ID is 1 to
// 256 bytes of UTF-8 without NUL (a kernel/sqlbudget id); Limit is at
// least Policy.MinCost.
type SharedBudgetSpec struct {
	ID    string
	Limit kernel.Cost
	// Period ("period") makes the shared limit renew each calendar
	// period (BudgetPeriod.Calendar; a rolling Every is refused): the
	// period's spend is the kernel/sqlbudget row ID + "@" + the period's
	// key, so every process draws on the same row for the same period.
	Period *BudgetPeriod
}

// forms returns how many invariant forms s sets.
func (s InvariantSpec) forms() int {
	n := 0
	for _, set := range []bool{s.AtMost != nil, s.AtMostEach != nil, s.Within != nil, s.OneOf != nil, s.Matches != nil} {
		if set {
			n++
		}
	}
	return n
}

// Invariant returns the kernel invariant s describes. It fails, wrapping
// ErrInvalidPolicy, when s does not set exactly one form or its pattern
// does not compile; Policy.Compile reports everything else.
func (s InvariantSpec) Invariant() (kernel.Invariant, error) {
	if n := s.forms(); n != 1 {
		return kernel.Invariant{}, fmt.Errorf("%w: invariant %q sets %d of at_most, at_most_each, within, one_of, matches; it needs exactly one", ErrInvalidPolicy, s.Name, n)
	}
	var inv kernel.Invariant
	switch {
	case s.AtMost != nil:
		inv = kernel.AtMost(s.Name, s.AtMost.Key, s.AtMost.N)
	case s.AtMostEach != nil:
		inv = kernel.AtMostEach(s.Name, s.AtMostEach.Prefix, s.AtMostEach.N)
	case s.Within != nil:
		inv = kernel.Within(s.Name, s.Within.Key, s.Within.Min, s.Within.Max)
	case s.OneOf != nil:
		inv = kernel.OneOf(s.Name, s.OneOf.Key, s.OneOf.Values...)
	default:
		re, err := regexp.Compile(s.Matches.Pattern)
		if err != nil {
			return kernel.Invariant{}, fmt.Errorf("%w: invariant %q: %w", ErrInvalidPolicy, s.Name, err)
		}
		inv = kernel.Matches(s.Name, s.Matches.Key, re)
	}
	if s.Description != "" {
		inv.Description = s.Description
	}
	inv.Enforcement = s.Enforcement
	inv.Suggestion = s.Suggestion
	return inv, nil
}

// MarshalJSON writes p as a policy file (compact; costs as exact decimal
// strings; members at their defaults left out), which ParsePolicy reads
// back to an equal Policy when p is valid. It writes an invalid p too, as
// far as JSON can hold it: a float that is NaN or infinite cannot be
// written and fails, and invalid UTF-8 in a string is written as U+FFFD.
// A Version of 0 (a policy built in Go) is written as 2, the newest; a
// policy with a member only Go holds (a rule's CostFunc, GoInvariants) is
// refused rather than written as a file that decides otherwise.
func (p Policy) MarshalJSON() ([]byte, error) {
	if err := p.goOnly(); err != nil {
		return nil, err
	}
	f, err := p.file()
	if err != nil {
		return nil, err
	}
	b, err := marshalPlain(f)
	if err != nil {
		return nil, fmt.Errorf("toolgate: writing policy: %w", err)
	}
	return b, nil
}

// marshalPlain writes v as compact JSON without escaping <, > and &.
func marshalPlain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// goOnly reports the first member of p that only Go holds (a rule's
// CostFunc, GoInvariants): a file written without it would decide
// otherwise.
func (p Policy) goOnly() error {
	if len(p.GoInvariants) > 0 {
		return fmt.Errorf("toolgate: writing policy: GoInvariants (%s…) are Go only; a policy file holds invariants as Invariants", p.GoInvariants[0].Name)
	}
	for i, r := range p.Tools {
		if r.CostFunc != nil {
			return fmt.Errorf("toolgate: writing policy: /tools/%d has a CostFunc, which is Go only; a policy file prices a call by its cost", i)
		}
	}
	if p.DefaultRule != nil && p.DefaultRule.CostFunc != nil {
		return errors.New("toolgate: writing policy: /default_rule has a CostFunc, which is Go only; a policy file prices a call by its cost")
	}
	return nil
}

// policyScalarJSON writes a one_of value as ParsePolicy reads it: a float
// always with a fraction or an exponent (1 as 1.0, -0 as -0.0). Values
// that are not scalars are written in kernel's typed form, which
// ParsePolicy refuses.
func policyScalarJSON(v value.Value) ([]byte, error) {
	if v.Kind() == value.KindFloat {
		f, _ := v.AsFloat()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a JSON number", f)
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return []byte(s), nil
	}
	return v.MarshalJSON()
}

// unconditional reports whether the rule applies to every call of the
// tools it matches: only then can it shadow a later rule.
func (r Rule) unconditional() bool {
	return r.Principals == nil && len(r.Arguments) == 0 && len(r.Paths) == 0 && r.When == nil && r.Server == ""
}
