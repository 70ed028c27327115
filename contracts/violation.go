package contracts

import (
	"errors"
	"slices"
	"strconv"
	"strings"
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
	// ErrBadID: a string is not a canonical id (see *IDError).
	ErrBadID = errors.New("contracts: bad canonical id")
	// ErrBadVersion: a string is not a semantic version, or a release does
	// not follow the versioning rules.
	ErrBadVersion = errors.New("contracts: bad schema version")
	// ErrRefused: a schema reference outside the embedded schema set.
	ErrRefused = errors.New("contracts: schema reference outside the embedded set refused")
)

// Violation is one broken rule: where (a JSON Pointer into the document,
// RFC 6901, "" for the whole document), which rule, and a message.
//
// Rule names are stable: "schema.<keyword>" for a shape rule from the JSON
// Schema (schema.required, schema.enum, schema.type, ...), "json.syntax",
// "json.duplicate_key" and "json.decode" for documents that are not the
// JSON the contract needs, and "<kind>.<rule>" or "evidence_ref.<rule>",
// "artifact_id.format", "evidence.unknown_*", "schema_version.major_mismatch"
// for the semantic rules (see Rules).
type Violation struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func (v Violation) String() string {
	p := v.Path
	if p == "" {
		p = "(document)"
	}
	return p + ": " + v.Rule + ": " + v.Message
}

// ValidationError carries every violation of a document, sorted by
// SortViolations. It wraps ErrInvalid, and ErrMajorVersion when the
// schema_version.major_mismatch rule is among them.
type ValidationError struct {
	Kind       Kind
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("contracts: invalid ")
	b.WriteString(string(e.Kind))
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(len(e.Violations)))
	b.WriteString(" violation(s)")
	for i, v := range e.Violations {
		if i == 3 {
			b.WriteString("; ...")
			break
		}
		b.WriteString("; ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Is reports ErrInvalid, and ErrMajorVersion for a major version mismatch.
func (e *ValidationError) Is(target error) bool {
	switch target {
	case ErrInvalid:
		return true
	case ErrMajorVersion:
		return slices.ContainsFunc(e.Violations, func(v Violation) bool { return v.Rule == RuleMajorVersion })
	}
	return false
}

// SortViolations sorts by path (JSON Pointer segments, array indices
// numerically), then rule, then message, and drops exact duplicates.
func SortViolations(vs []Violation) []Violation {
	slices.SortFunc(vs, compareViolations)
	return slices.Compact(vs)
}

func compareViolations(a, b Violation) int {
	if c := comparePointers(a.Path, b.Path); c != 0 {
		return c
	}
	if c := strings.Compare(a.Rule, b.Rule); c != 0 {
		return c
	}
	return strings.Compare(a.Message, b.Message)
}

// comparePointers orders JSON Pointers segment by segment; segments that
// are both decimal integers compare numerically, and a prefix sorts first.
func comparePointers(a, b string) int {
	for a != "" && b != "" {
		var sa, sb string
		sa, a = nextSegment(a)
		sb, sb2 := nextSegment(b)
		b = sb2
		if c := compareSegment(sa, sb); c != 0 {
			return c
		}
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	}
	return 1
}

func nextSegment(p string) (seg, rest string) {
	p = p[1:] // a non-empty pointer starts with '/'
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:]
	}
	return p, ""
}

func compareSegment(a, b string) int {
	na, ea := strconv.ParseUint(a, 10, 64)
	nb, eb := strconv.ParseUint(b, 10, 64)
	if ea == nil && eb == nil && na != nb {
		if na < nb {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// pointer is an immutable JSON Pointer under construction.
type pointer string

func (p pointer) key(k string) pointer {
	k = strings.ReplaceAll(k, "~", "~0")
	k = strings.ReplaceAll(k, "/", "~1")
	return p + "/" + pointer(k)
}

func (p pointer) index(i int) pointer { return p + "/" + pointer(strconv.Itoa(i)) }

// underOrAt reports whether pointer p equals q or lies inside q.
func underOrAt(p, q string) bool {
	return p == q || strings.HasPrefix(p, q+"/") || q == ""
}
