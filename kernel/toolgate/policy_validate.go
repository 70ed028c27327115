package toolgate

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// violations checks p, section by section: the top level, the approvers,
// the default rule, the labels, each rule (its paths, principals, rate
// and flow), the invariants, the limits and durations, the shared
// budget. A check that compares a member with others is skipped when
// decoded (what the reader reported) has a problem at or under one of
// them (what p holds there is then a placeholder). The paths are those
// of p's JSON form.
func (p Policy) violations(decoded []Violation) []Violation {
	c := &policyCheck{p: p, decoded: decoded}
	c.top()
	c.approvers()
	c.defaultRule()
	c.labels()
	c.rules()
	c.invariants()
	c.limits()
	c.shared()
	c.budgetPeriods()
	violation.Sort(c.vs)
	return c.vs
}

// compileSchemas compiles each rule's argument schema, reporting one
// that does not compile (argument_schema), and keeps each that does on
// its rule for Compile; decoded is as for violations.
func (p *Policy) compileSchemas(decoded []Violation) []Violation {
	var vs []Violation
	for i := range p.Tools {
		r := &p.Tools[i]
		if len(r.Arguments) == 0 {
			continue
		}
		at := violation.Index("/tools", i) + "/arguments"
		if reported(decoded, at) {
			continue
		}
		s, err := compileArgumentSchema(r.Arguments)
		if err != nil {
			vs = append(vs, Violation{Path: at, Rule: policyRuleArgSchema, Message: err.Error()})
			continue
		}
		r.schema = &argumentSchema{raw: r.Arguments, s: s}
	}
	return vs
}

// reported reports whether decoded has a problem at or under pointer at.
func reported(decoded []Violation, at string) bool {
	for i := range decoded {
		if policyUnder(at, decoded[i].Path) {
			return true
		}
	}
	return false
}

// policyCheck gathers the violations of one policy.
type policyCheck struct {
	p       Policy
	decoded []Violation // what the reader reported (nil for a Policy built in Go)
	vs      []Violation
}

// labelSets are the labels the rules attach and the policy declares, for
// the labels and flows of each rule.
type labelSets struct{ attached, declared map[string]bool }

// bad reports whether the reader reported a problem at or under at.
func (c *policyCheck) bad(at string) bool { return reported(c.decoded, at) }

func (c *policyCheck) add(at, rule, format string, args ...any) {
	c.vs = append(c.vs, Violation{Path: at, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// costShape reports a cost outside [0, maxPolicyCost], and whether it is
// inside.
func (c *policyCheck) costShape(at string, cost kernel.Cost) bool {
	if cost < 0 || cost > maxPolicyCost {
		c.add(at, policyRuleCost, "%s is outside [0, %s]", cost, maxPolicyCost)
		return false
	}
	return true
}

// atLeastMin reports a cost below min_cost.
func (c *policyCheck) atLeastMin(at string, cost kernel.Cost, what string) {
	if c.costShape(at, cost) && c.p.MinCost > 0 && cost < c.p.MinCost && !c.bad("/min_cost") {
		c.add(at, policyRuleMinCost, "%s %s is below min_cost %s", what, cost, c.p.MinCost)
	}
}

// needsApprovers reports a tier needing approval that approvers, present,
// does not name.
func (c *policyCheck) needsApprovers(at string, tier claims.RiskTier) {
	if (tier == claims.TierDelete || tier == claims.TierPrivilege) && c.p.Approvers != nil &&
		len(c.p.Approvers[tier]) == 0 && !c.bad("/approvers") {
		c.add(at, policyRuleApprovers, "%s calls need an approval, and approvers names nobody for %s", tier, tier)
	}
}

// top checks the version, min_cost, budget, the default rule's presence
// and self_approval.
func (c *policyCheck) top() {
	p := &c.p
	if p.Version != 0 && p.Version != 1 && p.Version != 2 {
		c.add("/version", policyRuleVersion, "this package reads versions 1 and 2, got %d", p.Version)
	}
	if c.costShape("/min_cost", p.MinCost) && p.MinCost <= 0 {
		c.add("/min_cost", policyRuleMinCost, "min_cost must be positive: every call costs at least it, which bounds a caller's calls to budget/min_cost")
	}
	if c.costShape("/budget", p.Budget) && p.MinCost > 0 && p.Budget < p.MinCost && !c.bad("/min_cost") {
		c.add("/budget", policyRuleBudget, "budget %s is below min_cost %s: no call could run", p.Budget, p.MinCost)
	}
	switch {
	case p.AllowUnknown && p.DefaultRule == nil:
		c.add("/default_rule", policyRuleRequired, `"unknown_tools": "allow" needs a default_rule for the tools no rule matches`)
	case !p.AllowUnknown && p.DefaultRule != nil && !c.bad("/unknown_tools"):
		c.add("/default_rule", policyRuleDefaultUnused, `default_rule applies only with "unknown_tools": "allow"; unknown tools are refused`)
	}
	if p.SelfApproval && !p.asksAtPrivilege() {
		c.add("/self_approval", policyRuleSelfApprovalUnused, "self_approval applies to PRIVILEGE calls, and no rule or flow asks at PRIVILEGE")
	}
}

// approvers checks the approvers' tiers and names.
func (c *policyCheck) approvers() {
	if c.p.Approvers == nil {
		return
	}
	tiers := make([]string, 0, len(c.p.Approvers))
	for t := range c.p.Approvers {
		tiers = append(tiers, string(t))
	}
	slices.Sort(tiers)
	for _, t := range tiers {
		at := violation.Join("/approvers", t)
		names := c.p.Approvers[claims.RiskTier(t)]
		if claims.RiskTier(t) != claims.TierDelete && claims.RiskTier(t) != claims.TierPrivilege {
			c.add(at, policyRuleEnum, "approvers are named for DELETE or PRIVILEGE, the tiers needing approval; got %q", t)
		}
		if len(names) == 0 {
			c.add(at, policyRuleRequired, "a tier's approvers name at least one approver")
		}
		if name, k, ok := quorumOf(names); ok && k > 1 {
			// k distinct members of one group (quorum.go).
			if k > maxApproverCount {
				c.add(at, policyRuleRange, "%q is named %d times: at most %d distinct members of a group may be required", name, k, maxApproverCount)
			}
			continue
		}
		if looksLikeSlots(names) {
			c.add(at, policyRuleApprovers, "%q … %q read as the slots of a k-of-n group approval; name the group k times ({\"group\": …, \"count\": k}) instead", names[0], names[len(names)-1])
		}
		for j, n := range names {
			switch {
			case n == "":
				c.add(violation.Index(at, j), policyRuleRequired, "an approver's name is not empty")
			case slices.Index(names, n) < j:
				c.add(violation.Index(at, j), policyRuleDuplicate, "approver %q is named twice (a group named k times, and nothing else, waits for k of its members)", n)
			}
		}
	}
}

// defaultRule checks the default rule: the members every rule has, and
// none of a rule's conditions.
func (c *policyCheck) defaultRule() {
	r := c.p.DefaultRule
	if r == nil {
		return
	}
	c.ruleCommon("/default_rule", r, false)
	for _, m := range r2Members(r) {
		c.add("/default_rule/"+m, policyRuleUnknownField, "the default rule has no %s: it applies to every tool no rule matches", m)
	}
}

// ruleCommon checks the members every rule has: match, cost, tier,
// timeout and cost_from.
func (c *policyCheck) ruleCommon(at string, r *Rule, withMatch bool) {
	if withMatch {
		if r.Match == "" {
			c.add(at+"/match", policyRuleRequired, "a rule matches a tool's name or a path.Match pattern")
		} else if _, err := path.Match(r.Match, ""); err != nil {
			c.add(at+"/match", policyRuleGlob, "%q is not a path.Match pattern: %v", r.Match, err)
		}
	} else if r.Match != "" {
		c.add(at+"/match", policyRuleUnknownField, "the default rule has no match: it applies to every tool no rule matches")
	}
	if r.CostFunc == nil && (r.Effect != EffectRefuse || r.Cost != 0) {
		c.atLeastMin(at+"/cost", r.Cost, "cost")
	}
	if r.Tier != "" && !r.Tier.Valid() {
		c.add(at+"/tier", policyRuleEnum, "want one of %s, got %q", strings.Join(policyTiers, ", "), r.Tier)
	}
	c.needsApprovers(at+"/tier", r.Tier)
	if r.TierFromHints {
		if r.Tier != "" {
			c.add(at+"/tier_from_hints", policyRuleTierFromHints, "tier_from_hints with tier %s: the policy's tier would override every hint; name one of them", r.Tier)
		}
		if r.Effect == EffectRefuse {
			c.add(at+"/tier_from_hints", policyRuleTierFromHints, "tier_from_hints on a rule that refuses: its calls never run")
		}
		c.needsApprovers(at+"/tier_from_hints", claims.TierDelete)
	}
	if t := r.Timeout; t != 0 && (t < time.Millisecond || t > maxToolTimeout) {
		c.add(at+"/timeout", policyRuleDuration, "%s is outside [1ms, %s]", t, maxToolTimeout)
	}
	if r.CostFrom != "" {
		if _, err := ParseCostPointer(r.CostFrom); err != nil {
			c.add(at+"/cost_from", policyRulePointer, "%v", strings.TrimPrefix(err.Error(), "toolgate: "))
		}
		if !r.Reserve {
			c.add(at+"/cost_from", policyRuleCostFrom, "cost_from settles a reserved call: this rule has no reserve")
		}
	}
}

// labels checks the declared labels.
func (c *policyCheck) labels() {
	p := &c.p
	if p.Version == 1 && p.Labels != nil {
		c.add("/labels", policyRuleUnknownField, "labels needs version 2")
	}
	for k, l := range p.Labels {
		if !labelPattern.MatchString(l) {
			c.add(violation.Index("/labels", k), policyRuleLabel, "%q is not a label (%s)", l, labelPattern)
		}
	}
}

// knownLabel checks a label a rule attaches or a flow names.
func (c *policyCheck) knownLabel(at, l string, attaching bool, ls labelSets) {
	switch {
	case !labelPattern.MatchString(l):
		c.add(at, policyRuleLabel, "%q is not a label (%s)", l, labelPattern)
	case c.p.Labels != nil && !ls.declared[l]:
		c.add(at, policyRuleUnknownLabel, "%q is not declared in labels", l)
	case c.p.Labels == nil && !attaching && !ls.attached[l]:
		c.add(at, policyRuleUnknownLabel, "no rule attaches %q: this flow never applies", l)
	}
}

// rules checks each rule of tools, and that each may decide for some
// tool (no duplicate match, no tool an earlier pattern already takes).
func (c *policyCheck) rules() {
	ls := labelSets{attached: map[string]bool{}, declared: map[string]bool{}}
	for _, r := range c.p.Tools {
		for _, l := range r.Labels {
			ls.attached[l] = true
		}
	}
	for _, l := range c.p.Labels {
		ls.declared[l] = true
	}
	names := map[string]int{}
	first := newRuleIndex()
	for i := range c.p.Tools {
		r := &c.p.Tools[i]
		at := violation.Index("/tools", i)
		c.rule(at, r, i, names, ls)
		if r.Match == "" {
			continue
		}
		if j, dup := first.earliest(r.Match); j >= 0 {
			if dup {
				c.add(at+"/match", policyRuleDuplicateMatch, "%q is the match of /tools/%d, which decides first: this rule never applies", r.Match, j)
			} else {
				c.add(at+"/match", policyRuleShadowed, "the tool %q is matched first by %q (/tools/%d): this rule never applies; put it before", r.Match, c.p.Tools[j].Match, j)
			}
		}
		if r.unconditional() {
			first.add(r.Match, i)
		}
	}
}

// rule checks rule i of tools at at; names maps the names seen so far to
// their rules.
func (c *policyCheck) rule(at string, r *Rule, i int, names map[string]int, ls labelSets) {
	c.ruleCommon(at, r, true)
	if c.p.Version == 1 {
		for _, m := range r2Members(r) {
			c.add(at+"/"+m, policyRuleUnknownField, "%s needs version 2", m)
		}
	}
	if r.Name != "" {
		if !ruleNamePattern.MatchString(r.Name) {
			c.add(at+"/name", policyRuleRuleName, "%q is not a rule name (%s)", r.Name, ruleNamePattern)
		} else if r.Name == defaultRuleID {
			c.add(at+"/name", policyRuleRuleName, "%q is the default rule's name", r.Name)
		} else if j, ok := names[r.Name]; ok {
			c.add(at+"/name", policyRuleDuplicateRule, "%q is also the name of /tools/%d", r.Name, j)
		} else {
			names[r.Name] = i
		}
	}
	if r.Server != "" {
		if _, err := path.Match(r.Server, ""); err != nil {
			c.add(at+"/server", policyRuleGlob, "%q is not a path.Match pattern: %v", r.Server, err)
		}
	}
	// The argument schema is compiled once, by compileRule, which reports
	// it (argument_schema).
	c.paths(at, r.Paths)
	if pc := r.Principals; pc != nil && len(pc.Issuers)+len(pc.Subjects)+len(pc.Groups)+len(pc.Scopes) == 0 && !c.bad(at+"/principals") {
		c.add(at+"/principals", policyRuleRequired, "principals lists at least one of issuers, subjects, groups, scopes")
	}
	if r.Rate != nil && !c.bad(at+"/rate") {
		c.rate(at+"/rate", r.Rate)
	}
	for k, l := range r.Labels {
		c.knownLabel(violation.Index(at+"/labels", k), l, true, ls)
	}
	switch t := r.LabelTTL; {
	case t == 0:
	case t < time.Second || t > maxRatePer:
		c.add(at+"/label_ttl", policyRuleDuration, "%s is outside [1s, %s]", t, maxRatePer)
	case len(r.Labels) == 0 && !c.bad(at+"/labels"):
		c.add(at+"/label_ttl", policyRuleRequired, "label_ttl says how long the rule's labels last, and the rule has no labels")
	}
	for k, f := range r.Flow {
		c.flow(violation.Index(at+"/flow", k), f, ls)
	}
	if w := r.When; w != nil {
		// The text is compiled once, by Compile (condition.go).
		if w.Language == "" && !c.bad(at+"/when/language") {
			c.add(at+"/when/language", policyRuleRequired, "a when condition names its language (\"cedar\")")
		}
		switch {
		case w.Text == "" && w.File == "" && !c.bad(at+"/when"):
			c.add(at+"/when/text", policyRuleRequired, "a when condition gives its text, or the file that holds it")
		case w.Text != "" && w.File != "":
			c.add(at+"/when/file", policyRuleWhenForm, "a when condition gives its text or a file, not both")
		}
	}
}

// paths checks a rule's path conditions.
func (c *policyCheck) paths(at string, paths []PathCondition) {
	for k, pc := range paths {
		pat := violation.Index(at+"/paths", k)
		if _, err := pointerTokens(pc.Argument); err != nil && pc.Argument != "" {
			c.add(pat+"/argument", policyRulePointer, "%v", err)
		} else if pc.Argument == "" && !c.bad(pat) {
			c.add(pat+"/argument", policyRuleRequired, "the argument is a JSON Pointer such as \"/path\"")
		}
		if len(pc.Under) == 0 && !c.bad(pat) {
			c.add(pat+"/under", policyRuleRequired, "under lists at least one directory")
		}
		for j, root := range pc.Under {
			if root == "" {
				continue // the reader said so
			}
			if err := checkRoot(root); err != nil {
				c.add(violation.Index(pat+"/under", j), policyRulePath, "%s", strings.TrimPrefix(err.Error(), "toolgate: "))
			}
		}
	}
}

// rate checks a rule's rate window.
func (c *policyCheck) rate(at string, rt *Rate) {
	if rt.Calls < 1 || rt.Calls > math.MaxInt32 {
		c.add(at+"/calls", policyRuleRange, "%d is outside [1, %d]", rt.Calls, math.MaxInt32)
	}
	if rt.Per < time.Millisecond || rt.Per > maxRatePer {
		c.add(at+"/per", policyRuleDuration, "%s is outside [1ms, %s]", rt.Per, maxRatePer)
	}
	if rt.Scope != "" && rt.Scope != RateScopeTool && rt.Scope != RateScopeRule {
		c.add(at+"/scope", policyRuleEnum, "want one of tool, rule, got %q", rt.Scope)
	}
}

// flow checks an entry of a rule's flow.
func (c *policyCheck) flow(at string, f FlowRule, ls labelSets) {
	if len(f.After) == 0 && !c.bad(at) {
		c.add(at+"/after", policyRuleRequired, "after names at least one label")
	}
	for j, l := range f.After {
		if l != "" {
			c.knownLabel(violation.Index(at+"/after", j), l, false, ls)
		}
	}
	switch {
	case !f.Ask && f.Tier != "":
		c.add(at+"/tier", policyRuleFlowTier, "a tier is for a flow that asks; this one refuses")
	case f.Ask && f.Tier != "" && f.Tier != claims.TierDelete && f.Tier != claims.TierPrivilege:
		c.add(at+"/tier", policyRuleEnum, "want one of DELETE, PRIVILEGE, got %q", f.Tier)
	case f.Ask:
		c.needsApprovers(at+"/tier", tierOrPrivilege(f.Tier))
	}
}

// invariants checks the invariants: names unique, each well formed.
func (c *policyCheck) invariants() {
	names := make(map[string]int, len(c.p.Invariants))
	for i := range c.p.Invariants {
		s := &c.p.Invariants[i]
		at := violation.Index("/invariants", i)
		if s.Name == "" {
			c.add(at+"/name", policyRuleRequired, "an invariant has a name")
		} else if j, ok := names[s.Name]; ok {
			c.add(at+"/name", policyRuleDuplicateName, "%q is also the name of /invariants/%d", s.Name, j)
		} else {
			names[s.Name] = i
		}
		c.invariant(at, s)
	}
}

// invariant checks one invariant's enforcement and form.
func (c *policyCheck) invariant(at string, s *InvariantSpec) {
	if s.Enforcement != kernel.EnforcementBlocking && s.Enforcement != kernel.EnforcementMonitoring {
		c.add(at+"/enforcement", policyRuleEnum, "want blocking or monitoring, got %s", s.Enforcement)
	}
	if n := s.forms(); n != 1 {
		c.add(at, policyRuleInvariantForm, "an invariant has exactly one of at_most, at_most_each, within, one_of, matches; this one has %d", n)
	}
	key := func(fat, k string) {
		if k == "" {
			c.add(fat+"/key", policyRuleRequired, "the key names a state variable, such as \"calls/delete_file\"")
		}
	}
	count := func(fat string, n int64) {
		if n < 0 || n > policyMaxSafeInt {
			c.add(fat+"/n", policyRuleRange, "%d is outside [0, 2^53−1]", n)
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
				c.add(fat+"/"+b.name, policyRuleType, "%v is not a finite number", b.v)
				finite = false
			}
		}
		if finite && f.Min > f.Max && !c.bad(fat+"/min") && !c.bad(fat+"/max") {
			c.add(fat, policyRuleBounds, "min %v is above max %v: no value lies within", f.Min, f.Max)
		}
	}
	if f := s.OneOf; f != nil {
		fat := at + "/one_of"
		key(fat, f.Key)
		if len(f.Values) == 0 {
			c.add(fat+"/values", policyRuleRequired, "one_of lists at least one value")
		}
		for k, v := range f.Values {
			c.oneOfValue(violation.Index(fat+"/values", k), v)
		}
	}
	if f := s.Matches; f != nil {
		fat := at + "/matches"
		key(fat, f.Key)
		if _, err := regexp.Compile(f.Pattern); err != nil {
			c.add(fat+"/pattern", policyRuleRegex, "not a regular expression (Go's RE2 syntax): %v", err)
		}
	}
}

// oneOfValue checks a one_of value: a JSON scalar, an int within
// ±(2^53−1).
func (c *policyCheck) oneOfValue(at string, v value.Value) {
	switch v.Kind() {
	case value.KindNull, value.KindBool, value.KindString:
	case value.KindInt:
		if i, _ := v.AsInt(); i < -policyMaxSafeInt || i > policyMaxSafeInt {
			c.add(at, policyRuleValue, "the int %d is beyond ±(2^53−1); an int compared exactly must be within it", i)
		}
	case value.KindFloat:
		if x, _ := v.AsFloat(); math.IsNaN(x) || math.IsInf(x, 0) {
			c.add(at, policyRuleType, "%v is not a finite number", x)
		}
	default:
		c.add(at, policyRuleType, "want a string, number, boolean or null, got a %s", v.Kind())
	}
}

// limits checks the top level's integers and durations.
func (c *policyCheck) limits() {
	p := &c.p
	if p.ResultTextLimit < -1 || p.ResultTextLimit > maxResultTextLimit {
		c.add("/result_text_limit", policyRuleRange, "%d is outside [-1, %d]", p.ResultTextLimit, maxResultTextLimit)
	}
	if p.MaxWaiting < -1 || p.MaxWaiting > maxPolicyWaiting {
		c.add("/max_waiting", policyRuleRange, "%d is outside [-1, %d]", p.MaxWaiting, maxPolicyWaiting)
	}
	if t := p.ApprovalTimeout; t != 0 && (t < time.Second || t > maxApprovalTimeout) {
		c.add("/approval_timeout", policyRuleDuration, "%s is outside [1s, %s]", t, maxApprovalTimeout)
	}
	if t := p.Timeout; t != 0 && (t < time.Millisecond || t > maxToolTimeout) {
		c.add("/timeout", policyRuleDuration, "%s is outside [1ms, %s]", t, maxToolTimeout)
	}
	if t := p.ApprovalTTL; t != 0 && (t < time.Second || t > maxRatePer) {
		c.add("/approval_ttl", policyRuleDuration, "%s is outside [1s, %s]", t, maxRatePer)
	}
	if p.ApprovalTimeout > 0 && p.ApprovalTTL > 0 && p.ApprovalTimeout > p.ApprovalTTL && !c.bad("/approval_timeout") && !c.bad("/approval_ttl") {
		c.add("/approval_timeout", policyRuleDuration, "%s is longer than approval_ttl %s: a held call would outlive its request", p.ApprovalTimeout, p.ApprovalTTL)
	}
}

// shared checks the shared budget.
func (c *policyCheck) shared() {
	s := c.p.Shared
	if s == nil {
		return
	}
	switch {
	case s.ID == "":
		c.add("/shared_budget/id", policyRuleRequired, "a shared budget has an id")
	case !utf8.ValidString(s.ID) || strings.IndexByte(s.ID, 0) >= 0 || utf8.RuneCountInString(s.ID) > maxSharedIDLen:
		c.add("/shared_budget/id", policyRuleID, "a shared budget id is UTF-8 without NUL, at most %d characters", maxSharedIDLen)
	case len(s.ID) > maxSharedIDLen:
		c.add("/shared_budget/id", policyRuleIDLength, "the id is %d bytes; a shared budget id is at most %d", len(s.ID), maxSharedIDLen)
	}
	c.atLeastMin("/shared_budget/limit", s.Limit, "the shared limit")
}

// ruleIndex finds, among the rules added so far (in order), the first
// whose match is a given match or matches a given tool name, without
// comparing every pair: literal matches are looked up, and a pattern is
// tried only against names that start with its literal prefix (the
// characters before its first *, ?, [ or \), so that a policy of n
// rules is checked in about linear time.
type ruleIndex struct {
	exact    map[string]int   // a match (literal or pattern) → its first rule
	patterns map[string][]int // a pattern's literal prefix → its rules, in order
	globs    []string         // the patterns by rule index (sparse)
	longest  int              // the longest literal prefix of a pattern
}

func newRuleIndex() *ruleIndex {
	return &ruleIndex{exact: map[string]int{}, patterns: map[string][]int{}, globs: nil}
}

// add records rule i, whose match is match.
func (x *ruleIndex) add(match string, i int) {
	if _, ok := x.exact[match]; !ok {
		x.exact[match] = i
	}
	k := strings.IndexAny(match, `*?[\`)
	if k < 0 {
		return
	}
	prefix := match[:k]
	x.patterns[prefix] = append(x.patterns[prefix], i)
	for len(x.globs) <= i {
		x.globs = append(x.globs, "")
	}
	x.globs[i] = match
	x.longest = max(x.longest, k)
}

// earliest returns the first rule added whose match is match (dup), or,
// when match is a literal tool name, the first whose pattern matches it
// if that rule comes earlier; -1 when none does.
func (x *ruleIndex) earliest(match string) (j int, dup bool) {
	j = -1
	if i, ok := x.exact[match]; ok {
		j, dup = i, true
	}
	if strings.ContainsAny(match, `*?[\`) {
		return j, dup
	}
	if i := x.firstGlob(match); i >= 0 && (j < 0 || i < j) {
		return i, false
	}
	return j, dup
}

// firstGlob returns the first pattern rule that matches the tool name,
// or -1.
func (x *ruleIndex) firstGlob(name string) int {
	best := -1
	for k := 0; k <= min(len(name), x.longest); k++ {
		for _, i := range x.patterns[name[:k]] {
			if best >= 0 && i > best {
				break
			}
			if ok, err := path.Match(x.globs[i], name); err == nil && ok {
				best = i
				break
			}
		}
	}
	return best
}

// r2Members lists the version 2 members r sets, by their names in the
// file.
func r2Members(r *Rule) []string {
	var out []string
	for _, m := range []struct {
		name string
		set  bool
	}{{"name", r.Name != ""}, {"principals", r.Principals != nil}, {"arguments", len(r.Arguments) > 0},
		{"paths", r.Paths != nil}, {"effect", r.Effect != EffectAllow}, {"reason", r.Reason != ""}, {"rate", r.Rate != nil},
		{"labels", r.Labels != nil}, {"label_ttl", r.LabelTTL != 0}, {"flow", r.Flow != nil}, {"when", r.When != nil}, {"server", r.Server != ""}} {
		if m.set {
			out = append(out, m.name)
		}
	}
	return out
}

// asksAtPrivilege reports whether a rule or a flow of p asks a human at
// the PRIVILEGE tier.
func (p Policy) asksAtPrivilege() bool {
	rules := p.Tools
	if p.DefaultRule != nil {
		rules = append(slices.Clone(rules), *p.DefaultRule)
	}
	for _, r := range rules {
		if r.Tier == claims.TierPrivilege && r.Effect != EffectRefuse {
			return true
		}
		for _, f := range r.Flow {
			if f.Ask && tierOrPrivilege(f.Tier) == claims.TierPrivilege {
				return true
			}
		}
	}
	return false
}
