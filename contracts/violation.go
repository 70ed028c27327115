package contracts

import (
	"errors"
	"slices"
	"strings"

	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/violation"
)

// Sentinel errors. Test with errors.Is.
var (
	// ErrInvalid is wrapped by every *ValidationError.
	ErrInvalid = errors.New("contracts: invalid document")
	// ErrMajorVersion: the document's schema_version has another major
	// version than SchemaVersion. A *ValidationError carrying the
	// schema_version.major_mismatch rule matches it too.
	ErrMajorVersion = errors.New("contracts: unsupported major schema version")
	// ErrUnknownKind: the kind is not one of Kinds().
	ErrUnknownKind = errors.New("contracts: unknown contract kind")
	// ErrRefused: a schema reference outside the embedded schema set.
	ErrRefused = errors.New("contracts: schema reference outside the embedded set refused")
)

// Violation is one broken rule: where (a JSON Pointer into the document,
// RFC 6901, "" for the whole document), which rule (a name package rule
// lists, or "schema.<keyword>"), and a message.
type Violation = violation.Violation

// ValidationError carries every violation of a document, sorted. Its
// Subject is the kind of the document ("compliance_report"). It wraps
// ErrInvalid, and ErrMajorVersion when the schema_version.major_mismatch
// rule is among the violations.
type ValidationError = violation.ValidationError

// newValidationError returns the *ValidationError of a document of the
// given subject, or nil when vs is empty.
func newValidationError(subject string, vs []Violation) error {
	sentinels := []error{ErrInvalid}
	if slices.ContainsFunc(vs, func(v Violation) bool { return v.Rule == rule.MajorVersion }) {
		sentinels = append(sentinels, ErrMajorVersion)
	}
	if e := violation.New("contracts", subject, vs, sentinels...); e != nil {
		return e
	}
	return nil
}

// sortViolations sorts vs the one way every Verity validator does and drops
// exact duplicates.
func sortViolations(vs []Violation) []Violation {
	violation.Sort(vs)
	return slices.Compact(vs)
}

// underOrAt reports whether pointer p equals q or lies inside q.
func underOrAt(p, q string) bool {
	return p == q || strings.HasPrefix(p, q+"/") || q == ""
}
