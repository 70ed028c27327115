// Package oneline makes any text fit on one line: what every explanation
// Verity gives a model or a human goes through, whoever wrote the text
// inside it (an invariant's name, a policy's suggestion, a tool's error).
package oneline

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every character that ends or breaks a line, or
// that a terminal interprets, as a space: C0 and C1 controls (NUL, line
// feed, carriage return, tab, U+0085 NEXT LINE among them), U+2028 LINE
// SEPARATOR and U+2029 PARAGRAPH SEPARATOR; invalid UTF-8 becomes
// U+FFFD. Text that needs no change is returned as it is.
func String(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, string(utf8.RuneError)))
}
