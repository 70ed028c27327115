package claims

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Rules name what a Violation breaks. They are stable strings that callers
// may branch on.
const (
	RuleSyntax          = "syntax"           // not a single well-formed JSON text
	RuleUnknownField    = "unknown_field"    // a member the specification does not define
	RuleType            = "type"             // wrong JSON type (string for a number, ...)
	RuleRequired        = "required"         // a required field is missing or empty
	RuleEnum            = "enum"             // a value outside a closed enum (case-sensitive)
	RuleRange           = "range"            // a number outside [0,1], or NaN
	RuleTime            = "time"             // a timestamp that is not RFC 3339
	RuleEvidenceHash    = "evidence_hash"    // not 64 lower-case hex digits (SHA-256)
	RuleUTF8            = "utf8"             // a string that is not valid UTF-8
	RuleNoClaims        = "no_claims"        // a bundle without claims
	RuleDuplicateID     = "duplicate_id"     // two claims with the same id
	RuleEvidenceMissing = "evidence_missing" // a FACT claim without evidence pointers
	RuleEvidenceWeak    = "evidence_weak"    // no pointer reaches MinSourceConfidence
	RuleDuplicate       = "duplicate"        // a repeated approver or approval
	RuleNotRequired     = "not_required"     // an approval from someone not in required_approvals
)

// Violation is one broken rule, located by a path such as
// "claims[2].evidence_pointers[0].evidence_hash" (empty for the value
// itself).
type Violation struct {
	Path    string
	Rule    string
	Message string
}

func (v Violation) String() string {
	if v.Path == "" {
		return v.Rule + ": " + v.Message
	}
	return v.Path + ": " + v.Rule + ": " + v.Message
}

// ValidationError carries every violation Validate found, sorted by path
// (array indices numerically), then rule, then message. It wraps ErrInvalid.
type ValidationError struct {
	Violations []Violation
}

func (e *ValidationError) Error() string { return describe(ErrInvalid, e.Violations) }

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// Has reports whether some violation breaks rule.
func (e *ValidationError) Has(rule string) bool { return hasRule(e.Violations, rule) }

// DecodeError carries every problem a decoder found, sorted like
// ValidationError. It wraps ErrMalformed, and also ErrUnknownValue when an
// enum value was unknown, and the underlying syntax error if there was one.
type DecodeError struct {
	Violations []Violation
	syntax     error
}

func (e *DecodeError) Error() string { return describe(ErrMalformed, e.Violations) }

// Unwrap returns ErrMalformed plus ErrUnknownValue and the syntax error
// when they apply.
func (e *DecodeError) Unwrap() []error {
	errs := []error{ErrMalformed}
	if hasRule(e.Violations, RuleEnum) {
		errs = append(errs, ErrUnknownValue)
	}
	if e.syntax != nil {
		errs = append(errs, e.syntax)
	}
	return errs
}

// Has reports whether some violation breaks rule.
func (e *DecodeError) Has(rule string) bool { return hasRule(e.Violations, rule) }

func hasRule(vs []Violation, rule string) bool {
	return slices.ContainsFunc(vs, func(v Violation) bool { return v.Rule == rule })
}

func describe(base error, vs []Violation) string {
	var sb strings.Builder
	sb.WriteString(base.Error())
	switch len(vs) {
	case 0:
	case 1:
		sb.WriteString(": ")
	default:
		fmt.Fprintf(&sb, ": %d violations: ", len(vs))
	}
	for i, v := range vs {
		if i > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(v.String())
	}
	return sb.String()
}

func sortViolations(vs []Violation) {
	slices.SortFunc(vs, func(a, b Violation) int {
		if c := comparePaths(a.Path, b.Path); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
}

// comparePaths orders paths segment by segment, comparing bracketed array
// indices as numbers so that claims[2] sorts before claims[10].
func comparePaths(a, b string) int {
	for a != "" && b != "" {
		sa, ra := nextSegment(a)
		sb, rb := nextSegment(b)
		na, ea := strconv.Atoi(strings.Trim(sa, "[]"))
		nb, eb := strconv.Atoi(strings.Trim(sb, "[]"))
		isIdxA := ea == nil && strings.HasPrefix(sa, "[")
		isIdxB := eb == nil && strings.HasPrefix(sb, "[")
		c := cmp.Compare(sa, sb)
		if isIdxA && isIdxB {
			c = cmp.Compare(na, nb)
		}
		if c != 0 {
			return c
		}
		a, b = ra, rb
	}
	return cmp.Compare(len(a), len(b))
}

// nextSegment splits "x.y[3]" into "x" and ".y[3]" → "y" ..., "[3]" → "[3]".
func nextSegment(p string) (seg, rest string) {
	p = strings.TrimPrefix(p, ".")
	if strings.HasPrefix(p, "[") {
		if i := strings.IndexByte(p, ']'); i >= 0 {
			return p[:i+1], p[i+1:]
		}
		return p, ""
	}
	i := strings.IndexAny(p, ".[")
	if i < 0 {
		return p, ""
	}
	return p[:i], p[i:]
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
