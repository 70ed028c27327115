package violation

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// Violation is one broken rule: where (an RFC 6901 JSON Pointer, "" for the
// whole value), which rule (a stable name), and a message for people.
type Violation struct {
	Path    string `json:"path"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// String returns "path: rule: message", or "rule: message" for the whole
// value.
func (v Violation) String() string {
	if v.Path == "" {
		return v.Rule + ": " + v.Message
	}
	return v.Path + ": " + v.Rule + ": " + v.Message
}

// ValidationError carries every violation found in one value, sorted by
// Compare. Its message names the package and what was validated, and shows
// the first few violations; errors.Is matches the sentinels it was built
// with.
type ValidationError struct {
	// Subject says what was validated ("claim bundle", "compliance_report").
	Subject    string
	Violations []Violation

	pkg   string  // the package prefix of the message ("claims")
	wraps []error // sentinels for errors.Is
}

// New returns a *ValidationError over a sorted copy of vs, or nil when vs
// is empty. pkg prefixes the message; wraps are the sentinels errors.Is
// matches (nil entries are dropped, duplicates kept once).
func New(pkg, subject string, vs []Violation, wraps ...error) *ValidationError {
	if len(vs) == 0 {
		return nil
	}
	e := &ValidationError{Subject: subject, Violations: slices.Clone(vs), pkg: pkg}
	Sort(e.Violations)
	for _, w := range wraps {
		if w != nil && !slices.Contains(e.wraps, w) {
			e.wraps = append(e.wraps, w)
		}
	}
	return e
}

// shown is how many violations the message lists before "…".
const shown = 3

// Error returns "pkg: invalid subject: N violation(s): v1; v2; v3; …".
func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.pkg != "" {
		b.WriteString(e.pkg)
		b.WriteString(": ")
	}
	b.WriteString("invalid ")
	if e.Subject != "" {
		b.WriteString(e.Subject)
	} else {
		b.WriteString("value")
	}
	n := len(e.Violations)
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(n))
	if n == 1 {
		b.WriteString(" violation")
	} else {
		b.WriteString(" violations")
	}
	for i, v := range e.Violations {
		if i == shown {
			b.WriteString("; …")
			break
		}
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(v.String())
	}
	return b.String()
}

// Unwrap returns the sentinels the error was built with.
func (e *ValidationError) Unwrap() []error { return slices.Clone(e.wraps) }

// Has reports whether some violation breaks rule.
func (e *ValidationError) Has(rule string) bool {
	return slices.ContainsFunc(e.Violations, func(v Violation) bool { return v.Rule == rule })
}

// Sort sorts vs by Compare.
func Sort(vs []Violation) { slices.SortStableFunc(vs, Compare) }

// Compare orders violations by path, then rule, then message. Paths are
// compared token by token, a path before the longer paths it prefixes;
// array indices come before member names and compare as numbers (so /a/2
// comes before /a/10), member names compare as strings.
func Compare(a, b Violation) int {
	if c := comparePaths(a.Path, b.Path); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Rule, b.Rule); c != 0 {
		return c
	}
	return cmp.Compare(a.Message, b.Message)
}

func comparePaths(a, b string) int {
	if a == b {
		return 0
	}
	for {
		ta, resta, moreA := nextToken(a)
		tb, restb, moreB := nextToken(b)
		switch {
		case !moreA && !moreB:
			return 0
		case !moreA:
			return -1
		case !moreB:
			return 1
		}
		if c := compareTokens(ta, tb); c != 0 {
			return c
		}
		a, b = resta, restb
	}
}

// nextToken splits "/tok/rest" into "tok" and "/rest"; more is false for
// the empty path.
func nextToken(p string) (tok, rest string, more bool) {
	if p == "" {
		return "", "", false
	}
	p = strings.TrimPrefix(p, "/")
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i:], true
	}
	return p, "", true
}

// compareTokens puts array indices before member names, indices in
// numeric order (shorter digit strings are smaller: there are no leading
// zeros), names in byte order. Comparing mixed tokens as numbers in one
// place and strings in another would not be transitive.
func compareTokens(a, b string) int {
	ia, ib := isIndex(a), isIndex(b)
	switch {
	case ia && ib:
		if c := cmp.Compare(len(a), len(b)); c != 0 {
			return c
		}
	case ia:
		return -1
	case ib:
		return 1
	}
	return cmp.Compare(a, b)
}

// isIndex reports whether tok is an RFC 6901 array index: "0" or digits
// without a leading zero.
func isIndex(tok string) bool {
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return true
}

// Join returns the pointer to member name of the value at base, escaping
// "~" and "/" as RFC 6901 says.
func Join(base, name string) string {
	if strings.ContainsAny(name, "~/") {
		name = strings.NewReplacer("~", "~0", "/", "~1").Replace(name)
	}
	return base + "/" + name
}

// Index returns the pointer to element i of the array at base.
func Index(base string, i int) string { return base + "/" + strconv.Itoa(i) }
