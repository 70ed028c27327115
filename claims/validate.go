package claims

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/violation"
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
//     retrieved_at time (every time lies within the years 0000-9999 UTC,
//     so that it can be written as RFC 3339);
//   - a FACT claim has at least one evidence pointer (RuleEvidenceMissing)
//     and one of them reaches MinSourceConfidence (RuleEvidenceWeak); an
//     INFERENCE claim that cites evidence meets the same standard;
//   - required approvers are non-empty and distinct; each human approval
//     names a required approver once, with a time and APPROVED/REJECTED;
//   - every string is valid UTF-8.
func Validate(b ClaimBundle) error {
	return invalid("claim bundle", bundleViolations(b), ErrInvalid)
}

// ValidateClaim checks one claim with the claim rules of Validate (paths are
// relative to the claim).
func ValidateClaim(c Claim) error {
	var v validator
	v.claim(c)
	return invalid("claim", v.vs, ErrInvalid)
}

// ValidateUncertainty checks that u has a known method and recommendation
// and a value in [0,1] (not NaN).
func ValidateUncertainty(u Uncertainty) error {
	var v validator
	v.uncertainty(u)
	return invalid("uncertainty", v.vs, ErrInvalid)
}

func bundleViolations(b ClaimBundle) []Violation {
	var v validator
	v.bundle(b)
	return v.vs
}

type validator struct {
	vs   []Violation
	path []seg
}

// seg is one step of the path to the value being checked: a member name,
// or an array index when name is empty.
type seg struct {
	name  string
	index int
}

// The validator keeps the path to the current value as a stack of
// segments and renders it only when a violation is reported, so that
// validating a valid bundle builds no strings.
func (v *validator) push(name string) { v.path = append(v.path, seg{name: name}) }
func (v *validator) pushIndex(i int)  { v.path = append(v.path, seg{index: i}) }
func (v *validator) pop()             { v.path = v.path[:len(v.path)-1] }

// add reports a violation at the current path extended by field (if not
// empty).
func (v *validator) add(field, rule, format string, args ...any) {
	p := ""
	for _, s := range v.path {
		if s.name != "" {
			p = violation.Join(p, s.name)
		} else {
			p = violation.Index(p, s.index)
		}
	}
	if field != "" {
		p = violation.Join(p, field)
	}
	v.vs = append(v.vs, Violation{Path: p, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) text(field, s string, required bool) {
	switch {
	case required && s == "":
		v.add(field, RuleRequired, "must not be empty")
	case !utf8.ValidString(s):
		v.add(field, RuleUTF8, "not valid UTF-8")
	}
}

// texts checks the elements of a list of strings named field.
func (v *validator) texts(field string, ss []string) {
	v.push(field)
	for i, s := range ss {
		v.pushIndex(i)
		v.text("", s, true)
		v.pop()
	}
	v.pop()
}

// time checks that t is set and writable as RFC 3339 (years 0000-9999 in
// UTC).
func (v *validator) time(field string, t time.Time) {
	if t.IsZero() {
		v.add(field, RuleRequired, "missing time")
		return
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		v.add(field, RuleTime, "year %d (UTC) cannot be written as RFC 3339", y)
	}
}

func (v *validator) unit(field string, f float64) {
	if math.IsNaN(f) || f < 0 || f > 1 {
		v.add(field, RuleRange, "%v is outside [0,1]", f)
	}
}

func enumCheck[T ~string](v *validator, field string, x T, valid func(T) bool) {
	switch {
	case x == "":
		v.add(field, RuleRequired, "must not be empty")
	case !valid(x):
		v.add(field, RuleEnum, "unknown value %q", string(x))
	}
}

func (v *validator) bundle(b ClaimBundle) {
	v.text("id", b.ID, true)
	v.time("timestamp", b.Timestamp)
	v.text("origin_agent", b.OriginAgent, true)
	if len(b.Claims) == 0 {
		v.add("claims", RuleNoClaims, "a bundle needs at least one claim")
	}
	seen := make(map[string]int, len(b.Claims))
	v.push("claims")
	for i, c := range b.Claims {
		v.pushIndex(i)
		v.claim(c)
		if first, dup := seen[c.ID]; dup && c.ID != "" {
			v.add("id", RuleDuplicateID, "id %q already used by /claims/%d", c.ID, first)
		} else if !dup {
			seen[c.ID] = i
		}
		v.pop()
	}
	v.pop()
	enumCheck(v, "decision", b.Decision, Decision.Valid)
	v.text("reason", b.Reason, false)

	required := make(map[string]bool, len(b.RequiredApprovals))
	v.push("required_approvals")
	for i, a := range b.RequiredApprovals {
		v.pushIndex(i)
		v.text("", a, true)
		if required[a] && a != "" {
			v.add("", RuleDuplicate, "approver %q listed twice", a)
		}
		required[a] = true
		v.pop()
	}
	v.pop()
	v.push("audit_trail")
	v.auditTrail(b.AuditTrail, required)
	v.pop()
}

func (v *validator) auditTrail(a AuditTrail, required map[string]bool) {
	v.texts("gates_passed", a.GatesPassed)
	v.texts("gates_failed", a.GatesFailed)
	decided := make(map[string]bool, len(a.HumanApprovals))
	v.push("human_approvals")
	for i, h := range a.HumanApprovals {
		v.pushIndex(i)
		v.approval(h)
		switch {
		case h.Approver == "":
		case decided[h.Approver]:
			v.add("approver", RuleDuplicate, "approver %q already decided", h.Approver)
		case !required[h.Approver]:
			v.add("approver", RuleNotRequired, "approver %q is not in required_approvals", h.Approver)
		}
		decided[h.Approver] = true
		v.pop()
	}
	v.pop()
	for _, list := range []struct {
		name  string
		notes []Note
	}{{"caveats", a.Caveats}, {"flags", a.Flags}} {
		v.push(list.name)
		for i, n := range list.notes {
			v.pushIndex(i)
			v.note(n)
			v.pop()
		}
		v.pop()
	}
}

func (v *validator) approval(a Approval) {
	v.text("approver", a.Approver, true)
	v.time("timestamp", a.Timestamp)
	enumCheck(v, "decision", a.Decision, ApprovalDecision.Valid)
	v.text("reason", a.Reason, false)
}

func (v *validator) note(n Note) {
	v.text("claim_id", n.ClaimID, false)
	v.text("gate", n.Gate, true)
	v.text("text", n.Text, true)
}

func (v *validator) claim(c Claim) {
	v.text("id", c.ID, true)
	v.text("statement", c.Statement, true)
	enumCheck(v, "claim_type", c.ClaimType, ClaimType.Valid)
	enumCheck(v, "risk_tier", c.RiskTier, RiskTier.Valid)
	v.text("if_wrong_cost", c.IfWrongCost, false)
	v.push("uncertainty")
	v.uncertainty(c.Uncertainty)
	v.pop()

	v.push("evidence_pointers")
	for i, e := range c.EvidencePointers {
		v.pushIndex(i)
		v.evidence(e)
		v.pop()
	}
	switch evidenceStrength(&c) {
	case evidenceNone:
		if c.ClaimType == ClaimFact {
			v.add("", RuleEvidenceMissing, "a FACT claim needs at least one evidence pointer")
		}
	case evidenceWeak:
		if c.ClaimType == ClaimFact || c.ClaimType == ClaimInference {
			v.add("", RuleEvidenceWeak, "no evidence pointer has source_confidence >= %.2f", MinSourceConfidence)
		}
	}
	v.pop()
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
func evidenceStrength(c *Claim) strength {
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

func (v *validator) evidence(e EvidencePointer) {
	v.text("source", e.Source, true)
	v.unit("source_confidence", e.SourceConfidence)
	switch {
	case e.EvidenceHash == "":
		v.add("evidence_hash", RuleRequired, "must not be empty")
	case !isSHA256Hex(e.EvidenceHash):
		v.add("evidence_hash", RuleEvidenceHash, "want 64 lower-case hex digits (SHA-256), got %d characters", len(e.EvidenceHash))
	}
	v.time("retrieved_at", e.RetrievedAt)
}

func (v *validator) uncertainty(u Uncertainty) {
	enumCheck(v, "method", u.Method, UncertaintyMethod.Valid)
	v.unit("value", u.Value)
	v.text("interpretation", u.Interpretation, false)
	enumCheck(v, "gate_recommendation", u.GateRecommendation, GateRecommendation.Valid)
}

// isSHA256Hex reports whether s is exactly 64 lower-case hexadecimal
// digits, the form of evidence_hash.
func isSHA256Hex(s string) bool {
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
