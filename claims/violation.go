package claims

import "github.com/verity-go/verity/internal/violation"

// Rules name what a Violation breaks. They are stable strings that callers
// may branch on.
const (
	RuleSyntax          = violation.RuleSyntax       // not a single well-formed JSON text
	RuleUnknownField    = violation.RuleUnknownField // a member the specification does not define
	RuleType            = violation.RuleType         // wrong JSON type (string for a number, ...)
	RuleRequired        = violation.RuleRequired     // a required field is missing or empty
	RuleEnum            = "enum"                     // a value outside a closed enum (case-sensitive)
	RuleRange           = "range"                    // a number outside [0,1], or NaN
	RuleTime            = "time"                     // a timestamp that is not RFC 3339
	RuleEvidenceHash    = "evidence_hash"            // not 64 lower-case hex digits (SHA-256)
	RuleUTF8            = "utf8"                     // a string that is not valid UTF-8
	RuleNoClaims        = "no_claims"                // a bundle without claims
	RuleDuplicateID     = "duplicate_id"             // two claims with the same id
	RuleEvidenceMissing = "evidence_missing"         // a FACT claim without evidence pointers
	RuleEvidenceWeak    = "evidence_weak"            // no pointer reaches MinSourceConfidence
	RuleDuplicate       = "duplicate"                // a repeated approver or approval
	RuleNotRequired     = "not_required"             // an approval from someone not in required_approvals
)

// Violation is one broken rule, located by an RFC 6901 JSON Pointer such
// as "/claims/2/evidence_pointers/0/evidence_hash" ("" for the value
// itself). It is the type every Verity validator reports.
type Violation = violation.Violation

// ValidationError carries every violation found in one value, sorted by
// path (array indices numerically), then rule, then message. The decoders
// return one wrapping ErrMalformed (and ErrUnknownValue when an enum value
// was unknown); Validate, ValidateClaim, ValidateUncertainty, the Session
// and RecordApproval return one wrapping ErrInvalid.
type ValidationError = violation.ValidationError

// invalid returns nil for no violations, else a *ValidationError about
// subject wrapping the sentinels.
func invalid(subject string, vs []Violation, sentinels ...error) error {
	if len(vs) == 0 {
		return nil
	}
	return violation.New("claims", subject, vs, sentinels...)
}
