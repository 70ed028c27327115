package oneline

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// TestStringIsOneLine: whatever goes in, what comes out is valid UTF-8
// without a control character or a line or paragraph separator, and text
// without them is unchanged.
func TestStringIsOneLine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringMatching("[a-z\n\r\x00\u0085\u2028\u2029\u202e é]*"),
			rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) })).Draw(t, "s")
		got := String(s)
		if !utf8.ValidString(got) {
			t.Fatalf("%q: invalid UTF-8 out", got)
		}
		for _, r := range got {
			if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
				t.Fatalf("%q → %q keeps %U", s, got, r)
			}
		}
		if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool {
			return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
		}) && got != s {
			t.Fatalf("%q changed to %q", s, got)
		}
	})
}

func TestStringExamples(t *testing.T) {
	for in, want := range map[string]string{
		"ask a human.\nThen retry.":   "ask a human. Then retry.",
		"a\u2028b\u2029c\x00d\u0085e": "a b c d e",
		"bad \xff byte":               "bad \uFFFD byte",
		"plain":                       "plain",
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}
