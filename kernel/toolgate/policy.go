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
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
)

// PolicyVersion is the version of the policy format this package reads
// (the file's "version").
const PolicyVersion = 1

// PolicySchemaID is the $id of policy.schema.json.
const PolicySchemaID = "https://github.com/verity-go/verity/kernel/toolgate/policy.schema.json"

// MaxPolicySize is the largest policy file ParsePolicy and LoadPolicy
// read, in bytes.
const MaxPolicySize = 1 << 20

// MaxPolicyCost is the largest cost a policy file may write:
// 999999999999999.999 units (15 integer digits, 3 decimals).
const MaxPolicyCost kernel.Cost = 999_999_999_999_999_999

// MaxPolicyWaiting is the largest max_waiting of a policy file.
const MaxPolicyWaiting = 1 << 20

// MaxResultTextLimit is the largest result_text_limit of a policy file:
// a trace entry's payload limit (trace.MaxPayloadLen), 16 MiB.
const MaxResultTextLimit = 16 << 20

// maxSharedIDLen is the longest shared budget id in bytes,
// kernel/sqlbudget.MaxIDLen (a test keeps them equal).
const maxSharedIDLen = 256

// policyMaxSafeInt is 2^53−1: the largest n an at_most invariant may
// name, and the largest int a one_of value may be, so that every JSON
// reader reads the same number.
const policyMaxSafeInt = 1<<53 - 1

// ErrInvalidPolicy is wrapped by the *ValidationError of a policy file or
// a Policy that ParsePolicy, LoadPolicy, Policy.Validate or Policy.Config
// refuse.
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

// The rules a policy Violation names. The schema checks the first group
// too; the second group is what a schema cannot say; the third is checked
// before anything else and stops the reading.
const (
	policyRuleType           = "type"                // wrong JSON type
	policyRuleUnknownField   = "unknown_field"       // a member the format does not define
	policyRuleRequired       = "required"            // a missing member, an empty string or list
	policyRuleEnum           = "enum"                // a tier, unknown_tools, enforcement or approvers key outside its set
	policyRuleVersion        = "version"             // version is not PolicyVersion
	policyRuleCost           = "cost"                // not an exact decimal amount in [0, MaxPolicyCost]
	policyRuleRange          = "range"               // an integer outside its range
	policyRuleDuplicate      = "duplicate"           // an approver named twice for one tier
	policyRuleInvariantForm  = "invariant_form"      // not exactly one of at_most, at_most_each, within, one_of, matches
	policyRuleDefaultUnused  = "default_rule_unused" // default_rule without "unknown_tools": "allow"
	policyRuleID             = "id"                  // a shared budget id with NUL or over 256 characters
	policyRuleMinCost        = "min_cost"            // min_cost not positive, or a cost below it
	policyRuleBudget         = "budget"              // budget below min_cost
	policyRuleGlob           = "glob"                // match is not a path.Match pattern
	policyRuleDuplicateMatch = "duplicate_match"     // the same match as an earlier rule
	policyRuleShadowed       = "shadowed"            // a tool name an earlier pattern already matches
	policyRuleRegex          = "regex"               // a matches pattern that does not compile
	policyRuleDuplicateName  = "duplicate_name"      // two invariants with one name
	policyRuleBounds         = "bounds"              // within with min above max
	policyRuleValue          = "value"               // a one_of int beyond ±(2^53−1)
	policyRuleApprovers      = "approvers"           // a DELETE or PRIVILEGE rule whose tier approvers does not name
	policyRuleIDLength       = "id_length"           // a shared budget id over 256 bytes
	policyRuleSize           = "size"                // a file over MaxPolicySize
	policyRuleSyntax         = "syntax"              // not one strict JSON text
	policyRuleDuplicateKey   = "duplicate_key"       // an object with a key twice
	policyRuleNumber         = "number"              // a number literal over 100 characters or with an exponent beyond ±1000
	policySchemaRulePrefix   = "schema."             // a schema keyword the decoder did not report (never expected)
)

// policySemanticRules are the rules the schema does not check.
var policySemanticRules = map[string]bool{
	policyRuleMinCost: true, policyRuleBudget: true, policyRuleGlob: true, policyRuleDuplicateMatch: true,
	policyRuleShadowed: true, policyRuleRegex: true, policyRuleDuplicateName: true, policyRuleBounds: true,
	policyRuleValue: true, policyRuleApprovers: true, policyRuleIDLength: true,
}

// Policy is a policy file: a gate's Config written in JSON, so that a
// gate can be configured without Go — each caller's budget, the least a
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
// policy.schema.json (PolicySchema) documents the format as a JSON Schema
// (draft 2020-12) for editors and other languages;
// testdata/policy/example.json is a complete example, a filesystem MCP
// server's policy. ParsePolicy and LoadPolicy read a file and
// MarshalJSON writes one; Config builds the Config that New takes.
//
// The fields mirror the file's members (in parentheses). Costs are exact
// amounts of units, a decimal string ("0.01") or a JSON number, never
// rounded. Lists that are empty in the file are nil here.
type Policy struct {
	// Schema ("$schema") names the schema the file follows, for editors;
	// it is kept, not checked.
	Schema string
	// Version ("version", required) is PolicyVersion.
	Version int
	// Budget ("budget", required) is each caller's budget B0; at least
	// MinCost.
	Budget kernel.Cost
	// MinCost ("min_cost", required) is ε, the least a call may cost;
	// positive, and no cost of the file is below it.
	MinCost kernel.Cost
	// AllowUnknown ("unknown_tools": "allow"; "refuse", the default, is
	// false) runs tools no rule matches under DefaultRule.
	AllowUnknown bool
	// DefaultRule ("default_rule") is the rule of unknown tools: required
	// when AllowUnknown, refused otherwise, and without a match.
	DefaultRule *RuleSpec
	// Approvers ("approvers") names who must approve calls of the tiers
	// needing approval (DELETE, PRIVILEGE, the only keys allowed): nil
	// leaves Config.Approvers nil (DefaultApprover for both); present, a
	// tier some rule uses must be named.
	Approvers map[claims.RiskTier][]string
	// Tools ("tools") are the rules, in order: the first that matches a
	// tool decides.
	Tools []RuleSpec
	// Invariants ("invariants") are checked over each caller's state.
	Invariants []InvariantSpec
	// ResultTextLimit ("result_text_limit") is Config.ResultTextLimit: 0
	// for DefaultResultTextLimit, -1 for the whole output, at most
	// MaxResultTextLimit.
	ResultTextLimit int
	// MaxWaiting ("max_waiting") is Config.MaxWaiting: 0 for
	// DefaultMaxWaiting, -1 for no bound, at most MaxPolicyWaiting.
	MaxWaiting int
	// CheckResults ("check_results") is Config.CheckResults.
	CheckResults bool
	// Shared ("shared_budget") is a budget every caller and every process
	// using it spends together. The gate does not open it: a host that
	// keeps shared budgets (kernel/sqlbudget's Store.OpenOrCreate(ctx,
	// Shared.ID, Shared.Limit)) passes it to New with WithSharedBudget.
	Shared *SharedBudgetSpec
}

// RuleSpec is one rule of a policy file (an entry of "tools", or
// "default_rule" without Match).
type RuleSpec struct {
	// Match ("match", required in tools) is a tool's name or a
	// path.Match pattern.
	Match string
	// Description ("description") says what the tools do.
	Description string
	// Cost ("cost", required) is what one call costs, or its upper bound
	// with Reserve; at least Policy.MinCost.
	Cost kernel.Cost
	// Reserve ("reserve"): the cost is measured after the call.
	Reserve bool
	// Tier ("tier") is the calls' claims.RiskTier, TierReadOnly when
	// empty.
	Tier claims.RiskTier
	// RefundOnError ("refund_on_error") gives a failed call's charge back.
	RefundOnError bool
	// CheckResult ("check_result") checks the output for speculative
	// markers.
	CheckResult bool
}

// Rule returns the gate's Rule: the same fields, the tier TierReadOnly
// when empty.
func (r RuleSpec) Rule() Rule {
	tier := r.Tier
	if tier == "" {
		tier = claims.TierReadOnly
	}
	return Rule{Match: r.Match, Description: r.Description, Cost: r.Cost, Reserve: r.Reserve, Tier: tier,
		RefundOnError: r.RefundOnError, CheckResult: r.CheckResult}
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
	Values []kernel.Value
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
// does not compile; Policy.Validate reports everything else.
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

// ParsePolicy reads a policy file. Nothing is guessed or rounded, and a
// file is refused with every problem it has, as one *ValidationError
// wrapping ErrInvalidPolicy, each Violation naming where (a JSON Pointer
// into the file) and which rule:
//
//   - The text: at most MaxPolicySize bytes (size); one strict JSON text —
//     valid UTF-8 (a leading byte order mark is skipped), nothing after
//     it, no integer a double would round (syntax); no object with a key twice (duplicate_key); no number
//     literal over 100 characters or with an exponent beyond ±1000
//     (number). These stop the reading.
//   - The shape, which policy.schema.json says too: JSON types (type),
//     no member the format does not define (unknown_field), required
//     members, non-empty names, keys and lists (required), tiers
//     (READ_ONLY, WRITE_LIMITED, MODIFY, DELETE, PRIVILEGE), unknown_tools,
//     enforcement and the approvers' tiers (DELETE, PRIVILEGE) spelled
//     exactly (enum), version (version), costs (cost: a decimal string
//     such as "0.01" or a JSON number, a whole number of thousandths of a
//     unit, at most MaxPolicyCost), integers (range: n in [0, 2^53−1],
//     result_text_limit in [-1, MaxResultTextLimit], max_waiting in [-1,
//     MaxPolicyWaiting]), an approver named
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
//     budget id at most 256 bytes (id_length).
//
// A problem inside a member that is already wrong is not reported again
// (a rule that is not an object reports no missing cost). The schema and
// this decoder agree on the shape: a file the schema accepts has no
// violation of the second group, and the other way round.
func ParsePolicy(data []byte) (Policy, error) {
	return parsePolicy(data, "policy")
}

// LoadPolicy reads the policy file at path (see ParsePolicy). An error
// reading the file is returned as it is; a refused file is a
// *ValidationError wrapping ErrInvalidPolicy whose message names the path.
func LoadPolicy(path string) (Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return Policy{}, fmt.Errorf("toolgate: reading policy: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPolicySize+1))
	if err != nil {
		return Policy{}, fmt.Errorf("toolgate: reading policy: %w", err)
	}
	return parsePolicy(data, "policy "+path)
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
// files (draft 2020-12, $id PolicySchemaID).
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

// checkPolicy decodes data and returns the policy with every violation
// found, sorted; the policy is meaningful only without violations.
func checkPolicy(data []byte) (Policy, []Violation) {
	if len(data) > MaxPolicySize {
		return Policy{}, []Violation{{Rule: policyRuleSize,
			Message: fmt.Sprintf("the file is over %d bytes", MaxPolicySize)}}
	}
	tree, err := canon.Decode(bytes.TrimPrefix(data, policyBOM))
	if err != nil {
		rule := policyRuleSyntax
		if errors.Is(err, canon.ErrDuplicateKey) {
			rule = policyRuleDuplicateKey
		}
		return Policy{}, []Violation{{Rule: rule, Message: strings.TrimPrefix(err.Error(), "canon: ")}}
	}
	var numbers []Violation
	policyCheckNumbers(tree, "", &numbers)
	if len(numbers) > 0 {
		violation.Sort(numbers)
		return Policy{}, numbers
	}

	d := &policyDecoder{}
	p := d.policy(tree)
	decoded := d.vs
	checked := p.violations(func(at string) bool {
		return slices.ContainsFunc(decoded, func(v Violation) bool { return policyUnder(at, v.Path) })
	})
	all := slices.Clone(decoded)
	for _, v := range checked {
		// A member that did not decode is reported once, by the decoder.
		if !slices.ContainsFunc(decoded, func(u Violation) bool { return policyUnder(u.Path, v.Path) }) {
			all = append(all, v)
		}
	}
	// The schema says the same as the decoder; should it ever refuse what
	// the decoder let through, its own violations refuse the file.
	schemaVs := policySchemaViolations(tree)
	if len(schemaVs) > 0 && !slices.ContainsFunc(all, func(v Violation) bool { return !policySemanticRules[v.Rule] }) {
		all = append(all, schemaVs...)
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

// policySchema is policy.schema.json compiled once (a compiled schema is
// safe for concurrent use). It refers to nothing outside itself: a $ref
// to any other URL fails.
var policySchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("toolgate: the policy schema refers to %s", u)
	}
	if err := c.AddResource(PolicySchemaID, bytes.NewReader(policySchemaText)); err != nil {
		return nil, err
	}
	return c.Compile(PolicySchemaID)
})

// policySchemaViolations validates a decoded file against the schema,
// one violation per failing keyword ("schema.<keyword>").
func policySchemaViolations(tree any) (vs []Violation) {
	defer func() {
		// The validator is fed only what canon.Decode and
		// policyCheckNumbers accept; should it panic all the same, the
		// file is refused, not the process.
		if r := recover(); r != nil {
			vs = []Violation{{Rule: policySchemaRulePrefix + "panic", Message: fmt.Sprint(r)}}
		}
	}()
	s, err := policySchema()
	if err != nil {
		return []Violation{{Rule: policySchemaRulePrefix + "compile", Message: err.Error()}}
	}
	err = s.Validate(tree)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return []Violation{{Rule: policySchemaRulePrefix + "error", Message: err.Error()}}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		kw := e.KeywordLocation
		if i := strings.LastIndexByte(kw, '/'); i >= 0 {
			kw = kw[i+1:]
		}
		vs = append(vs, Violation{Path: e.InstanceLocation, Rule: policySchemaRulePrefix + kw, Message: e.Message})
	}
	walk(ve)
	return vs
}

// policyDecoder turns a decoded JSON tree into a Policy, collecting the
// problems of shape. It keeps the presence of members and the length of
// lists even where their content is wrong, so that Policy.violations
// does not report an absence the decoder already explained.
type policyDecoder struct {
	vs []Violation
}

func (d *policyDecoder) add(at, rule, format string, args ...any) {
	d.vs = append(d.vs, Violation{Path: at, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// object checks that v is an object holding only allowed members, and
// that the required ones are there.
func (d *policyDecoder) object(at string, v any, allowed, required []string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(at, policyRuleType, "want an object, got %s", canon.KindOf(v))
		return nil, false
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			d.add(violation.Join(at, k), policyRuleUnknownField, "unknown member %q", k)
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			d.add(violation.Join(at, k), policyRuleRequired, "missing required member")
		}
	}
	return m, true
}

func (d *policyDecoder) array(at string, v any) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		d.add(at, policyRuleType, "want an array, got %s", canon.KindOf(v))
	}
	return a, ok
}

func (d *policyDecoder) str(at string, v any) string {
	s, ok := v.(string)
	if !ok {
		d.add(at, policyRuleType, "want a string, got %s", canon.KindOf(v))
	}
	return s
}

func (d *policyDecoder) boolean(at string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		d.add(at, policyRuleType, "want a boolean, got %s", canon.KindOf(v))
	}
	return b
}

// rat reads a number literal exactly (policyCheckNumbers has bounded it).
func policyRat(n json.Number) (*big.Rat, bool) {
	return new(big.Rat).SetString(string(n))
}

// policyCostPattern is the cost string the schema allows: a plain
// decimal, up to 15 integer digits, whole thousandths (trailing zeros
// after them are fine).
var policyCostPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,14})(\.[0-9]{1,3}0*)?$`)

var (
	policyThousand = big.NewRat(1000, 1)
	policyMaxRat   = new(big.Rat).SetFrac64(int64(MaxPolicyCost), 1000)
)

// cost reads an exact amount of units: a decimal string or a number.
func (d *policyDecoder) cost(at string, v any) kernel.Cost {
	switch x := v.(type) {
	case string:
		if !policyCostPattern.MatchString(x) {
			d.add(at, policyRuleCost, "%s is not a decimal amount of units in whole thousandths, at most %s (such as \"0.01\")", policyShow(x), MaxPolicyCost)
			return 0
		}
		c, err := kernel.ParseCost(x)
		if err != nil { // unreachable: the pattern admits only exact amounts
			d.add(at, policyRuleCost, "%s", err)
		}
		return c
	case json.Number:
		r, ok := policyRat(x)
		switch {
		case !ok:
			d.add(at, policyRuleCost, "%s is not a number", x)
		case r.Sign() < 0:
			d.add(at, policyRuleCost, "%s is negative", x)
		case r.Cmp(policyMaxRat) > 0:
			d.add(at, policyRuleCost, "%s is over the largest cost %s", x, MaxPolicyCost)
		default:
			t := new(big.Rat).Mul(r, policyThousand)
			if !t.IsInt() {
				d.add(at, policyRuleCost, "%s is not a whole number of thousandths of a unit (costs are never rounded)", x)
				return 0
			}
			return kernel.Cost(t.Num().Int64())
		}
		return 0
	}
	d.add(at, policyRuleType, "want a cost (a decimal string or a number), got %s", canon.KindOf(v))
	return 0
}

// integer reads an integer in [lo, hi] (1.0 and 1e2 are integers, as in
// JSON Schema).
func (d *policyDecoder) integer(at string, v any, lo, hi int64) int64 {
	n, ok := v.(json.Number)
	if !ok {
		d.add(at, policyRuleType, "want an integer, got %s", canon.KindOf(v))
		return 0
	}
	r, ok := policyRat(n)
	if !ok || !r.IsInt() {
		d.add(at, policyRuleType, "want an integer, got %s", n)
		return 0
	}
	if r.Cmp(new(big.Rat).SetInt64(lo)) < 0 || r.Cmp(new(big.Rat).SetInt64(hi)) > 0 {
		d.add(at, policyRuleRange, "%s is outside [%d, %d]", n, lo, hi)
		return 0
	}
	return r.Num().Int64()
}

// number reads a finite float64.
func (d *policyDecoder) number(at string, v any) float64 {
	n, ok := v.(json.Number)
	if !ok {
		d.add(at, policyRuleType, "want a number, got %s", canon.KindOf(v))
		return 0
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
		d.add(at, policyRuleType, "%s is not a finite number", n)
		return 0
	}
	return f
}

// enum reads one of the allowed strings.
func (d *policyDecoder) enum(at string, v any, allowed ...string) string {
	s, ok := v.(string)
	if !ok || !slices.Contains(allowed, s) {
		d.add(at, policyRuleEnum, "want one of %s, got %s", strings.Join(allowed, ", "), policyShow(v))
		return ""
	}
	return s
}

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
	return canon.KindOf(v)
}

var policyTiers = []string{string(claims.TierReadOnly), string(claims.TierWriteLimited), string(claims.TierModify),
	string(claims.TierDelete), string(claims.TierPrivilege)}

var policyMembers = []string{"$schema", "version", "budget", "min_cost", "unknown_tools", "default_rule", "approvers",
	"tools", "invariants", "result_text_limit", "max_waiting", "check_results", "shared_budget"}

func (d *policyDecoder) policy(tree any) Policy {
	var p Policy
	m, ok := d.object("", tree, policyMembers, []string{"version", "budget", "min_cost"})
	if !ok {
		return p
	}
	if v, ok := m["$schema"]; ok {
		p.Schema = d.str("/$schema", v)
	}
	if v, ok := m["version"]; ok {
		if n, isNum := v.(json.Number); isNum {
			if r, ok := policyRat(n); ok && r.Cmp(big.NewRat(PolicyVersion, 1)) == 0 {
				p.Version = PolicyVersion
			}
		}
		if p.Version != PolicyVersion {
			d.add("/version", policyRuleVersion, "this package reads version %d, got %s", PolicyVersion, policyShow(v))
		}
	}
	if v, ok := m["budget"]; ok {
		p.Budget = d.cost("/budget", v)
	}
	if v, ok := m["min_cost"]; ok {
		p.MinCost = d.cost("/min_cost", v)
	}
	if v, ok := m["unknown_tools"]; ok {
		p.AllowUnknown = d.enum("/unknown_tools", v, "refuse", "allow") == "allow"
	}
	if v, ok := m["default_rule"]; ok {
		r := d.rule("/default_rule", v, false)
		p.DefaultRule = &r
	}
	if v, ok := m["approvers"]; ok {
		p.Approvers = d.approvers("/approvers", v)
	}
	if v, ok := m["tools"]; ok {
		if a, ok := d.array("/tools", v); ok && len(a) > 0 {
			p.Tools = make([]RuleSpec, len(a))
			for i, it := range a {
				p.Tools[i] = d.rule(violation.Index("/tools", i), it, true)
			}
		}
	}
	if v, ok := m["invariants"]; ok {
		if a, ok := d.array("/invariants", v); ok && len(a) > 0 {
			p.Invariants = make([]InvariantSpec, len(a))
			for i, it := range a {
				p.Invariants[i] = d.invariant(violation.Index("/invariants", i), it)
			}
		}
	}
	if v, ok := m["result_text_limit"]; ok {
		p.ResultTextLimit = int(d.integer("/result_text_limit", v, -1, MaxResultTextLimit))
	}
	if v, ok := m["max_waiting"]; ok {
		p.MaxWaiting = int(d.integer("/max_waiting", v, -1, MaxPolicyWaiting))
	}
	if v, ok := m["check_results"]; ok {
		p.CheckResults = d.boolean("/check_results", v)
	}
	if v, ok := m["shared_budget"]; ok {
		s := &SharedBudgetSpec{}
		if sm, ok := d.object("/shared_budget", v, []string{"id", "limit"}, []string{"id", "limit"}); ok {
			if iv, ok := sm["id"]; ok {
				s.ID = d.str("/shared_budget/id", iv)
			}
			if lv, ok := sm["limit"]; ok {
				s.Limit = d.cost("/shared_budget/limit", lv)
			}
		}
		p.Shared = s
	}
	return p
}

var policyRuleMembers = []string{"match", "description", "cost", "reserve", "tier", "refund_on_error", "check_result"}

// rule reads an entry of tools (withMatch) or the default rule.
func (d *policyDecoder) rule(at string, v any, withMatch bool) RuleSpec {
	var r RuleSpec
	allowed, required := policyRuleMembers, []string{"match", "cost"}
	if !withMatch {
		allowed, required = policyRuleMembers[1:], []string{"cost"}
	}
	m, ok := d.object(at, v, allowed, required)
	if !ok {
		return r
	}
	if v, ok := m["match"]; ok && withMatch {
		r.Match = d.str(at+"/match", v)
	}
	if v, ok := m["description"]; ok {
		r.Description = d.str(at+"/description", v)
	}
	if v, ok := m["cost"]; ok {
		r.Cost = d.cost(at+"/cost", v)
	}
	if v, ok := m["reserve"]; ok {
		r.Reserve = d.boolean(at+"/reserve", v)
	}
	if v, ok := m["tier"]; ok {
		r.Tier = claims.RiskTier(d.enum(at+"/tier", v, policyTiers...))
	}
	if v, ok := m["refund_on_error"]; ok {
		r.RefundOnError = d.boolean(at+"/refund_on_error", v)
	}
	if v, ok := m["check_result"]; ok {
		r.CheckResult = d.boolean(at+"/check_result", v)
	}
	return r
}

// approvers reads the approvers object; a list whose items are not all
// strings keeps its length ("" in their place).
func (d *policyDecoder) approvers(at string, v any) map[claims.RiskTier][]string {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(at, policyRuleType, "want an object, got %s", canon.KindOf(v))
		return nil
	}
	out := make(map[claims.RiskTier][]string, len(m))
	for k, lv := range m {
		kat := violation.Join(at, k)
		if k != string(claims.TierDelete) && k != string(claims.TierPrivilege) {
			d.add(kat, policyRuleEnum, "approvers are named for DELETE or PRIVILEGE, the tiers needing approval; got %q", k)
		}
		a, ok := d.array(kat, lv)
		if !ok {
			continue
		}
		names := make([]string, len(a))
		for i, it := range a {
			names[i] = d.str(violation.Index(kat, i), it)
		}
		out[claims.RiskTier(k)] = names
	}
	return out
}

var policyInvariantMembers = []string{"name", "description", "enforcement", "suggestion",
	"at_most", "at_most_each", "within", "one_of", "matches"}

func (d *policyDecoder) invariant(at string, v any) InvariantSpec {
	var s InvariantSpec
	m, ok := d.object(at, v, policyInvariantMembers, []string{"name"})
	if !ok {
		return s
	}
	if v, ok := m["name"]; ok {
		s.Name = d.str(at+"/name", v)
	}
	if v, ok := m["description"]; ok {
		s.Description = d.str(at+"/description", v)
	}
	if v, ok := m["enforcement"]; ok {
		if d.enum(at+"/enforcement", v, kernel.EnforcementBlocking.String(), kernel.EnforcementMonitoring.String()) == kernel.EnforcementMonitoring.String() {
			s.Enforcement = kernel.EnforcementMonitoring
		}
	}
	if v, ok := m["suggestion"]; ok {
		s.Suggestion = d.str(at+"/suggestion", v)
	}
	// Each form present is read, even when there are several; the count
	// is Policy.violations' to report.
	if v, ok := m["at_most"]; ok {
		s.AtMost = &AtMostSpec{}
		fat := at + "/at_most"
		if fm, ok := d.object(fat, v, []string{"key", "n"}, []string{"key", "n"}); ok {
			if kv, ok := fm["key"]; ok {
				s.AtMost.Key = d.str(fat+"/key", kv)
			}
			if nv, ok := fm["n"]; ok {
				s.AtMost.N = d.integer(fat+"/n", nv, 0, policyMaxSafeInt)
			}
		}
	}
	if v, ok := m["at_most_each"]; ok {
		s.AtMostEach = &AtMostEachSpec{}
		fat := at + "/at_most_each"
		if fm, ok := d.object(fat, v, []string{"prefix", "n"}, []string{"prefix", "n"}); ok {
			if kv, ok := fm["prefix"]; ok {
				s.AtMostEach.Prefix = d.str(fat+"/prefix", kv)
			}
			if nv, ok := fm["n"]; ok {
				s.AtMostEach.N = d.integer(fat+"/n", nv, 0, policyMaxSafeInt)
			}
		}
	}
	if v, ok := m["within"]; ok {
		s.Within = &WithinSpec{}
		fat := at + "/within"
		if fm, ok := d.object(fat, v, []string{"key", "min", "max"}, []string{"key", "min", "max"}); ok {
			if kv, ok := fm["key"]; ok {
				s.Within.Key = d.str(fat+"/key", kv)
			}
			if nv, ok := fm["min"]; ok {
				s.Within.Min = d.number(fat+"/min", nv)
			}
			if nv, ok := fm["max"]; ok {
				s.Within.Max = d.number(fat+"/max", nv)
			}
		}
	}
	if v, ok := m["one_of"]; ok {
		s.OneOf = &OneOfSpec{}
		fat := at + "/one_of"
		if fm, ok := d.object(fat, v, []string{"key", "values"}, []string{"key", "values"}); ok {
			if kv, ok := fm["key"]; ok {
				s.OneOf.Key = d.str(fat+"/key", kv)
			}
			if vv, ok := fm["values"]; ok {
				if a, ok := d.array(fat+"/values", vv); ok && len(a) > 0 {
					s.OneOf.Values = make([]kernel.Value, len(a))
					for i, it := range a {
						s.OneOf.Values[i] = d.scalar(violation.Index(fat+"/values", i), it)
					}
				}
			}
		}
	}
	if v, ok := m["matches"]; ok {
		s.Matches = &MatchesSpec{}
		fat := at + "/matches"
		if fm, ok := d.object(fat, v, []string{"key", "pattern"}, []string{"key", "pattern"}); ok {
			if kv, ok := fm["key"]; ok {
				s.Matches.Key = d.str(fat+"/key", kv)
			}
			if pv, ok := fm["pattern"]; ok {
				s.Matches.Pattern = d.str(fat+"/pattern", pv)
			}
		}
	}
	return s
}

// scalar reads a one_of value: a number literal with a fraction or an
// exponent is a float, one without an int (kernel's typed JSON). An int
// beyond ±(2^53−1) is kept as an int for Policy.violations to report
// (value), or as null when beyond int64.
func (d *policyDecoder) scalar(at string, v any) kernel.Value {
	switch x := v.(type) {
	case nil:
		return kernel.Null()
	case bool:
		return kernel.Bool(x)
	case string:
		return kernel.String(x)
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
				d.add(at, policyRuleType, "%s is not a finite number", s)
				return kernel.Null()
			}
			return kernel.Float(f)
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			d.add(at, policyRuleValue, "the int %s is beyond ±(2^53−1); an int compared exactly must be within it", s)
			return kernel.Null()
		}
		return kernel.Int(i)
	}
	d.add(at, policyRuleType, "want a string, number, boolean or null, got %s", canon.KindOf(v))
	return kernel.Null()
}

// Validate reports every problem of p (see ParsePolicy for the rules) as
// one *ValidationError wrapping ErrInvalidPolicy, or nil. The paths are
// those of p's JSON form.
func (p Policy) Validate() error {
	if vs := p.violations(nil); len(vs) > 0 {
		return violation.New("toolgate", "policy", vs, ErrInvalidPolicy)
	}
	return nil
}

// violations checks p. A check that compares a member with others is
// skipped when bad reports a problem at or under one of them (the decoder
// has already reported it, and what p holds there is a placeholder).
func (p Policy) violations(bad func(at string) bool) []Violation {
	if bad == nil {
		bad = func(string) bool { return false }
	}
	var vs []Violation
	add := func(at, rule, format string, args ...any) {
		vs = append(vs, Violation{Path: at, Rule: rule, Message: fmt.Sprintf(format, args...)})
	}
	costShape := func(at string, c kernel.Cost) bool {
		if c < 0 || c > MaxPolicyCost {
			add(at, policyRuleCost, "%s is outside [0, %s]", c, MaxPolicyCost)
			return false
		}
		return true
	}
	atLeastMin := func(at string, c kernel.Cost, what string) {
		if costShape(at, c) && p.MinCost > 0 && c < p.MinCost && !bad("/min_cost") {
			add(at, policyRuleMinCost, "%s %s is below min_cost %s", what, c, p.MinCost)
		}
	}

	if p.Version != PolicyVersion {
		add("/version", policyRuleVersion, "this package reads version %d, got %d", PolicyVersion, p.Version)
	}
	if costShape("/min_cost", p.MinCost) && p.MinCost <= 0 {
		add("/min_cost", policyRuleMinCost, "min_cost must be positive: every call costs at least it, which bounds a caller's calls to budget/min_cost")
	}
	if costShape("/budget", p.Budget) && p.MinCost > 0 && p.Budget < p.MinCost && !bad("/min_cost") {
		add("/budget", policyRuleBudget, "budget %s is below min_cost %s: no call could run", p.Budget, p.MinCost)
	}

	switch {
	case p.AllowUnknown && p.DefaultRule == nil:
		add("/default_rule", policyRuleRequired, `"unknown_tools": "allow" needs a default_rule for the tools no rule matches`)
	case !p.AllowUnknown && p.DefaultRule != nil && !bad("/unknown_tools"):
		add("/default_rule", policyRuleDefaultUnused, `default_rule applies only with "unknown_tools": "allow"; unknown tools are refused`)
	}

	// Approvers.
	if p.Approvers != nil {
		tiers := make([]string, 0, len(p.Approvers))
		for t := range p.Approvers {
			tiers = append(tiers, string(t))
		}
		slices.Sort(tiers)
		for _, t := range tiers {
			at := violation.Join("/approvers", t)
			names := p.Approvers[claims.RiskTier(t)]
			if claims.RiskTier(t) != claims.TierDelete && claims.RiskTier(t) != claims.TierPrivilege {
				add(at, policyRuleEnum, "approvers are named for DELETE or PRIVILEGE, the tiers needing approval; got %q", t)
			}
			if len(names) == 0 {
				add(at, policyRuleRequired, "a tier's approvers name at least one approver")
			}
			for j, n := range names {
				switch {
				case n == "":
					add(violation.Index(at, j), policyRuleRequired, "an approver's name is not empty")
				case slices.Index(names, n) < j:
					add(violation.Index(at, j), policyRuleDuplicate, "approver %q is named twice", n)
				}
			}
		}
	}
	needsApprovers := func(at string, tier claims.RiskTier) {
		if (tier == claims.TierDelete || tier == claims.TierPrivilege) && p.Approvers != nil &&
			len(p.Approvers[tier]) == 0 && !bad("/approvers") {
			add(at, policyRuleApprovers, "%s calls need an approval, and approvers names nobody for %s", tier, tier)
		}
	}

	// Rules.
	checkRule := func(at string, r RuleSpec, withMatch bool) {
		if withMatch {
			if r.Match == "" {
				add(at+"/match", policyRuleRequired, "a rule matches a tool's name or a path.Match pattern")
			} else if _, err := path.Match(r.Match, ""); err != nil {
				add(at+"/match", policyRuleGlob, "%q is not a path.Match pattern: %v", r.Match, err)
			}
		} else if r.Match != "" {
			add(at+"/match", policyRuleUnknownField, "the default rule has no match: it applies to every tool no rule matches")
		}
		atLeastMin(at+"/cost", r.Cost, "cost")
		if r.Tier != "" && !r.Tier.Valid() {
			add(at+"/tier", policyRuleEnum, "want one of %s, got %q", strings.Join(policyTiers, ", "), r.Tier)
		}
		needsApprovers(at+"/tier", r.Tier)
	}
	if p.DefaultRule != nil {
		checkRule("/default_rule", *p.DefaultRule, false)
	}
	for i, r := range p.Tools {
		at := violation.Index("/tools", i)
		checkRule(at, r, true)
		if r.Match == "" {
			continue
		}
		for j, e := range p.Tools[:i] {
			if e.Match == "" {
				continue
			}
			if e.Match == r.Match {
				add(at+"/match", policyRuleDuplicateMatch, "%q is the match of /tools/%d, which decides first: this rule never applies", r.Match, j)
				break
			}
			if !strings.ContainsAny(r.Match, `*?[\`) {
				if ok, err := path.Match(e.Match, r.Match); err == nil && ok {
					add(at+"/match", policyRuleShadowed, "the tool %q is matched first by %q (/tools/%d): this rule never applies; put it before", r.Match, e.Match, j)
					break
				}
			}
		}
	}

	// Invariants.
	for i, s := range p.Invariants {
		at := violation.Index("/invariants", i)
		if s.Name == "" {
			add(at+"/name", policyRuleRequired, "an invariant has a name")
		} else if j := slices.IndexFunc(p.Invariants[:i], func(e InvariantSpec) bool { return e.Name == s.Name }); j >= 0 {
			add(at+"/name", policyRuleDuplicateName, "%q is also the name of /invariants/%d", s.Name, j)
		}
		if s.Enforcement != kernel.EnforcementBlocking && s.Enforcement != kernel.EnforcementMonitoring {
			add(at+"/enforcement", policyRuleEnum, "want blocking or monitoring, got %s", s.Enforcement)
		}
		if n := s.forms(); n != 1 {
			add(at, policyRuleInvariantForm, "an invariant has exactly one of at_most, at_most_each, within, one_of, matches; this one has %d", n)
		}
		key := func(fat, k string) {
			if k == "" {
				add(fat+"/key", policyRuleRequired, "the key names a state variable, such as \"calls/delete_file\"")
			}
		}
		count := func(fat string, n int64) {
			if n < 0 || n > policyMaxSafeInt {
				add(fat+"/n", policyRuleRange, "%d is outside [0, 2^53−1]", n)
			}
		}
		if f := s.AtMost; f != nil {
			key(at+"/at_most", f.Key)
			count(at+"/at_most", f.N)
		}
		if f := s.AtMostEach; f != nil {
			count(at+"/at_most_each", f.N)
		}
		if f := s.Within; f != nil {
			fat := at + "/within"
			key(fat, f.Key)
			finite := true
			for _, b := range []struct {
				name string
				v    float64
			}{{"min", f.Min}, {"max", f.Max}} {
				if math.IsNaN(b.v) || math.IsInf(b.v, 0) {
					add(fat+"/"+b.name, policyRuleType, "%v is not a finite number", b.v)
					finite = false
				}
			}
			if finite && f.Min > f.Max && !bad(fat+"/min") && !bad(fat+"/max") {
				add(fat, policyRuleBounds, "min %v is above max %v: no value lies within", f.Min, f.Max)
			}
		}
		if f := s.OneOf; f != nil {
			fat := at + "/one_of"
			key(fat, f.Key)
			if len(f.Values) == 0 {
				add(fat+"/values", policyRuleRequired, "one_of lists at least one value")
			}
			for k, v := range f.Values {
				vat := violation.Index(fat+"/values", k)
				switch v.Kind() {
				case kernel.KindNull, kernel.KindBool, kernel.KindString:
				case kernel.KindInt:
					if i, _ := v.AsInt(); i < -policyMaxSafeInt || i > policyMaxSafeInt {
						add(vat, policyRuleValue, "the int %d is beyond ±(2^53−1); an int compared exactly must be within it", i)
					}
				case kernel.KindFloat:
					if x, _ := v.AsFloat(); math.IsNaN(x) || math.IsInf(x, 0) {
						add(vat, policyRuleType, "%v is not a finite number", x)
					}
				default:
					add(vat, policyRuleType, "want a string, number, boolean or null, got a %s", v.Kind())
				}
			}
		}
		if f := s.Matches; f != nil {
			fat := at + "/matches"
			key(fat, f.Key)
			if _, err := regexp.Compile(f.Pattern); err != nil {
				add(fat+"/pattern", policyRuleRegex, "not a regular expression (Go's RE2 syntax): %v", err)
			}
		}
	}

	if p.ResultTextLimit < -1 || p.ResultTextLimit > MaxResultTextLimit {
		add("/result_text_limit", policyRuleRange, "%d is outside [-1, %d]", p.ResultTextLimit, MaxResultTextLimit)
	}
	if p.MaxWaiting < -1 || p.MaxWaiting > MaxPolicyWaiting {
		add("/max_waiting", policyRuleRange, "%d is outside [-1, %d]", p.MaxWaiting, MaxPolicyWaiting)
	}

	if s := p.Shared; s != nil {
		switch {
		case s.ID == "":
			add("/shared_budget/id", policyRuleRequired, "a shared budget has an id")
		case !utf8.ValidString(s.ID) || strings.IndexByte(s.ID, 0) >= 0 || utf8.RuneCountInString(s.ID) > maxSharedIDLen:
			add("/shared_budget/id", policyRuleID, "a shared budget id is UTF-8 without NUL, at most %d characters", maxSharedIDLen)
		case len(s.ID) > maxSharedIDLen:
			add("/shared_budget/id", policyRuleIDLength, "the id is %d bytes; a shared budget id is at most %d", len(s.ID), maxSharedIDLen)
		}
		atLeastMin("/shared_budget/limit", s.Limit, "the shared limit")
	}

	violation.Sort(vs)
	return vs
}

// Config returns the gate's Config the policy describes, or the policy's
// *ValidationError (ErrInvalidPolicy) when Validate refuses it. The
// shared budget is not part of a Config: see Policy.Shared.
func (p Policy) Config() (Config, error) {
	if err := p.Validate(); err != nil {
		return Config{}, err
	}
	cfg := Config{
		Budget:          p.Budget,
		MinCost:         p.MinCost,
		AllowUnknown:    p.AllowUnknown,
		ResultTextLimit: p.ResultTextLimit,
		MaxWaiting:      p.MaxWaiting,
		CheckResults:    p.CheckResults,
	}
	for _, r := range p.Tools {
		cfg.Rules = append(cfg.Rules, r.Rule())
	}
	if p.DefaultRule != nil {
		cfg.DefaultRule = p.DefaultRule.Rule()
	}
	if p.Approvers != nil {
		cfg.Approvers = make(map[claims.RiskTier][]string, len(p.Approvers))
		for t, names := range p.Approvers {
			cfg.Approvers[t] = slices.Clone(names)
		}
	}
	for _, s := range p.Invariants {
		inv, err := s.Invariant()
		if err != nil {
			return Config{}, err
		}
		cfg.Invariants = append(cfg.Invariants, inv)
	}
	return cfg, nil
}

// The JSON form Policy.MarshalJSON writes, members in the schema's order.
type (
	policyJSON struct {
		Schema          string                `json:"$schema,omitempty"`
		Version         int                   `json:"version"`
		Budget          kernel.Cost           `json:"budget"`
		MinCost         kernel.Cost           `json:"min_cost"`
		UnknownTools    string                `json:"unknown_tools,omitempty"`
		DefaultRule     *policyRuleJSON       `json:"default_rule,omitempty"`
		Approvers       any                   `json:"approvers,omitempty"`
		Tools           []policyRuleJSON      `json:"tools,omitempty"`
		Invariants      []policyInvariantJSON `json:"invariants,omitempty"`
		ResultTextLimit int                   `json:"result_text_limit,omitempty"`
		MaxWaiting      int                   `json:"max_waiting,omitempty"`
		CheckResults    bool                  `json:"check_results,omitempty"`
		SharedBudget    *policySharedJSON     `json:"shared_budget,omitempty"`
	}
	policyRuleJSON struct {
		Match         string      `json:"match,omitempty"`
		Description   string      `json:"description,omitempty"`
		Cost          kernel.Cost `json:"cost"`
		Reserve       bool        `json:"reserve,omitempty"`
		Tier          string      `json:"tier,omitempty"`
		RefundOnError bool        `json:"refund_on_error,omitempty"`
		CheckResult   bool        `json:"check_result,omitempty"`
	}
	policyInvariantJSON struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		Enforcement string `json:"enforcement,omitempty"`
		Suggestion  string `json:"suggestion,omitempty"`
		AtMost      *struct {
			Key string `json:"key"`
			N   int64  `json:"n"`
		} `json:"at_most,omitempty"`
		AtMostEach *struct {
			Prefix string `json:"prefix"`
			N      int64  `json:"n"`
		} `json:"at_most_each,omitempty"`
		Within *struct {
			Key string  `json:"key"`
			Min float64 `json:"min"`
			Max float64 `json:"max"`
		} `json:"within,omitempty"`
		OneOf *struct {
			Key    string            `json:"key"`
			Values []json.RawMessage `json:"values"`
		} `json:"one_of,omitempty"`
		Matches *struct {
			Key     string `json:"key"`
			Pattern string `json:"pattern"`
		} `json:"matches,omitempty"`
	}
	policySharedJSON struct {
		ID    string      `json:"id"`
		Limit kernel.Cost `json:"limit"`
	}
)

func policyRuleToJSON(r RuleSpec) policyRuleJSON {
	return policyRuleJSON{Match: r.Match, Description: r.Description, Cost: r.Cost, Reserve: r.Reserve,
		Tier: string(r.Tier), RefundOnError: r.RefundOnError, CheckResult: r.CheckResult}
}

// MarshalJSON writes p as a policy file (compact; costs as exact decimal
// strings; members at their defaults left out), which ParsePolicy reads
// back to an equal Policy when p is valid. It writes an invalid p too, as
// far as JSON can hold it: a float that is NaN or infinite cannot be
// written and fails, and invalid UTF-8 in a string is written as U+FFFD.
func (p Policy) MarshalJSON() ([]byte, error) {
	j := policyJSON{Schema: p.Schema, Version: p.Version, Budget: p.Budget, MinCost: p.MinCost,
		ResultTextLimit: p.ResultTextLimit, MaxWaiting: p.MaxWaiting, CheckResults: p.CheckResults}
	if p.AllowUnknown {
		j.UnknownTools = "allow"
	}
	if p.DefaultRule != nil {
		r := policyRuleToJSON(*p.DefaultRule)
		j.DefaultRule = &r
	}
	if p.Approvers != nil {
		m := make(map[string][]string, len(p.Approvers))
		for t, names := range p.Approvers {
			m[string(t)] = names
		}
		j.Approvers = m
	}
	for _, r := range p.Tools {
		j.Tools = append(j.Tools, policyRuleToJSON(r))
	}
	for _, s := range p.Invariants {
		ij := policyInvariantJSON{Name: s.Name, Description: s.Description, Suggestion: s.Suggestion}
		if s.Enforcement != kernel.EnforcementBlocking {
			ij.Enforcement = s.Enforcement.String()
		}
		if f := s.AtMost; f != nil {
			ij.AtMost = &struct {
				Key string `json:"key"`
				N   int64  `json:"n"`
			}{f.Key, f.N}
		}
		if f := s.AtMostEach; f != nil {
			ij.AtMostEach = &struct {
				Prefix string `json:"prefix"`
				N      int64  `json:"n"`
			}{f.Prefix, f.N}
		}
		if f := s.Within; f != nil {
			ij.Within = &struct {
				Key string  `json:"key"`
				Min float64 `json:"min"`
				Max float64 `json:"max"`
			}{f.Key, f.Min, f.Max}
		}
		if f := s.OneOf; f != nil {
			ij.OneOf = &struct {
				Key    string            `json:"key"`
				Values []json.RawMessage `json:"values"`
			}{Key: f.Key, Values: []json.RawMessage{}}
			for _, v := range f.Values {
				b, err := policyScalarJSON(v)
				if err != nil {
					return nil, fmt.Errorf("toolgate: writing invariant %q: %w", s.Name, err)
				}
				ij.OneOf.Values = append(ij.OneOf.Values, b)
			}
		}
		if f := s.Matches; f != nil {
			ij.Matches = &struct {
				Key     string `json:"key"`
				Pattern string `json:"pattern"`
			}{f.Key, f.Pattern}
		}
		j.Invariants = append(j.Invariants, ij)
	}
	if s := p.Shared; s != nil {
		j.SharedBudget = &policySharedJSON{ID: s.ID, Limit: s.Limit}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(j); err != nil {
		return nil, fmt.Errorf("toolgate: writing policy: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// policyScalarJSON writes a one_of value as ParsePolicy reads it: a float
// always with a fraction or an exponent (1 as 1.0, -0 as -0.0). Values
// that are not scalars are written in kernel's typed form, which
// ParsePolicy refuses.
func policyScalarJSON(v kernel.Value) ([]byte, error) {
	if v.Kind() == kernel.KindFloat {
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
