package claims_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/trace"
)

var when = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func exampleFact(id string, uncertainty float64) claims.Claim {
	return claims.Claim{
		ID:        id,
		Statement: "the service answers in under 200 ms",
		ClaimType: claims.ClaimFact,
		EvidencePointers: []claims.EvidencePointer{{
			Source: "https://metrics.example/p99", SourceConfidence: 0.9, EvidenceHash: sha, RetrievedAt: when,
		}},
		Uncertainty: claims.Uncertainty{Method: claims.MethodSemanticEntropy, Value: uncertainty,
			Interpretation: "answers mostly agree", GateRecommendation: claims.RecommendExecute},
		RiskTier: claims.TierReadOnly,
	}
}

// Example is the flow of the package documentation: the agent's JSON is
// decoded strictly, evaluated and recorded by a Session; a DELETE claim
// waits for its approver, and the approval publishes it.
func Example() {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	policy := claims.DefaultPolicy()
	policy.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"dba"}}
	s, err := claims.NewSession(ctx, log, policy, claims.WithClock(func() time.Time { return when }))
	if err != nil {
		panic(err)
	}

	agentOutput := []byte(`{"origin_agent":"db-agent","claims":[{"id":"drop-table",
		"statement":"drop the unused audit_old table","claim_type":"DECISION",
		"uncertainty":{"method":"model_disagreement","value":0.1},"risk_tier":"DELETE"}]}`)
	b, err := claims.DecodeBundle(agentOutput)
	if err != nil {
		panic(err)
	}
	actor := claims.Context{Actor: "db-agent", Clearance: claims.TierDelete}
	ev, err := s.Evaluate(ctx, b, actor)
	if err != nil {
		panic(err)
	}
	fmt.Println(ev.Decision, ev.Pending)
	if ev.Decision == claims.DecisionEscalate {
		ev, err = s.Approve(ctx, ev.Bundle, actor, "dba", claims.ApprovalApproved, "backup verified")
		if err != nil {
			panic(err)
		}
	}
	fmt.Println(ev.Decision, "-", ev.Reason)
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			panic(err)
		}
		fmt.Println(e.Seq, e.Kind, e.Time.Format(time.RFC3339))
	}
	// Output:
	// ESCALATE [dba]
	// PUBLISH - all gates passed
	// 0 claims.evaluate 2026-01-02T03:04:05Z
	// 1 claims.approve 2026-01-02T03:04:05Z
}

func ExampleEvaluate() {
	b := claims.NewBundle("bundle-1", when, "monitor", exampleFact("latency", 0.62))
	ev, err := claims.Evaluate(b, claims.DefaultPolicy(), claims.Context{Actor: "reporter", Clearance: claims.TierReadOnly})
	if err != nil {
		panic(err)
	}
	fmt.Println(ev.Decision, "-", ev.Reason)
	fmt.Println("passed:", ev.Bundle.AuditTrail.GatesPassed)
	for _, c := range ev.Caveats {
		fmt.Printf("caveat on %s: %s\n", c.ClaimID, c.Text)
	}
	// Output:
	// PUBLISH - all gates passed with 1 caveat
	// passed: [validation evidence uncertainty clearance human_approval]
	// caveat on latency: uncertainty 0.62 (semantic_entropy) exceeds 0.5: answers mostly agree
}

func ExampleRecordApproval() {
	drop := claims.Claim{
		ID: "drop-table", Statement: "drop the unused audit_old table", ClaimType: claims.ClaimDecision,
		Uncertainty: claims.Uncertainty{Method: claims.MethodModelDisagreement, Value: 0.1, GateRecommendation: claims.RecommendExecute},
		RiskTier:    claims.TierDelete,
	}
	policy := claims.DefaultPolicy()
	policy.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"dba"}}
	ctx := claims.Context{Actor: "db-agent", Clearance: claims.TierDelete}

	ev, _ := claims.Evaluate(claims.NewBundle("b-7", when, "planner", drop), policy, ctx)
	fmt.Println(ev.Decision, ev.Bundle.RequiredApprovals)

	approved, err := claims.RecordApproval(ev.Bundle, claims.Approval{
		Approver: "dba", Timestamp: when.Add(time.Hour), Decision: claims.ApprovalApproved, Reason: "backup verified",
	})
	if err != nil {
		panic(err)
	}
	ev, _ = claims.Evaluate(approved, policy, ctx)
	fmt.Println(ev.Decision)
	// Output:
	// ESCALATE [dba]
	// PUBLISH
}

func ExampleDecodeBundle() {
	_, err := claims.DecodeBundle([]byte(`{"origin_agent":"a","claims":[{"statement":"s","claim_type":"fact",
		"uncertainty":{"method":"semantic_entropy","value":1.2},"risk_tier":"READ_ONLY","color":"red"}]}`))
	var ve *claims.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Println(v)
		}
	}
	fmt.Println(errors.Is(err, claims.ErrUnknownValue))
	// Output:
	// /claims/0/claim_type: enum: unknown value "fact"
	// /claims/0/color: unknown_field: unknown member
	// /claims/0/uncertainty/value: range: 1.2 is outside [0,1]
	// true
}

func ExampleValidate() {
	c := exampleFact("paper", 0.15)
	c.EvidencePointers[0].EvidenceHash = "bd24c2aaef2ef37ae95f0f9e5f7d9e7c" // 32 hex digits: not a SHA-256
	c.EvidencePointers[0].SourceConfidence = 0.59
	err := claims.Validate(claims.NewBundle("b", when, "", c))
	var ve *claims.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Println(v.Path, v.Rule)
		}
	}
	// Output:
	// /claims/0/evidence_pointers evidence_weak
	// /claims/0/evidence_pointers/0/evidence_hash evidence_hash
	// /origin_agent required
}

func ExampleGateFunc() {
	maxClaims := claims.GateFunc("size", func(b claims.ClaimBundle, _ claims.Context) claims.GateResult {
		if len(b.Claims) > 1 {
			return claims.GateResult{Recommendation: claims.RecommendDefer, Reason: "split the bundle"}
		}
		return claims.GateResult{Recommendation: claims.RecommendExecute}
	})
	policy := claims.DefaultPolicy()
	policy.Gates = []claims.Gate{maxClaims}
	b := claims.NewBundle("b", when, "agent", exampleFact("a", 0.1), exampleFact("b", 0.1))
	ev, _ := claims.Evaluate(b, policy, claims.Context{Clearance: claims.TierReadOnly})
	fmt.Println(ev.Decision, "-", ev.Reason)
	// Output:
	// DEFER - size: split the bundle
}

func ExampleSession() {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	s, err := claims.NewSession(ctx, log, claims.DefaultPolicy(),
		claims.WithClock(func() time.Time { return when }),
		claims.WithIDs(func() string { return "generated-id" }))
	if err != nil {
		panic(err)
	}
	// No id or timestamp: the session fills them in.
	b := claims.ClaimBundle{OriginAgent: "monitor", Claims: []claims.Claim{exampleFact("latency", 0.2)}}
	ev, err := s.Evaluate(ctx, b, claims.Context{Actor: "reporter", Clearance: claims.TierReadOnly})
	if err != nil {
		panic(err)
	}
	fmt.Println(ev.Bundle.ID, ev.Decision)
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			panic(err)
		}
		rec, _ := claims.DecodeRecord(e.Payload)
		fmt.Println(e.Seq, e.Kind, rec.Actor, rec.Bundle.Decision)
	}
	// Output:
	// generated-id PUBLISH
	// 0 claims.evaluate reporter PUBLISH
}

func ExampleClaimBundle_MarshalJSON() {
	out, _ := json.Marshal(claims.NewBundle("b-1", when, "agent"))
	fmt.Println(string(out))
	// Output:
	// {"id":"b-1","timestamp":"2026-01-02T03:04:05Z","origin_agent":"agent","claims":[],"decision":"DEFER","reason":"","required_approvals":[],"audit_trail":{"gates_passed":[],"gates_failed":[],"human_approvals":[]}}
}

func ExampleRiskTier_Rank() {
	// Tiers compare by rank: "MODIFY" > "DELETE" as strings, but not as tiers.
	fmt.Println(claims.TierModify.AtLeast(claims.TierDelete), claims.TierDelete.AtLeast(claims.TierModify))
	// Output:
	// false true
}
