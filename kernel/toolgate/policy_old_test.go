package toolgate

// The policy decoder as it was before it read with internal/strictjson:
// canon.Decode into a generic tree, a hand-written walk of it, and the
// schema run on the tree as a cross-check. FuzzParsePolicyAgrees holds the
// new reader to it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// oldSemanticRules are the rules the schema does not check.
var oldSemanticRules = map[string]bool{
	policyRuleMinCost: true, policyRuleBudget: true, policyRuleGlob: true, policyRuleDuplicateMatch: true,
	policyRuleShadowed: true, policyRuleRegex: true, policyRuleDuplicateName: true, policyRuleBounds: true,
	policyRuleValue: true, policyRuleApprovers: true, policyRuleIDLength: true,
	policyRuleDuration: true, policyRuleRuleName: true, policyRuleDuplicateRule: true, policyRuleArgSchema: true,
	policyRulePointer: true, policyRulePath: true, policyRuleLabel: true, policyRuleUnknownLabel: true, policyRuleFlowTier: true,
	policyRuleSelfApprovalUnused: true,
}

// policyCostPattern is the cost string the schema allows.
var policyCostPattern = regexp.MustCompile(`^(0|[1-9][0-9]{0,14})(\.[0-9]{1,3}0*)?$`)

// oldCheckPolicy decodes data and returns the policy with every violation
// found, sorted; the policy is meaningful only without violations.
func oldCheckPolicy(data []byte) (Policy, []Violation) {
	if len(data) > maxPolicySize {
		return Policy{}, []Violation{{Rule: policyRuleSize,
			Message: fmt.Sprintf("the file is over %d bytes", maxPolicySize)}}
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

	d := &oldPolicyDecoder{}
	p := d.policy(tree)
	decoded := d.vs
	checked := append(p.violations(decoded), p.compileSchemas(decoded)...)
	all := slices.Clone(decoded)
	for _, v := range checked {
		// A member that did not decode is reported once, by the decoder.
		if !slices.ContainsFunc(decoded, func(u Violation) bool { return policyUnder(u.Path, v.Path) }) {
			all = append(all, v)
		}
	}
	// The schema says the same as the decoder; should it ever refuse what
	// the decoder let through, its own violations refuse the file.
	schemaVs := oldPolicySchemaViolations(tree)
	if len(schemaVs) > 0 && !slices.ContainsFunc(all, func(v Violation) bool { return !oldSemanticRules[v.Rule] }) {
		all = append(all, schemaVs...)
	}
	violation.Sort(all)
	return p, slices.Compact(all)
}

// oldPolicySchema is policy.schema.json compiled once (a compiled schema is
// safe for concurrent use). It refers to nothing outside itself: a $ref
// to any other URL fails.
var oldPolicySchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("toolgate: the policy schema refers to %s", u)
	}
	if err := c.AddResource(policySchemaID, bytes.NewReader(policySchemaText)); err != nil {
		return nil, err
	}
	return c.Compile(policySchemaID)
})

// oldPolicySchemaViolations validates a decoded file against the schema,
// one violation per failing keyword ("schema.<keyword>").
func oldPolicySchemaViolations(tree any) (vs []Violation) {
	defer func() {
		// The validator is fed only what canon.Decode and
		// policyCheckNumbers accept; should it panic all the same, the
		// file is refused, not the process.
		if r := recover(); r != nil {
			vs = []Violation{{Rule: "schema." + "panic", Message: fmt.Sprint(r)}}
		}
	}()
	s, err := oldPolicySchema()
	if err != nil {
		return []Violation{{Rule: "schema." + "compile", Message: err.Error()}}
	}
	err = s.Validate(tree)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return []Violation{{Rule: "schema." + "error", Message: err.Error()}}
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
		vs = append(vs, Violation{Path: e.InstanceLocation, Rule: "schema." + kw, Message: e.Message})
	}
	walk(ve)
	return vs
}

// oldPolicyDecoder turns a decoded JSON tree into a Policy, collecting the
// problems of shape. It keeps the presence of members and the length of
// lists even where their content is wrong, so that Policy.violations
// does not report an absence the decoder already explained.
type oldPolicyDecoder struct {
	vs      []Violation
	version int // the file's version, 0 when it has none this package reads
}

func (d *oldPolicyDecoder) add(at, rule, format string, args ...any) {
	d.vs = append(d.vs, Violation{Path: at, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// object checks that v is an object holding only allowed members, and
// that the required ones are there.
func (d *oldPolicyDecoder) object(at string, v any, allowed, required []string) (map[string]any, bool) {
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

func (d *oldPolicyDecoder) array(at string, v any) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("an array", strictjson.KindOf(v)))
	}
	return a, ok
}

// duration reads a Go duration string ("5m", "90s", "24h"); a string
// that is none is refused (duration), and 1s stands in for it.
func (d *oldPolicyDecoder) duration(at string, v any) time.Duration {
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

func (d *oldPolicyDecoder) str(at string, v any) string {
	s, ok := v.(string)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("a string", strictjson.KindOf(v)))
	}
	return s
}

func (d *oldPolicyDecoder) boolean(at string, v any) bool {
	b, ok := v.(bool)
	if !ok {
		d.add(at, policyRuleType, "%s", strictjson.WantMessage("a boolean", strictjson.KindOf(v)))
	}
	return b
}

// cost reads an exact amount of units: a decimal string or a number.
func (d *oldPolicyDecoder) cost(at string, v any) kernel.Cost {
	switch x := v.(type) {
	case string:
		if !policyCostPattern.MatchString(x) {
			d.add(at, policyRuleCost, "%s is not a decimal amount of units in whole thousandths, at most %s (such as \"0.01\")", policyShow(x), maxPolicyCost)
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
			d.add(at, policyRuleCost, "%s is over the largest cost %s", x, maxPolicyCost)
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
func (d *oldPolicyDecoder) integer(at string, v any, lo, hi int64) int64 {
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
func (d *oldPolicyDecoder) number(at string, v any) float64 {
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
func (d *oldPolicyDecoder) enum(at string, v any, allowed ...string) string {
	s, ok := v.(string)
	if !ok || !slices.Contains(allowed, s) {
		d.add(at, policyRuleEnum, "want one of %s, got %s", strings.Join(allowed, ", "), policyShow(v))
		return ""
	}
	return s
}

var oldPolicyMembers = []string{"$schema", "version", "budget", "min_cost", "unknown_tools", "default_rule", "approvers",
	"tools", "invariants", "result_text_limit", "max_waiting", "check_results", "approval_timeout", "approval_ttl", "self_approval", "shared_budget", "labels", "timeout"}

func (d *oldPolicyDecoder) policy(tree any) Policy {
	var p Policy
	m, ok := d.object("", tree, oldPolicyMembers, []string{"version", "budget", "min_cost"})
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
			p.Tools = make([]Rule, len(a))
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
		p.ResultTextLimit = int(d.integer("/result_text_limit", v, -1, maxResultTextLimit))
	}
	if v, ok := m["max_waiting"]; ok {
		p.MaxWaiting = int(d.integer("/max_waiting", v, -1, maxPolicyWaiting))
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
	oldRuleMembers   = []string{"match", "description", "cost", "reserve", "tier", "refund_on_error", "check_result", "timeout", "cost_from"}
	oldRuleMembersV2 = []string{"name", "principals", "arguments", "paths", "effect", "reason", "rate", "labels", "flow"}
)

// rule reads an entry of tools (withMatch) or the default rule. The
// members of version 2 are read in entries of tools of a version 2 file
// (or one whose version is wrong, so as to report their problems too).
func (d *oldPolicyDecoder) rule(at string, v any, withMatch bool) Rule {
	var r Rule
	allowed, required := oldRuleMembers, []string{"match"}
	if !withMatch {
		allowed, required = oldRuleMembers[1:], nil
	} else if d.version != 1 {
		allowed = append(slices.Clone(allowed), oldRuleMembersV2...)
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
func (d *oldPolicyDecoder) strList(at string, v any) []string {
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
func (d *oldPolicyDecoder) approvers(at string, v any) map[claims.RiskTier][]string {
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

var oldInvariantMembers = []string{"name", "description", "enforcement", "suggestion",
	"at_most", "at_most_each", "within", "one_of", "matches"}

func (d *oldPolicyDecoder) invariant(at string, v any) InvariantSpec {
	var s InvariantSpec
	m, ok := d.object(at, v, oldInvariantMembers, []string{"name"})
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
					s.OneOf.Values = make([]value.Value, len(a))
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
func (d *oldPolicyDecoder) scalar(at string, v any) value.Value {
	switch x := v.(type) {
	case nil:
		return value.Null()
	case bool:
		return value.Bool(x)
	case string:
		return value.String(x)
	case json.Number:
		s := string(x)
		if strings.ContainsAny(s, ".eE") {
			f, err := strconv.ParseFloat(s, 64)
			if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0) {
				d.add(at, policyRuleType, "%s is not a finite number", s)
				return value.Null()
			}
			return value.Float(f)
		}
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			d.add(at, policyRuleValue, "the int %s is beyond ±(2^53−1); an int compared exactly must be within it", s)
			return value.Null()
		}
		return value.Int(i)
	}
	d.add(at, policyRuleType, "%s", strictjson.WantMessage("a string, number, boolean or null", strictjson.KindOf(v)))
	return value.Null()
}
