package toolgate

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"time"

	"github.com/verity-go/verity/claims"
)

// clone copies what a Config shares with its caller.
func (c Config) clone() Config {
	c.Rules = slices.Clone(c.Rules)
	for i := range c.Rules {
		c.Rules[i].Tier = tierOrDefault(c.Rules[i].Tier)
	}
	c.DefaultRule.Tier = tierOrDefault(c.DefaultRule.Tier)
	c.Invariants = slices.Clone(c.Invariants)
	if c.Approvers == nil {
		c.Approvers = map[claims.RiskTier][]string{
			claims.TierDelete:    {DefaultApprover},
			claims.TierPrivilege: {DefaultApprover},
		}
	} else {
		m := make(map[claims.RiskTier][]string, len(c.Approvers))
		for t, names := range c.Approvers {
			m[t] = slices.Clone(names)
		}
		c.Approvers = m
	}
	if c.MaxWaiting == 0 {
		c.MaxWaiting = DefaultMaxWaiting
	}
	if c.ResultTextLimit == 0 {
		c.ResultTextLimit = DefaultResultTextLimit
	}
	return c
}

// validate reports every problem of a Config at once.
func (c Config) validate() error {
	var errs []error
	rules := c.Rules
	if c.AllowUnknown {
		rules = append(slices.Clone(rules), c.DefaultRule)
	}
	names := map[string]bool{}
	for i, r := range rules {
		name := fmt.Sprintf("rule %d (%q)", i, r.Match)
		if i == len(c.Rules) {
			name = "the default rule"
		} else if _, err := path.Match(r.Match, ""); err != nil || r.Match == "" {
			errs = append(errs, fmt.Errorf("%s: not a tool name or path.Match pattern", name))
		}
		if !r.Tier.Valid() {
			errs = append(errs, fmt.Errorf("%s: unknown risk tier %q", name, r.Tier))
		}
		if r.CostFunc == nil && r.Cost < c.MinCost && r.Effect != EffectRefuse {
			errs = append(errs, fmt.Errorf("%s: cost %s is below the minimum cost %s", name, r.Cost, c.MinCost))
		}
		if r.needsApproval() && len(c.Approvers[r.Tier]) == 0 {
			errs = append(errs, fmt.Errorf("%s: tier %s needs approvers and Config.Approvers names none", name, r.Tier))
		}
		errs = append(errs, c.validateV2(name, r, i == len(c.Rules), names)...)
		errs = append(errs, validateHost(name, r)...)
	}
	if c.Timeout < 0 || c.Timeout > MaxToolTimeout {
		errs = append(errs, fmt.Errorf("timeout %s is outside [0, %s]", c.Timeout, MaxToolTimeout))
	}
	if c.MinCost <= 0 {
		errs = append(errs, fmt.Errorf("minimum cost %s must be positive", c.MinCost))
	}
	errs = append(errs, c.validateApprovalTimes()...)
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	return nil
}

// ruleNamePattern and labelPattern are what a rule's name and a label
// may be.
var (
	ruleNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	labelPattern    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`)
)

// MaxRatePer is the longest window of a Rate: a year.
const MaxRatePer = 366 * 24 * time.Hour

// validateV2 checks the members of a rule beyond its match, cost and tier.
func (c Config) validateV2(name string, r Rule, isDefault bool, names map[string]bool) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(name+": "+format, args...)) }
	if r.Name != "" {
		if !ruleNamePattern.MatchString(r.Name) {
			bad("name %q is not %s", r.Name, ruleNamePattern)
		} else if r.Name == defaultRuleID {
			bad("name %q is the default rule's", r.Name)
		} else if names[r.Name] {
			bad("name %q names another rule too", r.Name)
		}
		names[r.Name] = true
	}
	if isDefault && (r.Principals != nil || len(r.Arguments) > 0 || len(r.Paths) > 0 || r.Effect != EffectAllow) {
		bad("the default rule has no conditions and allows")
	}
	if pc := r.Principals; pc != nil && len(pc.Issuers)+len(pc.Subjects)+len(pc.Groups)+len(pc.Scopes) == 0 {
		bad("principals lists nobody")
	}
	if len(r.Arguments) > 0 {
		if _, err := compileArgumentSchema(r.Arguments); err != nil {
			bad("arguments: %v", err)
		}
	}
	for k, pc := range r.Paths {
		if _, err := pointerTokens(pc.Argument); err != nil {
			bad("paths/%d: %v", k, err)
		}
		if len(pc.Under) == 0 {
			bad("paths/%d: no directory to be under", k)
		}
		for _, root := range pc.Under {
			if err := checkRoot(root); err != nil {
				bad("paths/%d: %v", k, err)
			}
		}
	}
	if r.Effect > EffectRefuse {
		bad("unknown effect %d", r.Effect)
	}
	if rt := r.Rate; rt != nil {
		if rt.Calls < 1 {
			bad("rate: calls %d is not positive", rt.Calls)
		}
		if rt.Per < time.Millisecond || rt.Per > MaxRatePer {
			bad("rate: per %s is outside [1ms, %s]", rt.Per, MaxRatePer)
		}
		if rt.Scope != "" && rt.Scope != RateScopeTool && rt.Scope != RateScopeRule {
			bad("rate: unknown scope %q", rt.Scope)
		}
	}
	for _, l := range r.Labels {
		if !labelPattern.MatchString(l) {
			bad("label %q is not %s", l, labelPattern)
		}
	}
	for k, f := range r.Flow {
		if len(f.After) == 0 {
			bad("flow/%d: after names no label", k)
		}
		for _, l := range f.After {
			if !labelPattern.MatchString(l) {
				bad("flow/%d: label %q is not %s", k, l, labelPattern)
			}
		}
		if f.Ask {
			t := tierOrPrivilege(f.Tier)
			if t != claims.TierDelete && t != claims.TierPrivilege {
				bad("flow/%d: asks at tier %s, which needs no approval (DELETE or PRIVILEGE)", k, t)
			} else if len(c.Approvers[t]) == 0 {
				bad("flow/%d: tier %s needs approvers and Config.Approvers names none", k, t)
			}
		} else if f.Tier != "" {
			bad("flow/%d: a tier is for a flow that asks", k)
		}
	}
	return errs
}
