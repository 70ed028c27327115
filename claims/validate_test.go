// Every violation, with its path: the guarantees of Validate,
// ValidateClaim and ValidateUncertainty, and the tests that check them.
//
//   - Each rule of the specification (and of Verity's choices: the 64-digit
//     evidence_hash, times within the years 0000-9999, valid UTF-8) is
//     reported at its JSON Pointer with its rule name, the 0.60 evidence
//     boundary included: TestValidateRules, TestValidateAcceptsValidBundle,
//     TestValidateClaimAndUncertainty, TestIsSHA256Hex.
//   - Every violation is reported, sorted (array indices numerically):
//     TestValidateReportsEveryViolationSorted.

package claims

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func violationsOf(t *testing.T, err error) []Violation {
	t.Helper()
	if err == nil {
		return nil
	}
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.ErrorIs(t, err, ErrInvalid)
	return ve.Violations
}

func pathsRules(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Path+" "+v.Rule)
	}
	return out
}

func TestValidateAcceptsValidBundle(t *testing.T) {
	b := mkBundle(fact("f"), mkClaim("i", ClaimInference, TierModify, 0.3, RecommendExplain), mkClaim("d", ClaimDecision, TierPrivilege, 0.2, RecommendExecute))
	assert.NoError(t, Validate(b))
}

func TestValidateRules(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(b *ClaimBundle)
		want   []string // "path rule", sorted
	}{
		{"bundle needs an id", func(b *ClaimBundle) { b.ID = "" }, []string{"/id required"}},
		{"bundle needs a timestamp", func(b *ClaimBundle) { b.Timestamp = zeroTime }, []string{"/timestamp required"}},
		{"bundle needs an origin agent", func(b *ClaimBundle) { b.OriginAgent = "" }, []string{"/origin_agent required"}},
		{"bundle needs a claim", func(b *ClaimBundle) { b.Claims = nil }, []string{"/claims no_claims"}},
		{"decision in enum", func(b *ClaimBundle) { b.Decision = "publish" }, []string{"/decision enum"}},
		{"claim ids unique", func(b *ClaimBundle) { b.Claims = append(b.Claims, fact("f")) }, []string{"/claims/1/id duplicate_id"}},
		{"claim needs id and statement", func(b *ClaimBundle) { b.Claims[0].ID = ""; b.Claims[0].Statement = "" },
			[]string{"/claims/0/id required", "/claims/0/statement required"}},
		{"claim type case-sensitive", func(b *ClaimBundle) { b.Claims[0].ClaimType = "Fact" }, []string{"/claims/0/claim_type enum"}},
		{"risk tier in enum", func(b *ClaimBundle) { b.Claims[0].RiskTier = "ROOT" }, []string{"/claims/0/risk_tier enum"}},
		{"risk tier required", func(b *ClaimBundle) { b.Claims[0].RiskTier = "" }, []string{"/claims/0/risk_tier required"}},
		{"method in enum", func(b *ClaimBundle) { b.Claims[0].Uncertainty.Method = "entropy" }, []string{"/claims/0/uncertainty/method enum"}},
		{"recommendation in enum", func(b *ClaimBundle) { b.Claims[0].Uncertainty.GateRecommendation = "execute" },
			[]string{"/claims/0/uncertainty/gate_recommendation enum"}},
		{"uncertainty above 1", func(b *ClaimBundle) { b.Claims[0].Uncertainty.Value = 1.0000001 }, []string{"/claims/0/uncertainty/value range"}},
		{"uncertainty below 0", func(b *ClaimBundle) { b.Claims[0].Uncertainty.Value = -0.1 }, []string{"/claims/0/uncertainty/value range"}},
		{"uncertainty NaN", func(b *ClaimBundle) { b.Claims[0].Uncertainty.Value = math.NaN() }, []string{"/claims/0/uncertainty/value range"}},
		{"uncertainty +Inf", func(b *ClaimBundle) { b.Claims[0].Uncertainty.Value = math.Inf(1) }, []string{"/claims/0/uncertainty/value range"}},
		{"FACT without evidence", func(b *ClaimBundle) { b.Claims[0].EvidencePointers = nil },
			[]string{"/claims/0/evidence_pointers evidence_missing"}},
		{"FACT with weak evidence", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].SourceConfidence = 0.59 },
			[]string{"/claims/0/evidence_pointers evidence_weak"}},
		{"source_confidence 0.60 passes", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].SourceConfidence = 0.60 }, nil},
		{"source_confidence NaN", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].SourceConfidence = math.NaN() },
			[]string{"/claims/0/evidence_pointers evidence_weak", "/claims/0/evidence_pointers/0/source_confidence range"}},
		{"source_confidence above 1 is not strong", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].SourceConfidence = 1.5 },
			[]string{"/claims/0/evidence_pointers evidence_weak", "/claims/0/evidence_pointers/0/source_confidence range"}},
		{"spec example's 32-hex hash is invalid", func(b *ClaimBundle) {
			b.Claims[0].EvidencePointers[0].EvidenceHash = "bd24c2aaef2ef37ae95f0f9e5f7d9e7c"
		}, []string{"/claims/0/evidence_pointers/0/evidence_hash evidence_hash"}},
		{"upper-case hash is invalid", func(b *ClaimBundle) {
			b.Claims[0].EvidencePointers[0].EvidenceHash = strings.ToUpper(hashOf)
		}, []string{"/claims/0/evidence_pointers/0/evidence_hash evidence_hash"}},
		{"65-digit hash is invalid", func(b *ClaimBundle) {
			b.Claims[0].EvidencePointers[0].EvidenceHash = hashOf + "0"
		}, []string{"/claims/0/evidence_pointers/0/evidence_hash evidence_hash"}},
		{"/hash required", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].EvidenceHash = "" },
			[]string{"/claims/0/evidence_pointers/0/evidence_hash required"}},
		{"/retrieved_at required", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].RetrievedAt = zeroTime },
			[]string{"/claims/0/evidence_pointers/0/retrieved_at required"}},
		{"retrieved_at beyond year 9999", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].RetrievedAt = t0.AddDate(8000, 0, 0) },
			[]string{"/claims/0/evidence_pointers/0/retrieved_at time"}},
		{"/source required", func(b *ClaimBundle) { b.Claims[0].EvidencePointers[0].Source = "" },
			[]string{"/claims/0/evidence_pointers/0/source required"}},
		{"INFERENCE without evidence is fine", func(b *ClaimBundle) {
			b.Claims[0].ClaimType = ClaimInference
			b.Claims[0].EvidencePointers = nil
		}, nil},
		{"INFERENCE evidence meets the FACT standard", func(b *ClaimBundle) {
			b.Claims[0].ClaimType = ClaimInference
			b.Claims[0].EvidencePointers[0].SourceConfidence = 0.2
			b.Claims[0].EvidencePointers[0].EvidenceHash = "abc"
		}, []string{"/claims/0/evidence_pointers evidence_weak", "/claims/0/evidence_pointers/0/evidence_hash evidence_hash"}},
		{"DECISION evidence is format-checked but not strength-checked", func(b *ClaimBundle) {
			b.Claims[0].ClaimType = ClaimDecision
			b.Claims[0].EvidencePointers[0].SourceConfidence = 0.2
			b.Claims[0].EvidencePointers[0].EvidenceHash = "abc"
		}, []string{"/claims/0/evidence_pointers/0/evidence_hash evidence_hash"}},
		{"invalid UTF-8", func(b *ClaimBundle) { b.Claims[0].Statement = "a\xffb" }, []string{"/claims/0/statement utf8"}},
		{"required approvers non-empty and distinct", func(b *ClaimBundle) { b.RequiredApprovals = []string{"a", "", "a"} },
			[]string{"/required_approvals/1 required", "/required_approvals/2 duplicate"}},
		{"approval must be required", func(b *ClaimBundle) {
			b.AuditTrail.HumanApprovals = []Approval{{Approver: "x", Timestamp: t0, Decision: ApprovalApproved}}
		}, []string{"/audit_trail/human_approvals/0/approver not_required"}},
		{"approval once per approver", func(b *ClaimBundle) {
			b.RequiredApprovals = []string{"x"}
			b.AuditTrail.HumanApprovals = []Approval{{Approver: "x", Timestamp: t0, Decision: ApprovalApproved}, {Approver: "x", Timestamp: t0, Decision: ApprovalRejected}}
		}, []string{"/audit_trail/human_approvals/1/approver duplicate"}},
		{"approval fields", func(b *ClaimBundle) {
			b.AuditTrail.HumanApprovals = []Approval{{Decision: "approved"}}
		}, []string{"/audit_trail/human_approvals/0/approver required", "/audit_trail/human_approvals/0/decision enum",
			"/audit_trail/human_approvals/0/timestamp required"}},
		{"notes need gate and text", func(b *ClaimBundle) { b.AuditTrail.Flags = []Note{{ClaimID: "f"}} },
			[]string{"/audit_trail/flags/0/gate required", "/audit_trail/flags/0/text required"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := mkBundle(fact("f"))
			tc.mutate(&b)
			assert.Equal(t, tc.want, pathsRules(violationsOf(t, Validate(b))))
		})
	}
}

var zeroTime time.Time

func TestValidateReportsEveryViolationSorted(t *testing.T) {
	c := fact("x")
	c.EvidencePointers = append(c.EvidencePointers, ev(0.1))
	c.EvidencePointers[1].EvidenceHash = "BAD"
	claims := []Claim{fact("a")}
	for i := 0; i < 11; i++ {
		claims = append(claims, c)
	}
	b := mkBundle(claims...)
	b.OriginAgent = ""
	vs := violationsOf(t, Validate(b))
	// 10 duplicate ids, 11 bad hashes, 1 origin agent.
	require.Len(t, vs, 22)
	assert.Equal(t, "/claims/1/evidence_pointers/1/evidence_hash", vs[0].Path)
	assert.Equal(t, "/claims/2/evidence_pointers/1/evidence_hash", vs[1].Path)
	assert.Equal(t, "/claims/2/id", vs[2].Path)
	assert.Equal(t, "/claims/10/evidence_pointers/1/evidence_hash", vs[17].Path, "indices sort numerically")
	assert.Equal(t, "/origin_agent", vs[21].Path)
	err := Validate(b)
	assert.Contains(t, err.Error(), "22 violations")
	assert.True(t, err.(*ValidationError).Has(RuleDuplicateID))
	assert.False(t, err.(*ValidationError).Has(RuleEvidenceMissing))
}

func TestValidateClaimAndUncertainty(t *testing.T) {
	assert.NoError(t, ValidateClaim(fact("a")))
	c := fact("a")
	c.EvidencePointers = nil
	assert.Equal(t, []string{"/evidence_pointers evidence_missing"}, pathsRules(violationsOf(t, ValidateClaim(c))))
	assert.NoError(t, ValidateUncertainty(Uncertainty{Method: MethodConformalSet, Value: 1, GateRecommendation: RecommendDefer}))
	assert.Equal(t, []string{"/gate_recommendation required", "/method enum", "/value range"},
		pathsRules(violationsOf(t, ValidateUncertainty(Uncertainty{Method: "x", Value: 2}))))
}

func TestIsSHA256Hex(t *testing.T) {
	assert.True(t, isSHA256Hex(hashOf))
	assert.True(t, isSHA256Hex(strings.Repeat("0", 64)))
	for _, s := range []string{"", "bd24c2aaef2ef37ae95f0f9e5f7d9e7c", strings.Repeat("g", 64), strings.Repeat("A", 64), hashOf[:63], hashOf + "a", " " + hashOf[1:]} {
		assert.False(t, isSHA256Hex(s), s)
	}
}
