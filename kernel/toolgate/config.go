package toolgate

import (
	"regexp"
	"slices"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/kernel"
)

// Compile checks p — read from a file or built in Go — and makes it ready
// to decide: argument schemas compiled (each once), path roots cleaned,
// names resolved, defaults applied. It is the one validator of a policy:
// it returns every problem at once, as one *ValidationError wrapping
// ErrInvalidPolicy (see ParsePolicy for the rules; the paths are those
// of p's JSON form). The Compiled form is what New takes, and what a
// linter asks which rule a call would meet (Compiled.Match) and which
// rules a list of tools leaves unused or shadowed (Compiled.Coverage).
func (p Policy) Compile() (*Compiled, error) {
	comp, vs := p.compile()
	if len(vs) > 0 {
		return nil, violation.New("toolgate", "policy", vs, ErrInvalidPolicy)
	}
	return comp, nil
}

// normalized returns a copy of p that shares nothing with it, its
// defaults applied: newestPolicyVersion for 0, the tier READ_ONLY for an empty
// one, DefaultApprover for nil approvers, defaultMaxWaiting and
// defaultResultTextLimit for 0.
func (p Policy) normalized() Policy {
	if p.Version == 0 {
		p.Version = newestPolicyVersion
	}
	p.Tools = slices.Clone(p.Tools)
	for i := range p.Tools {
		p.Tools[i].Tier = tierOrDefault(p.Tools[i].Tier)
	}
	if p.DefaultRule != nil {
		r := *p.DefaultRule
		r.Tier = tierOrDefault(r.Tier)
		p.DefaultRule = &r
	}
	p.Invariants = slices.Clone(p.Invariants)
	p.GoInvariants = slices.Clone(p.GoInvariants)
	p.Labels = slices.Clone(p.Labels)
	p.BudgetPeriod, p.Shared = clonePeriods(p.BudgetPeriod, p.Shared)
	if p.Approvers == nil {
		p.Approvers = map[claims.RiskTier][]string{
			claims.TierDelete:    {DefaultApprover},
			claims.TierPrivilege: {DefaultApprover},
		}
	} else {
		m := make(map[claims.RiskTier][]string, len(p.Approvers))
		for t, names := range p.Approvers {
			m[t] = slices.Clone(names)
		}
		p.Approvers = m
	}
	if p.MaxWaiting == 0 {
		p.MaxWaiting = defaultMaxWaiting
	}
	if p.ResultTextLimit == 0 {
		p.ResultTextLimit = defaultResultTextLimit
	}
	return p
}

// invariants returns the kernel invariants of p: its file's, then its
// Go ones. Compile has checked each spec.
func (p Policy) invariants() []kernel.Invariant {
	out := make([]kernel.Invariant, 0, len(p.Invariants)+len(p.GoInvariants))
	for _, s := range p.Invariants {
		if inv, err := s.Invariant(); err == nil {
			out = append(out, inv)
		}
	}
	return append(out, p.GoInvariants...)
}

// ruleNamePattern and labelPattern are what a rule's name and a label
// may be.
var (
	ruleNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
	labelPattern    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.:-]{0,63}$`)
)

// maxRatePer is the longest window of a Rate: a year.
const maxRatePer = 366 * 24 * time.Hour
