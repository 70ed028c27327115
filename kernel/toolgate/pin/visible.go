package pin

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Invisible and look-alike characters are written as escapes, never
// rendered: ⟦U+200B ZERO WIDTH SPACE⟧, ⟦U+E0041 TAG LATIN CAPITAL
// LETTER A⟧, ⟦U+0430 CYRILLIC SMALL LETTER A⟧. What is escaped:
//
//   - Unicode TAG characters (U+E0000–U+E007F), which carry ASCII text no
//     screen shows;
//   - bidirectional controls (U+202A–U+202E, U+2066–U+2069, U+200E,
//     U+200F, U+061C), which reorder what is shown;
//   - zero-width and other format characters (general category Cf:
//     U+200B–U+200D, U+2060–U+2064, U+FEFF, U+00AD…), variation
//     selectors, control characters (tab and line feed too: what is
//     shown is one line), and
//     spaces other than U+0020 (U+00A0, U+2000–U+200A, U+3000, the
//     Hangul fillers…);
//   - look-alike letters: a Cyrillic or Greek letter in a word that
//     also holds Latin letters (mixed script, "pаypal"), or in a word
//     made only of letters that look Latin ("рау").
//   - invalid UTF-8, as ⟦invalid UTF-8 byte 0xff⟧.

// segment is a piece of shown text: as is, or an escape.
type segment struct {
	text    string
	escaped bool
}

// Visible returns s with every invisible or look-alike character written
// as a visible escape (see above), the rest as it is.
func Visible(s string) string {
	var b strings.Builder
	for _, sg := range segments(s) {
		b.WriteString(sg.text)
	}
	return b.String()
}

// segments splits s into plain text and escapes.
func segments(s string) []segment {
	var out []segment
	plain := func(t string) {
		if t == "" {
			return
		}
		if n := len(out); n > 0 && !out[n-1].escaped {
			out[n-1].text += t
			return
		}
		out = append(out, segment{text: t})
	}
	look := lookalikes(s)
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == utf8.RuneError && n == 1:
			esc = fmt.Sprintf("⟦invalid UTF-8 byte 0x%02x⟧", s[i])
		case look[i]:
			esc = escape(r)
		case hidden(r):
			esc = escape(r)
		}
		if esc != "" {
			plain(s[start:i])
			out = append(out, segment{text: esc, escaped: true})
			start = i + n
		}
		i += n
	}
	plain(s[start:])
	return out
}

// escape writes r as ⟦U+XXXX NAME⟧.
func escape(r rune) string {
	if name := runeName(r); name != "" {
		return fmt.Sprintf("⟦U+%04X %s⟧", r, name)
	}
	return fmt.Sprintf("⟦U+%04X⟧", r)
}

// hidden reports whether r is not shown, or shown as something else: a
// tag, a bidi control, a format or control character, a variation
// selector, a space other than U+0020, a private-use or unassigned code
// point.
func hidden(r rune) bool {
	switch {
	case r >= 0xE0000 && r <= 0xE007F, bidi(r):
		return true
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Variation_Selector, r):
		return true
	case r != ' ' && unicode.IsSpace(r), unicode.Is(unicode.Zs, r) && r != ' ':
		return true
	case r == 0x115F || r == 0x1160 || r == 0x3164 || r == 0xFFA0 || r == 0x2800 || r == 0x034F:
		return true // fillers, the blank Braille pattern, the combining grapheme joiner
	case unicode.Is(unicode.Co, r), !unicode.Is(unicode.L, r) && !unicode.IsPrint(r) && !unicode.IsGraphic(r):
		return true
	}
	return false
}

// bidi reports whether r is a bidirectional control.
func bidi(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

// tag reports whether r is a Unicode TAG character.
func tag(r rune) bool { return r >= 0xE0000 && r <= 0xE007F }

// lookalikes marks the byte offsets of s's look-alike letters: Cyrillic
// and Greek letters in a word with Latin letters, or in a word all of
// whose letters look Latin.
func lookalikes(s string) map[int]bool {
	var marks map[int]bool
	wordStart := -1
	flush := func(end int) {
		if wordStart < 0 {
			return
		}
		w := s[wordStart:end]
		latin, other, allAlike := false, false, true
		for _, r := range w {
			switch {
			case unicode.Is(unicode.Latin, r):
				latin = true
				allAlike = false
			case unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r):
				other = true
				if _, ok := homoglyphs[r]; !ok {
					allAlike = false
				}
			case unicode.IsLetter(r):
				allAlike = false
			}
		}
		if other && (latin || allAlike) {
			for i, r := range w {
				if unicode.Is(unicode.Cyrillic, r) || unicode.Is(unicode.Greek, r) {
					if marks == nil {
						marks = map[int]bool{}
					}
					marks[wordStart+i] = true
				}
			}
		}
		wordStart = -1
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.Is(unicode.Mn, r) {
			if wordStart < 0 {
				wordStart = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	return marks
}

// homoglyphs are Cyrillic and Greek letters that look like Latin ones.
var homoglyphs = map[rune]string{
	'а': "CYRILLIC SMALL LETTER A", 'е': "CYRILLIC SMALL LETTER IE", 'о': "CYRILLIC SMALL LETTER O",
	'р': "CYRILLIC SMALL LETTER ER", 'с': "CYRILLIC SMALL LETTER ES", 'у': "CYRILLIC SMALL LETTER U",
	'х': "CYRILLIC SMALL LETTER HA", 'і': "CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I",
	'ј': "CYRILLIC SMALL LETTER JE", 'ѕ': "CYRILLIC SMALL LETTER DZE", 'ԁ': "CYRILLIC SMALL LETTER KOMI DE",
	'ԛ': "CYRILLIC SMALL LETTER QA", 'ԝ': "CYRILLIC SMALL LETTER WE", 'һ': "CYRILLIC SMALL LETTER SHHA",
	'ӏ': "CYRILLIC SMALL LETTER PALOCHKA",
	'А': "CYRILLIC CAPITAL LETTER A", 'В': "CYRILLIC CAPITAL LETTER VE", 'Е': "CYRILLIC CAPITAL LETTER IE",
	'К': "CYRILLIC CAPITAL LETTER KA", 'М': "CYRILLIC CAPITAL LETTER EM", 'Н': "CYRILLIC CAPITAL LETTER EN",
	'О': "CYRILLIC CAPITAL LETTER O", 'Р': "CYRILLIC CAPITAL LETTER ER", 'С': "CYRILLIC CAPITAL LETTER ES",
	'Т': "CYRILLIC CAPITAL LETTER TE", 'Х': "CYRILLIC CAPITAL LETTER HA", 'І': "CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I",
	'Ј': "CYRILLIC CAPITAL LETTER JE", 'Ѕ': "CYRILLIC CAPITAL LETTER DZE", 'Ү': "CYRILLIC CAPITAL LETTER STRAIGHT U",
	'ο': "GREEK SMALL LETTER OMICRON", 'α': "GREEK SMALL LETTER ALPHA", 'ν': "GREEK SMALL LETTER NU",
	'ρ': "GREEK SMALL LETTER RHO", 'ι': "GREEK SMALL LETTER IOTA", 'κ': "GREEK SMALL LETTER KAPPA",
	'υ': "GREEK SMALL LETTER UPSILON", 'χ': "GREEK SMALL LETTER CHI",
	'Α': "GREEK CAPITAL LETTER ALPHA", 'Β': "GREEK CAPITAL LETTER BETA", 'Ε': "GREEK CAPITAL LETTER EPSILON",
	'Ζ': "GREEK CAPITAL LETTER ZETA", 'Η': "GREEK CAPITAL LETTER ETA", 'Ι': "GREEK CAPITAL LETTER IOTA",
	'Κ': "GREEK CAPITAL LETTER KAPPA", 'Μ': "GREEK CAPITAL LETTER MU", 'Ν': "GREEK CAPITAL LETTER NU",
	'Ο': "GREEK CAPITAL LETTER OMICRON", 'Ρ': "GREEK CAPITAL LETTER RHO", 'Τ': "GREEK CAPITAL LETTER TAU",
	'Υ': "GREEK CAPITAL LETTER UPSILON", 'Χ': "GREEK CAPITAL LETTER CHI",
}

// formatNames names the invisible characters most used to hide text.
var formatNames = map[rune]string{
	0x09: "CHARACTER TABULATION", 0x0A: "LINE FEED", 0x0D: "CARRIAGE RETURN", 0x1B: "ESCAPE",
	0x7F: "DELETE", 0x85: "NEXT LINE", 0x00A0: "NO-BREAK SPACE", 0x00AD: "SOFT HYPHEN", 0x034F: "COMBINING GRAPHEME JOINER",
	0x061C: "ARABIC LETTER MARK", 0x115F: "HANGUL CHOSEONG FILLER", 0x1160: "HANGUL JUNGSEONG FILLER",
	0x180E: "MONGOLIAN VOWEL SEPARATOR", 0x200B: "ZERO WIDTH SPACE", 0x200C: "ZERO WIDTH NON-JOINER",
	0x200D: "ZERO WIDTH JOINER", 0x200E: "LEFT-TO-RIGHT MARK", 0x200F: "RIGHT-TO-LEFT MARK",
	0x2028: "LINE SEPARATOR", 0x2029: "PARAGRAPH SEPARATOR",
	0x202A: "LEFT-TO-RIGHT EMBEDDING", 0x202B: "RIGHT-TO-LEFT EMBEDDING", 0x202C: "POP DIRECTIONAL FORMATTING",
	0x202D: "LEFT-TO-RIGHT OVERRIDE", 0x202E: "RIGHT-TO-LEFT OVERRIDE", 0x202F: "NARROW NO-BREAK SPACE",
	0x205F: "MEDIUM MATHEMATICAL SPACE", 0x2060: "WORD JOINER", 0x2061: "FUNCTION APPLICATION",
	0x2062: "INVISIBLE TIMES", 0x2063: "INVISIBLE SEPARATOR", 0x2064: "INVISIBLE PLUS",
	0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE",
	0x2069: "POP DIRECTIONAL ISOLATE", 0x2800: "BRAILLE PATTERN BLANK", 0x3000: "IDEOGRAPHIC SPACE",
	0x3164: "HANGUL FILLER", 0xFEFF: "ZERO WIDTH NO-BREAK SPACE", 0xFFA0: "HALFWIDTH HANGUL FILLER",
	0xFFF9: "INTERLINEAR ANNOTATION ANCHOR", 0xFFFA: "INTERLINEAR ANNOTATION SEPARATOR",
	0xFFFB: "INTERLINEAR ANNOTATION TERMINATOR", 0xE0001: "LANGUAGE TAG", 0xE007F: "CANCEL TAG",
}

// runeName names r when it is one this file knows, else its kind.
func runeName(r rune) string {
	if n, ok := formatNames[r]; ok {
		return n
	}
	if n := homoglyphs[r]; n != "" {
		return n
	}
	switch {
	case r >= 0xE0020 && r <= 0xE007E:
		return "TAG " + asciiName(byte(r-0xE0000))
	case tag(r):
		return "TAG"
	case r >= 0xFE00 && r <= 0xFE0F:
		return fmt.Sprintf("VARIATION SELECTOR-%d", r-0xFE00+1)
	case r >= 0xE0100 && r <= 0xE01EF:
		return fmt.Sprintf("VARIATION SELECTOR-%d", r-0xE0100+17)
	case r >= 0x2000 && r <= 0x200A:
		return "SPACE"
	case unicode.IsControl(r):
		return "CONTROL"
	case unicode.Is(unicode.Cyrillic, r):
		return "CYRILLIC LETTER"
	case unicode.Is(unicode.Greek, r):
		return "GREEK LETTER"
	case unicode.Is(unicode.Cf, r):
		return "FORMAT CHARACTER"
	case unicode.Is(unicode.Co, r):
		return "PRIVATE USE"
	}
	return ""
}

// asciiName names the printable ASCII character c as Unicode does.
func asciiName(c byte) string {
	switch {
	case c >= 'A' && c <= 'Z':
		return "LATIN CAPITAL LETTER " + string(c)
	case c >= 'a' && c <= 'z':
		return "LATIN SMALL LETTER " + string(c-'a'+'A')
	case c >= '0' && c <= '9':
		return "DIGIT " + [...]string{"ZERO", "ONE", "TWO", "THREE", "FOUR", "FIVE", "SIX", "SEVEN", "EIGHT", "NINE"}[c-'0']
	case c == ' ':
		return "SPACE"
	}
	return fmt.Sprintf("%q", string(c))
}
