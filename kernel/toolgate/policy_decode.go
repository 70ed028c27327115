package toolgate

import (
	"bytes"
	_ "embed" // the policy schema
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/osfile"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// ParsePolicy reads a policy file. Nothing is guessed or rounded, and a
// file is refused with every problem it has, as one *ValidationError
// wrapping ErrInvalidPolicy, each Violation naming where (a JSON Pointer
// into the file) and which rule:
//
//   - The text: at most 1 MiB (size); one strict JSON text —
//     valid UTF-8 (a leading byte order mark is skipped), nothing after
//     it, no integer a double would round, nesting at most 512 deep
//     (syntax); no object with a key twice, compared after unescaping
//     (duplicate_key). These refuse the file as a whole, at path "". No
//     number literal where a number is read (a cost, an integer, a bound,
//     a one_of value, an argument schema) over 100 characters or with an
//     exponent beyond ±1000 (number): this stops the reading too.
//   - The shape, which policy.schema.json says too: JSON types (type),
//     no member the format does not define (unknown_field), required
//     members, non-empty names, keys and lists (required), tiers
//     (READ_ONLY, WRITE_LIMITED, MODIFY, DELETE, PRIVILEGE), unknown_tools,
//     enforcement and the approvers' tiers (DELETE, PRIVILEGE) spelled
//     exactly (enum), version (version), costs (cost: a decimal string
//     such as "0.01" or a JSON number, a whole number of thousandths of a
//     unit, at most 999999999999999.999), integers (range: n in [0, 2^53−1],
//     result_text_limit in [-1, 16 MiB], max_waiting in [-1,
//     2^20]), an approver named
//     twice (duplicate), exactly one form per invariant (invariant_form),
//     default_rule present exactly when unknown_tools is "allow"
//     (required, default_rule_unused), a shared budget id without NUL and
//     at most 256 characters (id).
//   - What a schema cannot say: min_cost positive and every cost at least
//     min_cost (min_cost), budget at least min_cost (budget), every match
//     a path.Match pattern (glob), no match repeated (duplicate_match), no
//     tool name an earlier pattern already matches, so that every rule can
//     decide for some tool (shadowed), every matches pattern an RE2
//     regular expression (regex), invariant names unique (duplicate_name),
//     within's min at most its max (bounds), one_of ints within
//     ±(2^53−1) (value), approvers naming every tier a DELETE or
//     PRIVILEGE rule uses when approvers is present (approvers), a shared
//     budget id at most 256 bytes (id_length); approval_timeout a Go
//     duration in [1s, 24h] and approval_ttl one in [1s, 366 days], the
//     timeout at most the ttl (duration); timeout, the policy's and a
//     rule's, a Go duration in [1ms, 24h] (duration); cost_from only on
//     a reserved rule (cost_from) and a JSON Pointer into the result's
//     structuredContent or _meta (pointer).
//   - Version 2's members, beyond their shape (which the schema says,
//     with the first group): rule names ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$
//     (rule_name), unique (duplicate_rule_name); argument schemas that
//     compile (argument_schema); path conditions whose argument is a JSON
//     Pointer (pointer) and whose directories are absolute, plain paths
//     (path); rate windows a Go duration in [1ms, 366 days] long
//     (duration); labels ^[A-Za-z][A-Za-z0-9_.:-]{0,63}$ (label), declared
//     when labels is present, and, when it is not, every flow label
//     attached by some rule (unknown_label); a rule's server a path.Match
//     pattern (glob); a tier only on a flow that
//     asks (flow_tier); approvers for the tier a flow asks at (approvers).
//     In a version 1 file these members are unknown (unknown_field).
//
// A problem inside a member that is already wrong is not reported again
// (a rule that is not an object reports no missing cost). The file is
// read once, into typed structs, by the strict JSON reader every Verity
// decoder uses; the schema is not run, but the reader says what it says:
// a file the schema accepts has no violation of the second group, and the
// other way round (TestTypedPolicyReaderAgreesWithSchema).
func ParsePolicy(data []byte) (Policy, error) {
	return parsePolicy(data, "policy")
}

// LoadPolicy reads the policy file at path (see ParsePolicy). A path that
// is not a regular file (a named pipe, a device, a directory) is refused
// without blocking, with an error saying what it is. An
// error reading the file is returned as it is; a refused file is a
// *ValidationError wrapping ErrInvalidPolicy whose message names the path.
func LoadPolicy(path string) (Policy, error) {
	// Only a regular file: a FIFO or a device would block the read or
	// never end it.
	f, err := osfile.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		return Policy{}, fmt.Errorf("toolgate: reading policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicySize+1))
	if err != nil {
		return Policy{}, fmt.Errorf("toolgate: reading policy: %w", err)
	}
	p, err := parsePolicy(data, "policy "+path)
	if err != nil {
		return Policy{}, err
	}
	return p, p.readWhenFiles(path)
}

// UnmarshalJSON reads p with ParsePolicy, so a Policy inside another
// JSON document is checked the same way. JSON null leaves p as it is, as
// encoding/json does for other types.
func (p *Policy) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	q, err := ParsePolicy(data)
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// PolicySchema returns policy.schema.json, the JSON Schema of policy
// files (draft 2020-12, $id
// https://github.com/verity-go/verity/kernel/toolgate/policy.schema.json).
func PolicySchema() []byte { return bytes.Clone(policySchemaText) }

//go:embed policy.schema.json
var policySchemaText []byte

func parsePolicy(data []byte, subject string) (Policy, error) {
	p, vs := checkPolicy(data)
	if len(vs) > 0 {
		return Policy{}, violation.New("toolgate", subject, vs, ErrInvalidPolicy)
	}
	return p, nil
}

// policyBOM is the UTF-8 byte order mark some editors write first; it is
// skipped (RFC 8259 §8.1 lets a parser ignore it).
var policyBOM = []byte("\xef\xbb\xbf")

// checkPolicy reads data and returns the policy with every violation
// found, sorted; the policy is meaningful only without violations.
//
// The file is read once, by internal/strictjson, into the tagged structs
// below (policyFile and its members): they say the shape that
// policy.schema.json says, and the readers of costs, integers, enums,
// durations and lists say the rest of it, each reporting at its JSON
// Pointer. Policy.violations then checks what a schema cannot say, and
// compileSchemas that each argument schema compiles (keeping it for
// Compile). The
// schema itself is not run: TestTypedPolicyReaderAgreesWithSchema holds
// the two to the same acceptance on every file.
func checkPolicy(data []byte) (Policy, []Violation) {
	if len(data) > maxPolicySize {
		return Policy{}, []Violation{{Rule: policyRuleSize,
			Message: fmt.Sprintf("the file is over %d bytes", maxPolicySize)}}
	}
	var f policyFile
	var decoded []Violation
	if err := strictjson.Unmarshal(bytes.TrimPrefix(data, policyBOM), &f); err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) { // unreachable: f is a pointer to a struct
			return Policy{}, []Violation{{Rule: policyRuleSyntax, Message: err.Error()}}
		}
		decoded = se.Violations()
		var syn *canon.SyntaxError
		if errors.As(err, &syn) {
			// Not one strict JSON text: refused as a whole.
			return Policy{}, decoded
		}
		// A number literal too long to read exactly stops the reading.
		if numbers := slices.DeleteFunc(slices.Clone(decoded), func(v Violation) bool { return v.Rule != policyRuleNumber }); len(numbers) > 0 {
			violation.Sort(numbers)
			return Policy{}, numbers
		}
	}
	p, more, unread := f.policy(decoded)
	if len(unread) > 0 {
		// What a version 1 file has of version 2 is reported once, as
		// unknown, not for what it holds.
		decoded = slices.DeleteFunc(decoded, func(v Violation) bool {
			return slices.ContainsFunc(unread, func(at string) bool { return policyUnder(at, v.Path) })
		})
	}
	decoded = append(decoded, more...)
	checked := append(p.violations(decoded), p.compileSchemas(decoded)...)
	all := decoded
	for _, v := range checked {
		// A member that did not decode is reported once, by the decoder.
		if !slices.ContainsFunc(decoded, func(u Violation) bool { return policyUnder(u.Path, v.Path) }) {
			all = append(all, v)
		}
	}
	violation.Sort(all)
	return p, slices.Compact(all)
}

// policyUnder reports whether pointer p is at or under pointer at: p is
// at, or at is "" (the whole file), or p starts with at + "/".
func policyUnder(at, p string) bool {
	return p == at || at == "" || strings.HasPrefix(p, at+"/")
}

// policyCheckNumbers reports number literals too long or with too large
// an exponent to be read exactly at small cost (a big.Rat of 10^1000000
// is slow, and math/big refuses larger exponents).
func policyCheckNumbers(v any, at string, out *[]Violation) {
	switch x := v.(type) {
	case json.Number:
		if !policyNumberOK(string(x)) {
			*out = append(*out, Violation{Path: at, Rule: policyRuleNumber,
				Message: "a number literal of over 100 characters or with an exponent beyond ±1000"})
		}
	case []any:
		for i, it := range x {
			policyCheckNumbers(it, violation.Index(at, i), out)
		}
	case map[string]any:
		for k, it := range x {
			policyCheckNumbers(it, violation.Join(at, k), out)
		}
	}
}

func policyNumberOK(s string) bool {
	if len(s) > 100 {
		return false
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		return err == nil && -1000 <= e && e <= 1000
	}
	return true
}

// rat reads a number literal exactly (policyCheckNumbers has bounded it).
func policyRat(n json.Number) (*big.Rat, bool) {
	return new(big.Rat).SetString(string(n))
}

// policyCostString reports whether s is a cost string the schema allows,
// one its pattern ^(0|[1-9][0-9]{0,14})(\.[0-9]{1,3}0*)?$ matches: a
// plain decimal, up to 15 integer digits, whole thousandths (trailing
// zeros after them are fine).
func policyCostString(s string) bool {
	digit := func(i int) bool { return i < len(s) && '0' <= s[i] && s[i] <= '9' }
	i := 1
	switch {
	case s == "" || !digit(0):
		return false
	case s[0] != '0':
		for i < 15 && digit(i) {
			i++
		}
	}
	if i == len(s) {
		return true
	}
	if s[i] != '.' {
		return false
	}
	i++
	for n := 0; n < 3 && digit(i); n++ {
		i++
	}
	if s[i-1] == '.' {
		return false
	}
	for i < len(s) && s[i] == '0' {
		i++
	}
	return i == len(s)
}

var (
	policyThousand = big.NewRat(1000, 1)
	policyMaxRat   = new(big.Rat).SetFrac64(int64(maxPolicyCost), 1000)
)

// policyShow writes a JSON value briefly for a message.
func policyShow(v any) string {
	switch x := v.(type) {
	case string:
		if utf8.RuneCountInString(x) > 40 {
			x = string([]rune(x)[:40]) + "…"
		}
		return strconv.Quote(x)
	case json.Number:
		return string(x)
	}
	return strictjson.KindOf(v).String()
}

var policyTiers = []string{string(claims.TierReadOnly), string(claims.TierWriteLimited), string(claims.TierModify),
	string(claims.TierDelete), string(claims.TierPrivilege)}

// policyNumberMessage is the number rule's wording.
const policyNumberMessage = "a number literal of over 100 characters or with an exponent beyond ±1000"

// policyFile is a policy file's members, in the order MarshalJSON writes
// them: ParsePolicy reads a file into it (strictjson: the tags without
// omitempty or omitzero are required), policy turns it into a Policy, and
// Policy.file makes one to write (encoding/json: members at their zero
// value are left out). Each typed member reads and writes its own form.
type policyFile struct {
	Schema          string                       `json:"$schema,omitempty"`
	Version         policyVersion                `json:"version"`
	Budget          policyCost                   `json:"budget"`
	MinCost         policyCost                   `json:"min_cost"`
	BudgetPeriod    present[periodWire]          `json:"budget_period,omitzero"`
	UnknownTools    policyEnum[unknownToolsEnum] `json:"unknown_tools,omitzero"`
	DefaultRule     present[ruleCommon]          `json:"default_rule,omitzero"`
	Approvers       approversWire                `json:"approvers,omitzero"`
	Tools           []*present[ruleWire]         `json:"tools,omitempty"` // nil for null (refused)
	Invariants      []invariantWire              `json:"invariants,omitempty"`
	ResultTextLimit policyInt[textLimitRange]    `json:"result_text_limit,omitzero"`
	MaxWaiting      policyInt[waitingRange]      `json:"max_waiting,omitzero"`
	CheckResults    bool                         `json:"check_results,omitempty"`
	ApprovalTimeout policyDuration               `json:"approval_timeout,omitzero"`
	ApprovalTTL     policyDuration               `json:"approval_ttl,omitzero"`
	SelfApproval    bool                         `json:"self_approval,omitempty"`
	ConvLabels      bool                         `json:"conversation_labels,omitempty"`
	Timeout         policyDuration               `json:"timeout,omitzero"`
	Shared          present[sharedWire]          `json:"shared_budget,omitzero"`
	Labels          present[names]               `json:"labels,omitzero"` // version 2
}

// ruleCommon are the members of the default rule, which every rule has.
type ruleCommon struct {
	Description   string               `json:"description,omitempty"`
	Cost          policyCost           `json:"cost,omitzero"` // required unless the rule refuses
	Reserve       bool                 `json:"reserve,omitempty"`
	Tier          policyEnum[tierEnum] `json:"tier,omitzero"`
	RefundOnError bool                 `json:"refund_on_error,omitempty"`
	CheckResult   bool                 `json:"check_result,omitempty"`
	TierFromHints bool                 `json:"tier_from_hints,omitempty"`
	Timeout       policyDuration       `json:"timeout,omitzero"`
	CostFrom      string               `json:"cost_from,omitempty"`
}

// ruleWire is an entry of tools; its version 2 members are read in any
// file, and policy reports them as unknown in a version 1 file.
type ruleWire struct {
	Match string `json:"match"`
	ruleCommon
	Name       present[string]             `json:"name,omitzero"`
	Principals policyPrincipals            `json:"principals,omitzero"`
	Arguments  policyArguments             `json:"arguments,omitzero"`
	Paths      present[nonEmpty[pathWire]] `json:"paths,omitzero"`
	Effect     policyEnum[effectEnum]      `json:"effect,omitzero"`
	Reason     present[string]             `json:"reason,omitzero"`
	Rate       present[rateWire]           `json:"rate,omitzero"`
	Labels     present[names]              `json:"labels,omitzero"`
	LabelTTL   policyDuration              `json:"label_ttl,omitzero"`
	Flow       present[nonEmpty[flowWire]] `json:"flow,omitzero"`
	When       present[whenWire]           `json:"when,omitzero"`
	Server     present[string]             `json:"server,omitzero"`
}

// whenWire is a rule's when condition (WhenCondition).
type whenWire struct {
	Language string          `json:"language"`
	Text     present[string] `json:"text,omitzero"`
	File     present[string] `json:"file,omitzero"`
}

type principalsWire struct {
	Issuers  names `json:"issuers,omitempty"`
	Subjects names `json:"subjects,omitempty"`
	Groups   names `json:"groups,omitempty"`
	Scopes   names `json:"scopes,omitempty"`
}

type pathWire struct {
	Argument        string `json:"argument"`
	Under           names  `json:"under"`
	CaseInsensitive bool   `json:"case_insensitive,omitempty"`
}

type rateWire struct {
	Calls policyInt[callsRange]     `json:"calls"`
	Per   policyDuration            `json:"per"`
	Scope policyEnum[rateScopeEnum] `json:"scope,omitzero"`
}

type flowWire struct {
	After  names                      `json:"after"`
	Effect policyEnum[flowEffectEnum] `json:"effect"`
	Reason string                     `json:"reason,omitempty"`
	Tier   policyEnum[flowTierEnum]   `json:"tier,omitzero"`
}

type invariantWire struct {
	Name        string                      `json:"name"`
	Description string                      `json:"description,omitempty"`
	Enforcement policyEnum[enforcementEnum] `json:"enforcement,omitzero"`
	Suggestion  string                      `json:"suggestion,omitempty"`
	AtMost      present[atMostWire]         `json:"at_most,omitzero"`
	AtMostEach  present[atMostEachWire]     `json:"at_most_each,omitzero"`
	Within      present[withinWire]         `json:"within,omitzero"`
	OneOf       present[oneOfWire]          `json:"one_of,omitzero"`
	Matches     present[matchesWire]        `json:"matches,omitzero"`
}

type atMostWire struct {
	Key string                `json:"key"`
	N   policyInt[countRange] `json:"n"`
}

type atMostEachWire struct {
	Prefix string                `json:"prefix"`
	N      policyInt[countRange] `json:"n"`
}

type withinWire struct {
	Key string      `json:"key"`
	Min policyFloat `json:"min"`
	Max policyFloat `json:"max"`
}

type oneOfWire struct {
	Key    string         `json:"key"`
	Values []policyScalar `json:"values"`
}

type matchesWire struct {
	Key     string `json:"key"`
	Pattern string `json:"pattern"`
}

type sharedWire struct {
	ID     string              `json:"id"`
	Limit  policyCost          `json:"limit"`
	Period present[periodWire] `json:"period,omitzero"`
}

// policy turns the members read into a Policy. decoded are the problems
// the reading found. It returns the problems only the whole file shows
// (a rule without a cost, version 2 members in a version 1 file), and the
// pointers of the members it did not read because the file's version has
// none of them.
func (f *policyFile) policy(decoded []Violation) (p Policy, more []Violation, unread []string) {
	p = Policy{Schema: f.Schema, Version: f.Version.n, Budget: f.Budget.c, MinCost: f.MinCost.c,
		AllowUnknown:    f.UnknownTools.s == "allow",
		ResultTextLimit: int(f.ResultTextLimit.n), MaxWaiting: int(f.MaxWaiting.n), CheckResults: f.CheckResults,
		ApprovalTimeout: f.ApprovalTimeout.d, ApprovalTTL: f.ApprovalTTL.d, SelfApproval: f.SelfApproval, Timeout: f.Timeout.d}
	p.Approvers = approversOf(f.Approvers)
	v2 := p.Version != 1 // a file whose version is wrong is read as version 2, to report its problems too
	unknown := func(at string) {
		more = append(more, Violation{Path: at, Rule: policyRuleUnknownField, Message: "unknown member (version 2 has it)"})
		unread = append(unread, at)
	}
	needsCost := func(at func() string, c policyCost, refuses bool) {
		if !c.set && !refuses {
			more = append(more, Violation{Path: at() + "/cost", Rule: policyRuleRequired, Message: "missing"})
		}
	}
	if f.DefaultRule.Set {
		r := f.DefaultRule.V.spec()
		p.DefaultRule = &r
		if f.DefaultRule.Object {
			needsCost(func() string { return "/default_rule" }, f.DefaultRule.V.Cost, false)
		}
	}
	if f.Labels.Set {
		if v2 {
			p.Labels = f.Labels.V
		} else {
			unknown("/labels")
		}
	}
	p.ConversationLabels = f.ConvLabels
	if len(f.Tools) > 0 {
		p.Tools = make([]Rule, len(f.Tools))
		for i, t := range f.Tools {
			if t == nil {
				// A pointer keeps a large list cheap to grow; null is no rule.
				more = append(more, Violation{Path: violation.Index("/tools", i), Rule: policyRuleType,
					Message: strictjson.WantMessage("an object", strictjson.Null)})
				continue
			}
			w := &t.V
			r := w.ruleCommon.spec()
			r.Match = w.Match
			if v2 {
				w.v2(&r)
				more = append(more, w.When.V.empty(violation.Index("/tools", i)+"/when")...)
				if at := violation.Index("/tools", i) + "/server"; w.Server.Set && w.Server.V == "" &&
					!slices.ContainsFunc(decoded, func(v Violation) bool { return v.Path == at }) {
					more = append(more, Violation{Path: at, Rule: policyRuleRequired, Message: "not empty"})
				}
			} else if members := w.v2Members(); len(members) > 0 {
				at := violation.Index("/tools", i)
				for _, m := range members {
					unknown(at + "/" + m)
				}
			}
			if t.Object {
				needsCost(func() string { return violation.Index("/tools", i) }, w.Cost, r.Effect == EffectRefuse)
			}
			p.Tools[i] = r
		}
	}
	if len(f.Invariants) > 0 {
		p.Invariants = make([]InvariantSpec, len(f.Invariants))
		for i := range f.Invariants {
			p.Invariants[i] = f.Invariants[i].spec()
		}
	}
	if f.Shared.Set {
		p.Shared = &SharedBudgetSpec{ID: f.Shared.V.ID, Limit: f.Shared.V.Limit.c, Period: periodOf(f.Shared.V.Period)}
	}
	p.BudgetPeriod = periodOf(f.BudgetPeriod)
	return p, more, unread
}

func (w *ruleCommon) spec() Rule {
	return Rule{Description: w.Description, Cost: w.Cost.c, Reserve: w.Reserve, Tier: claims.RiskTier(w.Tier.s),
		RefundOnError: w.RefundOnError, CheckResult: w.CheckResult, TierFromHints: w.TierFromHints, Timeout: w.Timeout.d, CostFrom: w.CostFrom}
}

// v2Members lists the version 2 members present, by their names in the
// file.
func (w *ruleWire) v2Members() []string {
	var out []string
	for _, m := range []struct {
		name string
		set  bool
	}{{"name", w.Name.Set}, {"principals", w.Principals.set}, {"arguments", w.Arguments.set}, {"paths", w.Paths.Set},
		{"effect", w.Effect.set}, {"reason", w.Reason.Set}, {"rate", w.Rate.Set}, {"labels", w.Labels.Set}, {"label_ttl", w.LabelTTL.d != 0}, {"flow", w.Flow.Set}, {"when", w.When.Set}, {"server", w.Server.Set}} {
		if m.set {
			out = append(out, m.name)
		}
	}
	return out
}

// v2 sets r's version 2 members.
func (w *ruleWire) v2(r *Rule) {
	r.Name = w.Name.V
	if w.Principals.set {
		r.Principals = &PrincipalCondition{Issuers: w.Principals.w.Issuers, Subjects: w.Principals.w.Subjects,
			Groups: w.Principals.w.Groups, Scopes: w.Principals.w.Scopes}
	}
	r.Arguments = w.Arguments.raw
	for _, pw := range w.Paths.V {
		r.Paths = append(r.Paths, PathCondition{Argument: pw.Argument, Under: pw.Under, CaseInsensitive: pw.CaseInsensitive})
	}
	if w.Effect.s == "refuse" {
		r.Effect = EffectRefuse
	}
	r.Reason = w.Reason.V
	if w.Rate.Set {
		rt := &Rate{Calls: int(w.Rate.V.Calls.n), Per: w.Rate.V.Per.d, Scope: RateScopeTool}
		if w.Rate.V.Scope.set {
			rt.Scope = RateScope(w.Rate.V.Scope.s)
		}
		r.Rate = rt
	}
	r.Labels = w.Labels.V
	r.LabelTTL = w.LabelTTL.d
	for _, fw := range w.Flow.V {
		r.Flow = append(r.Flow, FlowRule{After: fw.After, Ask: fw.Effect.s == "ask", Reason: fw.Reason, Tier: claims.RiskTier(fw.Tier.s)})
	}
	if w.When.Set {
		r.When = &WhenCondition{Language: w.When.V.Language, Text: w.When.V.Text.V, File: w.When.V.File.V}
	}
	r.Server = w.Server.V
}

func (w *invariantWire) spec() InvariantSpec {
	s := InvariantSpec{Name: w.Name, Description: w.Description, Suggestion: w.Suggestion}
	if w.Enforcement.s == kernel.EnforcementMonitoring.String() {
		s.Enforcement = kernel.EnforcementMonitoring
	}
	// Each form present is kept, even when there are several; the count
	// is Policy.violations' to report.
	if f := &w.AtMost; f.Set {
		s.AtMost = &AtMostSpec{Key: f.V.Key, N: f.V.N.n}
	}
	if f := &w.AtMostEach; f.Set {
		s.AtMostEach = &AtMostEachSpec{Prefix: f.V.Prefix, N: f.V.N.n}
	}
	if f := &w.Within; f.Set {
		s.Within = &WithinSpec{Key: f.V.Key, Min: f.V.Min.f, Max: f.V.Max.f}
	}
	if f := &w.OneOf; f.Set {
		s.OneOf = &OneOfSpec{Key: f.V.Key}
		if len(f.V.Values) > 0 {
			s.OneOf.Values = make([]value.Value, len(f.V.Values))
			for i, v := range f.V.Values {
				s.OneOf.Values[i] = v.v
			}
		}
	}
	if f := &w.Matches; f.Set {
		s.Matches = &MatchesSpec{Key: f.V.Key, Pattern: f.V.Pattern}
	}
	return s
}

// file returns the form p is written in: the inverse of policyFile.policy
// for a valid p, and as much of an invalid one as JSON holds.
func (p Policy) file() (policyFile, error) {
	f := policyFile{Schema: p.Schema, Version: policyVersion{p.Version}, Budget: policyCost{c: p.Budget, set: true},
		MinCost: policyCost{c: p.MinCost, set: true}, ResultTextLimit: policyInt[textLimitRange]{int64(p.ResultTextLimit)},
		MaxWaiting: policyInt[waitingRange]{int64(p.MaxWaiting)}, CheckResults: p.CheckResults,
		ApprovalTimeout: policyDuration{p.ApprovalTimeout}, ApprovalTTL: policyDuration{p.ApprovalTTL},
		SelfApproval: p.SelfApproval, ConvLabels: p.ConversationLabels, Timeout: policyDuration{p.Timeout}}
	if f.Version.n == 0 {
		f.Version.n = newestPolicyVersion
	}
	if p.AllowUnknown {
		f.UnknownTools = policyEnum[unknownToolsEnum]{s: "allow", set: true}
	}
	if r := p.DefaultRule; r != nil {
		f.DefaultRule = present[ruleCommon]{V: ruleCommonOf(r), Set: true}
	}
	if p.Approvers != nil {
		f.Approvers = make(approversWire, len(p.Approvers))
		for t, names := range p.Approvers {
			f.Approvers[t] = names
		}
	}
	for i := range p.Tools {
		f.Tools = append(f.Tools, &present[ruleWire]{V: ruleWireOf(&p.Tools[i]), Set: true})
	}
	for i := range p.Invariants {
		w, err := invariantWireOf(&p.Invariants[i])
		if err != nil {
			return policyFile{}, err
		}
		f.Invariants = append(f.Invariants, w)
	}
	if s := p.Shared; s != nil {
		f.Shared = present[sharedWire]{V: sharedWire{ID: s.ID, Limit: policyCost{c: s.Limit, set: true}, Period: periodWireOf(s.Period)}, Set: true}
	}
	f.BudgetPeriod = periodWireOf(p.BudgetPeriod)
	if len(p.Labels) > 0 {
		f.Labels = present[names]{V: p.Labels, Set: true}
	}
	return f, nil
}

// ruleCommonOf returns the members every rule has; the cost is written
// unless the rule refuses and costs nothing.
func ruleCommonOf(r *Rule) ruleCommon {
	return ruleCommon{Description: r.Description, Cost: policyCost{c: r.Cost, set: r.Effect != EffectRefuse || r.Cost != 0},
		Reserve: r.Reserve, Tier: policyEnum[tierEnum]{s: string(r.Tier), set: r.Tier != ""}, RefundOnError: r.RefundOnError,
		CheckResult: r.CheckResult, TierFromHints: r.TierFromHints, Timeout: policyDuration{r.Timeout}, CostFrom: r.CostFrom}
}

// ruleWireOf returns an entry of tools.
func ruleWireOf(r *Rule) ruleWire {
	w := ruleWire{Match: r.Match, ruleCommon: ruleCommonOf(r), Name: present[string]{V: r.Name, Set: r.Name != ""},
		Arguments: policyArguments{raw: r.Arguments, set: len(r.Arguments) > 0},
		Reason:    present[string]{V: r.Reason, Set: r.Reason != ""}, Labels: present[names]{V: r.Labels, Set: len(r.Labels) > 0},
		LabelTTL: policyDuration{r.LabelTTL}, Server: present[string]{V: r.Server, Set: r.Server != ""}}
	if pc := r.Principals; pc != nil {
		w.Principals = policyPrincipals{w: principalsWire{Issuers: pc.Issuers, Subjects: pc.Subjects, Groups: pc.Groups, Scopes: pc.Scopes}, set: true}
	}
	for _, pc := range r.Paths {
		w.Paths.V = append(w.Paths.V, pathWire{Argument: pc.Argument, Under: pc.Under, CaseInsensitive: pc.CaseInsensitive})
		w.Paths.Set = true
	}
	if r.Effect == EffectRefuse {
		w.Effect = policyEnum[effectEnum]{s: "refuse", set: true}
	}
	if rt := r.Rate; rt != nil {
		w.Rate = present[rateWire]{V: rateWire{Calls: policyInt[callsRange]{int64(rt.Calls)}, Per: policyDuration{rt.Per}}, Set: true}
		if rt.Scope == RateScopeRule {
			w.Rate.V.Scope = policyEnum[rateScopeEnum]{s: string(RateScopeRule), set: true}
		}
	}
	for _, fl := range r.Flow {
		e := "refuse"
		if fl.Ask {
			e = "ask"
		}
		w.Flow.V = append(w.Flow.V, flowWire{After: fl.After, Effect: policyEnum[flowEffectEnum]{s: e, set: true}, Reason: fl.Reason,
			Tier: policyEnum[flowTierEnum]{s: string(fl.Tier), set: fl.Tier != ""}})
		w.Flow.Set = true
	}
	if r.When != nil {
		w.When = present[whenWire]{V: whenWire{Language: r.When.Language, Text: present[string]{V: r.When.Text, Set: r.When.Text != ""},
			File: present[string]{V: r.When.File, Set: r.When.File != ""}}, Set: true}
	}
	return w
}

// invariantWireOf returns an entry of invariants; a one_of float that is
// NaN or infinite cannot be written.
func invariantWireOf(s *InvariantSpec) (invariantWire, error) {
	w := invariantWire{Name: s.Name, Description: s.Description, Suggestion: s.Suggestion}
	if s.Enforcement != kernel.EnforcementBlocking {
		w.Enforcement = policyEnum[enforcementEnum]{s: s.Enforcement.String(), set: true}
	}
	if f := s.AtMost; f != nil {
		w.AtMost = present[atMostWire]{V: atMostWire{Key: f.Key, N: policyInt[countRange]{f.N}}, Set: true}
	}
	if f := s.AtMostEach; f != nil {
		w.AtMostEach = present[atMostEachWire]{V: atMostEachWire{Prefix: f.Prefix, N: policyInt[countRange]{f.N}}, Set: true}
	}
	if f := s.Within; f != nil {
		w.Within = present[withinWire]{V: withinWire{Key: f.Key, Min: policyFloat{f.Min}, Max: policyFloat{f.Max}}, Set: true}
	}
	if f := s.OneOf; f != nil {
		values := make([]policyScalar, len(f.Values))
		for i, v := range f.Values {
			if _, err := policyScalarJSON(v); err != nil {
				return invariantWire{}, fmt.Errorf("toolgate: writing invariant %q: %w", s.Name, err)
			}
			values[i] = policyScalar{v}
		}
		w.OneOf = present[oneOfWire]{V: oneOfWire{Key: f.Key, Values: values}, Set: true}
	}
	if f := s.Matches; f != nil {
		w.Matches = present[matchesWire]{V: matchesWire{Key: f.Key, Pattern: f.Pattern}, Set: true}
	}
	return w, nil
}

// approversWire is approvers: it writes a tier that is none as it is
// (claims.RiskTier.MarshalText would refuse it).
type approversWire map[claims.RiskTier]approverList

func (a approversWire) MarshalJSON() ([]byte, error) {
	m := make(map[string]approverList, len(a))
	for t, names := range a {
		m[string(t)] = names
	}
	return marshalPlain(m)
}

// approverList is one tier's approvers: a list of names, each of whom
// must approve, or {"group": G, "count": k}, k distinct members of the
// group G, which reads as "group:G" named k times (see Policy.Approvers).
type approverList []string

// quorumWire is the object form of an approverList.
type quorumWire struct {
	Group string                 `json:"group"`
	Count policyInt[quorumRange] `json:"count"`
}

func (l *approverList) UnmarshalStrict(d *strictjson.Decoder) error {
	if d.Peek() != strictjson.Object {
		var names []string
		err := d.Decode(&names)
		*l = names
		return err
	}
	var q quorumWire
	err := d.Decode(&q)
	if q.Group == "" && err == nil {
		return d.Errorf(policyRuleRequired, "group names a group (its members approve)")
	}
	n := max(q.Count.n, 1)
	list := make(approverList, n)
	for i := range list {
		list[i] = GroupPrefix + q.Group
	}
	*l = list
	return err
}

func (l approverList) MarshalJSON() ([]byte, error) {
	if group, k, ok := quorumOf(l); ok && k > 1 {
		return marshalPlain(quorumWire{Group: strings.TrimPrefix(group, GroupPrefix), Count: policyInt[quorumRange]{int64(k)}})
	}
	return marshalPlain([]string(l))
}

// The typed members write their own form, the one they read.

func (p present[T]) MarshalJSON() ([]byte, error)       { return marshalPlain(p.V) }
func (p policyPrincipals) MarshalJSON() ([]byte, error) { return marshalPlain(p.w) }
func (a policyArguments) MarshalJSON() ([]byte, error)  { return a.raw, nil }
func (v policyVersion) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, int64(v.n), 10), nil
}
func (c policyCost) MarshalJSON() ([]byte, error)     { return c.c.MarshalJSON() }
func (x policyInt[R]) MarshalJSON() ([]byte, error)   { return strconv.AppendInt(nil, x.n, 10), nil }
func (x policyFloat) MarshalJSON() ([]byte, error)    { return json.Marshal(x.f) }
func (x policyScalar) MarshalJSON() ([]byte, error)   { return policyScalarJSON(x.v) }
func (x policyDuration) MarshalJSON() ([]byte, error) { return marshalPlain(x.d.String()) }
func (e policyEnum[E]) MarshalJSON() ([]byte, error)  { return marshalPlain(e.s) }

// present is a member that may be absent: Set says it was there, and
// Object that it was an object (whatever problems it had).
type present[T any] struct {
	V      T
	Set    bool
	Object bool
}

func (p *present[T]) UnmarshalStrict(d *strictjson.Decoder) error {
	p.Set, p.Object = true, d.Peek() == strictjson.Object
	return d.Decode(&p.V)
}

// names is a non-empty list of non-empty strings. A list whose items are
// not all strings keeps its length ("" in their place); an empty one
// reads as nil.
type names []string

func (n *names) UnmarshalStrict(d *strictjson.Decoder) error {
	if k := d.Peek(); k != strictjson.Array {
		return d.Errorf(policyRuleType, "%s", strictjson.WantMessage("an array", k))
	}
	list := names{}
	err := d.Array(func(int) error {
		if k := d.Peek(); k != strictjson.String {
			d.Report(d.Errorf(policyRuleType, "%s", strictjson.WantMessage("a string", k)))
			list = append(list, "")
			return d.Skip()
		}
		s, err := d.ReadString()
		if err == nil && s == "" {
			d.Report(d.Errorf(policyRuleRequired, "an entry is not empty"))
		}
		list = append(list, s)
		return err
	})
	if err != nil {
		return err
	}
	if len(list) == 0 {
		return d.Errorf(policyRuleRequired, "the list names at least one")
	}
	*n = list
	return nil
}

// nonEmpty is a list of at least one item; an empty one reads as nil.
type nonEmpty[T any] []T

func (l *nonEmpty[T]) UnmarshalStrict(d *strictjson.Decoder) error {
	var v []T
	err := d.Decode(&v)
	if err == nil && len(v) == 0 {
		return d.Errorf(policyRuleRequired, "the list has at least one entry")
	}
	*l = v
	return err
}

// policyPrincipals is a rule's principals: an object naming at least one
// list.
type policyPrincipals struct {
	w   principalsWire
	set bool
}

func (p *policyPrincipals) UnmarshalStrict(d *strictjson.Decoder) error {
	p.set = true
	if _, ok := d.FirstKey(); !ok && d.Peek() == strictjson.Object {
		if err := d.Skip(); err != nil {
			return err
		}
		return d.Errorf(policyRuleRequired, "principals lists at least one of issuers, subjects, groups, scopes")
	}
	return d.Decode(&p.w)
}

// policyArguments is a rule's argument schema, an object or a boolean,
// kept as encoding/json writes it.
type policyArguments struct {
	raw json.RawMessage
	set bool
}

func (a *policyArguments) UnmarshalStrict(d *strictjson.Decoder) error {
	a.set = true
	if k := d.Peek(); k != strictjson.Object && k != strictjson.Bool {
		return d.Errorf(policyRuleType, "%s", strictjson.WantMessage("a JSON Schema (an object or a boolean)", k))
	}
	at := d.Pointer()
	tree, err := d.Any()
	if err != nil {
		return err
	}
	var numbers []Violation
	policyCheckNumbers(tree, at, &numbers)
	if len(numbers) > 0 {
		for _, v := range numbers[:len(numbers)-1] {
			d.Report(d.ErrorfAt(v.Path, v.Rule, "%s", v.Message))
		}
		v := numbers[len(numbers)-1]
		return d.ErrorfAt(v.Path, v.Rule, "%s", v.Message)
	}
	b, err := json.Marshal(tree)
	if err != nil { // unreachable: a decoded tree marshals
		return d.Errorf(policyRuleType, "%v", err)
	}
	a.raw = b
	return nil
}

// policyShowNext reads the next value and writes it briefly for a
// message.
func policyShowNext(d *strictjson.Decoder) (string, error) {
	switch k := d.Peek(); k {
	case strictjson.String:
		s, err := d.ReadString()
		return policyShow(s), err
	case strictjson.Number:
		lit, _, err := d.ReadNumber()
		return string(lit), err
	default:
		return k.String(), d.Skip()
	}
}

// policyVersion is the file's version, 1 or 2 (0 for any other value).
type policyVersion struct{ n int }

func (v *policyVersion) UnmarshalStrict(d *strictjson.Decoder) error {
	if d.Peek() == strictjson.Number {
		lit, isInt, err := d.ReadNumber()
		if err != nil {
			return err
		}
		if !policyNumberOK(string(lit)) {
			return d.Errorf(policyRuleNumber, policyNumberMessage)
		}
		if isInt && (string(lit) == "1" || string(lit) == "2") {
			v.n = int(lit[0] - '0')
			return nil
		}
		if r, ok := policyRat(json.Number(lit)); ok && r.IsInt() && r.Num().IsInt64() {
			if x := r.Num().Int64(); x == 1 || x == 2 {
				v.n = int(x)
				return nil
			}
		}
		return d.Errorf(policyRuleVersion, "this package reads versions 1 and 2, got %s", lit)
	}
	got, err := policyShowNext(d)
	if err != nil {
		return err
	}
	return d.Errorf(policyRuleVersion, "this package reads versions 1 and 2, got %s", got)
}

// policyCost is an exact amount of units: a decimal string or a number.
type policyCost struct {
	c   kernel.Cost
	set bool
}

func (c *policyCost) UnmarshalStrict(d *strictjson.Decoder) error {
	c.set = true
	switch k := d.Peek(); k {
	case strictjson.String:
		s, err := d.ReadString()
		if err != nil {
			return err
		}
		if !policyCostString(s) {
			return d.Errorf(policyRuleCost, "%s is not a decimal amount of units in whole thousandths, at most %s (such as \"0.01\")", policyShow(s), maxPolicyCost)
		}
		v, err := kernel.ParseCost(s)
		if err != nil { // unreachable: the pattern admits only exact amounts
			return d.Errorf(policyRuleCost, "%s", err)
		}
		c.c = v
		return nil
	case strictjson.Number:
		lit, isInt, err := d.ReadNumber()
		if err != nil {
			return err
		}
		x := string(lit)
		if !policyNumberOK(x) {
			return d.Errorf(policyRuleNumber, policyNumberMessage)
		}
		if isInt && len(x) <= 15 && x[0] != '-' {
			n, _ := strconv.ParseInt(x, 10, 64)
			c.c = kernel.Cost(n * 1000)
			return nil
		}
		r, ok := policyRat(json.Number(x))
		switch {
		case !ok:
			return d.Errorf(policyRuleCost, "%s is not a number", x)
		case r.Sign() < 0:
			return d.Errorf(policyRuleCost, "%s is negative", x)
		case r.Cmp(policyMaxRat) > 0:
			return d.Errorf(policyRuleCost, "%s is over the largest cost %s", x, maxPolicyCost)
		}
		t := new(big.Rat).Mul(r, policyThousand)
		if !t.IsInt() {
			return d.Errorf(policyRuleCost, "%s is not a whole number of thousandths of a unit (costs are never rounded)", x)
		}
		c.c = kernel.Cost(t.Num().Int64())
		return nil
	default:
		return d.Errorf(policyRuleType, "%s", strictjson.WantMessage("a cost (a decimal string or a number)", k))
	}
}

// intRange is the range of a policyInt.
type intRange interface{ bounds() (lo, hi int64) }

type (
	textLimitRange struct{}
	waitingRange   struct{}
	countRange     struct{}
	callsRange     struct{}
	quorumRange    struct{}
)

func (textLimitRange) bounds() (int64, int64) { return -1, maxResultTextLimit }
func (waitingRange) bounds() (int64, int64)   { return -1, maxPolicyWaiting }
func (countRange) bounds() (int64, int64)     { return 0, policyMaxSafeInt }
func (quorumRange) bounds() (int64, int64)    { return 1, maxApproverCount }
func (callsRange) bounds() (int64, int64)     { return 1, math.MaxInt32 }

// readPolicyNumber reads a number's literal, refusing any other kind
// (the message says what was wanted) and a literal a reader would round;
// isInt says whether the literal has no fraction or exponent.
func readPolicyNumber(d *strictjson.Decoder, want string) (lit string, isInt bool, err error) {
	if k := d.Peek(); k != strictjson.Number {
		return "", false, d.Errorf(policyRuleType, "%s", strictjson.WantMessage(want, k))
	}
	b, isInt, err := d.ReadNumber()
	if err != nil {
		return "", false, err
	}
	lit = string(b)
	if !policyNumberOK(lit) {
		return "", false, d.Errorf(policyRuleNumber, policyNumberMessage)
	}
	return lit, isInt, nil
}

// policyInt is an integer in R's range; 1.0 and 1e2 are integers, as in
// JSON Schema.
type policyInt[R intRange] struct{ n int64 }

func (x *policyInt[R]) UnmarshalStrict(d *strictjson.Decoder) error {
	s, isInt, err := readPolicyNumber(d, "an integer")
	if err != nil {
		return err
	}
	var r R
	lo, hi := r.bounds()
	if isInt {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < lo || n > hi {
			return d.Errorf(policyRuleRange, "%s is outside [%d, %d]", s, lo, hi)
		}
		x.n = n
		return nil
	}
	q, ok := policyRat(json.Number(s))
	if !ok || !q.IsInt() {
		return d.Errorf(policyRuleType, "want an integer, got %s", s)
	}
	if q.Cmp(new(big.Rat).SetInt64(lo)) < 0 || q.Cmp(new(big.Rat).SetInt64(hi)) > 0 {
		return d.Errorf(policyRuleRange, "%s is outside [%d, %d]", s, lo, hi)
	}
	x.n = q.Num().Int64()
	return nil
}

// policyFloat is a finite number.
type policyFloat struct{ f float64 }

func (x *policyFloat) UnmarshalStrict(d *strictjson.Decoder) error {
	s, _, err := readPolicyNumber(d, "a number")
	if err != nil {
		return err
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
		return d.Errorf(policyRuleType, "%s is not a finite number", s)
	}
	x.f = f
	return nil
}

// policyScalar is a one_of value: a number literal with a fraction or an
// exponent is a float, one without an int (kernel's typed JSON). An int
// beyond ±(2^53−1) is kept as an int for Policy.violations to report
// (value), or as null when beyond int64.
type policyScalar struct{ v value.Value }

func (x *policyScalar) UnmarshalStrict(d *strictjson.Decoder) error {
	x.v = value.Null()
	switch k := d.Peek(); k {
	case strictjson.Null:
		return d.ReadNull()
	case strictjson.Bool:
		b, err := d.ReadBool()
		x.v = value.Bool(b)
		return err
	case strictjson.String:
		s, err := d.ReadString()
		x.v = value.String(s)
		return err
	case strictjson.Number:
		lit, isInt, err := d.ReadNumber()
		if err != nil {
			return err
		}
		s := string(lit)
		if !policyNumberOK(s) {
			return d.Errorf(policyRuleNumber, policyNumberMessage)
		}
		if !isInt {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
				return d.Errorf(policyRuleType, "%s is not a finite number", s)
			}
			x.v = value.Float(f)
			return nil
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return d.Errorf(policyRuleValue, "the int %s is beyond ±(2^53−1); an int compared exactly must be within it", s)
		}
		x.v = value.Int(i)
		return nil
	default:
		return d.Errorf(policyRuleType, "%s", strictjson.WantMessage("a string, number, boolean or null", k))
	}
}

// policyDuration is a Go duration string ("5m", "90s", "24h"); a string
// that is none is refused (duration), and 1s stands in for it.
type policyDuration struct{ d time.Duration }

func (x *policyDuration) UnmarshalStrict(d *strictjson.Decoder) error {
	k := d.Peek()
	if k != strictjson.String {
		return d.Errorf(policyRuleType, "%s", strictjson.WantMessage("a duration string such as \"5m\"", k))
	}
	s, err := d.ReadString()
	if err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		x.d = time.Second
		return d.Errorf(policyRuleDuration, "%s is not a duration such as \"5m\", \"90s\" or \"24h\"", policyShow(s))
	}
	x.d = v
	return nil
}

// enumValues is the set of strings a policyEnum takes.
type enumValues interface{ values() []string }

type (
	unknownToolsEnum struct{}
	tierEnum         struct{}
	effectEnum       struct{}
	rateScopeEnum    struct{}
	flowEffectEnum   struct{}
	flowTierEnum     struct{}
	enforcementEnum  struct{}
)

var (
	policyUnknownTools = []string{"refuse", "allow"}
	policyEffects      = []string{"allow", "refuse"}
	policyRateScopes   = []string{string(RateScopeTool), string(RateScopeRule)}
	policyFlowEffects  = []string{"refuse", "ask"}
	policyFlowTiers    = []string{string(claims.TierDelete), string(claims.TierPrivilege)}
	policyEnforcements = []string{kernel.EnforcementBlocking.String(), kernel.EnforcementMonitoring.String()}
)

func (unknownToolsEnum) values() []string { return policyUnknownTools }
func (tierEnum) values() []string         { return policyTiers }
func (effectEnum) values() []string       { return policyEffects }
func (rateScopeEnum) values() []string    { return policyRateScopes }
func (flowEffectEnum) values() []string   { return policyFlowEffects }
func (flowTierEnum) values() []string     { return policyFlowTiers }
func (enforcementEnum) values() []string  { return policyEnforcements }

// policyEnum is one of E's strings, spelled exactly; s is "" for any
// other value, and set says the member was there.
type policyEnum[E enumValues] struct {
	s   string
	set bool
}

func (e *policyEnum[E]) UnmarshalStrict(d *strictjson.Decoder) error {
	e.set = true
	var set E
	allowed := set.values()
	if d.Peek() == strictjson.String {
		s, err := d.ReadString()
		if err != nil {
			return err
		}
		for _, a := range allowed {
			if s == a {
				e.s = a
				return nil
			}
		}
		return d.Errorf(policyRuleEnum, "want one of %s, got %s", strings.Join(allowed, ", "), policyShow(s))
	}
	got, err := policyShowNext(d)
	if err != nil {
		return err
	}
	return d.Errorf(policyRuleEnum, "want one of %s, got %s", strings.Join(allowed, ", "), got)
}
