// Properties of the gate chain over generated bundles, policies and
// contexts (pgregory.net/rapid), each test named after its guarantee:
//
//   - An empty bundle is never published: TestEmptyBundleNeverPublishedProperty.
//   - Adding a stronger claim never turns REFUSE into PUBLISH:
//     TestAddingStrongerClaimNeverTurnsRefuseIntoPublish.
//   - The decision is independent of claim order:
//     TestDecisionIndependentOfClaimOrder.
//   - Evaluation is deterministic and never modifies its input:
//     TestEvaluationDeterministic; re-evaluation is a fixed point:
//     TestReevaluationIsAFixedPoint.
//   - PUBLISH only after every gate and every required approval:
//     TestPublishRequiresEveryGate; valid in, valid out:
//     TestEvaluatedBundleStaysValid.
//   - JSON round-trips losslessly: TestJSONRoundTripLossless.

package claims

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var (
	allTiers = []RiskTier{TierReadOnly, TierWriteLimited, TierModify, TierDelete, TierPrivilege}
	allRecs  = []GateRecommendation{RecommendExecute, RecommendExecute, RecommendExecute, RecommendExplain, RecommendDefer, RecommendRefuse}
	// Values at and around the thresholds, plus anything in [0,1].
	genUnit = rapid.OneOf(
		rapid.SampledFrom([]float64{0, 0.5, 0.5000001, 0.6, 0.5999999, 0.75, 0.7500001, 1}),
		rapid.Float64Range(0, 1),
	)
)

func genEvidence() *rapid.Generator[EvidencePointer] {
	return rapid.Custom(func(t *rapid.T) EvidencePointer {
		e := ev(genUnit.Draw(t, "confidence"))
		if rapid.IntRange(0, 20).Draw(t, "badHash") == 0 {
			e.EvidenceHash = "bd24c2aaef2ef37ae95f0f9e5f7d9e7c"
		}
		e.Source = rapid.StringMatching(`[a-z:/.]{1,12}`).Draw(t, "source")
		e.RetrievedAt = t0.Add(time.Duration(rapid.Int64Range(0, 1e12).Draw(t, "at")))
		return e
	})
}

func genClaim(id string) *rapid.Generator[Claim] {
	return rapid.Custom(func(t *rapid.T) Claim {
		c := mkClaim(id,
			rapid.SampledFrom([]ClaimType{ClaimFact, ClaimInference, ClaimDecision}).Draw(t, "type"),
			rapid.SampledFrom(allTiers).Draw(t, "tier"),
			genUnit.Draw(t, "u"),
			rapid.SampledFrom(allRecs).Draw(t, "rec"),
			rapid.SliceOfN(genEvidence(), 0, 3).Draw(t, "evidence")...)
		c.Uncertainty.Method = rapid.SampledFrom([]UncertaintyMethod{MethodSemanticEntropy, MethodModelDisagreement, MethodConfidenceScore, MethodConformalSet}).Draw(t, "method")
		c.Statement = rapid.String().Draw(t, "statement")
		if c.Statement == "" {
			c.Statement = "s"
		}
		return c
	})
}

// strongClaim is the strongest claim there is: a READ_ONLY fact with full
// confidence evidence and no uncertainty.
func strongClaim(id string) Claim {
	return mkClaim(id, ClaimFact, TierReadOnly, 0, RecommendExecute, ev(1))
}

// genBundle draws bundles with 1..n claims, mostly valid, with optional
// required approvals and human decisions.
func genBundle(minClaims, maxClaims int) *rapid.Generator[ClaimBundle] {
	return rapid.Custom(func(t *rapid.T) ClaimBundle {
		n := rapid.IntRange(minClaims, maxClaims).Draw(t, "n")
		var cs []Claim
		for i := range n {
			id := fmt.Sprintf("c%d", i)
			if rapid.IntRange(0, 30).Draw(t, "dupID") == 0 {
				id = "c0"
			}
			cs = append(cs, genClaim(id).Draw(t, id))
		}
		b := mkBundle(cs...)
		b.RequiredApprovals = rapid.SliceOfDistinct(rapid.SampledFrom([]string{"dba", "security", "cto", "owner"}), rapid.ID).Draw(t, "required")
		for _, r := range b.RequiredApprovals {
			if rapid.Bool().Draw(t, "decided "+r) {
				d := rapid.SampledFrom([]ApprovalDecision{ApprovalApproved, ApprovalApproved, ApprovalRejected}).Draw(t, "decision "+r)
				b.AuditTrail.HumanApprovals = append(b.AuditTrail.HumanApprovals, Approval{Approver: r, Timestamp: t0, Decision: d})
			}
		}
		return b
	})
}

// genPassing draws bundles built to pass every gate (strong evidence,
// uncertainty at most 0.75 with EXECUTE or EXPLAIN, every required approver
// approved) with a clearance that covers them, so that properties about
// published bundles see many of them: genBundle alone publishes about one
// bundle in a hundred.
func genPassing() *rapid.Generator[struct {
	b ClaimBundle
	c Context
}] {
	return rapid.Custom(func(t *rapid.T) struct {
		b ClaimBundle
		c Context
	} {
		n := rapid.IntRange(1, 6).Draw(t, "n")
		top := 0
		var cs []Claim
		for i := range n {
			id := fmt.Sprintf("p%d", i)
			typ := rapid.SampledFrom([]ClaimType{ClaimFact, ClaimInference, ClaimDecision}).Draw(t, "type")
			tier := rapid.SampledFrom(allTiers).Draw(t, "tier")
			top = max(top, tier.Rank())
			u := rapid.OneOf(rapid.SampledFrom([]float64{0, 0.5, 0.5000001, 0.75}), rapid.Float64Range(0, 0.75)).Draw(t, "u")
			rec := rapid.SampledFrom([]GateRecommendation{RecommendExecute, RecommendExplain}).Draw(t, "rec")
			var evidence []EvidencePointer
			if typ != ClaimDecision {
				evidence = append(evidence, ev(rapid.OneOf(rapid.Just(0.6), rapid.Float64Range(0.6, 1)).Draw(t, "strong")))
			}
			for range rapid.IntRange(0, 2).Draw(t, "more evidence") {
				evidence = append(evidence, ev(rapid.Float64Range(0, 1).Draw(t, "confidence")))
			}
			cs = append(cs, mkClaim(id, typ, tier, u, rec, evidence...))
		}
		b := mkBundle(cs...)
		b.RequiredApprovals = requiredApprovers(b, approverPolicy())
		for _, r := range b.RequiredApprovals {
			b.AuditTrail.HumanApprovals = append(b.AuditTrail.HumanApprovals, Approval{Approver: r, Timestamp: t0, Decision: ApprovalApproved})
		}
		c := clearance(rapid.SampledFrom(allTiers[top-1:]).Draw(t, "clearance"))
		return struct {
			b ClaimBundle
			c Context
		}{b, c}
	})
}

func genContext() *rapid.Generator[Context] {
	return rapid.Custom(func(t *rapid.T) Context {
		return clearance(rapid.SampledFrom(allTiers).Draw(t, "clearance"))
	})
}

// TestAddingStrongerClaimNeverTurnsRefuseIntoPublish: a refused bundle
// stays unpublished whatever claim — the strongest possible, or any other —
// is added, wherever it is inserted.
func TestAddingStrongerClaimNeverTurnsRefuseIntoPublish(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(1, 5).Draw(t, "bundle")
		c := genContext().Draw(t, "ctx")
		ev, err := Evaluate(b, approverPolicy(), c)
		require.NoError(t, err)
		if ev.Decision != DecisionRefuse {
			t.Skip("not refused")
		}
		extra := strongClaim("strong")
		if rapid.Bool().Draw(t, "arbitrary") {
			extra = genClaim(rapid.SampledFrom([]string{"x", "c0"}).Draw(t, "id")).Draw(t, "extra")
		}
		at := rapid.IntRange(0, len(b.Claims)).Draw(t, "at")
		more := b.Clone()
		more.Claims = slices.Insert(more.Claims, at, extra)
		ev2, err := Evaluate(more, approverPolicy(), c)
		require.NoError(t, err)
		require.NotEqual(t, DecisionPublish, ev2.Decision, "was refused: %s; now: %s", ev.Reason, ev2.Reason)
		// The evaluated (refused) bundle with the claim added stays refused.
		evMore := ev.Bundle.Clone()
		evMore.Claims = slices.Insert(evMore.Claims, at, extra)
		ev3, err := Evaluate(evMore, approverPolicy(), c)
		require.NoError(t, err)
		require.Equal(t, DecisionRefuse, ev3.Decision)
	})
}

// TestDecisionIndependentOfClaimOrder: permuting the claims changes nothing
// but the order of the claims in the evaluated bundle (and, for a bundle
// the validation gate refuses, the claim indices its reason cites).
func TestDecisionIndependentOfClaimOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(1, 6).Draw(t, "bundle")
		c := genContext().Draw(t, "ctx")
		perm := rapid.Permutation(b.Claims).Draw(t, "perm")
		pb := b.Clone()
		pb.Claims = perm
		e1, err := Evaluate(b, approverPolicy(), c)
		require.NoError(t, err)
		e2, err := Evaluate(pb, approverPolicy(), c)
		require.NoError(t, err)
		require.Equal(t, e1.Decision, e2.Decision)
		require.Equal(t, e1.StoppedAt, e2.StoppedAt)
		require.Equal(t, e1.Bundle.AuditTrail, e2.Bundle.AuditTrail)
		require.Equal(t, e1.Bundle.RequiredApprovals, e2.Bundle.RequiredApprovals)
		require.Equal(t, e1.Caveats, e2.Caveats)
		require.Equal(t, e1.Flags, e2.Flags)
		require.Equal(t, e1.Pending, e2.Pending)
		if e1.StoppedAt != GateValidation {
			require.Equal(t, e1.Reason, e2.Reason)
		}
	})
}

// TestEvaluationDeterministic: the same inputs give the same evaluation,
// and the input is never modified.
func TestEvaluationDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(0, 6).Draw(t, "bundle")
		c := genContext().Draw(t, "ctx")
		before := b.Clone()
		e1, err := Evaluate(b, approverPolicy(), c)
		require.NoError(t, err)
		e2, err := Evaluate(b.Clone(), approverPolicy(), c)
		require.NoError(t, err)
		require.Equal(t, e1, e2)
		require.Equal(t, before, b)
	})
}

// TestReevaluationIsAFixedPoint: evaluating an evaluated bundle again
// gives the same bundle and decision.
func TestReevaluationIsAFixedPoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(0, 6).Draw(t, "bundle")
		c := genContext().Draw(t, "ctx")
		e1, err := Evaluate(b, approverPolicy(), c)
		require.NoError(t, err)
		e2, err := Evaluate(e1.Bundle, approverPolicy(), c)
		require.NoError(t, err)
		require.Equal(t, e1.Bundle, e2.Bundle)
		require.Equal(t, e1.Decision, e2.Decision)
		require.Equal(t, e1.Reason, e2.Reason)
		require.Equal(t, e1.StoppedAt, e2.StoppedAt)
	})
}

// TestPublishRequiresEveryGate: a published bundle has claims, is valid,
// passed every gate (user gates included), failed none, and every required
// approver approved it.
func TestPublishRequiresEveryGate(t *testing.T) {
	var runs, published int
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(0, 6).Draw(t, "bundle")
		c := genContext().Draw(t, "ctx")
		if rapid.Bool().Draw(t, "passing") {
			pc := genPassing().Draw(t, "passing bundle")
			b, c = pc.b, pc.c
		}
		p := approverPolicy()
		p.Gates = []Gate{GateFunc("user", func(ClaimBundle, Context) GateResult { return GateResult{Recommendation: RecommendExecute} })}
		ev, err := Evaluate(b, p, c)
		require.NoError(t, err)
		runs++
		if ev.Decision == DecisionPublish {
			published++
		}
		require.Equal(t, ev.Decision == DecisionEscalate, len(ev.Pending) > 0, "pending %v with %s", ev.Pending, ev.Decision)
		if ev.Decision != DecisionPublish {
			require.Len(t, ev.Bundle.AuditTrail.GatesFailed, 1)
			require.Equal(t, ev.StoppedAt, ev.Bundle.AuditTrail.GatesFailed[0])
			return
		}
		require.NotEmpty(t, ev.Bundle.Claims)
		require.NoError(t, Validate(b))
		require.NoError(t, Validate(ev.Bundle))
		require.Equal(t, []string{GateValidation, GateEvidence, GateUncertainty, GateClearance, "user", GateHumanApproval},
			ev.Bundle.AuditTrail.GatesPassed)
		require.Empty(t, ev.Bundle.AuditTrail.GatesFailed)
		for _, r := range ev.Bundle.RequiredApprovals {
			require.True(t, slices.ContainsFunc(ev.Bundle.AuditTrail.HumanApprovals, func(a Approval) bool {
				return a.Approver == r && a.Decision == ApprovalApproved
			}), "approver %s", r)
		}
		for _, cl := range ev.Bundle.Claims {
			require.True(t, c.Clearance.AtLeast(cl.RiskTier))
			require.LessOrEqual(t, cl.Uncertainty.Value, p.ExplainMax)
			require.NotContains(t, []GateRecommendation{RecommendDefer, RecommendRefuse}, cl.Uncertainty.GateRecommendation)
		}
	})
	// The property says something only if the generator reaches PUBLISH.
	require.GreaterOrEqual(t, published*10, runs, "only %d of %d bundles published", published, runs)
	t.Logf("%d of %d published", published, runs)
}

// TestEmptyBundleNeverPublished, as a property over audit trails, required
// approvals, policies and contexts.
func TestEmptyBundleNeverPublishedProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(0, 0).Draw(t, "bundle")
		if rapid.Bool().Draw(t, "nil") {
			b.Claims = nil
		}
		ev, err := Evaluate(b, approverPolicy(), genContext().Draw(t, "ctx"))
		require.NoError(t, err)
		require.NotEqual(t, DecisionPublish, ev.Decision)
	})
}

// TestEvaluatedBundleStaysValid: evaluating a valid bundle yields a valid
// bundle (the chain's outputs never break a rule).
func TestEvaluatedBundleStaysValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(1, 6).Draw(t, "bundle")
		if Validate(b) != nil {
			t.Skip("invalid input")
		}
		ev, err := Evaluate(b, approverPolicy(), genContext().Draw(t, "ctx"))
		require.NoError(t, err)
		require.NoError(t, Validate(ev.Bundle))
	})
}

// TestJSONRoundTripLossless: an evaluated bundle survives Marshal and
// DecodeBundle exactly, and marshals to the same bytes again.
func TestJSONRoundTripLossless(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := genBundle(0, 6).Draw(t, "bundle")
		b.Reason = rapid.String().Draw(t, "reason")
		b.OriginAgent = rapid.String().Draw(t, "origin")
		b.Timestamp = time.Unix(0, rapid.Int64Range(0, 1<<62).Draw(t, "ts")).UTC()
		ev, err := Evaluate(b, approverPolicy(), genContext().Draw(t, "ctx"))
		require.NoError(t, err)
		for _, v := range []ClaimBundle{b.Complete(func() string { return "x" }, t0), ev.Bundle} {
			data, err := json.Marshal(v)
			require.NoError(t, err)
			back, err := DecodeBundle(data)
			require.NoError(t, err, "%s", data)
			require.Equal(t, v, back)
			again, err := json.Marshal(back)
			require.NoError(t, err)
			require.Equal(t, string(data), string(again))
		}
	})
}
