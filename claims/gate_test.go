package claims

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type gateCase struct {
	name      string
	claims    []Claim
	policy    Policy // zero → approverPolicy()
	clearance RiskTier
	want      Decision
	stoppedAt string
	reason    string // substring of the reason
	caveats   []string
	flags     []string
	required  []string
}

func runGateCases(t *testing.T, cases []gateCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.policy
			if p.ExplainMax == 0 && p.Approvers == nil && p.Gates == nil {
				p = approverPolicy()
			}
			cl := tc.clearance
			if cl == "" {
				cl = Privilege
			}
			in := mkBundle(tc.claims...)
			ev, err := Evaluate(in, p, clearance(cl))
			require.NoError(t, err)
			assert.Equal(t, tc.want, ev.Decision, "reason: %s", ev.Reason)
			assert.Equal(t, tc.want, ev.Bundle.Decision)
			assert.Equal(t, ev.Reason, ev.Bundle.Reason)
			assert.Equal(t, tc.stoppedAt, ev.StoppedAt)
			assert.Contains(t, ev.Reason, tc.reason)
			if tc.stoppedAt == "" {
				assert.Empty(t, ev.Bundle.AuditTrail.GatesFailed)
			} else {
				assert.Equal(t, []string{tc.stoppedAt}, ev.Bundle.AuditTrail.GatesFailed)
				assert.NotContains(t, ev.Bundle.AuditTrail.GatesPassed, tc.stoppedAt)
			}
			assert.Equal(t, tc.caveats, noteClaims(ev.Caveats), "caveats")
			assert.Equal(t, tc.flags, noteClaims(ev.Flags), "flags")
			assert.Equal(t, ev.Caveats, nilIfEmpty(ev.Bundle.AuditTrail.Caveats))
			if tc.required != nil {
				assert.Equal(t, tc.required, ev.Bundle.RequiredApprovals)
			}
		})
	}
}

func nilIfEmpty(ns []Note) []Note {
	if len(ns) == 0 {
		return nil
	}
	return ns
}

func noteClaims(ns []Note) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.ClaimID)
	}
	return out
}

var allGates = []string{GateValidation, GateEvidence, GateUncertainty, GateClearance, GateHumanApproval}

func TestEvidenceGate(t *testing.T) {
	runGateCases(t, []gateCase{
		{name: "FACT with strong evidence passes", claims: []Claim{fact("f")}, want: DecisionPublish},
		{name: "FACT without evidence is refused",
			claims: []Claim{mkClaim("f", FactClaim, ReadOnly, 0.1, Execute)},
			want:   DecisionRefuse, stoppedAt: GateEvidence, reason: `without evidence: "f"`},
		{name: "FACT with only weak evidence is deferred",
			claims: []Claim{mkClaim("f", FactClaim, ReadOnly, 0.1, Execute, ev(0.59), ev(0.3))},
			want:   DecisionDefer, stoppedAt: GateEvidence, reason: "weak evidence"},
		{name: "source_confidence 0.60 exactly passes",
			claims: []Claim{mkClaim("f", FactClaim, ReadOnly, 0.1, Execute, ev(0.60))},
			want:   DecisionPublish},
		{name: "source_confidence just below 0.60 is weak",
			claims: []Claim{mkClaim("f", FactClaim, ReadOnly, 0.1, Execute, ev(0.5999999999))},
			want:   DecisionDefer, stoppedAt: GateEvidence},
		{name: "one strong pointer among weak ones suffices",
			claims: []Claim{mkClaim("f", FactClaim, ReadOnly, 0.1, Execute, ev(0.1), ev(0.6), ev(0.2))},
			want:   DecisionPublish},
		{name: "missing evidence wins over weak evidence",
			claims: []Claim{mkClaim("a", FactClaim, ReadOnly, 0.1, Execute, ev(0.2)), mkClaim("b", FactClaim, ReadOnly, 0.1, Execute)},
			want:   DecisionRefuse, stoppedAt: GateEvidence, reason: `"b"`},
		{name: "INFERENCE without evidence passes",
			claims: []Claim{mkClaim("i", InferenceClaim, ReadOnly, 0.1, Execute)},
			want:   DecisionPublish},
		{name: "INFERENCE with only weak evidence is deferred",
			claims: []Claim{mkClaim("i", InferenceClaim, ReadOnly, 0.1, Execute, ev(0.4))},
			want:   DecisionDefer, stoppedAt: GateEvidence},
		{name: "INFERENCE with 0.60 evidence passes",
			claims: []Claim{mkClaim("i", InferenceClaim, ReadOnly, 0.1, Execute, ev(0.6))},
			want:   DecisionPublish},
		{name: "DECISION needs no evidence",
			claims: []Claim{mkClaim("d", DecisionClaim, ReadOnly, 0.1, Execute)},
			want:   DecisionPublish},
		{name: "DECISION with weak evidence is not judged on strength",
			claims: []Claim{mkClaim("d", DecisionClaim, ReadOnly, 0.1, Execute, ev(0.1))},
			want:   DecisionPublish},
	})
}

func TestUncertaintyGate(t *testing.T) {
	u := func(id string, v float64, rec GateRecommendation) Claim {
		return mkClaim(id, DecisionClaim, ReadOnly, v, rec)
	}
	runGateCases(t, []gateCase{
		{name: "0 executes", claims: []Claim{u("a", 0, Execute)}, want: DecisionPublish},
		{name: "0.50 executes without caveat", claims: []Claim{u("a", 0.50, Execute)}, want: DecisionPublish},
		{name: "just above 0.50 explains", claims: []Claim{u("a", 0.5000001, Execute)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "0.75 explains", claims: []Claim{u("a", 0.75, Execute)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "just above 0.75 defers", claims: []Claim{u("a", 0.7500001, Execute)},
			want: DecisionDefer, stoppedAt: GateUncertainty, reason: "exceeds 0.75"},
		{name: "1 defers", claims: []Claim{u("a", 1, Execute)}, want: DecisionDefer, stoppedAt: GateUncertainty},
		{name: "highest uncertainty decides", claims: []Claim{u("a", 0.1, Execute), u("b", 0.8, Execute), u("c", 0.6, Execute)},
			want: DecisionDefer, stoppedAt: GateUncertainty, reason: `claim "b"`},
		{name: "caveat per claim above 0.50", claims: []Claim{u("c", 0.6, Execute), u("a", 0.7, Execute), u("b", 0.2, Execute)},
			want: DecisionPublish, caveats: []string{"a", "c"}},
		{name: "claim recommending REFUSE fails the bundle", claims: []Claim{u("a", 0.01, Refuse), u("b", 0.01, Execute)},
			want: DecisionRefuse, stoppedAt: GateUncertainty, reason: `REFUSE: "a"`},
		{name: "claim recommending DEFER stops the chain", claims: []Claim{u("a", 0.01, Defer)},
			want: DecisionDefer, stoppedAt: GateUncertainty, reason: `DEFER: "a"`},
		{name: "REFUSE wins over DEFER", claims: []Claim{u("a", 0.9, Defer), u("b", 0.1, Refuse)},
			want: DecisionRefuse, stoppedAt: GateUncertainty},
		{name: "claim recommending EXPLAIN adds a caveat", claims: []Claim{u("a", 0.01, Explain)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "EXPLAIN and high value give one caveat", claims: []Claim{u("a", 0.6, Explain)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "EXPLAIN does not rescue a value above 0.75", claims: []Claim{u("a", 0.9, Explain)},
			want: DecisionDefer, stoppedAt: GateUncertainty},
	})
}

func TestUncertaintyThresholdsConfigurable(t *testing.T) {
	p := DefaultPolicy()
	p.ExecuteMax, p.ExplainMax = 0.2, 0.4
	runGateCases(t, []gateCase{
		{name: "0.2 executes", policy: p, claims: []Claim{mkClaim("a", DecisionClaim, ReadOnly, 0.2, Execute)}, want: DecisionPublish},
		{name: "0.3 explains", policy: p, claims: []Claim{mkClaim("a", DecisionClaim, ReadOnly, 0.3, Execute)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "0.5 defers", policy: p, claims: []Claim{mkClaim("a", DecisionClaim, ReadOnly, 0.5, Execute)},
			want: DecisionDefer, stoppedAt: GateUncertainty},
	})
}

func TestCaveatText(t *testing.T) {
	ev, err := Evaluate(mkBundle(mkClaim("a", DecisionClaim, ReadOnly, 0.6, Explain)), DefaultPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	require.Len(t, ev.Caveats, 1)
	assert.Equal(t, Note{ClaimID: "a", Gate: GateUncertainty,
		Text: "uncertainty 0.6 (semantic_entropy) exceeds 0.5; the estimator recommends EXPLAIN: interp a"}, ev.Caveats[0])
	assert.Equal(t, "all gates passed with 1 caveat", ev.Reason)
}

func TestClearanceGate(t *testing.T) {
	c := func(id string, tier RiskTier) Claim { return mkClaim(id, DecisionClaim, tier, 0.1, Execute) }
	runGateCases(t, []gateCase{
		{name: "equal tier passes", claims: []Claim{c("a", Modify)}, clearance: Modify,
			want: DecisionPublish, flags: []string{"a"}},
		{name: "higher clearance passes", claims: []Claim{c("a", ReadOnly)}, clearance: WriteLimited, want: DecisionPublish},
		{name: "lower clearance refused", claims: []Claim{c("a", WriteLimited)}, clearance: ReadOnly,
			want: DecisionRefuse, stoppedAt: GateClearance, reason: "clearance READ_ONLY is below tier WRITE_LIMITED"},
		// "MODIFY" > "DELETE" as strings, yet MODIFY ranks below DELETE.
		{name: "rank not string: MODIFY clearance, DELETE claim", claims: []Claim{c("a", Delete)}, clearance: Modify,
			want: DecisionRefuse, stoppedAt: GateClearance},
		// "DELETE" < "MODIFY" as strings, yet DELETE ranks above MODIFY.
		{name: "rank not string: DELETE clearance, MODIFY claim", claims: []Claim{c("a", Modify)}, clearance: Delete,
			want: DecisionPublish, flags: []string{"a"}},
		// "READ_ONLY" > "PRIVILEGE" as strings.
		{name: "rank not string: READ_ONLY clearance, PRIVILEGE claim", claims: []Claim{c("a", Privilege)}, clearance: ReadOnly,
			want: DecisionRefuse, stoppedAt: GateClearance},
		{name: "rank not string: WRITE_LIMITED clearance, MODIFY claim", claims: []Claim{c("a", Modify)}, clearance: WriteLimited,
			want: DecisionRefuse, stoppedAt: GateClearance},
		{name: "mix [READ_ONLY, PRIVILEGE] with MODIFY clearance", claims: []Claim{c("r", ReadOnly), c("p", Privilege)}, clearance: Modify,
			want: DecisionRefuse, stoppedAt: GateClearance, reason: `tier PRIVILEGE of claim "p"`},
		{name: "mix [READ_ONLY, PRIVILEGE] with PRIVILEGE clearance escalates", claims: []Claim{c("r", ReadOnly), c("p", Privilege)},
			clearance: Privilege, want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"security", "cto"}},
		{name: "mix [WRITE_LIMITED, DELETE] with DELETE clearance escalates", claims: []Claim{c("w", WriteLimited), c("d", Delete)},
			clearance: Delete, want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"dba"}},
		{name: "mix [MODIFY, READ_ONLY] with WRITE_LIMITED clearance", claims: []Claim{c("m", Modify), c("r", ReadOnly)},
			clearance: WriteLimited, want: DecisionRefuse, stoppedAt: GateClearance},
	})
}

func TestHumanApprovalGate(t *testing.T) {
	c := func(id string, tier RiskTier) Claim { return mkClaim(id, DecisionClaim, tier, 0.1, Execute) }
	noApprovers := DefaultPolicy()
	runGateCases(t, []gateCase{
		{name: "READ_ONLY auto-approved", claims: []Claim{c("a", ReadOnly)}, want: DecisionPublish, required: []string{}},
		{name: "WRITE_LIMITED auto-approved", claims: []Claim{c("a", WriteLimited)}, want: DecisionPublish, required: []string{}},
		{name: "MODIFY auto-approved and flagged", claims: []Claim{c("b", Modify), c("a", Modify), c("r", ReadOnly)},
			want: DecisionPublish, flags: []string{"a", "b"}, required: []string{}},
		{name: "DELETE escalates", claims: []Claim{c("a", Delete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, reason: `awaiting approval from "dba"`, required: []string{"dba"}},
		{name: "PRIVILEGE escalates", claims: []Claim{c("a", Privilege)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"security", "cto"}},
		{name: "DELETE and PRIVILEGE need both sets", claims: []Claim{c("p", Privilege), c("d", Delete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"dba", "security", "cto"}},
		{name: "MODIFY with DELETE is flagged and escalated", claims: []Claim{c("m", Modify), c("d", Delete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, flags: []string{"m"}},
		{name: "DELETE without configured approver escalates, waiting for nobody", policy: noApprovers, claims: []Claim{c("a", Delete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, reason: "names no approver for DELETE", required: []string{}},
		{name: "PRIVILEGE without configured approver escalates", policy: noApprovers, claims: []Claim{c("a", Privilege)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{}},
	})
}

func TestGateChainOrder(t *testing.T) {
	// Each gate would stop this bundle; the first one does.
	noEvidence := mkClaim("f", FactClaim, Privilege, 0.9, Refuse)
	ev, err := Evaluate(mkBundle(noEvidence), approverPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateEvidence, ev.StoppedAt)
	assert.Equal(t, []string{GateValidation}, ev.Bundle.AuditTrail.GatesPassed)

	weak := mkClaim("f", FactClaim, Privilege, 0.9, Refuse, ev0(0.3))
	ev, err = Evaluate(mkBundle(weak), approverPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateEvidence, ev.StoppedAt)
	assert.Equal(t, DecisionDefer, ev.Decision)

	refusing := mkClaim("f", FactClaim, Privilege, 0.1, Refuse, ev0(0.9))
	ev, err = Evaluate(mkBundle(refusing), approverPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateUncertainty, ev.StoppedAt)
	assert.Equal(t, []string{GateValidation, GateEvidence}, ev.Bundle.AuditTrail.GatesPassed)

	priv := mkClaim("f", FactClaim, Privilege, 0.1, Execute, ev0(0.9))
	ev, err = Evaluate(mkBundle(priv), approverPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateClearance, ev.StoppedAt)

	ev, err = Evaluate(mkBundle(priv), approverPolicy(), clearance(Privilege))
	require.NoError(t, err)
	assert.Equal(t, GateHumanApproval, ev.StoppedAt)
	assert.Equal(t, allGates[:4], ev.Bundle.AuditTrail.GatesPassed)

	ev, err = Evaluate(mkBundle(fact("ok")), approverPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.Equal(t, allGates, ev.Bundle.AuditTrail.GatesPassed)
	assert.Empty(t, ev.Bundle.AuditTrail.GatesFailed)
	assert.Equal(t, "all gates passed", ev.Reason)
}

func ev0(conf float64) EvidencePointer { return ev(conf) }

func TestEmptyBundleNeverPublished(t *testing.T) {
	for _, b := range []ClaimBundle{mkBundle(), {}, {ID: "x", Timestamp: t0, OriginAgent: "a", Claims: []Claim{}}} {
		for _, tier := range []RiskTier{ReadOnly, Privilege} {
			ev, err := Evaluate(b, DefaultPolicy(), clearance(tier))
			require.NoError(t, err)
			assert.Equal(t, DecisionRefuse, ev.Decision)
			assert.Equal(t, GateValidation, ev.StoppedAt)
		}
	}
	ev, err := Evaluate(mkBundle(), DefaultPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Contains(t, ev.Reason, RuleNoClaims)
}

func TestValidationGateRefusesInvalidBundles(t *testing.T) {
	bad := fact("a")
	bad.Uncertainty.Value = 1.5
	noOrigin := mkBundle(fact("a"))
	noOrigin.OriginAgent = ""
	badHash := fact("a")
	badHash.EvidencePointers[0].EvidenceHash = "bd24c2aaef2ef37ae95f0f9e5f7d9e7c"
	for name, b := range map[string]ClaimBundle{
		"value outside [0,1]": mkBundle(bad),
		"no origin agent":     noOrigin,
		"duplicate claim ids": mkBundle(fact("a"), fact("a")),
		"32-hex hash":         mkBundle(badHash),
	} {
		t.Run(name, func(t *testing.T) {
			ev, err := Evaluate(b, DefaultPolicy(), clearance(Privilege))
			require.NoError(t, err)
			assert.Equal(t, DecisionRefuse, ev.Decision)
			assert.Equal(t, GateValidation, ev.StoppedAt)
			assert.NotEmpty(t, ev.Violations)
		})
	}
	// Output fields of the chain are not judged: a stale or zero decision
	// and junk notes in the input do not matter.
	b := mkBundle(fact("a"))
	b.Decision = DecisionEscalate
	b.AuditTrail.Caveats = []Note{{}}
	b.AuditTrail.GatesFailed = []string{""}
	ev, err := Evaluate(b, DefaultPolicy(), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.Empty(t, ev.Bundle.AuditTrail.Caveats)
}

func TestUserGates(t *testing.T) {
	mk := func(name string, v Verdict) Gate {
		return GateFunc(name, func(ClaimBundle, Context) Verdict { return v })
	}
	withGates := func(gs ...Gate) Policy {
		p := approverPolicy()
		p.Gates = gs
		return p
	}
	runGateCases(t, []gateCase{
		{name: "EXECUTE passes", policy: withGates(mk("g", Verdict{Recommendation: Execute})),
			claims: []Claim{fact("a")}, want: DecisionPublish},
		{name: "EXPLAIN adds the reason as caveat", policy: withGates(mk("g", Verdict{Recommendation: Explain, Reason: "note"})),
			claims: []Claim{fact("a")}, want: DecisionPublish, caveats: []string{""}},
		{name: "EXPLAIN with claim caveats", policy: withGates(mk("g", Verdict{Recommendation: Explain, Caveats: []Note{{ClaimID: "a", Text: "t"}}})),
			claims: []Claim{fact("a")}, want: DecisionPublish, caveats: []string{"a"}},
		{name: "EXPLAIN with an empty caveat text uses the reason", policy: withGates(mk("g", Verdict{Recommendation: Explain, Reason: "why", Caveats: []Note{{ClaimID: "a"}}})),
			claims: []Claim{fact("a")}, want: DecisionPublish, caveats: []string{"a"}},
		{name: "DEFER stops", policy: withGates(mk("g", Verdict{Recommendation: Defer, Reason: "later"})),
			claims: []Claim{fact("a")}, want: DecisionDefer, stoppedAt: "g", reason: "g: later"},
		{name: "REFUSE stops", policy: withGates(mk("g", Verdict{Recommendation: Refuse, Reason: "no"})),
			claims: []Claim{fact("a")}, want: DecisionRefuse, stoppedAt: "g", reason: "g: no"},
		{name: "unknown recommendation fails closed", policy: withGates(mk("g", Verdict{Recommendation: "execute"})),
			claims: []Claim{fact("a")}, want: DecisionRefuse, stoppedAt: "g"},
		{name: "zero verdict fails closed", policy: withGates(mk("g", Verdict{})),
			claims: []Claim{fact("a")}, want: DecisionRefuse, stoppedAt: "g"},
		{name: "later gate not reached", policy: withGates(mk("g1", Verdict{Recommendation: Defer}), mk("g2", Verdict{Recommendation: Refuse})),
			claims: []Claim{fact("a")}, want: DecisionDefer, stoppedAt: "g1"},
		{name: "user gates run before human approval", policy: withGates(mk("g", Verdict{Recommendation: Refuse})),
			claims: []Claim{mkClaim("d", DecisionClaim, Delete, 0.1, Execute)}, want: DecisionRefuse, stoppedAt: "g"},
	})

	// Whatever a gate says, the evaluated bundle stays valid.
	odd := withGates(mk("g", Verdict{Recommendation: Explain, Reason: "\xff", Caveats: []Note{{ClaimID: "\xfe"}, {Text: "t\xff"}}}))
	ev, err := Evaluate(mkBundle(fact("a")), odd, clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.NoError(t, Validate(ev.Bundle))
	assert.Equal(t, []Note{{ClaimID: "\uFFFD", Gate: "g", Text: "\uFFFD"}, {Gate: "g", Text: "t\uFFFD"}}, ev.Caveats)

	// A gate sees a copy: mutating it does not affect the evaluation.
	var seen []string
	mutating := GateFunc("mut", func(b ClaimBundle, c Context) Verdict {
		seen = append([]string{}, b.AuditTrail.GatesPassed...)
		b.Claims[0].RiskTier = Privilege
		b.Claims[0].EvidencePointers[0].SourceConfidence = 0
		return Verdict{Recommendation: Execute}
	})
	in := mkBundle(fact("a"))
	ev, err = Evaluate(in, withGates(mutating), clearance(ReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.Equal(t, allGates[:4], seen)
	assert.Equal(t, ReadOnly, ev.Bundle.Claims[0].RiskTier)
	assert.Equal(t, 0.9, in.Claims[0].EvidencePointers[0].SourceConfidence)
	assert.Equal(t, append(append([]string{}, allGates[:4]...), "mut", GateHumanApproval), ev.Bundle.AuditTrail.GatesPassed)

	// A gate sees the caveats added before it (Gate's contract), including
	// those of an earlier user gate.
	var seenCaveats []Note
	looking := GateFunc("look", func(b ClaimBundle, c Context) Verdict {
		seenCaveats = b.AuditTrail.Caveats
		return Verdict{Recommendation: Execute}
	})
	explained := mkClaim("a", FactClaim, ReadOnly, 0.6, Execute, fact("a").EvidencePointers...)
	ev, err = Evaluate(mkBundle(explained),
		withGates(mk("g", Verdict{Recommendation: Explain, Reason: "note"}), looking), clearance(ReadOnly))
	require.NoError(t, err)
	require.Equal(t, DecisionPublish, ev.Decision)
	require.Len(t, ev.Caveats, 2)
	assert.Equal(t, ev.Caveats, seenCaveats)
}

func TestPolicyValidate(t *testing.T) {
	g := func(name string) Gate { return GateFunc(name, func(ClaimBundle, Context) Verdict { return Verdict{} }) }
	bad := map[string]Policy{
		"execute above explain":   {ExecuteMax: 0.8, ExplainMax: 0.7},
		"negative":                {ExecuteMax: -0.1, ExplainMax: 0.7},
		"above one":               {ExecuteMax: 0.5, ExplainMax: 1.1},
		"approvers for MODIFY":    {ExecuteMax: 0.5, ExplainMax: 0.7, Approvers: map[RiskTier][]string{Modify: {"x"}}},
		"empty approver":          {ExecuteMax: 0.5, ExplainMax: 0.7, Approvers: map[RiskTier][]string{Delete: {""}}},
		"duplicate approver":      {ExecuteMax: 0.5, ExplainMax: 0.7, Approvers: map[RiskTier][]string{Delete: {"a", "a"}}},
		"nil gate":                {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{nil}},
		"unnamed gate":            {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{g("")}},
		"gate named like builtin": {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{g(GateClearance)}},
		"duplicate gate names":    {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{g("x"), g("x")}},
	}
	for name, p := range bad {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, p.Validate(), ErrInvalidPolicy)
			_, err := Evaluate(mkBundle(fact("a")), p, clearance(ReadOnly))
			require.ErrorIs(t, err, ErrInvalidPolicy)
		})
	}
	assert.NoError(t, DefaultPolicy().Validate())
	assert.NoError(t, approverPolicy().Validate())
	assert.NoError(t, Policy{}.Validate())
}

func TestInvalidContext(t *testing.T) {
	for _, c := range []RiskTier{"", "read_only", "ROOT"} {
		_, err := Evaluate(mkBundle(fact("a")), DefaultPolicy(), Context{Clearance: c})
		assert.True(t, errors.Is(err, ErrInvalidContext), "clearance %q", c)
	}
}

func TestEvaluateDoesNotModifyInput(t *testing.T) {
	in := mkBundle(fact("b"), mkClaim("a", DecisionClaim, Delete, 0.6, Explain, ev(0.3)))
	in.AuditTrail.GatesPassed = []string{"old"}
	before := in.Clone()
	ev, err := Evaluate(in, approverPolicy(), clearance(Privilege))
	require.NoError(t, err)
	assert.Equal(t, before, in)
	ev.Bundle.Claims[0].EvidencePointers[0].Source = "changed"
	ev.Bundle.RequiredApprovals[0] = "changed"
	assert.Equal(t, before, in)
}

func TestRefuseIsFinal(t *testing.T) {
	in := mkBundle(mkClaim("d", DecisionClaim, Delete, 0.1, Execute))
	ev, err := Evaluate(in, approverPolicy(), clearance(Modify))
	require.NoError(t, err)
	require.Equal(t, DecisionRefuse, ev.Decision)
	// The refused bundle stays refused even with a higher clearance...
	again, err := Evaluate(ev.Bundle, approverPolicy(), clearance(Privilege))
	require.NoError(t, err)
	assert.Equal(t, ev.Bundle, again.Bundle)
	assert.Equal(t, ev.Reason, again.Reason)
	assert.Equal(t, GateClearance, again.StoppedAt)
	// ...while the original bundle, untouched, can be judged again.
	fresh, err := Evaluate(in, approverPolicy(), clearance(Privilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionEscalate, fresh.Decision)

	// An origin's own REFUSE is final too.
	self := mkBundle(fact("a"))
	self.Decision = DecisionRefuse
	ev, err = Evaluate(self, DefaultPolicy(), clearance(Privilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionRefuse, ev.Decision)
	assert.Equal(t, "refused before evaluation", ev.Reason)
	assert.Equal(t, []string{GateValidation}, ev.Bundle.AuditTrail.GatesFailed)
	again, err = Evaluate(ev.Bundle, DefaultPolicy(), clearance(Privilege))
	require.NoError(t, err)
	assert.Equal(t, ev, again)
}
