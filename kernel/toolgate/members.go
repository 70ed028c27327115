package toolgate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Member names that differ only in case. encoding/json matches a member
// to a struct field case-insensitively (Unicode simple case folding, as
// strings.EqualFold) and the last such member wins: a Go tool reading
// {"path": "/srv/data/a", "Path": "/etc/passwd"} into a struct reads
// /etc/passwd, while the gate, reading the member "path" exactly, would
// check /srv/data/a. Arguments with two such members in one object, at
// any depth, are not one JSON value every reader reads the same way.

// caseFolded returns an error naming two members of one object in v (a
// canon.Decode tree, at any depth) whose names differ but are equal
// under Unicode simple case folding, or nil. Which pair it names, when
// there are several, does not depend on map order.
func caseFolded(v any) error {
	if !hasCaseFolded(v) {
		return nil
	}
	a, b, at := firstCaseFolded(v, "")
	where := ""
	if at != "" {
		where = " at " + at
	}
	return fmt.Errorf("members %s and %s%s differ only in case", quoteName(a), quoteName(b), where)
}

// smallObject is the size up to which an object's names are compared
// pair by pair; a larger one is checked through a set of folded names.
const smallObject = 16

// hasCaseFolded reports whether some object in v has two names equal
// under case folding. It allocates only for objects larger than
// smallObject.
func hasCaseFolded(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > smallObject {
			seen := make(map[string]struct{}, len(x))
			for k := range x {
				f := foldName(k)
				if _, dup := seen[f]; dup {
					return true
				}
				seen[f] = struct{}{}
			}
		} else if len(x) > 1 {
			var names [smallObject]string
			n := 0
			for k := range x {
				for _, prev := range names[:n] {
					if strings.EqualFold(prev, k) {
						return true
					}
				}
				names[n] = k
				n++
			}
		}
		for _, c := range x {
			if hasCaseFolded(c) {
				return true
			}
		}
	case []any:
		for _, c := range x {
			if hasCaseFolded(c) {
				return true
			}
		}
	}
	return false
}

// firstCaseFolded returns the first pair of names equal under case
// folding, in an object of v, and the JSON Pointer of that object,
// reading every object's names in sorted order and the object's own
// names before its members' values.
func firstCaseFolded(v any, at string) (a, b, where string) {
	switch x := v.(type) {
	case map[string]any:
		names := slices.Sorted(maps.Keys(x))
		for i, n := range names {
			for _, m := range names[i+1:] {
				if strings.EqualFold(n, m) {
					return n, m, at
				}
			}
		}
		for _, n := range names {
			if a, b, w := firstCaseFolded(x[n], at+"/"+escapeToken(n)); a != "" || b != "" {
				return a, b, w
			}
		}
	case []any:
		for i, c := range x {
			if a, b, w := firstCaseFolded(c, at+"/"+strconv.Itoa(i)); a != "" || b != "" {
				return a, b, w
			}
		}
	}
	return "", "", ""
}

// foldName maps each rune of s to the smallest rune of its case-folding
// orbit: foldName(a) == foldName(b) exactly when strings.EqualFold(a, b).
func foldName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			b.WriteByte(byte(r))
			continue
		}
		for {
			f := unicode.SimpleFold(r)
			if f <= r {
				r = f
				break
			}
			r = f
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapeToken escapes a member name as an RFC 6901 reference token.
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// quoteName quotes a member name for an explanation, at most 64 bytes
// of it, every rune beyond ASCII escaped: the Kelvin sign is "\u212a",
// not a K.
func quoteName(s string) string {
	if len(s) > 64 {
		n := 64
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		return strconv.QuoteToASCII(s[:n]) + "…"
	}
	return strconv.QuoteToASCII(s)
}
