package canon

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf8"
)

// refIsCanonical is a second, plainer canonical-form check, a reference
// for isCanonical: it keeps its position in a struct and decodes a key
// with escapes into a fresh buffer to compare it. FuzzCanonicalCheck
// holds the two, and Transform, to the same answers.
func refIsCanonical(b []byte) bool {
	c := refChecker{in: b}
	return c.value() && c.pos == len(b)
}

type refChecker struct {
	in    []byte
	pos   int
	depth int
}

func (c *refChecker) value() bool {
	if c.pos >= len(c.in) {
		return false
	}
	switch ch := c.in[c.pos]; {
	case ch == '{':
		return c.object()
	case ch == '[':
		return c.array()
	case ch == '"':
		_, ok := c.str()
		return ok
	case ch == 't':
		return c.lit("true")
	case ch == 'f':
		return c.lit("false")
	case ch == 'n':
		return c.lit("null")
	case ch == '-' || ch >= '0' && ch <= '9':
		return c.number()
	}
	return false
}

func (c *refChecker) lit(w string) bool {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(w)) {
		return false
	}
	c.pos += len(w)
	return true
}

func (c *refChecker) array() bool {
	if c.depth++; c.depth > MaxDepth {
		return false
	}
	c.pos++
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.depth--
		return true
	}
	for {
		if !c.value() || c.pos >= len(c.in) {
			return false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			c.depth--
			return true
		default:
			return false
		}
	}
}

func (c *refChecker) object() bool {
	if c.depth++; c.depth > MaxDepth {
		return false
	}
	c.pos++
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.depth--
		return true
	}
	var prev []byte
	first := true
	for {
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return false
		}
		// A key without escapes is a slice of the input; one with escapes
		// is decoded into a fresh buffer (rare in canonical text).
		key, ok := c.str()
		if !ok {
			return false
		}
		if !first && CompareUTF16(prev, key) >= 0 {
			return false
		}
		prev, first = key, false
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return false
		}
		c.pos++
		if !c.value() || c.pos >= len(c.in) {
			return false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
		case '}':
			c.pos++
			c.depth--
			return true
		default:
			return false
		}
	}
}

// str checks a canonical string at c.pos. It returns the decoded bytes:
// a slice of the input when there are no escapes, else a new buffer.
func (c *refChecker) str() ([]byte, bool) {
	c.pos++
	start := c.pos
	var buf []byte // decoded bytes, once an escape has been seen
	runStart := start
	in := c.in
	for {
		for c.pos+8 <= len(in) && plainWord(binary.LittleEndian.Uint64(in[c.pos:])) {
			c.pos += 8
		}
		for c.pos < len(in) && plainASCII[in[c.pos]] {
			c.pos++
		}
		if c.pos >= len(in) {
			return nil, false
		}
		switch ch := in[c.pos]; {
		case ch == '"':
			c.pos++
			if buf == nil {
				return in[start : c.pos-1], true
			}
			return append(buf, in[runStart:c.pos-1]...), true
		case ch >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(in[c.pos:])
			if r == utf8.RuneError && n <= 1 {
				return nil, false
			}
			c.pos += n
		case ch < 0x20:
			return nil, false
		default: // '\\'
			if buf == nil {
				buf = make([]byte, 0, c.pos-start+16)
			}
			buf = append(buf, in[runStart:c.pos]...)
			if c.pos+1 >= len(in) {
				return nil, false
			}
			var r byte
			switch in[c.pos+1] {
			case '"':
				r = '"'
			case '\\':
				r = '\\'
			case 'b':
				r = '\b'
			case 'f':
				r = '\f'
			case 'n':
				r = '\n'
			case 'r':
				r = '\r'
			case 't':
				r = '\t'
			case 'u':
				// only \u00xx (lower-case hex) for controls without a short form
				if c.pos+6 > len(in) || in[c.pos+2] != '0' || in[c.pos+3] != '0' {
					return nil, false
				}
				hi, lo := lowerHex(in[c.pos+4]), lowerHex(in[c.pos+5])
				if hi < 0 || lo < 0 || hi > 1 {
					return nil, false
				}
				r = byte(hi<<4 | lo)
				switch r {
				case '\b', '\f', '\n', '\r', '\t':
					return nil, false
				}
				buf = append(buf, r)
				c.pos += 6
				runStart = c.pos
				continue
			default:
				return nil, false
			}
			buf = append(buf, r)
			c.pos += 2
			runStart = c.pos
		}
	}
}

func (c *refChecker) number() bool {
	start := c.pos
	if c.in[c.pos] == '-' {
		c.pos++
	}
	digits := func() int {
		n := 0
		for c.pos < len(c.in) && c.in[c.pos] >= '0' && c.in[c.pos] <= '9' {
			c.pos++
			n++
		}
		return n
	}
	intStart := c.pos
	n := digits()
	if n == 0 || n > 1 && c.in[intStart] == '0' {
		return false
	}
	frac := false
	if c.pos < len(c.in) && c.in[c.pos] == '.' {
		frac = true
		c.pos++
		if digits() == 0 {
			return false
		}
	}
	if c.pos < len(c.in) && (c.in[c.pos] == 'e' || c.in[c.pos] == 'E') {
		frac = true
		c.pos++
		if c.pos < len(c.in) && (c.in[c.pos] == '+' || c.in[c.pos] == '-') {
			c.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	lit := c.in[start:c.pos]
	if !frac {
		if string(lit) == "-0" {
			return false
		}
		if n <= 15 {
			return true // below 10^15 < 2^53: exact, written as its digits
		}
		if n > 21 {
			return false // from 1e21 on RFC 8785 writes an exponent
		}
		// Between, it is canonical only as some double's canonical text.
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || f != f {
		return false
	}
	var tmp [32]byte
	return bytes.Equal(AppendFloat(tmp[:0], f), lit)
}
