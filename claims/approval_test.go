// Approvals: the guarantees of RecordApproval and of re-evaluating an
// approved bundle, and the tests that check them.
//
//   - Approvals publish when every required approver approves and refuse on
//     any rejection, against a naive model: TestApprovalStateMachine (rapid),
//     TestApprovalFlowPublishes, TestApprovalRejectionRefuses.
//   - Only a required approver who has not decided may approve, with a
//     time and a decision; an approval counts only if it was asked for
//     before it was given: TestRecordApprovalRejectsBadApprovals,
//     TestApprovalsMustBeAskedFor, TestBundleRequiredApprovalsAreKept.
//   - Complete fills the specification's defaults and nothing else:
//     TestComplete.

package claims

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func escalated(t *testing.T) ClaimBundle {
	t.Helper()
	in := mkBundle(fact("f"), mkClaim("p", ClaimDecision, TierPrivilege, 0.1, RecommendExecute))
	ev, err := Evaluate(in, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	require.Equal(t, DecisionEscalate, ev.Decision)
	require.Equal(t, []string{"security", "cto"}, ev.Bundle.RequiredApprovals)
	require.Equal(t, []string{"security", "cto"}, ev.Pending)
	return ev.Bundle
}

func approval(who string, d ApprovalDecision) Approval {
	return Approval{Approver: who, Timestamp: t0.Add(time.Hour), Decision: d, Reason: "reason of " + who}
}

func TestApprovalFlowPublishes(t *testing.T) {
	b := escalated(t)
	before := b.Clone()
	b1, err := RecordApproval(b, approval("security", ApprovalApproved))
	require.NoError(t, err)
	assert.Equal(t, before, b, "recording returns a new bundle")
	assert.Equal(t, []Approval{approval("security", ApprovalApproved)}, b1.AuditTrail.HumanApprovals)
	assert.Equal(t, DecisionEscalate, b1.Decision, "the decision changes only on re-evaluation")

	ev, err := Evaluate(b1, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionEscalate, ev.Decision)
	assert.Equal(t, []string{"cto"}, ev.Pending)
	assert.Contains(t, ev.Reason, `awaiting approval from "cto"`)

	b2, err := RecordApproval(ev.Bundle, approval("cto", ApprovalApproved))
	require.NoError(t, err)
	ev, err = Evaluate(b2, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)
	assert.Empty(t, ev.Pending)
	assert.Equal(t, allGates, ev.Bundle.AuditTrail.GatesPassed)
	assert.Len(t, ev.Bundle.AuditTrail.HumanApprovals, 2)
	assert.NoError(t, Validate(ev.Bundle))
}

func TestApprovalRejectionRefuses(t *testing.T) {
	b, err := RecordApproval(escalated(t), approval("cto", ApprovalRejected))
	require.NoError(t, err)
	ev, err := Evaluate(b, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionRefuse, ev.Decision)
	assert.Equal(t, GateHumanApproval, ev.StoppedAt)
	assert.Contains(t, ev.Reason, `rejected by "cto"`)
	assert.Empty(t, ev.Pending)
	// A later approval by the other approver cannot undo the rejection.
	b, err = RecordApproval(ev.Bundle, approval("security", ApprovalApproved))
	require.NoError(t, err)
	ev, err = Evaluate(b, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionRefuse, ev.Decision)
}

func TestRecordApprovalRejectsBadApprovals(t *testing.T) {
	b := escalated(t)
	before := b.Clone()
	_, err := RecordApproval(b, approval("mallory", ApprovalApproved))
	assert.ErrorIs(t, err, ErrNotRequired)
	_, err = RecordApproval(b, Approval{Approver: "cto", Decision: ApprovalApproved})
	assert.ErrorIs(t, err, ErrInvalid, "missing time")
	_, err = RecordApproval(b, Approval{Approver: "cto", Timestamp: t0, Decision: "approved"})
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = RecordApproval(b, Approval{Timestamp: t0, Decision: ApprovalApproved})
	assert.ErrorIs(t, err, ErrInvalid)
	b1, err := RecordApproval(b, approval("cto", ApprovalApproved))
	require.NoError(t, err)
	again, err := RecordApproval(b1, approval("cto", ApprovalRejected))
	assert.ErrorIs(t, err, ErrAlreadyDecided)
	assert.Equal(t, b1, again, "rejection returns the old value")
	assert.Equal(t, before, b)
	// A bundle that needs no approval accepts none.
	ev, err := Evaluate(mkBundle(fact("a")), approverPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	_, err = RecordApproval(ev.Bundle, approval("cto", ApprovalApproved))
	assert.ErrorIs(t, err, ErrNotRequired)
}

func TestApprovalsMustBeAskedFor(t *testing.T) {
	// An approval that sits in a bundle before the approver was required
	// does not count: it is a violation, and the bundle is refused.
	in := mkBundle(mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute))
	in.AuditTrail.HumanApprovals = []Approval{approval("dba", ApprovalApproved)}
	ev, err := Evaluate(in, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionRefuse, ev.Decision)
	assert.Equal(t, GateValidation, ev.StoppedAt)
	assert.Contains(t, ev.Reason, RuleNotRequired)
}

func TestBundleRequiredApprovalsAreKept(t *testing.T) {
	// Approvers the bundle already requires are kept, after the policy's.
	in := mkBundle(mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute))
	in.RequiredApprovals = []string{"owner", "dba"}
	ev, err := Evaluate(in, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, []string{"dba", "owner"}, ev.Bundle.RequiredApprovals)
	// Even without DELETE or PRIVILEGE, a bundle that asks for approval is
	// escalated.
	in = mkBundle(fact("a"))
	in.RequiredApprovals = []string{"owner"}
	ev, err = Evaluate(in, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionEscalate, ev.Decision)
}

func TestComplete(t *testing.T) {
	n := 0
	ids := func() string { n++; return "id-" + string(rune('0'+n)) }
	in := ClaimBundle{OriginAgent: "a", Claims: []Claim{{Statement: "s"}, {ID: "keep"}}}
	out := in.Complete(ids, t0.In(time.FixedZone("x", 3600)))
	assert.Equal(t, "id-1", out.ID)
	assert.Equal(t, "id-2", out.Claims[0].ID)
	assert.Equal(t, "keep", out.Claims[1].ID)
	assert.Equal(t, t0, out.Timestamp)
	assert.Equal(t, DecisionDefer, out.Decision)
	assert.NotNil(t, out.Claims[0].EvidencePointers)
	assert.NotNil(t, out.RequiredApprovals)
	// The reference's Uncertainty defaults gate_recommendation to EXECUTE,
	// as DecodeUncertainty does; a recommendation that is set is kept.
	assert.Equal(t, RecommendExecute, out.Claims[0].Uncertainty.GateRecommendation)
	in.Claims[1].Uncertainty.GateRecommendation = RecommendRefuse
	assert.Equal(t, RecommendRefuse, in.Complete(ids, t0).Claims[1].Uncertainty.GateRecommendation)
	in.Claims[1].Uncertainty.GateRecommendation = ""
	assert.Empty(t, in.ID, "input untouched")
	assert.Empty(t, in.Claims[0].ID)
	// Nothing to fill: nothing changes (bar nil lists).
	full := mkBundle(fact("x"))
	assert.Equal(t, full, full.Complete(func() string { t.Fatal("no id needed"); return "" }, t0.Add(time.Hour)))
}

// TestApprovalStateMachine drives approvals, rejections and re-evaluations
// in random order against a naive model: a map of decisions.
func TestApprovalStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := DefaultPolicy()
		approvers := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c", "d"}), 1, 4, rapid.ID).Draw(t, "approvers")
		tier := rapid.SampledFrom([]RiskTier{TierDelete, TierPrivilege}).Draw(t, "tier")
		p.Approvers = map[RiskTier][]string{tier: approvers}
		ev, err := Evaluate(mkBundle(fact("f"), mkClaim("x", ClaimDecision, tier, 0.1, RecommendExecute)), p, clearance(TierPrivilege))
		require.NoError(t, err)
		b := ev.Bundle
		model := map[string]ApprovalDecision{}
		expect := func() Decision {
			pending := false
			for _, a := range approvers {
				switch model[a] {
				case ApprovalRejected:
					return DecisionRefuse
				case "":
					pending = true
				}
			}
			if pending {
				return DecisionEscalate
			}
			return DecisionPublish
		}
		refusedAt := Decision("")
		t.Repeat(map[string]func(*rapid.T){
			"decide": func(t *rapid.T) {
				who := rapid.SampledFrom([]string{"a", "b", "c", "d", "e"}).Draw(t, "who")
				d := rapid.SampledFrom([]ApprovalDecision{ApprovalApproved, ApprovalRejected}).Draw(t, "decision")
				nb, err := RecordApproval(b, Approval{Approver: who, Timestamp: t0, Decision: d})
				switch {
				case !slices.Contains(approvers, who):
					require.ErrorIs(t, err, ErrNotRequired)
					require.Equal(t, b, nb)
				case model[who] != "":
					require.ErrorIs(t, err, ErrAlreadyDecided)
					require.Equal(t, b, nb)
				default:
					require.NoError(t, err)
					model[who] = d
					b = nb
				}
			},
			"evaluate": func(t *rapid.T) {
				ev, err := Evaluate(b, p, clearance(TierPrivilege))
				require.NoError(t, err)
				want := expect()
				if refusedAt != "" {
					want = DecisionRefuse // REFUSE is final
				}
				require.Equal(t, want, ev.Decision, ev.Reason)
				if ev.Decision == DecisionRefuse {
					refusedAt = DecisionRefuse
				}
				b = ev.Bundle
			},
			"": func(t *rapid.T) {
				require.NoError(t, Validate(b))
			},
		})
	})
}
