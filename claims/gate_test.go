// The gate chain, gate by gate: the guarantees of Evaluate and the tests
// in this file that check them (the properties over many inputs are in
// property_test.go).
//
//   - Each gate rule and boundary (0.60, 0.50, 0.75, tier mixes such as
//     [READ_ONLY, PRIVILEGE]): TestEvidenceGate, TestUncertaintyGate,
//     TestUncertaintyThresholdsConfigurable, TestCaveatText,
//     TestClearanceGate, TestHumanApprovalGate, TestGateChainOrder,
//     TestUserGates, TestValidationGateRefusesInvalidBundles.
//   - An empty bundle is never published: TestEmptyBundleNeverPublished.
//   - Zero values fail closed: the empty enum value, a zero Uncertainty, a
//     zero clearance and a zero GateResult never pass:
//     TestZeroEnumValuesFailClosed.
//   - A bad policy or context is an error, never a decision:
//     TestPolicyValidate, TestInvalidContext.
//   - Evaluate never modifies its input: TestEvaluateDoesNotModifyInput;
//     REFUSE is final: TestRefuseIsFinal.

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
				cl = TierPrivilege
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
			claims: []Claim{mkClaim("f", ClaimFact, TierReadOnly, 0.1, RecommendExecute)},
			want:   DecisionRefuse, stoppedAt: GateEvidence, reason: `without evidence: "f"`},
		{name: "FACT with only weak evidence is deferred",
			claims: []Claim{mkClaim("f", ClaimFact, TierReadOnly, 0.1, RecommendExecute, ev(0.59), ev(0.3))},
			want:   DecisionDefer, stoppedAt: GateEvidence, reason: "weak evidence"},
		{name: "source_confidence 0.60 exactly passes",
			claims: []Claim{mkClaim("f", ClaimFact, TierReadOnly, 0.1, RecommendExecute, ev(0.60))},
			want:   DecisionPublish},
		{name: "source_confidence just below 0.60 is weak",
			claims: []Claim{mkClaim("f", ClaimFact, TierReadOnly, 0.1, RecommendExecute, ev(0.5999999999))},
			want:   DecisionDefer, stoppedAt: GateEvidence},
		{name: "one strong pointer among weak ones suffices",
			claims: []Claim{mkClaim("f", ClaimFact, TierReadOnly, 0.1, RecommendExecute, ev(0.1), ev(0.6), ev(0.2))},
			want:   DecisionPublish},
		{name: "missing evidence wins over weak evidence",
			claims: []Claim{mkClaim("a", ClaimFact, TierReadOnly, 0.1, RecommendExecute, ev(0.2)), mkClaim("b", ClaimFact, TierReadOnly, 0.1, RecommendExecute)},
			want:   DecisionRefuse, stoppedAt: GateEvidence, reason: `"b"`},
		{name: "INFERENCE without evidence passes",
			claims: []Claim{mkClaim("i", ClaimInference, TierReadOnly, 0.1, RecommendExecute)},
			want:   DecisionPublish},
		{name: "INFERENCE with only weak evidence is deferred",
			claims: []Claim{mkClaim("i", ClaimInference, TierReadOnly, 0.1, RecommendExecute, ev(0.4))},
			want:   DecisionDefer, stoppedAt: GateEvidence},
		{name: "INFERENCE with 0.60 evidence passes",
			claims: []Claim{mkClaim("i", ClaimInference, TierReadOnly, 0.1, RecommendExecute, ev(0.6))},
			want:   DecisionPublish},
		{name: "DECISION needs no evidence",
			claims: []Claim{mkClaim("d", ClaimDecision, TierReadOnly, 0.1, RecommendExecute)},
			want:   DecisionPublish},
		{name: "DECISION with weak evidence is not judged on strength",
			claims: []Claim{mkClaim("d", ClaimDecision, TierReadOnly, 0.1, RecommendExecute, ev(0.1))},
			want:   DecisionPublish},
	})
}

func TestUncertaintyGate(t *testing.T) {
	u := func(id string, v float64, rec GateRecommendation) Claim {
		return mkClaim(id, ClaimDecision, TierReadOnly, v, rec)
	}
	runGateCases(t, []gateCase{
		{name: "0 executes", claims: []Claim{u("a", 0, RecommendExecute)}, want: DecisionPublish},
		{name: "0.50 executes without caveat", claims: []Claim{u("a", 0.50, RecommendExecute)}, want: DecisionPublish},
		{name: "just above 0.50 explains", claims: []Claim{u("a", 0.5000001, RecommendExecute)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "0.75 explains", claims: []Claim{u("a", 0.75, RecommendExecute)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "just above 0.75 defers", claims: []Claim{u("a", 0.7500001, RecommendExecute)},
			want: DecisionDefer, stoppedAt: GateUncertainty, reason: "exceeds 0.75"},
		{name: "1 defers", claims: []Claim{u("a", 1, RecommendExecute)}, want: DecisionDefer, stoppedAt: GateUncertainty},
		{name: "highest uncertainty decides", claims: []Claim{u("a", 0.1, RecommendExecute), u("b", 0.8, RecommendExecute), u("c", 0.6, RecommendExecute)},
			want: DecisionDefer, stoppedAt: GateUncertainty, reason: `claim "b"`},
		{name: "caveat per claim above 0.50", claims: []Claim{u("c", 0.6, RecommendExecute), u("a", 0.7, RecommendExecute), u("b", 0.2, RecommendExecute)},
			want: DecisionPublish, caveats: []string{"a", "c"}},
		{name: "claim recommending REFUSE fails the bundle", claims: []Claim{u("a", 0.01, RecommendRefuse), u("b", 0.01, RecommendExecute)},
			want: DecisionRefuse, stoppedAt: GateUncertainty, reason: `REFUSE: "a"`},
		{name: "claim recommending DEFER stops the chain", claims: []Claim{u("a", 0.01, RecommendDefer)},
			want: DecisionDefer, stoppedAt: GateUncertainty, reason: `DEFER: "a"`},
		{name: "REFUSE wins over DEFER", claims: []Claim{u("a", 0.9, RecommendDefer), u("b", 0.1, RecommendRefuse)},
			want: DecisionRefuse, stoppedAt: GateUncertainty},
		{name: "claim recommending EXPLAIN adds a caveat", claims: []Claim{u("a", 0.01, RecommendExplain)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "EXPLAIN and high value give one caveat", claims: []Claim{u("a", 0.6, RecommendExplain)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "EXPLAIN does not rescue a value above 0.75", claims: []Claim{u("a", 0.9, RecommendExplain)},
			want: DecisionDefer, stoppedAt: GateUncertainty},
	})
}

func TestUncertaintyThresholdsConfigurable(t *testing.T) {
	p := DefaultPolicy()
	p.ExecuteMax, p.ExplainMax = 0.2, 0.4
	runGateCases(t, []gateCase{
		{name: "0.2 executes", policy: p, claims: []Claim{mkClaim("a", ClaimDecision, TierReadOnly, 0.2, RecommendExecute)}, want: DecisionPublish},
		{name: "0.3 explains", policy: p, claims: []Claim{mkClaim("a", ClaimDecision, TierReadOnly, 0.3, RecommendExecute)},
			want: DecisionPublish, caveats: []string{"a"}},
		{name: "0.5 defers", policy: p, claims: []Claim{mkClaim("a", ClaimDecision, TierReadOnly, 0.5, RecommendExecute)},
			want: DecisionDefer, stoppedAt: GateUncertainty},
	})
}

func TestCaveatText(t *testing.T) {
	ev, err := Evaluate(mkBundle(mkClaim("a", ClaimDecision, TierReadOnly, 0.6, RecommendExplain)), DefaultPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	require.Len(t, ev.Caveats, 1)
	assert.Equal(t, Note{ClaimID: "a", Gate: GateUncertainty,
		Text: "uncertainty 0.6 (semantic_entropy) exceeds 0.5; the estimator recommends EXPLAIN: interp a"}, ev.Caveats[0])
	assert.Equal(t, "all gates passed with 1 caveat", ev.Reason)
}

func TestClearanceGate(t *testing.T) {
	c := func(id string, tier RiskTier) Claim { return mkClaim(id, ClaimDecision, tier, 0.1, RecommendExecute) }
	runGateCases(t, []gateCase{
		{name: "equal tier passes", claims: []Claim{c("a", TierModify)}, clearance: TierModify,
			want: DecisionPublish, flags: []string{"a"}},
		{name: "higher clearance passes", claims: []Claim{c("a", TierReadOnly)}, clearance: TierWriteLimited, want: DecisionPublish},
		{name: "lower clearance refused", claims: []Claim{c("a", TierWriteLimited)}, clearance: TierReadOnly,
			want: DecisionRefuse, stoppedAt: GateClearance, reason: "clearance READ_ONLY is below tier WRITE_LIMITED"},
		// "MODIFY" > "DELETE" as strings, yet MODIFY ranks below DELETE.
		{name: "rank not string: MODIFY clearance, DELETE claim", claims: []Claim{c("a", TierDelete)}, clearance: TierModify,
			want: DecisionRefuse, stoppedAt: GateClearance},
		// "DELETE" < "MODIFY" as strings, yet DELETE ranks above MODIFY.
		{name: "rank not string: DELETE clearance, MODIFY claim", claims: []Claim{c("a", TierModify)}, clearance: TierDelete,
			want: DecisionPublish, flags: []string{"a"}},
		// "READ_ONLY" > "PRIVILEGE" as strings.
		{name: "rank not string: READ_ONLY clearance, PRIVILEGE claim", claims: []Claim{c("a", TierPrivilege)}, clearance: TierReadOnly,
			want: DecisionRefuse, stoppedAt: GateClearance},
		{name: "rank not string: WRITE_LIMITED clearance, MODIFY claim", claims: []Claim{c("a", TierModify)}, clearance: TierWriteLimited,
			want: DecisionRefuse, stoppedAt: GateClearance},
		{name: "mix [READ_ONLY, PRIVILEGE] with MODIFY clearance", claims: []Claim{c("r", TierReadOnly), c("p", TierPrivilege)}, clearance: TierModify,
			want: DecisionRefuse, stoppedAt: GateClearance, reason: `tier PRIVILEGE of claim "p"`},
		{name: "mix [READ_ONLY, PRIVILEGE] with PRIVILEGE clearance escalates", claims: []Claim{c("r", TierReadOnly), c("p", TierPrivilege)},
			clearance: TierPrivilege, want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"security", "cto"}},
		{name: "mix [WRITE_LIMITED, DELETE] with DELETE clearance escalates", claims: []Claim{c("w", TierWriteLimited), c("d", TierDelete)},
			clearance: TierDelete, want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"dba"}},
		{name: "mix [MODIFY, READ_ONLY] with WRITE_LIMITED clearance", claims: []Claim{c("m", TierModify), c("r", TierReadOnly)},
			clearance: TierWriteLimited, want: DecisionRefuse, stoppedAt: GateClearance},
	})
}

func TestHumanApprovalGate(t *testing.T) {
	c := func(id string, tier RiskTier) Claim { return mkClaim(id, ClaimDecision, tier, 0.1, RecommendExecute) }
	noApprovers := DefaultPolicy()
	runGateCases(t, []gateCase{
		{name: "READ_ONLY auto-approved", claims: []Claim{c("a", TierReadOnly)}, want: DecisionPublish, required: []string{}},
		{name: "WRITE_LIMITED auto-approved", claims: []Claim{c("a", TierWriteLimited)}, want: DecisionPublish, required: []string{}},
		{name: "MODIFY auto-approved and flagged", claims: []Claim{c("b", TierModify), c("a", TierModify), c("r", TierReadOnly)},
			want: DecisionPublish, flags: []string{"a", "b"}, required: []string{}},
		{name: "DELETE escalates", claims: []Claim{c("a", TierDelete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, reason: `awaiting approval from "dba"`, required: []string{"dba"}},
		{name: "PRIVILEGE escalates", claims: []Claim{c("a", TierPrivilege)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"security", "cto"}},
		{name: "DELETE and PRIVILEGE need both sets", claims: []Claim{c("p", TierPrivilege), c("d", TierDelete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{"dba", "security", "cto"}},
		{name: "MODIFY with DELETE is flagged and escalated", claims: []Claim{c("m", TierModify), c("d", TierDelete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, flags: []string{"m"}},
		{name: "DELETE without configured approver escalates, waiting for nobody", policy: noApprovers, claims: []Claim{c("a", TierDelete)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, reason: "names no approver for DELETE", required: []string{}},
		{name: "PRIVILEGE without configured approver escalates", policy: noApprovers, claims: []Claim{c("a", TierPrivilege)},
			want: DecisionEscalate, stoppedAt: GateHumanApproval, required: []string{}},
	})
}

func TestGateChainOrder(t *testing.T) {
	// Each gate would stop this bundle; the first one does.
	noEvidence := mkClaim("f", ClaimFact, TierPrivilege, 0.9, RecommendRefuse)
	ev, err := Evaluate(mkBundle(noEvidence), approverPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateEvidence, ev.StoppedAt)
	assert.Equal(t, []string{GateValidation}, ev.Bundle.AuditTrail.GatesPassed)

	weak := mkClaim("f", ClaimFact, TierPrivilege, 0.9, RecommendRefuse, ev0(0.3))
	ev, err = Evaluate(mkBundle(weak), approverPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateEvidence, ev.StoppedAt)
	assert.Equal(t, DecisionDefer, ev.Decision)

	refusing := mkClaim("f", ClaimFact, TierPrivilege, 0.1, RecommendRefuse, ev0(0.9))
	ev, err = Evaluate(mkBundle(refusing), approverPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateUncertainty, ev.StoppedAt)
	assert.Equal(t, []string{GateValidation, GateEvidence}, ev.Bundle.AuditTrail.GatesPassed)

	priv := mkClaim("f", ClaimFact, TierPrivilege, 0.1, RecommendExecute, ev0(0.9))
	ev, err = Evaluate(mkBundle(priv), approverPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, GateClearance, ev.StoppedAt)

	ev, err = Evaluate(mkBundle(priv), approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, GateHumanApproval, ev.StoppedAt)
	assert.Equal(t, allGates[:4], ev.Bundle.AuditTrail.GatesPassed)

	ev, err = Evaluate(mkBundle(fact("ok")), approverPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.Equal(t, allGates, ev.Bundle.AuditTrail.GatesPassed)
	assert.Empty(t, ev.Bundle.AuditTrail.GatesFailed)
	assert.Equal(t, "all gates passed", ev.Reason)
}

func ev0(conf float64) EvidencePointer { return ev(conf) }

func TestEmptyBundleNeverPublished(t *testing.T) {
	for _, b := range []ClaimBundle{mkBundle(), {}, {ID: "x", Timestamp: t0, OriginAgent: "a", Claims: []Claim{}}} {
		for _, tier := range []RiskTier{TierReadOnly, TierPrivilege} {
			ev, err := Evaluate(b, DefaultPolicy(), clearance(tier))
			require.NoError(t, err)
			assert.Equal(t, DecisionRefuse, ev.Decision)
			assert.Equal(t, GateValidation, ev.StoppedAt)
		}
	}
	ev, err := Evaluate(mkBundle(), DefaultPolicy(), clearance(TierReadOnly))
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
			ev, err := Evaluate(b, DefaultPolicy(), clearance(TierPrivilege))
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
	ev, err := Evaluate(b, DefaultPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.Empty(t, ev.Bundle.AuditTrail.Caveats)
}

func TestUserGates(t *testing.T) {
	mk := func(name string, v GateResult) Gate {
		return GateFunc(name, func(ClaimBundle, Context) GateResult { return v })
	}
	withGates := func(gs ...Gate) Policy {
		p := approverPolicy()
		p.Gates = gs
		return p
	}
	runGateCases(t, []gateCase{
		{name: "EXECUTE passes", policy: withGates(mk("g", GateResult{Recommendation: RecommendExecute})),
			claims: []Claim{fact("a")}, want: DecisionPublish},
		{name: "EXPLAIN adds the reason as caveat", policy: withGates(mk("g", GateResult{Recommendation: RecommendExplain, Reason: "note"})),
			claims: []Claim{fact("a")}, want: DecisionPublish, caveats: []string{""}},
		{name: "EXPLAIN with claim caveats", policy: withGates(mk("g", GateResult{Recommendation: RecommendExplain, Caveats: []Note{{ClaimID: "a", Text: "t"}}})),
			claims: []Claim{fact("a")}, want: DecisionPublish, caveats: []string{"a"}},
		{name: "EXPLAIN with an empty caveat text uses the reason", policy: withGates(mk("g", GateResult{Recommendation: RecommendExplain, Reason: "why", Caveats: []Note{{ClaimID: "a"}}})),
			claims: []Claim{fact("a")}, want: DecisionPublish, caveats: []string{"a"}},
		{name: "DEFER stops", policy: withGates(mk("g", GateResult{Recommendation: RecommendDefer, Reason: "later"})),
			claims: []Claim{fact("a")}, want: DecisionDefer, stoppedAt: "g", reason: "g: later"},
		{name: "REFUSE stops", policy: withGates(mk("g", GateResult{Recommendation: RecommendRefuse, Reason: "no"})),
			claims: []Claim{fact("a")}, want: DecisionRefuse, stoppedAt: "g", reason: "g: no"},
		{name: "unknown recommendation fails closed", policy: withGates(mk("g", GateResult{Recommendation: "execute"})),
			claims: []Claim{fact("a")}, want: DecisionRefuse, stoppedAt: "g"},
		{name: "zero GateResult fails closed", policy: withGates(mk("g", GateResult{})),
			claims: []Claim{fact("a")}, want: DecisionRefuse, stoppedAt: "g"},
		{name: "later gate not reached", policy: withGates(mk("g1", GateResult{Recommendation: RecommendDefer}), mk("g2", GateResult{Recommendation: RecommendRefuse})),
			claims: []Claim{fact("a")}, want: DecisionDefer, stoppedAt: "g1"},
		{name: "user gates run before human approval", policy: withGates(mk("g", GateResult{Recommendation: RecommendRefuse})),
			claims: []Claim{mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute)}, want: DecisionRefuse, stoppedAt: "g"},
	})

	// Whatever a gate says, the evaluated bundle stays valid.
	odd := withGates(mk("g", GateResult{Recommendation: RecommendExplain, Reason: "\xff", Caveats: []Note{{ClaimID: "\xfe"}, {Text: "t\xff"}}}))
	ev, err := Evaluate(mkBundle(fact("a")), odd, clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.NoError(t, Validate(ev.Bundle))
	assert.Equal(t, []Note{{ClaimID: "\uFFFD", Gate: "g", Text: "\uFFFD"}, {Gate: "g", Text: "t\uFFFD"}}, ev.Caveats)

	// A gate sees a copy: mutating it does not affect the evaluation.
	var seen []string
	mutating := GateFunc("mut", func(b ClaimBundle, c Context) GateResult {
		seen = append([]string{}, b.AuditTrail.GatesPassed...)
		b.Claims[0].RiskTier = TierPrivilege
		b.Claims[0].EvidencePointers[0].SourceConfidence = 0
		return GateResult{Recommendation: RecommendExecute}
	})
	in := mkBundle(fact("a"))
	ev, err = Evaluate(in, withGates(mutating), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.Equal(t, allGates[:4], seen)
	assert.Equal(t, TierReadOnly, ev.Bundle.Claims[0].RiskTier)
	assert.Equal(t, 0.9, in.Claims[0].EvidencePointers[0].SourceConfidence)
	assert.Equal(t, append(append([]string{}, allGates[:4]...), "mut", GateHumanApproval), ev.Bundle.AuditTrail.GatesPassed)

	// A gate sees the caveats added before it (Gate's contract), including
	// those of an earlier user gate.
	var seenCaveats []Note
	looking := GateFunc("look", func(b ClaimBundle, c Context) GateResult {
		seenCaveats = b.AuditTrail.Caveats
		return GateResult{Recommendation: RecommendExecute}
	})
	explained := mkClaim("a", ClaimFact, TierReadOnly, 0.6, RecommendExecute, fact("a").EvidencePointers...)
	ev, err = Evaluate(mkBundle(explained),
		withGates(mk("g", GateResult{Recommendation: RecommendExplain, Reason: "note"}), looking), clearance(TierReadOnly))
	require.NoError(t, err)
	require.Equal(t, DecisionPublish, ev.Decision)
	require.Len(t, ev.Caveats, 2)
	assert.Equal(t, ev.Caveats, seenCaveats)
}

func TestPolicyValidate(t *testing.T) {
	g := func(name string) Gate {
		return GateFunc(name, func(ClaimBundle, Context) GateResult { return GateResult{} })
	}
	bad := map[string]Policy{
		"execute above explain":   {ExecuteMax: 0.8, ExplainMax: 0.7},
		"negative":                {ExecuteMax: -0.1, ExplainMax: 0.7},
		"above one":               {ExecuteMax: 0.5, ExplainMax: 1.1},
		"approvers for MODIFY":    {ExecuteMax: 0.5, ExplainMax: 0.7, Approvers: map[RiskTier][]string{TierModify: {"x"}}},
		"empty approver":          {ExecuteMax: 0.5, ExplainMax: 0.7, Approvers: map[RiskTier][]string{TierDelete: {""}}},
		"duplicate approver":      {ExecuteMax: 0.5, ExplainMax: 0.7, Approvers: map[RiskTier][]string{TierDelete: {"a", "a"}}},
		"nil gate":                {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{nil}},
		"unnamed gate":            {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{g("")}},
		"gate named like builtin": {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{g(GateClearance)}},
		"duplicate gate names":    {ExecuteMax: 0.5, ExplainMax: 0.7, Gates: []Gate{g("x"), g("x")}},
	}
	for name, p := range bad {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, p.Validate(), ErrInvalidPolicy)
			_, err := Evaluate(mkBundle(fact("a")), p, clearance(TierReadOnly))
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
	in := mkBundle(fact("b"), mkClaim("a", ClaimDecision, TierDelete, 0.6, RecommendExplain, ev(0.3)))
	in.AuditTrail.GatesPassed = []string{"old"}
	before := in.Clone()
	ev, err := Evaluate(in, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, before, in)
	ev.Bundle.Claims[0].EvidencePointers[0].Source = "changed"
	ev.Bundle.RequiredApprovals[0] = "changed"
	assert.Equal(t, before, in)
}

func TestRefuseIsFinal(t *testing.T) {
	in := mkBundle(mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute))
	ev, err := Evaluate(in, approverPolicy(), clearance(TierModify))
	require.NoError(t, err)
	require.Equal(t, DecisionRefuse, ev.Decision)
	// The refused bundle stays refused even with a higher clearance...
	again, err := Evaluate(ev.Bundle, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, ev.Bundle, again.Bundle)
	assert.Equal(t, ev.Reason, again.Reason)
	assert.Equal(t, GateClearance, again.StoppedAt)
	// ...while the original bundle, untouched, can be judged again.
	fresh, err := Evaluate(in, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionEscalate, fresh.Decision)

	// An origin's own REFUSE is final too.
	self := mkBundle(fact("a"))
	self.Decision = DecisionRefuse
	ev, err = Evaluate(self, DefaultPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionRefuse, ev.Decision)
	assert.Equal(t, "refused before evaluation", ev.Reason)
	assert.Equal(t, []string{GateValidation}, ev.Bundle.AuditTrail.GatesFailed)
	again, err = Evaluate(ev.Bundle, DefaultPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, ev, again)
}

// TestZeroEnumValuesFailClosed: the empty string is no value of any enum,
// and wherever an enum is read its zero value refuses: a claim with a
// zero type, tier, method or recommendation is refused, a zero clearance
// is no context, a zero approval decision is not recorded, and a gate's
// zero GateResult refuses.
func TestZeroEnumValuesFailClosed(t *testing.T) {
	for _, e := range []interface {
		Valid() bool
		MarshalText() ([]byte, error)
	}{ClaimType(""), UncertaintyMethod(""), GateRecommendation(""), RiskTier(""), Decision(""), ApprovalDecision("")} {
		assert.False(t, e.Valid(), "%T", e)
		_, err := e.MarshalText()
		assert.ErrorIs(t, err, ErrUnknownValue, "%T", e)
	}
	for name, zero := range map[string]func(*Claim){
		"claim type":     func(c *Claim) { c.ClaimType = "" },
		"risk tier":      func(c *Claim) { c.RiskTier = "" },
		"method":         func(c *Claim) { c.Uncertainty.Method = "" },
		"recommendation": func(c *Claim) { c.Uncertainty.GateRecommendation = "" },
		"uncertainty":    func(c *Claim) { c.Uncertainty = Uncertainty{} },
	} {
		c := fact("a")
		zero(&c)
		ev, err := Evaluate(mkBundle(c), DefaultPolicy(), clearance(TierPrivilege))
		require.NoError(t, err, name)
		assert.Equal(t, DecisionRefuse, ev.Decision, name)
	}
	_, err := Evaluate(mkBundle(fact("a")), DefaultPolicy(), Context{})
	assert.ErrorIs(t, err, ErrInvalidContext)

	pending, err := Evaluate(mkBundle(mkClaim("d", ClaimDecision, TierDelete, 0, RecommendExecute)), approverPolicy(), clearance(TierDelete))
	require.NoError(t, err)
	_, err = RecordApproval(pending.Bundle, Approval{Approver: "dba", Timestamp: t0})
	assert.ErrorIs(t, err, ErrInvalid)

	zeroGate := DefaultPolicy()
	zeroGate.Gates = []Gate{GateFunc("g", func(ClaimBundle, Context) GateResult { return GateResult{} })}
	ev, err := Evaluate(mkBundle(fact("a")), zeroGate, clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionRefuse, ev.Decision)
}
