// Errors are prefixed once: every error the package returns starts with
// "claims: " and says it once: TestErrorsArePrefixedOnce.

package claims

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/trace"
)

// prefix matches the package prefix, not a path ending in the member
// "claims" ("/claims: unknown_field: …").
var prefix = regexp.MustCompile(`(^|[^/\w])claims: `)

// TestErrorsArePrefixedOnce walks the package's error paths: decoders,
// validators, policy and context checks, approvals, the Session and the
// enum encoders.
func TestErrorsArePrefixedOnce(t *testing.T) {
	ctx := context.Background()
	var errs []error
	collect := func(_ any, err error) { errs = append(errs, err) }

	for _, in := range []string{``, `{`, `{"a":1,"a":2}`, "{\"\xff\":1}", `[]`, `{}`, `{"value":1e400}`,
		`{"origin_agent":"a","claims":[{"claim_type":"fact","uncertainty":{"value":2,"method":"x"},"risk_tier":"x"}, 5]}`} {
		collect(DecodeBundle([]byte(in)))
		collect(DecodeClaim([]byte(in)))
		collect(DecodeEvidencePointer([]byte(in)))
		collect(DecodeUncertainty([]byte(in)))
		collect(DecodeApproval([]byte(in)))
		collect(DecodeRecord([]byte(in)))
	}
	bad := mkBundle(mkClaim("", "fact", "", 2, ""))
	errs = append(errs, Validate(bad), ValidateClaim(bad.Claims[0]), ValidateUncertainty(bad.Claims[0].Uncertainty),
		Policy{ExecuteMax: 1, ExplainMax: 0, Approvers: map[RiskTier][]string{TierModify: {""}}}.Validate())
	collect(Evaluate(mkBundle(fact("a")), Policy{ExecuteMax: 2}, clearance(TierReadOnly)))
	collect(Evaluate(mkBundle(fact("a")), DefaultPolicy(), clearance("root")))

	pending, err := Evaluate(mkBundle(mkClaim("d", ClaimDecision, TierDelete, 0, RecommendExecute)), approverPolicy(), clearance(TierDelete))
	require.NoError(t, err)
	collect(RecordApproval(pending.Bundle, Approval{}))
	collect(RecordApproval(pending.Bundle, Approval{Approver: "mallory", Timestamp: t0, Decision: ApprovalApproved}))
	approved, err := RecordApproval(pending.Bundle, Approval{Approver: "dba", Timestamp: t0, Decision: ApprovalApproved})
	require.NoError(t, err)
	collect(RecordApproval(approved, Approval{Approver: "dba", Timestamp: t0, Decision: ApprovalRejected}))

	collect(NewSession(ctx, nil, DefaultPolicy()))
	collect(NewSession(ctx, trace.NewMemoryLog(), Policy{ExplainMax: 2}))
	failing, err := trace.NewLog(failingStore{trace.NewMemory()})
	require.NoError(t, err)
	for _, clock := range []func() time.Time{time.Now, func() time.Time { return time.Time{} }} {
		s, err := NewSession(ctx, failing, approverPolicy(), WithClock(clock))
		require.NoError(t, err)
		collect(s.Evaluate(ctx, mkBundle(fact("a")), clearance(TierReadOnly)))
		collect(s.Evaluate(ctx, mkBundle(fact("a")), clearance("")))
		collect(s.Approve(ctx, pending.Bundle, clearance(TierDelete), "dba", ApprovalApproved, ""))
		collect(s.Approve(ctx, pending.Bundle, clearance(TierDelete), "dba", "", ""))
	}
	for _, m := range []interface{ MarshalText() ([]byte, error) }{ClaimType(""), UncertaintyMethod("x"),
		GateRecommendation("x"), RiskTier("x"), Decision("x"), ApprovalDecision("x")} {
		collect(m.MarshalText())
	}

	require.Len(t, errs, 8*6+4+2+3+2+2*4+6)
	for i, err := range errs {
		require.Error(t, err, "%d", i)
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, "claims: "), "%d: %s", i, msg)
		assert.Len(t, prefix.FindAllString(msg, -1), 1, "%d: %s", i, msg)
	}
}
