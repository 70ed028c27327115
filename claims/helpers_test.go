package claims

import (
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// hashOf is a valid SHA-256 hex string (the hash of the empty string).
const hashOf = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

func ev(conf float64) EvidencePointer {
	return EvidencePointer{Source: "https://example.org/doc", SourceConfidence: conf, EvidenceHash: hashOf, RetrievedAt: t0}
}

func mkClaim(id string, typ ClaimType, tier RiskTier, u float64, rec GateRecommendation, evidence ...EvidencePointer) Claim {
	return Claim{
		ID:               id,
		Statement:        "statement " + id,
		ClaimType:        typ,
		EvidencePointers: append([]EvidencePointer{}, evidence...),
		Uncertainty:      Uncertainty{Method: MethodSemanticEntropy, Value: u, Interpretation: "interp " + id, GateRecommendation: rec},
		RiskTier:         tier,
		IfWrongCost:      "cost " + id,
	}
}

// fact is a well-supported, low-uncertainty READ_ONLY fact.
func fact(id string) Claim {
	return mkClaim(id, ClaimFact, TierReadOnly, 0.1, RecommendExecute, ev(0.9))
}

func mkBundle(cs ...Claim) ClaimBundle { return NewBundle("bundle-1", t0, "agent-1", cs...) }

func clearance(t RiskTier) Context { return Context{Actor: "executor", Clearance: t} }

func approverPolicy() Policy {
	p := DefaultPolicy()
	p.Approvers = map[RiskTier][]string{TierDelete: {"dba"}, TierPrivilege: {"security", "cto"}}
	return p
}
