package claims

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// MinSourceConfidence is the specification's evidence threshold: a FACT
// claim needs at least one pointer with source_confidence ≥ 0.60 (0.60
// itself passes).
const MinSourceConfidence = 0.60

// Validate checks b against the rules of the specification and returns nil
// or a *ValidationError listing every violation, sorted by path:
//
//   - the bundle has an id, a timestamp, an origin agent, at least one
//     claim, and a decision from the closed enum;
//   - each claim has a unique non-empty id, a statement, a claim type and a
//     risk tier from the closed enums, and an uncertainty whose method and
//     recommendation are in their enums and whose value lies in [0,1];
//   - each evidence pointer has a source, a source_confidence in [0,1], an
//     evidence_hash of 64 lower-case hex digits (a SHA-256) and a
//     retrieved_at time;
//   - a FACT claim has at least one evidence pointer (RuleEvidenceMissing)
//     and one of them reaches MinSourceConfidence (RuleEvidenceWeak); an
//     INFERENCE claim that cites evidence meets the same standard;
//   - required approvers are non-empty and distinct; each human approval
//     names a required approver once, with a time and APPROVED/REJECTED;
//   - every string is valid UTF-8.
func Validate(b ClaimBundle) error {
	return asValidationError(bundleViolations(b))
}

// ValidateClaim checks one claim with the claim rules of Validate (paths are
// relative to the claim).
func ValidateClaim(c Claim) error {
	var v validator
	v.claim("", c)
	return asValidationError(v.vs)
}

// ValidateUncertainty checks that u has a known method and recommendation
// and a value in [0,1] (not NaN).
func ValidateUncertainty(u Uncertainty) error {
	var v validator
	v.uncertainty("", u)
	return asValidationError(v.vs)
}

func asValidationError(vs []Violation) error {
	if len(vs) == 0 {
		return nil
	}
	sortViolations(vs)
	return &ValidationError{Violations: vs}
}

func bundleViolations(b ClaimBundle) []Violation {
	var v validator
	v.bundle(b)
	return v.vs
}

type validator struct {
	vs []Violation
}

func (v *validator) add(path, rule, format string, args ...any) {
	v.vs = append(v.vs, Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) text(path, s string, required bool) {
	switch {
	case required && s == "":
		v.add(path, RuleRequired, "must not be empty")
	case !utf8.ValidString(s):
		v.add(path, RuleUTF8, "not valid UTF-8")
	}
}

func (v *validator) unit(path string, f float64) {
	if math.IsNaN(f) || f < 0 || f > 1 {
		v.add(path, RuleRange, "%v is outside [0,1]", f)
	}
}

func enumCheck[T ~string](v *validator, path string, x T, valid func(T) bool) {
	switch {
	case x == "":
		v.add(path, RuleRequired, "must not be empty")
	case !valid(x):
		v.add(path, RuleEnum, "unknown value %q", string(x))
	}
}

func (v *validator) bundle(b ClaimBundle) {
	v.text("id", b.ID, true)
	if b.Timestamp.IsZero() {
		v.add("timestamp", RuleRequired, "missing timestamp")
	}
	v.text("origin_agent", b.OriginAgent, true)
	if len(b.Claims) == 0 {
		v.add("claims", RuleNoClaims, "a bundle needs at least one claim")
	}
	seen := make(map[string]int, len(b.Claims))
	for i, c := range b.Claims {
		p := indexPath("claims", i)
		v.claim(p, c)
		if c.ID == "" {
			continue
		}
		if first, dup := seen[c.ID]; dup {
			v.add(joinPath(p, "id"), RuleDuplicateID, "id %q already used by claims[%d]", c.ID, first)
		} else {
			seen[c.ID] = i
		}
	}
	enumCheck(v, "decision", b.Decision, Decision.Valid)
	v.text("reason", b.Reason, false)

	required := make(map[string]bool, len(b.RequiredApprovals))
	for i, a := range b.RequiredApprovals {
		p := indexPath("required_approvals", i)
		v.text(p, a, true)
		if required[a] && a != "" {
			v.add(p, RuleDuplicate, "approver %q listed twice", a)
		}
		required[a] = true
	}
	v.auditTrail("audit_trail", b.AuditTrail, required)
}

func (v *validator) auditTrail(path string, a AuditTrail, required map[string]bool) {
	for i, g := range a.GatesPassed {
		v.text(indexPath(joinPath(path, "gates_passed"), i), g, true)
	}
	for i, g := range a.GatesFailed {
		v.text(indexPath(joinPath(path, "gates_failed"), i), g, true)
	}
	decided := make(map[string]bool, len(a.HumanApprovals))
	for i, h := range a.HumanApprovals {
		p := indexPath(joinPath(path, "human_approvals"), i)
		v.approval(p, h)
		if h.Approver == "" {
			continue
		}
		switch {
		case decided[h.Approver]:
			v.add(joinPath(p, "approver"), RuleDuplicate, "approver %q already decided", h.Approver)
		case !required[h.Approver]:
			v.add(joinPath(p, "approver"), RuleNotRequired, "approver %q is not in required_approvals", h.Approver)
		}
		decided[h.Approver] = true
	}
	for i, n := range a.Caveats {
		v.note(indexPath(joinPath(path, "caveats"), i), n)
	}
	for i, n := range a.Flags {
		v.note(indexPath(joinPath(path, "flags"), i), n)
	}
}

func (v *validator) approval(path string, a Approval) {
	v.text(joinPath(path, "approver"), a.Approver, true)
	if a.Timestamp.IsZero() {
		v.add(joinPath(path, "timestamp"), RuleRequired, "missing timestamp")
	}
	enumCheck(v, joinPath(path, "decision"), a.Decision, ApprovalDecision.Valid)
	v.text(joinPath(path, "reason"), a.Reason, false)
}

func (v *validator) note(path string, n Note) {
	v.text(joinPath(path, "claim_id"), n.ClaimID, false)
	v.text(joinPath(path, "gate"), n.Gate, true)
	v.text(joinPath(path, "text"), n.Text, true)
}

func (v *validator) claim(path string, c Claim) {
	v.text(joinPath(path, "id"), c.ID, true)
	v.text(joinPath(path, "statement"), c.Statement, true)
	enumCheck(v, joinPath(path, "claim_type"), c.ClaimType, ClaimType.Valid)
	enumCheck(v, joinPath(path, "risk_tier"), c.RiskTier, RiskTier.Valid)
	v.text(joinPath(path, "if_wrong_cost"), c.IfWrongCost, false)
	v.uncertainty(joinPath(path, "uncertainty"), c.Uncertainty)

	ep := joinPath(path, "evidence_pointers")
	for i, e := range c.EvidencePointers {
		v.evidence(indexPath(ep, i), e)
	}
	switch evidenceStrength(c) {
	case evidenceNone:
		if c.ClaimType == FactClaim {
			v.add(ep, RuleEvidenceMissing, "a FACT claim needs at least one evidence pointer")
		}
	case evidenceWeak:
		if c.ClaimType == FactClaim || c.ClaimType == InferenceClaim {
			v.add(ep, RuleEvidenceWeak, "no evidence pointer has source_confidence >= %.2f", MinSourceConfidence)
		}
	}
}

type strength int

const (
	evidenceNone strength = iota
	evidenceWeak
	evidenceStrong
)

// evidenceStrength classifies a claim's evidence the way the
// specification's validate_fact does: none, only weak pointers, or at least
// one pointer at or above MinSourceConfidence.
func evidenceStrength(c Claim) strength {
	if len(c.EvidencePointers) == 0 {
		return evidenceNone
	}
	for _, e := range c.EvidencePointers {
		if e.SourceConfidence >= MinSourceConfidence && e.SourceConfidence <= 1 {
			return evidenceStrong
		}
	}
	return evidenceWeak
}

func (v *validator) evidence(path string, e EvidencePointer) {
	v.text(joinPath(path, "source"), e.Source, true)
	v.unit(joinPath(path, "source_confidence"), e.SourceConfidence)
	switch hp := joinPath(path, "evidence_hash"); {
	case e.EvidenceHash == "":
		v.add(hp, RuleRequired, "must not be empty")
	case !IsSHA256Hex(e.EvidenceHash):
		v.add(hp, RuleEvidenceHash, "want 64 lower-case hex digits (SHA-256), got %d characters", len(e.EvidenceHash))
	}
	if e.RetrievedAt.IsZero() {
		v.add(joinPath(path, "retrieved_at"), RuleRequired, "missing retrieved_at time")
	}
}

func (v *validator) uncertainty(path string, u Uncertainty) {
	enumCheck(v, joinPath(path, "method"), u.Method, UncertaintyMethod.Valid)
	v.unit(joinPath(path, "value"), u.Value)
	v.text(joinPath(path, "interpretation"), u.Interpretation, false)
	enumCheck(v, joinPath(path, "gate_recommendation"), u.GateRecommendation, GateRecommendation.Valid)
}

// IsSHA256Hex reports whether s is exactly 64 lower-case hexadecimal
// digits, the form of evidence_hash.
func IsSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
