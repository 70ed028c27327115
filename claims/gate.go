package claims

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/violation"
)

// Names of the built-in gates, in the order the chain runs them.
const (
	GateValidation    = "validation"     // the bundle obeys Validate (evidence strength aside)
	GateEvidence      = "evidence"       // FACT and INFERENCE evidence
	GateUncertainty   = "uncertainty"    // thresholds and each claim's own recommendation
	GateClearance     = "clearance"      // the actor's clearance covers every claim's tier
	GateHumanApproval = "human_approval" // DELETE and PRIVILEGE need the required approvers
)

var builtinGates = []string{GateValidation, GateEvidence, GateUncertainty, GateClearance, GateHumanApproval}

// Errors of Evaluate. A bundle is never an error — a bad bundle is refused —
// but a bad policy or context is, because no verdict can be trusted then.
var (
	ErrInvalidPolicy  = errors.New("claims: invalid policy")
	ErrInvalidContext = errors.New("claims: invalid context")
)

// Default uncertainty thresholds. Specification 000 does not state them:
// they are Verity's choice, following the reference implementation's gate
// document (PROMETHEUS docs/GATES.md: explain above 0.50, defer above 0.75,
// compared with the highest claim uncertainty).
const (
	DefaultExecuteMax = 0.50 // highest uncertainty that passes without a caveat
	DefaultExplainMax = 0.75 // highest uncertainty that passes with a caveat; above it the bundle is deferred
)

// Policy configures the gate chain. Start from DefaultPolicy: the zero
// Policy is valid but has both thresholds at 0, so any uncertainty above 0
// defers the bundle.
type Policy struct {
	// ExecuteMax is the highest claim uncertainty that passes the
	// uncertainty gate without a caveat (default 0.50, inclusive).
	ExecuteMax float64
	// ExplainMax is the highest claim uncertainty that still passes, with a
	// caveat (default 0.75, inclusive). Above it the bundle is deferred.
	ExplainMax float64
	// Approvers names the humans who must approve a bundle containing a
	// claim of the given tier. Only DELETE and PRIVILEGE require approval.
	// A bundle that contains one of them while the policy names nobody for
	// it is escalated with nobody to wait for: it stays ESCALATE (never
	// PUBLISH) until it is evaluated under a policy that names approvers.
	Approvers map[RiskTier][]string
	// Gates are user-defined gates, run in order after the clearance gate
	// and before the human approval gate.
	Gates []Gate
}

// DefaultPolicy returns the default thresholds DefaultExecuteMax (0.50) and
// DefaultExplainMax (0.75) — the reference implementation's, not stated by
// specification 000 — no approvers and no user-defined gates.
func DefaultPolicy() Policy {
	return Policy{ExecuteMax: DefaultExecuteMax, ExplainMax: DefaultExplainMax}
}

// Validate checks 0 ≤ ExecuteMax ≤ ExplainMax ≤ 1, that approvers are
// named only for DELETE and PRIVILEGE, are non-empty and distinct per tier,
// and that user gates are non-nil with distinct names that do not clash
// with the built-in gates. The error wraps ErrInvalidPolicy.
func (p Policy) Validate() error {
	var problems []string
	if !inUnit(p.ExecuteMax) || !inUnit(p.ExplainMax) || p.ExecuteMax > p.ExplainMax {
		problems = append(problems, fmt.Sprintf("thresholds must satisfy 0 <= ExecuteMax (%v) <= ExplainMax (%v) <= 1", p.ExecuteMax, p.ExplainMax))
	}
	for _, tier := range slices.Sorted(maps.Keys(p.Approvers)) {
		names := p.Approvers[tier]
		if tier != TierDelete && tier != TierPrivilege {
			problems = append(problems, fmt.Sprintf("approvers given for tier %q; only DELETE and PRIVILEGE require approval", tier))
			continue
		}
		for i, n := range names {
			if n == "" {
				problems = append(problems, fmt.Sprintf("empty approver name for %s", tier))
			} else if slices.Contains(names[:i], n) {
				problems = append(problems, fmt.Sprintf("approver %q listed twice for %s", n, tier))
			}
		}
	}
	seen := map[string]bool{}
	for i, g := range p.Gates {
		if g == nil {
			problems = append(problems, fmt.Sprintf("gate %d is nil", i))
			continue
		}
		name := g.Name()
		switch {
		case name == "" || !utf8.ValidString(name):
			problems = append(problems, fmt.Sprintf("gate %d has an empty or invalid name", i))
		case slices.Contains(builtinGates, name):
			problems = append(problems, fmt.Sprintf("gate %d is named %q like a built-in gate", i, name))
		case seen[name]:
			problems = append(problems, fmt.Sprintf("two gates are named %q", name))
		}
		seen[name] = true
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidPolicy, strings.Join(problems, "; "))
	}
	return nil
}

// Context describes who acts on the bundle.
type Context struct {
	// Actor identifies the acting agent (recorded, not interpreted).
	Actor string
	// Clearance is the acting agent's clearance tier. It must rank at
	// least as high as every claim's tier.
	Clearance RiskTier
}

// Gate is a user-defined check in the chain. Check must be a pure,
// deterministic function of its arguments; it receives a copy of the bundle
// as evaluated so far (gates passed and caveats included).
type Gate interface {
	Name() string
	Check(b ClaimBundle, c Context) GateResult
}

// GateResult is a gate's answer. EXECUTE passes; EXPLAIN passes and adds the
// caveats (or, if there are none, the reason as a caveat); DEFER and REFUSE
// stop the chain with that decision. Any other recommendation, the zero
// value included, is treated as REFUSE, so a faulty gate fails closed.
type GateResult struct {
	Recommendation GateRecommendation
	Reason         string
	Caveats        []Note // Gate is filled in by the chain
}

// GateFunc adapts a function to the Gate interface.
func GateFunc(name string, check func(b ClaimBundle, c Context) GateResult) Gate {
	return funcGate{name: name, check: check}
}

type funcGate struct {
	name  string
	check func(ClaimBundle, Context) GateResult
}

func (g funcGate) Name() string                              { return g.name }
func (g funcGate) Check(b ClaimBundle, c Context) GateResult { return g.check(b, c) }

// Evaluation is the outcome of the gate chain.
type Evaluation struct {
	// Bundle is the evaluated bundle: a copy of the input with decision,
	// reason, required approvals and audit trail (gates passed and failed,
	// caveats, flags) set. Human approvals are carried over unchanged.
	// It is in the form its JSON reads back as: times in UTC, no nil
	// list of the specification, no negative zero.
	Bundle ClaimBundle
	// Decision and Reason repeat Bundle.Decision and Bundle.Reason.
	Decision Decision
	Reason   string
	// StoppedAt names the gate that stopped the chain; empty on PUBLISH.
	StoppedAt string
	// Caveats must accompany a published bundle (EXPLAIN); Flags are
	// remarks for the log (MODIFY claims approved automatically).
	Caveats []Note
	Flags   []Note
	// Pending lists the required approvers who have not decided yet, when
	// the decision is ESCALATE.
	Pending []string
	// Violations are the rule violations found by the validation gate
	// (including evidence strength); empty for a valid bundle.
	Violations []Violation
	// Seq is the trace entry a Session recorded the evaluation (or the
	// approval that caused it) in; zero from the pure Evaluate.
	Seq uint64
}

// Evaluate runs the gate chain on b: validation, evidence, uncertainty,
// clearance, the policy's own gates, then human approval. The first gate
// that does not pass stops the chain and fixes the decision (DEFER,
// ESCALATE or REFUSE); if every gate passes the decision is PUBLISH, with
// any caveats recorded. A bundle without claims is never published.
//
// REFUSE is final: a bundle whose decision is already REFUSE (refused by an
// earlier evaluation, or by its origin) is returned refused, unchanged. To
// judge the same claims again under another policy or context, evaluate
// the original bundle, which Evaluate never modifies.
//
// Evaluate is pure and deterministic: b is not modified, and the result
// does not depend on the order of b's claims except for the order of
// Bundle.Claims itself. Re-evaluating an evaluated bundle recomputes
// everything, so recording approvals and evaluating again moves an
// ESCALATE to PUBLISH (all required approvers APPROVED) or REFUSE (any
// REJECTED). It returns an error only for an invalid policy or context.
func Evaluate(b ClaimBundle, p Policy, c Context) (Evaluation, error) {
	if err := p.Validate(); err != nil {
		return Evaluation{}, err
	}
	if !c.Clearance.Valid() {
		return Evaluation{}, fmt.Errorf("%w: clearance %q is not a risk tier", ErrInvalidContext, c.Clearance)
	}
	if b.Decision == DecisionRefuse {
		return refusedBefore(b), nil
	}
	ch := chain{policy: p, ctx: c, out: b.canonical(), inRequired: b.RequiredApprovals}
	ch.out.RequiredApprovals = requiredApprovers(b, p)
	ch.out.AuditTrail.GatesPassed = []string{}
	ch.out.AuditTrail.GatesFailed = []string{}
	ch.out.AuditTrail.Caveats = nil
	ch.out.AuditTrail.Flags = nil
	ch.sorted = sortedClaims(ch.out.Claims)
	ch.run()
	return ch.result(), nil
}

// refusedBefore returns the evaluation of a bundle whose decision is
// already REFUSE: the specification's REFUSE fails the bundle, so it stays
// refused with its reason and audit trail. Only an empty reason and an
// empty gates_failed are filled in, so that evaluating again is a fixed
// point.
func refusedBefore(b ClaimBundle) Evaluation {
	out := b.canonical()
	if out.Reason == "" {
		out.Reason = "refused before evaluation"
	}
	if len(out.AuditTrail.GatesFailed) == 0 {
		out.AuditTrail.GatesFailed = []string{GateValidation}
	}
	return Evaluation{
		Bundle:    out,
		Decision:  DecisionRefuse,
		Reason:    out.Reason,
		StoppedAt: out.AuditTrail.GatesFailed[len(out.AuditTrail.GatesFailed)-1],
		Caveats:   cloneSlice(out.AuditTrail.Caveats),
		Flags:     cloneSlice(out.AuditTrail.Flags),
	}
}

type chain struct {
	policy Policy
	ctx    Context
	out    ClaimBundle
	sorted []*Claim // ch.out's claims ordered by id, for order-independent reports
	// inRequired is the input's required approvals (read only).
	inRequired []string
	stopped    string
	caveats    []Note
	flags      []Note
	pending    []string
	vs         []Violation
}

// outcome of one gate: pass (RecommendExecute or RecommendExplain) or a stopping decision.
type outcome struct {
	stop   Decision // "" when the gate passes
	reason string
}

var pass = outcome{}

func stopWith(d Decision, format string, args ...any) outcome {
	return outcome{stop: d, reason: fmt.Sprintf(format, args...)}
}

func (ch *chain) run() {
	steps := []struct {
		name  string
		check func() outcome
	}{
		{GateValidation, ch.validation},
		{GateEvidence, ch.evidence},
		{GateUncertainty, ch.uncertainty},
		{GateClearance, ch.clearance},
	}
	for _, s := range steps {
		if !ch.apply(s.name, s.check()) {
			return
		}
	}
	for _, g := range ch.policy.Gates {
		if !ch.apply(g.Name(), ch.user(g)) {
			return
		}
	}
	if !ch.apply(GateHumanApproval, ch.humanApproval()) {
		return
	}
	ch.out.Decision = DecisionPublish
	switch n := len(ch.caveats); n {
	case 0:
		ch.out.Reason = "all gates passed"
	case 1:
		ch.out.Reason = "all gates passed with 1 caveat"
	default:
		ch.out.Reason = fmt.Sprintf("all gates passed with %d caveats", n)
	}
}

func (ch *chain) apply(gate string, o outcome) bool {
	if o.stop == "" {
		ch.out.AuditTrail.GatesPassed = append(ch.out.AuditTrail.GatesPassed, gate)
		return true
	}
	ch.out.AuditTrail.GatesFailed = append(ch.out.AuditTrail.GatesFailed, gate)
	ch.out.Decision = o.stop
	ch.out.Reason = gate + ": " + o.reason
	ch.stopped = gate
	return false
}

func (ch *chain) result() Evaluation {
	ch.out.AuditTrail.Caveats = cloneSlice(ch.caveats)
	ch.out.AuditTrail.Flags = cloneSlice(ch.flags)
	return Evaluation{
		Bundle:     ch.out,
		Decision:   ch.out.Decision,
		Reason:     ch.out.Reason,
		StoppedAt:  ch.stopped,
		Caveats:    ch.caveats,
		Flags:      ch.flags,
		Pending:    ch.pending,
		Violations: ch.vs,
	}
}

// validation refuses a bundle that breaks any rule of Validate other than
// evidence strength, which the evidence gate judges. The decision, reason,
// gates and notes are outputs of the chain and are not judged. Human
// approvals are judged against the required approvals the bundle carried
// in, not against those this evaluation adds: an approval counts only if
// it was asked for before it was given.
func (ch *chain) validation() outcome {
	in := ch.out
	in.RequiredApprovals = ch.inRequired
	in.Decision = DecisionDefer
	in.Reason = ""
	in.AuditTrail.GatesPassed, in.AuditTrail.GatesFailed = nil, nil
	in.AuditTrail.Caveats, in.AuditTrail.Flags = nil, nil
	all := bundleViolations(in)
	violation.Sort(all)
	ch.vs = all
	var fatal []Violation
	for _, v := range all {
		if v.Rule != RuleEvidenceMissing && v.Rule != RuleEvidenceWeak {
			fatal = append(fatal, v)
		}
	}
	switch len(fatal) {
	case 0:
		return pass
	case 1:
		return stopWith(DecisionRefuse, "%s", fatal[0])
	default:
		return stopWith(DecisionRefuse, "%d violations, first %s", len(fatal), fatal[0])
	}
}

// evidence: a FACT claim without evidence is refused; a FACT or INFERENCE
// claim whose evidence is all below MinSourceConfidence is deferred.
func (ch *chain) evidence() outcome {
	var missing, weak []string
	for _, c := range ch.sorted {
		switch s := evidenceStrength(c); {
		case s == evidenceNone && c.ClaimType == ClaimFact:
			missing = append(missing, c.ID)
		case s == evidenceWeak && (c.ClaimType == ClaimFact || c.ClaimType == ClaimInference):
			weak = append(weak, c.ID)
		}
	}
	if len(missing) > 0 {
		return stopWith(DecisionRefuse, "FACT claim(s) without evidence: %s", idList(missing))
	}
	if len(weak) > 0 {
		return stopWith(DecisionDefer, "claim(s) with only weak evidence (source_confidence < %.2f): %s", MinSourceConfidence, idList(weak))
	}
	return pass
}

// uncertainty: a claim recommending REFUSE refuses the bundle; a claim
// recommending DEFER, or a highest uncertainty above ExplainMax, defers
// it; otherwise each claim above ExecuteMax or recommending EXPLAIN adds a
// caveat and the chain continues.
func (ch *chain) uncertainty() outcome {
	var refuse, deferred []string
	var top *Claim
	for _, c := range ch.sorted {
		switch c.Uncertainty.GateRecommendation {
		case RecommendRefuse:
			refuse = append(refuse, c.ID)
		case RecommendDefer:
			deferred = append(deferred, c.ID)
		}
		if top == nil || c.Uncertainty.Value > top.Uncertainty.Value {
			top = c
		}
	}
	if len(refuse) > 0 {
		return stopWith(DecisionRefuse, "claim(s) recommend REFUSE: %s", idList(refuse))
	}
	if len(deferred) > 0 {
		return stopWith(DecisionDefer, "claim(s) recommend DEFER: %s", idList(deferred))
	}
	if top != nil && top.Uncertainty.Value > ch.policy.ExplainMax {
		return stopWith(DecisionDefer, "highest uncertainty %v (claim %q, %s) exceeds %v",
			top.Uncertainty.Value, top.ID, top.Uncertainty.Method, ch.policy.ExplainMax)
	}
	for _, c := range ch.sorted {
		u := c.Uncertainty
		var parts []string
		if u.Value > ch.policy.ExecuteMax {
			parts = append(parts, fmt.Sprintf("uncertainty %v (%s) exceeds %v", u.Value, u.Method, ch.policy.ExecuteMax))
		}
		if u.GateRecommendation == RecommendExplain {
			parts = append(parts, "the estimator recommends EXPLAIN")
		}
		if len(parts) == 0 {
			continue
		}
		text := strings.Join(parts, "; ")
		if u.Interpretation != "" {
			text += ": " + u.Interpretation
		}
		ch.caveats = append(ch.caveats, Note{ClaimID: c.ID, Gate: GateUncertainty, Text: text})
	}
	return pass
}

// clearance: the actor's clearance must rank at least as high as the
// highest claim tier. Tiers are compared by Rank, never as strings.
func (ch *chain) clearance() outcome {
	top := highestTier(ch.sorted)
	if top == nil || ch.ctx.Clearance.AtLeast(top.RiskTier) {
		return pass
	}
	return stopWith(DecisionRefuse, "clearance %s is below tier %s of claim %q",
		ch.ctx.Clearance, top.RiskTier, top.ID)
}

// highestTier returns the first claim (in id order) of the highest tier.
func highestTier(sorted []*Claim) *Claim {
	var top *Claim
	for _, c := range sorted {
		if top == nil || c.RiskTier.Rank() > top.RiskTier.Rank() {
			top = c
		}
	}
	return top
}

func (ch *chain) user(g Gate) outcome {
	in := ch.out.Clone()
	in.AuditTrail.Caveats = cloneSlice(ch.caveats) // the caveats so far, as Gate documents
	v := g.Check(in, ch.ctx)
	// A gate's strings go into the bundle: keep them valid UTF-8 and
	// non-empty so that the evaluated bundle stays valid.
	reason := strings.ToValidUTF8(v.Reason, "\uFFFD")
	switch v.Recommendation {
	case RecommendExecute:
		return pass
	case RecommendExplain:
		fallback := cmp.Or(reason, "the gate recommends EXPLAIN")
		if len(v.Caveats) == 0 {
			ch.caveats = append(ch.caveats, Note{Gate: g.Name(), Text: fallback})
		}
		for _, n := range v.Caveats {
			ch.caveats = append(ch.caveats, Note{
				ClaimID: strings.ToValidUTF8(n.ClaimID, "\uFFFD"),
				Gate:    g.Name(),
				Text:    cmp.Or(strings.ToValidUTF8(n.Text, "\uFFFD"), fallback),
			})
		}
		return pass
	case RecommendDefer:
		return stopWith(DecisionDefer, "%s", cmp.Or(reason, "deferred"))
	case RecommendRefuse:
		return stopWith(DecisionRefuse, "%s", cmp.Or(reason, "refused"))
	}
	return stopWith(DecisionRefuse, "unknown recommendation %q", v.Recommendation)
}

// humanApproval: DELETE and PRIVILEGE claims need every required approver
// to approve; any rejection refuses the bundle; until then it is
// escalated. MODIFY claims pass automatically but are flagged.
func (ch *chain) humanApproval() outcome {
	for _, c := range ch.sorted {
		if c.RiskTier == TierModify {
			ch.flags = append(ch.flags, Note{ClaimID: c.ID, Gate: GateHumanApproval,
				Text: "MODIFY claim approved automatically"})
		}
	}
	for _, tier := range []RiskTier{TierDelete, TierPrivilege} {
		if hasTier(ch.sorted, tier) && len(ch.policy.Approvers[tier]) == 0 {
			return stopWith(DecisionEscalate, "the bundle contains a %s claim and the policy names no approver for %s; it waits for a policy that does", tier, tier)
		}
	}
	required := ch.out.RequiredApprovals
	if len(required) == 0 {
		return pass
	}
	decided := make(map[string]Approval, len(ch.out.AuditTrail.HumanApprovals))
	for _, a := range ch.out.AuditTrail.HumanApprovals {
		if _, dup := decided[a.Approver]; !dup {
			decided[a.Approver] = a
		}
	}
	var rejected []string
	for _, r := range required {
		a, ok := decided[r]
		switch {
		case !ok:
			ch.pending = append(ch.pending, r)
		case a.Decision == ApprovalRejected:
			rejected = append(rejected, r)
		}
	}
	if len(rejected) > 0 {
		ch.pending = nil // nobody is waited for once the bundle is refused
		return stopWith(DecisionRefuse, "rejected by %s", idList(rejected))
	}
	if len(ch.pending) > 0 {
		return stopWith(DecisionEscalate, "awaiting approval from %s", idList(ch.pending))
	}
	return pass
}

func hasTier(cs []*Claim, t RiskTier) bool {
	return slices.ContainsFunc(cs, func(c *Claim) bool { return c.RiskTier == t })
}

// requiredApprovers returns the policy's approvers for the DELETE and
// PRIVILEGE tiers present in b (in that tier order), then any approver the
// bundle already requires, without duplicates.
func requiredApprovers(b ClaimBundle, p Policy) []string {
	out := []string{}
	add := func(names []string) {
		for _, n := range names {
			if n != "" && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	for _, tier := range []RiskTier{TierDelete, TierPrivilege} {
		if slices.ContainsFunc(b.Claims, func(c Claim) bool { return c.RiskTier == tier }) {
			add(p.Approvers[tier])
		}
	}
	add(b.RequiredApprovals)
	return out
}

func sortedClaims(cs []Claim) []*Claim {
	out := make([]*Claim, len(cs))
	for i := range cs {
		out[i] = &cs[i]
	}
	slices.SortStableFunc(out, func(a, b *Claim) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// idList quotes and joins ids, shortening long lists.
func idList(ids []string) string {
	const max = 5
	var sb strings.Builder
	for i, id := range ids {
		if i == max {
			fmt.Fprintf(&sb, " and %d more", len(ids)-max)
			break
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, "%q", id)
	}
	return sb.String()
}
