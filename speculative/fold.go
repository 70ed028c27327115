package speculative

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// normalizeKey returns the normal form of a JSON object key as the
// specification's vocabulary compares it: camelCase boundaries become '_'
// ("epistemicStatus" → "epistemic_status", "HTTPServer" → "http_server"),
// '-' becomes '_', and everything is lower-cased
// ("Epistemic-Status", "EPISTEMIC_STATUS" → "epistemic_status").
//
// Detection goes one step further than this normal form: a key is a marker
// when its letters and digits alone, case-folded, spell a marker. Every
// other character — separators, punctuation, white space, control and
// invisible format characters, combining marks — is ignored, and letters
// fold to their ASCII twins where they have one (the Kelvin sign to "k",
// the long s to "s", full-width Latin letters to ASCII). So every key this
// function maps to a marker is a marker, and so are "epistemic__status",
// "ePiStEmIc_StAtUs", "@lane", "epistemic:status" and
// "epistemic\u200bstatus".
func normalizeKey(key string) string {
	var b strings.Builder
	b.Grow(len(key) + 4)
	runes := []rune(key)
	for i, r := range runes {
		if r == '-' {
			b.WriteByte('_')
			continue
		}
		if unicode.IsUpper(r) && i > 0 {
			prev := runes[i-1]
			nextLower := i+1 < len(runes) && unicode.IsLower(runes[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				b.WriteByte('_')
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// foldCap is how many folded letters fold keeps: one more than the longest
// marker spelling ("speculativecontext", 18), so that "longer than" is
// visible without keeping the rest.
const foldCap = 19

// folded is a key, value or token reduced to its letters and digits,
// folded to lower-case ASCII. Letters and digits with no ASCII twin become
// 0xFF, which no marker contains.
type folded struct {
	n   int
	buf [foldCap]byte
}

// fold folds s into f, stopping once foldCap letters are kept. It never
// allocates.
func fold[T ~string | ~[]byte](s T, f *folded) {
	f.n = 0
	for i := 0; i < len(s) && f.n < foldCap; {
		var c byte
		var keep bool
		if s[i] < utf8.RuneSelf {
			c, keep = foldASCII(s[i])
			i++
		} else {
			r, size := utf8.DecodeRuneInString(string(s[i:min(len(s), i+utf8.UTFMax)]))
			i += size
			c, keep = foldRune(r)
		}
		if keep {
			f.buf[f.n] = c
			f.n++
		}
	}
}

// foldString is fold without the cap.
func foldString(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		var c byte
		var keep bool
		if r < utf8.RuneSelf {
			c, keep = foldASCII(byte(r))
		} else {
			c, keep = foldRune(r)
		}
		if keep {
			b = append(b, c)
		}
	}
	return string(b)
}

// foldASCII folds one ASCII byte: letters to lower case, digits kept,
// everything else (separators, punctuation, control characters) dropped.
func foldASCII(c byte) (byte, bool) {
	switch {
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return c, true
	case 'A' <= c && c <= 'Z':
		return c + 'a' - 'A', true
	}
	return 0, false
}

// foldRune folds a non-ASCII rune: letters and digits with an ASCII twin
// become it, other letters and digits 0xFF (they block a match), and
// everything else — white space, punctuation, symbols, format characters,
// combining marks — is dropped.
func foldRune(r rune) (byte, bool) {
	if unicode.IsLetter(r) || unicode.IsNumber(r) {
		return asciiTwin(r), true
	}
	return 0, false
}

// asciiTwin maps a non-ASCII rune to the lower-case ASCII letter it folds
// to (U+212A KELVIN SIGN → 'k', U+017F LATIN SMALL LETTER LONG S → 's',
// full-width Latin letters and digits → their ASCII forms), or 0xFF.
func asciiTwin(r rune) byte {
	switch {
	case 0xFF21 <= r && r <= 0xFF3A:
		return byte(r-0xFF21) + 'a'
	case 0xFF41 <= r && r <= 0xFF5A:
		return byte(r-0xFF41) + 'a'
	case 0xFF10 <= r && r <= 0xFF19:
		return byte(r-0xFF10) + '0'
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if 'a' <= f && f <= 'z' {
			return byte(f)
		}
		if 'A' <= f && f <= 'Z' {
			return byte(f) + 'a' - 'A'
		}
	}
	return 0xFF
}

// mayStart is a cheap pre-check: a key whose first byte is neither the
// first letter of a marker, nor a byte fold drops, nor the start of a
// non-ASCII rune cannot fold to a marker and is skipped without folding.
var mayStart = func() (t [256]bool) {
	for c := range 256 {
		if c >= utf8.RuneSelf {
			t[c] = true
			continue
		}
		f, keep := foldASCII(byte(c))
		t[c] = !keep || f == 'a' || f == 'e' || f == 'l' || f == 's'
	}
	return t
}()

// Folded spellings of the vocabulary.
const (
	fSpeculative = "speculative"
	fStatus      = "epistemicstatus"
	fLane        = "lane"
	fContext     = "speculativecontext"
)

// keyClass says what kind of marker a key is.
type keyClass uint8

const (
	keyPlain    keyClass = iota
	keyStatus            // epistemic_status or lane: a marker when its value is speculative
	keyContext           // the speculative_context family
	keyArtifact          // experiment_hints, alternatives, analogies, edge_cases
)

// classify returns the class of a key and the marker's canonical name.
func classify[T ~string | ~[]byte](key T) (keyClass, string) {
	if len(key) == 0 || !mayStart[key[0]] {
		return keyPlain, ""
	}
	var f folded
	fold(key, &f)
	return classifyFolded(&f)
}

func classifyFolded(f *folded) (keyClass, string) {
	s := f.buf[:f.n]
	switch len(s) {
	case 4:
		if string(s) == fLane {
			return keyStatus, "lane"
		}
	case 9:
		if string(s) == "analogies" || string(s) == "edgecases" {
			if s[0] == 'a' {
				return keyArtifact, "analogies"
			}
			return keyArtifact, "edge_cases"
		}
	case 12:
		if string(s) == "alternatives" {
			return keyArtifact, "alternatives"
		}
	case 15:
		if string(s) == fStatus {
			return keyStatus, "epistemic_status"
		}
		if string(s) == "experimenthints" {
			return keyArtifact, "experiment_hints"
		}
	}
	if len(s) >= len(fContext) && string(s[:len(fContext)]) == fContext {
		return keyContext, "speculative_context"
	}
	return keyPlain, ""
}

// isSpeculativeValue reports whether a string value, trimmed and folded,
// reads "speculative".
func isSpeculativeValue[T ~string | ~[]byte](v T) bool {
	if len(v) < len(fSpeculative) {
		return false
	}
	var f folded
	fold(v, &f)
	return string(f.buf[:f.n]) == fSpeculative
}

// quotedMarker is the last-resort wire of the specification: it looks at
// every stretch of text between two consecutive quote characters (' or ")
// and reports the first that folds to "speculative" or to a marker key
// other than "lane" ("lane" is only a marker together with its value, and
// that value is itself a quoted "speculative"). Backslashes count as
// separators so that escaped quotes (\"speculative\") are seen through.
func quotedMarker[T ~string | ~[]byte](s T) (string, bool) {
	open := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '"' && c != '\'' {
			continue
		}
		if open >= 0 {
			if m, ok := tokenMarker(s[open+1 : i]); ok {
				return m, true
			}
		}
		open = i
	}
	return "", false
}

func tokenMarker[T ~string | ~[]byte](tok T) (string, bool) {
	if len(tok) < 4 {
		return "", false
	}
	var f folded
	if hasUnicodeEscape(tok) {
		fold(decodeUnicodeEscapes(tok), &f)
	} else {
		fold(tok, &f)
	}
	if string(f.buf[:f.n]) == fSpeculative {
		return "speculative", true
	}
	switch cl, m := classifyFolded(&f); cl {
	case keyStatus:
		if m == "epistemic_status" {
			return m, true
		}
	case keyContext, keyArtifact:
		return m, true
	}
	return "", false
}

func hasUnicodeEscape[T ~string | ~[]byte](s T) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '\\' && s[i+1] == 'u' {
			return true
		}
	}
	return false
}

// decodeUnicodeEscapes decodes the \uXXXX escapes of a quoted token in text
// that is not JSON ("\u0073peculative_context" reads speculative_context);
// other bytes are kept, and fold drops the remaining backslashes.
func decodeUnicodeEscapes[T ~string | ~[]byte](s T) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] == '\\' && i+6 <= len(s) && s[i+1] == 'u' {
			if r, ok := hex4([]byte(s[i+2:i+6]), 0); ok {
				out = utf8.AppendRune(out, r)
				i += 6
				continue
			}
		}
		out = append(out, s[i])
		i++
	}
	return out
}
