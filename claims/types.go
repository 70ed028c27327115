package claims

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Callers branch on them with errors.Is; a
// *ValidationError wraps ErrMalformed (from a decoder) or ErrInvalid (from
// a validator).
var (
	// ErrUnknownValue reports a string outside one of the closed enums
	// (claim type, method, recommendation, risk tier, decision, approval
	// decision). Enums are case-sensitive: "fact" is not "FACT".
	ErrUnknownValue = errors.New("claims: unknown enum value")
	// ErrMalformed reports JSON that does not have the shape of the
	// specification: syntax errors, unknown fields, wrong types, missing
	// required fields, numbers outside [0,1], timestamps that are not RFC 3339.
	ErrMalformed = errors.New("claims: malformed JSON")
	// ErrInvalid reports a value that breaks a rule of the specification
	// (see Validate).
	ErrInvalid = errors.New("claims: invalid value")
)

// ClaimType is the closed set of claim kinds.
type ClaimType string

// The claim types of the specification.
const (
	ClaimFact      ClaimType = "FACT"      // needs evidence with source_confidence ≥ 0.60
	ClaimInference ClaimType = "INFERENCE" // evidence optional; if present, same standard as FACT
	ClaimDecision  ClaimType = "DECISION"  // no evidence; its gate recommendation drives approval
)

// UncertaintyMethod is the closed set of uncertainty estimators.
type UncertaintyMethod string

// The uncertainty methods of the specification.
const (
	MethodSemanticEntropy   UncertaintyMethod = "semantic_entropy"
	MethodModelDisagreement UncertaintyMethod = "model_disagreement"
	MethodConfidenceScore   UncertaintyMethod = "confidence_score"
	MethodConformalSet      UncertaintyMethod = "conformal_set"
)

// GateRecommendation is what a claim (or a gate) asks the chain to do.
type GateRecommendation string

// The gate recommendations of the specification.
const (
	RecommendExecute GateRecommendation = "EXECUTE" // proceed: the gate passes
	RecommendDefer   GateRecommendation = "DEFER"   // stop the chain and queue for a human
	RecommendRefuse  GateRecommendation = "REFUSE"  // stop the chain and fail the bundle
	RecommendExplain GateRecommendation = "EXPLAIN" // proceed, adding a caveat to the output
)

// RiskTier is the closed, ordered set of side-effect classes. Tiers are
// compared by Rank, never as strings.
type RiskTier string

// The risk tiers of the specification, in increasing rank.
const (
	TierReadOnly     RiskTier = "READ_ONLY"
	TierWriteLimited RiskTier = "WRITE_LIMITED"
	TierModify       RiskTier = "MODIFY"
	TierDelete       RiskTier = "DELETE"
	TierPrivilege    RiskTier = "PRIVILEGE"
)

// Decision is what the gate chain decides about a whole bundle.
type Decision string

// The bundle decisions of the specification.
const (
	DecisionPublish  Decision = "PUBLISH"
	DecisionDefer    Decision = "DEFER"
	DecisionEscalate Decision = "ESCALATE"
	DecisionRefuse   Decision = "REFUSE"
)

// ApprovalDecision is what a human approver decides.
type ApprovalDecision string

// The approval decisions of the specification.
const (
	ApprovalApproved ApprovalDecision = "APPROVED"
	ApprovalRejected ApprovalDecision = "REJECTED"
)

// Valid reports whether t is one of the claim types of the specification.
func (t ClaimType) Valid() bool {
	return t == ClaimFact || t == ClaimInference || t == ClaimDecision
}

// Valid reports whether m is one of the four methods of the specification.
func (m UncertaintyMethod) Valid() bool {
	return m == MethodSemanticEntropy || m == MethodModelDisagreement || m == MethodConfidenceScore || m == MethodConformalSet
}

// Valid reports whether r is one of the four recommendations.
func (r GateRecommendation) Valid() bool {
	return r == RecommendExecute || r == RecommendDefer || r == RecommendRefuse || r == RecommendExplain
}

// Valid reports whether t is one of the five risk tiers.
func (t RiskTier) Valid() bool { return t.Rank() > 0 }

// Rank orders the tiers: READ_ONLY 1 < WRITE_LIMITED 2 < MODIFY 3 <
// DELETE 4 < PRIVILEGE 5. An unknown tier has rank 0.
func (t RiskTier) Rank() int {
	switch t {
	case TierReadOnly:
		return 1
	case TierWriteLimited:
		return 2
	case TierModify:
		return 3
	case TierDelete:
		return 4
	case TierPrivilege:
		return 5
	}
	return 0
}

// AtLeast reports whether t ranks at or above u. Both must be valid.
func (t RiskTier) AtLeast(u RiskTier) bool {
	return t.Valid() && u.Valid() && t.Rank() >= u.Rank()
}

// Valid reports whether d is one of the four bundle decisions.
func (d Decision) Valid() bool {
	return d == DecisionPublish || d == DecisionDefer || d == DecisionEscalate || d == DecisionRefuse
}

// Valid reports whether d is APPROVED or REJECTED.
func (d ApprovalDecision) Valid() bool { return d == ApprovalApproved || d == ApprovalRejected }

func unknown(kind, s string) error {
	return fmt.Errorf("%w: %s %q", ErrUnknownValue, kind, s)
}

// The enums marshal as JSON strings through encoding.TextMarshaler.
// Marshalling an unknown value fails with ErrUnknownValue, so that no
// out-of-contract value is written. They are read by the Decode functions.

// MarshalText implements encoding.TextMarshaler.
func (t ClaimType) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, unknown("claim type", string(t))
	}
	return []byte(t), nil
}

// MarshalText implements encoding.TextMarshaler.
func (m UncertaintyMethod) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, unknown("uncertainty method", string(m))
	}
	return []byte(m), nil
}

// MarshalText implements encoding.TextMarshaler.
func (r GateRecommendation) MarshalText() ([]byte, error) {
	if !r.Valid() {
		return nil, unknown("gate recommendation", string(r))
	}
	return []byte(r), nil
}

// MarshalText implements encoding.TextMarshaler.
func (t RiskTier) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, unknown("risk tier", string(t))
	}
	return []byte(t), nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Decision) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, unknown("decision", string(d))
	}
	return []byte(d), nil
}

// MarshalText implements encoding.TextMarshaler.
func (d ApprovalDecision) MarshalText() ([]byte, error) {
	if !d.Valid() {
		return nil, unknown("approval decision", string(d))
	}
	return []byte(d), nil
}

// EvidencePointer points at the evidence behind a claim.
type EvidencePointer struct {
	Source           string    `json:"source"`            // URL or reference
	SourceConfidence float64   `json:"source_confidence"` // in [0,1]
	EvidenceHash     string    `json:"evidence_hash"`     // SHA-256 of the evidence, 64 lower-case hex digits
	RetrievedAt      time.Time `json:"retrieved_at"`      // RFC 3339 on the wire
}

// Uncertainty is an uncertainty estimate attached to a claim: the method
// that produced it, a value in [0,1] (0 = certain), a human-readable
// interpretation and the estimator's gate recommendation (the
// specification's default is EXECUTE).
type Uncertainty struct {
	Method             UncertaintyMethod  `json:"method"`
	Value              float64            `json:"value"`
	Interpretation     string             `json:"interpretation"`
	GateRecommendation GateRecommendation `json:"gate_recommendation"`
}

// Claim is one assertion of an agent.
type Claim struct {
	ID               string            `json:"id"`
	Statement        string            `json:"statement"`
	ClaimType        ClaimType         `json:"claim_type"`
	EvidencePointers []EvidencePointer `json:"evidence_pointers"`
	Uncertainty      Uncertainty       `json:"uncertainty"`
	RiskTier         RiskTier          `json:"risk_tier"`
	IfWrongCost      string            `json:"if_wrong_cost"`
}

// Approval is one human decision recorded in the audit trail.
type Approval struct {
	Approver  string           `json:"approver"`
	Timestamp time.Time        `json:"timestamp"`
	Decision  ApprovalDecision `json:"decision"`
	Reason    string           `json:"reason"`
}

// Note is a remark a gate attaches to an evaluated bundle: a caveat the
// output must carry (EXPLAIN) or a flag for the log (a MODIFY claim that
// was approved automatically). ClaimID is empty when the note concerns the
// whole bundle.
type Note struct {
	ClaimID string `json:"claim_id,omitempty"`
	Gate    string `json:"gate"`
	Text    string `json:"text"`
}

// AuditTrail records what the gate chain did with a bundle. GatesPassed,
// GatesFailed and HumanApprovals are the fields of the specification;
// Caveats and Flags extend it and are omitted from the JSON when empty, so
// a bundle without them has exactly the specification's shape.
type AuditTrail struct {
	GatesPassed    []string   `json:"gates_passed"`
	GatesFailed    []string   `json:"gates_failed"`
	HumanApprovals []Approval `json:"human_approvals"`
	Caveats        []Note     `json:"caveats,omitempty"`
	Flags          []Note     `json:"flags,omitempty"`
}

// ClaimBundle is the contract every agent output is expressed in.
type ClaimBundle struct {
	ID                string     `json:"id"`
	Timestamp         time.Time  `json:"timestamp"`
	OriginAgent       string     `json:"origin_agent"`
	Claims            []Claim    `json:"claims"`
	Decision          Decision   `json:"decision"`
	Reason            string     `json:"reason"`
	RequiredApprovals []string   `json:"required_approvals"`
	AuditTrail        AuditTrail `json:"audit_trail"`
}

// NewBundle returns a bundle with the specification's defaults: decision
// DEFER, empty reason, no required approvals and an empty audit trail.
// The claims are copied.
func NewBundle(id string, timestamp time.Time, originAgent string, claims ...Claim) ClaimBundle {
	b := ClaimBundle{
		ID:                id,
		Timestamp:         timestamp,
		OriginAgent:       originAgent,
		Claims:            make([]Claim, len(claims)),
		Decision:          DecisionDefer,
		RequiredApprovals: []string{},
		AuditTrail:        AuditTrail{GatesPassed: []string{}, GatesFailed: []string{}, HumanApprovals: []Approval{}},
	}
	for i, c := range claims {
		b.Claims[i] = c.Clone()
	}
	return b
}

// Clone returns a deep copy of c.
func (c Claim) Clone() Claim {
	c.EvidencePointers = cloneSlice(c.EvidencePointers)
	return c
}

// Clone returns a deep copy of b: no slice of the copy aliases b.
func (b ClaimBundle) Clone() ClaimBundle {
	if b.Claims != nil {
		cs := make([]Claim, len(b.Claims))
		n := 0
		for _, c := range b.Claims {
			n += len(c.EvidencePointers)
		}
		// One backing array for all evidence; each claim's slice is capped
		// so that appending to it cannot overwrite its neighbour.
		pool := make([]EvidencePointer, 0, n)
		for i, c := range b.Claims {
			if c.EvidencePointers != nil {
				start := len(pool)
				pool = append(pool, c.EvidencePointers...)
				c.EvidencePointers = pool[start:len(pool):len(pool)]
			}
			cs[i] = c
		}
		b.Claims = cs
	}
	b.RequiredApprovals = cloneSlice(b.RequiredApprovals)
	b.AuditTrail = b.AuditTrail.clone()
	return b
}

// clone returns a deep copy of a.
func (a AuditTrail) clone() AuditTrail {
	a.GatesPassed = cloneSlice(a.GatesPassed)
	a.GatesFailed = cloneSlice(a.GatesFailed)
	a.HumanApprovals = cloneSlice(a.HumanApprovals)
	a.Caveats = cloneSlice(a.Caveats)
	a.Flags = cloneSlice(a.Flags)
	return a
}

// canonical returns a deep copy of b in the one form that its JSON reads
// back as: every time in UTC without a monotonic clock reading, the
// specification's lists non-nil, caveats and flags nil when empty, and no
// negative zero. None of this changes what b says.
func (b ClaimBundle) canonical() ClaimBundle {
	out := b.Clone()
	out.Timestamp = out.Timestamp.UTC()
	out.Claims = orEmpty(out.Claims)
	for i := range out.Claims {
		c := &out.Claims[i]
		c.EvidencePointers = orEmpty(c.EvidencePointers)
		for j := range c.EvidencePointers {
			e := &c.EvidencePointers[j]
			e.SourceConfidence = unsignedZero(e.SourceConfidence)
			e.RetrievedAt = e.RetrievedAt.UTC()
		}
		c.Uncertainty.Value = unsignedZero(c.Uncertainty.Value)
	}
	out.RequiredApprovals = orEmpty(out.RequiredApprovals)
	a := &out.AuditTrail
	a.GatesPassed = orEmpty(a.GatesPassed)
	a.GatesFailed = orEmpty(a.GatesFailed)
	a.HumanApprovals = orEmpty(a.HumanApprovals)
	for i := range a.HumanApprovals {
		a.HumanApprovals[i].Timestamp = a.HumanApprovals[i].Timestamp.UTC()
	}
	if len(a.Caveats) == 0 {
		a.Caveats = nil
	}
	if len(a.Flags) == 0 {
		a.Flags = nil
	}
	return out
}

// unsignedZero returns f with -0 replaced by 0.
func unsignedZero(f float64) float64 {
	if f == 0 {
		return 0
	}
	return f
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// MarshalJSON writes the claim with the specification's field names; a nil
// evidence list is written as [] as the reference implementation does.
func (c Claim) MarshalJSON() ([]byte, error) {
	type plain Claim
	c.EvidencePointers = orEmpty(c.EvidencePointers)
	return json.Marshal(plain(c))
}

// MarshalJSON writes the audit trail; nil lists are written as [].
func (a AuditTrail) MarshalJSON() ([]byte, error) {
	type plain AuditTrail
	a.GatesPassed = orEmpty(a.GatesPassed)
	a.GatesFailed = orEmpty(a.GatesFailed)
	a.HumanApprovals = orEmpty(a.HumanApprovals)
	return json.Marshal(plain(a))
}

// MarshalJSON writes the pointer; retrieved_at is written in UTC.
func (e EvidencePointer) MarshalJSON() ([]byte, error) {
	type plain EvidencePointer
	e.RetrievedAt = e.RetrievedAt.UTC()
	return json.Marshal(plain(e))
}

// MarshalJSON writes the approval; the timestamp is written in UTC.
func (a Approval) MarshalJSON() ([]byte, error) {
	type plain Approval
	a.Timestamp = a.Timestamp.UTC()
	return json.Marshal(plain(a))
}

// MarshalJSON writes the bundle with the specification's field names; nil
// lists are written as [].
func (b ClaimBundle) MarshalJSON() ([]byte, error) {
	type plain ClaimBundle
	b.Timestamp = b.Timestamp.UTC()
	b.Claims = orEmpty(b.Claims)
	b.RequiredApprovals = orEmpty(b.RequiredApprovals)
	return json.Marshal(plain(b))
}
