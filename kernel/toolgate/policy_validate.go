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

	if p.Version != 1 && p.Version != 2 {
		add("/version", policyRuleVersion, "this package reads versions 1 and 2, got %d", p.Version)
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
	if p.SelfApproval && !p.asksAtPrivilege() {
		add("/self_approval", policyRuleSelfApprovalUnused, "self_approval applies to PRIVILEGE calls, and no rule or flow asks at PRIVILEGE")
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
		if r.Effect != EffectRefuse || r.Cost != 0 {
			atLeastMin(at+"/cost", r.Cost, "cost")
		}
		if r.Tier != "" && !r.Tier.Valid() {
			add(at+"/tier", policyRuleEnum, "want one of %s, got %q", strings.Join(policyTiers, ", "), r.Tier)
		}
		needsApprovers(at+"/tier", r.Tier)
		if t := r.Timeout; t != 0 && (t < time.Millisecond || t > MaxToolTimeout) {
			add(at+"/timeout", policyRuleDuration, "%s is outside [1ms, %s]", t, MaxToolTimeout)
		}
		if r.CostFrom != "" {
			if _, err := ParseCostPointer(r.CostFrom); err != nil {
				add(at+"/cost_from", policyRulePointer, "%v", strings.TrimPrefix(err.Error(), "toolgate: "))
			}
			if !r.Reserve {
				add(at+"/cost_from", policyRuleCostFrom, "cost_from settles a reserved call: this rule has no reserve")
			}
		}
	}
	if p.DefaultRule != nil {
		checkRule("/default_rule", *p.DefaultRule, false)
	}
	if p.DefaultRule != nil {
		for _, m := range r2Members(*p.DefaultRule) {
			add("/default_rule/"+m, policyRuleUnknownField, "the default rule has no %s: it applies to every tool no rule matches", m)
		}
	}
	if p.Version == 1 && p.Labels != nil {
		add("/labels", policyRuleUnknownField, "labels needs version 2")
	}
	for k, l := range p.Labels {
		if !labelPattern.MatchString(l) {
			add(violation.Index("/labels", k), policyRuleLabel, "%q is not a label (%s)", l, labelPattern)
		}
	}
	ruleNames := map[string]int{}
	attached := map[string]bool{}
	for _, r := range p.Tools {
		for _, l := range r.Labels {
			attached[l] = true
		}
	}
	declared := map[string]bool{}
	for _, l := range p.Labels {
		declared[l] = true
	}
	knownLabel := func(at, l string, attaching bool) {
		switch {
		case !labelPattern.MatchString(l):
			add(at, policyRuleLabel, "%q is not a label (%s)", l, labelPattern)
		case p.Labels != nil && !declared[l]:
			add(at, policyRuleUnknownLabel, "%q is not declared in labels", l)
		case p.Labels == nil && !attaching && !attached[l]:
			add(at, policyRuleUnknownLabel, "no rule attaches %q: this flow never applies", l)
		}
	}
	first := newRuleIndex()
	for i, r := range p.Tools {
		at := violation.Index("/tools", i)
		checkRule(at, r, true)
		if p.Version == 1 {
			for _, m := range r2Members(r) {
				add(at+"/"+m, policyRuleUnknownField, "%s needs version 2", m)
			}
		}
		if r.Name != "" {
			if !ruleNamePattern.MatchString(r.Name) {
				add(at+"/name", policyRuleRuleName, "%q is not a rule name (%s)", r.Name, ruleNamePattern)
			} else if r.Name == defaultRuleID {
				add(at+"/name", policyRuleRuleName, "%q is the default rule's name", r.Name)
			} else if j, ok := ruleNames[r.Name]; ok {
				add(at+"/name", policyRuleDuplicateRule, "%q is also the name of /tools/%d", r.Name, j)
			} else {
				ruleNames[r.Name] = i
			}
		}
		if len(r.Arguments) > 0 && !bad(at+"/arguments") {
			if _, err := compileArgumentSchema(r.Arguments); err != nil {
				add(at+"/arguments", policyRuleArgSchema, "%v", err)
			}
		}
		for k, pc := range r.Paths {
			pat := violation.Index(at+"/paths", k)
			if _, err := pointerTokens(pc.Argument); err != nil && pc.Argument != "" {
				add(pat+"/argument", policyRulePointer, "%v", err)
			} else if pc.Argument == "" && !bad(pat) {
				add(pat+"/argument", policyRuleRequired, "the argument is a JSON Pointer such as \"/path\"")
			}
			if len(pc.Under) == 0 && !bad(pat) {
				add(pat+"/under", policyRuleRequired, "under lists at least one directory")
			}
			for j, root := range pc.Under {
				if root == "" {
					continue // the decoder said so
				}
				if err := checkRoot(root); err != nil {
					add(violation.Index(pat+"/under", j), policyRulePath, "%s", strings.TrimPrefix(err.Error(), "toolgate: "))
				}
			}
		}
		if pc := r.Principals; pc != nil && len(pc.Issuers)+len(pc.Subjects)+len(pc.Groups)+len(pc.Scopes) == 0 && !bad(at+"/principals") {
			add(at+"/principals", policyRuleRequired, "principals lists at least one of issuers, subjects, groups, scopes")
		}
		if rt := r.Rate; rt != nil && !bad(at+"/rate") {
			if rt.Calls < 1 || rt.Calls > math.MaxInt32 {
				add(at+"/rate/calls", policyRuleRange, "%d is outside [1, %d]", rt.Calls, math.MaxInt32)
			}
			if rt.Per < time.Millisecond || rt.Per > MaxRatePer {
				add(at+"/rate/per", policyRuleDuration, "%s is outside [1ms, %s]", rt.Per, MaxRatePer)
			}
			if rt.Scope != "" && rt.Scope != RateScopeTool && rt.Scope != RateScopeRule {
				add(at+"/rate/scope", policyRuleEnum, "want one of tool, rule, got %q", rt.Scope)
			}
		}
		for k, l := range r.Labels {
			knownLabel(violation.Index(at+"/labels", k), l, true)
		}
		for k, f := range r.Flow {
			fat := violation.Index(at+"/flow", k)
			if len(f.After) == 0 && !bad(fat) {
				add(fat+"/after", policyRuleRequired, "after names at least one label")
			}
			for j, l := range f.After {
				if l != "" {
					knownLabel(violation.Index(fat+"/after", j), l, false)
				}
			}
			switch {
			case !f.Ask && f.Tier != "":
				add(fat+"/tier", policyRuleFlowTier, "a tier is for a flow that asks; this one refuses")
			case f.Ask && f.Tier != "" && f.Tier != claims.TierDelete && f.Tier != claims.TierPrivilege:
				add(fat+"/tier", policyRuleEnum, "want one of DELETE, PRIVILEGE, got %q", f.Tier)
			case f.Ask:
				needsApprovers(fat+"/tier", tierOrPrivilege(f.Tier))
			}
		}
		if r.Match == "" {
			continue
		}
		if j, dup := first.earliest(r.Match); j >= 0 {
			if dup {
				add(at+"/match", policyRuleDuplicateMatch, "%q is the match of /tools/%d, which decides first: this rule never applies", r.Match, j)
			} else {
				add(at+"/match", policyRuleShadowed, "the tool %q is matched first by %q (/tools/%d): this rule never applies; put it before", r.Match, p.Tools[j].Match, j)
			}
		}
		if r.unconditional() {
			first.add(r.Match, i)
		}
	}

	// Invariants.
	invNames := make(map[string]int, len(p.Invariants))
	for i, s := range p.Invariants {
		at := violation.Index("/invariants", i)
		if s.Name == "" {
			add(at+"/name", policyRuleRequired, "an invariant has a name")
		} else if j, ok := invNames[s.Name]; ok {
			add(at+"/name", policyRuleDuplicateName, "%q is also the name of /invariants/%d", s.Name, j)
		} else {
			invNames[s.Name] = i
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
				case value.KindNull, value.KindBool, value.KindString:
				case value.KindInt:
					if i, _ := v.AsInt(); i < -policyMaxSafeInt || i > policyMaxSafeInt {
						add(vat, policyRuleValue, "the int %d is beyond ±(2^53−1); an int compared exactly must be within it", i)
					}
				case value.KindFloat:
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
	if t := p.ApprovalTimeout; t != 0 && (t < time.Second || t > MaxApprovalTimeout) {
		add("/approval_timeout", policyRuleDuration, "%s is outside [1s, %s]", t, MaxApprovalTimeout)
	}
	if t := p.Timeout; t != 0 && (t < time.Millisecond || t > MaxToolTimeout) {
		add("/timeout", policyRuleDuration, "%s is outside [1ms, %s]", t, MaxToolTimeout)
	}
	if t := p.ApprovalTTL; t != 0 && (t < time.Second || t > MaxRatePer) {
		add("/approval_ttl", policyRuleDuration, "%s is outside [1s, %s]", t, MaxRatePer)
	}
	if p.ApprovalTimeout > 0 && p.ApprovalTTL > 0 && p.ApprovalTimeout > p.ApprovalTTL && !bad("/approval_timeout") && !bad("/approval_ttl") {
		add("/approval_timeout", policyRuleDuration, "%s is longer than approval_ttl %s: a held call would outlive its request", p.ApprovalTimeout, p.ApprovalTTL)
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
func r2Members(r RuleSpec) []string {
	var out []string
	for _, m := range []struct {
		name string
		set  bool
	}{{"name", r.Name != ""}, {"principals", r.Principals != nil}, {"arguments", len(r.Arguments) > 0},
		{"paths", r.Paths != nil}, {"effect", r.Effect != EffectAllow}, {"reason", r.Reason != ""}, {"rate", r.Rate != nil},
		{"labels", r.Labels != nil}, {"flow", r.Flow != nil}} {
		if m.set {
			out = append(out, m.name)
		}
	}
	return out
}

// asksAtPrivilege reports whether a rule or a flow of p asks a human at
// the PRIVILEGE tier.
func (p Policy) asksAtPrivilege() bool {
	rules := slices.Clone(p.Tools)
	if p.DefaultRule != nil {
		rules = append(rules, *p.DefaultRule)
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
