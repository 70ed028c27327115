package canon

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// isCanonical reports whether b is exactly the canonical form of a JSON
// value, reading it once, writing nothing and allocating nothing (a key
// with escapes is compared as it is decoded). Valid uses it as the fast
// path and falls back to a full Transform only to explain a rejection.
func isCanonical(b []byte) bool {
	pos, ok := checkValue(b, 0, 0)
	return ok && pos == len(b)
}

// checkValue checks the canonical value at in[pos:], inside depth arrays
// and objects, and returns the position after it. The positions are
// passed and returned, not kept in a struct, so that they stay in
// registers.
func checkValue(in []byte, pos, depth int) (int, bool) {
	if pos >= len(in) {
		return pos, false
	}
	switch ch := in[pos]; {
	case ch == '"':
		end, _, ok := checkString(in, pos)
		return end, ok
	case ch == '{':
		return checkObject(in, pos, depth+1)
	case ch == '[':
		return checkArray(in, pos, depth+1)
	case ch == '-' || ch >= '0' && ch <= '9':
		return checkNumber(in, pos)
	case ch == 't':
		return checkLiteral(in, pos, "true")
	case ch == 'f':
		return checkLiteral(in, pos, "false")
	case ch == 'n':
		return checkLiteral(in, pos, "null")
	}
	return pos, false
}

func checkLiteral(in []byte, pos int, w string) (int, bool) {
	if !bytes.HasPrefix(in[pos:], []byte(w)) {
		return pos, false
	}
	return pos + len(w), true
}

func checkArray(in []byte, pos, depth int) (int, bool) {
	if depth > MaxDepth {
		return pos, false
	}
	pos++
	if pos < len(in) && in[pos] == ']' {
		return pos + 1, true
	}
	for {
		var ok bool
		if pos, ok = checkValue(in, pos, depth); !ok || pos >= len(in) {
			return pos, false
		}
		switch in[pos] {
		case ',':
			pos++
		case ']':
			return pos + 1, true
		default:
			return pos, false
		}
	}
}

func checkObject(in []byte, pos, depth int) (int, bool) {
	if depth > MaxDepth {
		return pos, false
	}
	pos++
	if pos < len(in) && in[pos] == '}' {
		return pos + 1, true
	}
	var prev []byte // the previous key's body, as written
	prevEsc := false
	for {
		if pos >= len(in) || in[pos] != '"' {
			return pos, false
		}
		end, esc, ok := checkString(in, pos)
		if !ok {
			return pos, false
		}
		key := in[pos+1 : end-1]
		if prev != nil && compareKeys(prev, prevEsc, key, esc) >= 0 {
			return pos, false
		}
		prev, prevEsc = key, esc
		pos = end
		if pos >= len(in) || in[pos] != ':' {
			return pos, false
		}
		pos++
		if pos >= len(in) {
			return pos, false
		}
		// Strings and numbers, the usual members, without the dispatch.
		switch c := in[pos]; {
		case c == '"':
			pos, _, ok = checkString(in, pos)
		case c >= '0' && c <= '9' || c == '-':
			pos, ok = checkNumber(in, pos)
		default:
			pos, ok = checkValue(in, pos, depth)
		}
		if !ok || pos >= len(in) {
			return pos, false
		}
		switch in[pos] {
		case ',':
			pos++
		case '}':
			return pos + 1, true
		default:
			return pos, false
		}
	}
}

// compareKeys compares two key bodies by their decoded UTF-16 code
// units; esc says whether a body is as written in canonical text, with
// escapes (checked by checkString), rather than decoded.
func compareKeys(a []byte, aEsc bool, b []byte, bEsc bool) int {
	// An ASCII byte stands for itself, but for an escape's backslash.
	escA, escB := byte(utf8.RuneSelf), byte(utf8.RuneSelf)
	if aEsc {
		escA = '\\'
	}
	if bEsc {
		escB = '\\'
	}
	for len(a) > 0 && len(b) > 0 {
		if ca, cb := a[0], b[0]; ca < utf8.RuneSelf && cb < utf8.RuneSelf && ca != escA && cb != escB {
			if ca != cb {
				return int(ca) - int(cb)
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := keyRune(a, aEsc)
		rb, nb := keyRune(b, bEsc)
		if ra != rb {
			ua, la := utf16Units(ra)
			ub, lb := utf16Units(rb)
			if ua != ub {
				return int(ua) - int(ub)
			}
			return int(la) - int(lb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// keyRune decodes the first character of a key body: with esc, as
// written in checked canonical text, where an escape stands for a
// character below 0x80; else a UTF-8 sequence.
func keyRune(s []byte, esc bool) (rune, int) {
	if c := s[0]; c == '\\' && esc {
		switch s[1] {
		case 'b':
			return '\b', 2
		case 'f':
			return '\f', 2
		case 'n':
			return '\n', 2
		case 'r':
			return '\r', 2
		case 't':
			return '\t', 2
		case 'u':
			return rune(lowerHex(s[4])<<4 | lowerHex(s[5])), 6
		}
		return rune(s[1]), 2 // '"' or '\\'
	} else if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRune(s)
}

// checkString checks the canonical string whose opening quote is at
// in[pos] and returns the position after its closing quote and whether
// it holds an escape.
func checkString(in []byte, pos int) (end int, esc bool, ok bool) {
	pos++
	for {
		if pos = skipASCII(in, pos); pos < len(in) && in[pos] >= utf8.RuneSelf {
			pos = skipUTF8(in, pos)
		}
		if pos >= len(in) {
			return pos, esc, false
		}
		switch in[pos] {
		case '"':
			return pos + 1, esc, true
		case '\\':
			esc = true
			if pos+1 >= len(in) {
				return pos, esc, false
			}
			switch in[pos+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				pos += 2
			case 'u':
				// only \u00xx (lower-case hex) for controls without a short form
				if pos+6 > len(in) || in[pos+2] != '0' || in[pos+3] != '0' {
					return pos, esc, false
				}
				hi, lo := lowerHex(in[pos+4]), lowerHex(in[pos+5])
				if hi < 0 || lo < 0 || hi > 1 {
					return pos, esc, false
				}
				switch byte(hi<<4 | lo) {
				case '\b', '\f', '\n', '\r', '\t':
					return pos, esc, false
				}
				pos += 6
			default:
				return pos, esc, false
			}
		default: // a control character, or not UTF-8
			return pos, esc, false
		}
	}
}

// lowerHex is hexDigit for the lower-case digits canonical text uses.
func lowerHex(ch byte) int {
	if ch >= 'A' && ch <= 'F' {
		return -1
	}
	return hexDigit(ch)
}

// checkNumber checks the canonical number at in[pos:].
func checkNumber(in []byte, pos int) (int, bool) {
	start := pos
	pos, isInt, bad := scanNumber(in, start)
	if bad != "" {
		return pos, false
	}
	lit := in[start:pos]
	if isInt {
		mag := lit
		if mag[0] == '-' {
			mag = mag[1:]
			if len(mag) == 1 && mag[0] == '0' {
				return pos, false // -0
			}
		}
		if len(mag) <= 15 {
			return pos, true // below 10^15 < 2^53: exact, written as its digits
		}
		if len(mag) > 21 {
			return pos, false // from 1e21 on RFC 8785 writes an exponent
		}
		// Between, it is canonical only as some double's canonical text.
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f != f {
		return pos, false
	}
	var tmp [32]byte
	return pos, bytes.Equal(AppendFloat(tmp[:0], f), lit)
}
