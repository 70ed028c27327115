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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/osfile"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
)

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
//     attached by some rule (unknown_label); a tier only on a flow that
//     asks (flow_tier); approvers for the tier a flow asks at (approvers).
//     In a version 1 file these members are unknown (unknown_field).
//
// A problem inside a member that is already wrong is not reported again
// (a rule that is not an object reports no missing cost). The schema and
// this decoder agree on the shape: a file the schema accepts has no
// violation of the second group, and the other way round.
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
	vs      []Violation
	version int // the file's version, 0 when it has none this package reads
}

func (d *policyDecoder) add(at, rule, format string, args ...any) {
	d.vs = append(d.vs, Violation{Path: at, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// object checks that v is an object holding only allowed members, and
// that the required ones are there.
func (d *policyDecoder) object(at string, v any, allowed, required []string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("an object", strictjson.KindOf(v)))
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
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("an array", strictjson.KindOf(v)))
	}
	return a, ok
}

// duration reads a Go duration string ("5m", "90s", "24h"); a string
// that is none is refused (duration), and 1s stands in for it.
func (d *policyDecoder) duration(at string, v any) time.Duration {
	s, ok := v.(string)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("a duration string such as \"5m\"", strictjson.KindOf(v)))
		return time.Second
	}
	x, err := time.ParseDuration(s)
	if err != nil {
		d.add(at, policyRuleDuration, "%s is not a duration such as \"5m\", \"90s\" or \"24h\"", policyShow(s))
		return time.Second
	}
	return x
}

func (d *policyDecoder) str(at string, v any) string {
	s, ok := v.(string)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("a string", strictjson.KindOf(v)))
	}
	return s
}

func (d *policyDecoder) boolean(at string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("a boolean", strictjson.KindOf(v)))
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
	d.add(at, policyRuleType, "%s", strictjson.WantMessage("a cost (a decimal string or a number)", strictjson.KindOf(v)))
	return 0
}

// integer reads an integer in [lo, hi] (1.0 and 1e2 are integers, as in
// JSON Schema).
func (d *policyDecoder) integer(at string, v any, lo, hi int64) int64 {
	n, ok := v.(json.Number)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("an integer", strictjson.KindOf(v)))
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
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("a number", strictjson.KindOf(v)))
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
	return strictjson.KindOf(v).String()
}

var policyTiers = []string{string(claims.TierReadOnly), string(claims.TierWriteLimited), string(claims.TierModify),
	string(claims.TierDelete), string(claims.TierPrivilege)}

var policyMembers = []string{"$schema", "version", "budget", "min_cost", "unknown_tools", "default_rule", "approvers",
	"tools", "invariants", "result_text_limit", "max_waiting", "check_results", "approval_timeout", "approval_ttl", "self_approval", "shared_budget", "labels", "timeout"}

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
			if r, ok := policyRat(n); ok && r.IsInt() && r.Num().IsInt64() {
				if x := r.Num().Int64(); x == 1 || x == 2 {
					p.Version = int(x)
				}
			}
		}
		if p.Version == 0 {
			d.add("/version", policyRuleVersion, "this package reads versions 1 and 2, got %s", policyShow(v))
		}
	}
	d.version = p.Version
	if d.version == 1 {
		for _, k := range []string{"labels"} {
			if _, ok := m[k]; ok {
				d.add("/"+k, policyRuleUnknownField, "unknown member %q (version 2 has it)", k)
			}
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
	if v, ok := m["approval_timeout"]; ok {
		p.ApprovalTimeout = d.duration("/approval_timeout", v)
	}
	if v, ok := m["approval_ttl"]; ok {
		p.ApprovalTTL = d.duration("/approval_ttl", v)
	}
	if v, ok := m["self_approval"]; ok {
		p.SelfApproval = d.boolean("/self_approval", v)
	}
	if v, ok := m["timeout"]; ok {
		p.Timeout = d.duration("/timeout", v)
	}
	if v, ok := m["labels"]; ok && d.version != 1 {
		p.Labels = d.strList("/labels", v)
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

var (
	policyRuleMembers   = []string{"match", "description", "cost", "reserve", "tier", "refund_on_error", "check_result", "timeout", "cost_from"}
	policyRuleMembersV2 = []string{"name", "principals", "arguments", "paths", "effect", "reason", "rate", "labels", "flow"}
)

// rule reads an entry of tools (withMatch) or the default rule. The
// members of version 2 are read in entries of tools of a version 2 file
// (or one whose version is wrong, so as to report their problems too).
func (d *policyDecoder) rule(at string, v any, withMatch bool) RuleSpec {
	var r RuleSpec
	allowed, required := policyRuleMembers, []string{"match"}
	if !withMatch {
		allowed, required = policyRuleMembers[1:], nil
	} else if d.version != 1 {
		allowed = append(slices.Clone(allowed), policyRuleMembersV2...)
	}
	m, ok := d.object(at, v, allowed, required)
	if !ok {
		return r
	}
	if v, ok := m["effect"]; ok && slices.Contains(allowed, "effect") {
		if d.enum(at+"/effect", v, "allow", "refuse") == "refuse" {
			r.Effect = EffectRefuse
		}
	}
	if _, ok := m["cost"]; !ok && r.Effect != EffectRefuse {
		d.add(at+"/cost", policyRuleRequired, "missing required member")
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
	if v, ok := m["timeout"]; ok {
		r.Timeout = d.duration(at+"/timeout", v)
	}
	if v, ok := m["cost_from"]; ok {
		r.CostFrom = d.str(at+"/cost_from", v)
	}
	if !slices.Contains(allowed, "name") {
		return r
	}
	if v, ok := m["name"]; ok {
		r.Name = d.str(at+"/name", v)
	}
	if v, ok := m["principals"]; ok {
		pat := at + "/principals"
		pc := &PrincipalCondition{}
		if pm, ok := d.object(pat, v, []string{"issuers", "subjects", "groups", "scopes"}, nil); ok {
			if len(pm) == 0 {
				d.add(pat, policyRuleRequired, "principals lists at least one of issuers, subjects, groups, scopes")
			}
			for k, dst := range map[string]*[]string{"issuers": &pc.Issuers, "subjects": &pc.Subjects, "groups": &pc.Groups, "scopes": &pc.Scopes} {
				if lv, ok := pm[k]; ok {
					*dst = d.strList(pat+"/"+k, lv)
				}
			}
		}
		r.Principals = pc
	}
	if v, ok := m["arguments"]; ok {
		switch v.(type) {
		case map[string]any, bool:
			b, err := json.Marshal(v)
			if err != nil { // unreachable: a decoded tree marshals
				d.add(at+"/arguments", policyRuleType, "%v", err)
			}
			r.Arguments = b
		default:
			d.add(at+"/arguments", policyRuleType, "%s", strictjson.WantMessage("a JSON Schema (an object or a boolean)", strictjson.KindOf(v)))
		}
	}
	if v, ok := m["paths"]; ok {
		if a, ok := d.array(at+"/paths", v); ok {
			if len(a) == 0 {
				d.add(at+"/paths", policyRuleRequired, "paths lists at least one condition")
			}
			for i, it := range a {
				pat := violation.Index(at+"/paths", i)
				var pc PathCondition
				if pm, ok := d.object(pat, it, []string{"argument", "under", "case_insensitive"}, []string{"argument", "under"}); ok {
					if x, ok := pm["argument"]; ok {
						pc.Argument = d.str(pat+"/argument", x)
					}
					if x, ok := pm["under"]; ok {
						pc.Under = d.strList(pat+"/under", x)
					}
					if x, ok := pm["case_insensitive"]; ok {
						pc.CaseInsensitive = d.boolean(pat+"/case_insensitive", x)
					}
				}
				r.Paths = append(r.Paths, pc)
			}
		}
	}
	if v, ok := m["reason"]; ok {
		r.Reason = d.str(at+"/reason", v)
	}
	if v, ok := m["rate"]; ok {
		rat := at + "/rate"
		rt := &Rate{Scope: RateScopeTool}
		if rm, ok := d.object(rat, v, []string{"calls", "per", "scope"}, []string{"calls", "per"}); ok {
			if x, ok := rm["calls"]; ok {
				rt.Calls = int(d.integer(rat+"/calls", x, 1, math.MaxInt32))
			}
			if x, ok := rm["per"]; ok {
				if s, isStr := x.(string); isStr {
					per, err := time.ParseDuration(s)
					if err != nil {
						d.add(rat+"/per", policyRuleDuration, "%s is not a duration such as \"1m\", \"90s\" or \"24h\"", policyShow(s))
						per = time.Minute // a placeholder: the file is refused
					}
					rt.Per = per
				} else {
					d.add(rat+"/per", policyRuleType, "%s", strictjson.WantMessage("a duration string such as \"1m\"", strictjson.KindOf(x)))
				}
			}
			if x, ok := rm["scope"]; ok {
				rt.Scope = RateScope(d.enum(rat+"/scope", x, "tool", "rule"))
			}
		}
		r.Rate = rt
	}
	if v, ok := m["labels"]; ok {
		r.Labels = d.strList(at+"/labels", v)
	}
	if v, ok := m["flow"]; ok {
		if a, ok := d.array(at+"/flow", v); ok {
			if len(a) == 0 {
				d.add(at+"/flow", policyRuleRequired, "flow lists at least one entry")
			}
			for i, it := range a {
				fat := violation.Index(at+"/flow", i)
				var f FlowRule
				if fm, ok := d.object(fat, it, []string{"after", "effect", "reason", "tier"}, []string{"after", "effect"}); ok {
					if x, ok := fm["after"]; ok {
						f.After = d.strList(fat+"/after", x)
					}
					if x, ok := fm["effect"]; ok {
						f.Ask = d.enum(fat+"/effect", x, "refuse", "ask") == "ask"
					}
					if x, ok := fm["reason"]; ok {
						f.Reason = d.str(fat+"/reason", x)
					}
					if x, ok := fm["tier"]; ok {
						f.Tier = claims.RiskTier(d.enum(fat+"/tier", x, string(claims.TierDelete), string(claims.TierPrivilege)))
					}
				}
				r.Flow = append(r.Flow, f)
			}
		}
	}
	return r
}

// strList reads a non-empty list of non-empty strings; a list whose items
// are not all strings keeps its length ("" in their place).
func (d *policyDecoder) strList(at string, v any) []string {
	a, ok := d.array(at, v)
	if !ok {
		return nil
	}
	if len(a) == 0 {
		d.add(at, policyRuleRequired, "the list names at least one")
		return nil
	}
	out := make([]string, len(a))
	for i, it := range a {
		iat := violation.Index(at, i)
		out[i] = d.str(iat, it)
		if _, isStr := it.(string); isStr && out[i] == "" {
			d.add(iat, policyRuleRequired, "an entry is not empty")
		}
	}
	return out
}

// approvers reads the approvers object; a list whose items are not all
// strings keeps its length ("" in their place).
func (d *policyDecoder) approvers(at string, v any) map[claims.RiskTier][]string {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("an object", strictjson.KindOf(v)))
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
	d.add(at, policyRuleType, "%s", strictjson.WantMessage("a string, number, boolean or null", strictjson.KindOf(v)))
	return kernel.Null()
}
