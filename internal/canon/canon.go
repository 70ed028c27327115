package canon

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf16"
)

// MaxDepth is the deepest nesting of arrays and objects Transform accepts.
// A deeper document is rejected with ErrTooDeep rather than risking the
// stack or the time of whoever verifies it later.
const MaxDepth = 512

// MaxSafeInteger is 2^53−1: every integer of at most this magnitude is a
// double, its neighbours are too, and its canonical text is its plain
// decimal digits, so every JSON reader — one that parses numbers as doubles
// or one that parses them as integers — reads it back as the same integer.
// Beyond it canonical JSON still accepts the integers that are doubles (see
// ErrUnsafeInteger), but from 2^60 on, say, RFC 8785 writes them with
// rounded digits (1152921504606846976 becomes 1152921504606847000), so an
// encoder that means integers keeps to this range.
const MaxSafeInteger = 1<<53 - 1

// Sentinel errors, wrapped in *SyntaxError so that callers learn where.
var (
	ErrSyntax         = errors.New("canon: invalid JSON")
	ErrDuplicateKey   = errors.New("canon: duplicate object key")
	ErrLoneSurrogate  = errors.New("canon: lone surrogate in string")
	ErrInvalidUTF8    = errors.New("canon: invalid UTF-8 in string")
	ErrNonFinite      = errors.New("canon: number is not finite")
	ErrTooDeep        = errors.New("canon: nesting too deep")
	ErrUnsafeInteger  = errors.New("canon: integer would not be read back as the same number; send it as a decimal string")
	ErrNotCanonical   = errors.New("canon: not in canonical form")
	ErrUnsupportedVal = errors.New("canon: unsupported Go value")
)

// SyntaxError reports a rejected document: the byte offset where the
// problem was found and the sentinel error that names it.
type SyntaxError struct {
	Offset int    // byte offset into the input
	Err    error  // one of the sentinel errors above
	Detail string // a human hint, may be empty
}

func (e *SyntaxError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%v at offset %d: %s", e.Err, e.Offset, e.Detail)
	}
	return fmt.Sprintf("%v at offset %d", e.Err, e.Offset)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// Transform returns the RFC 8785 canonical form of the JSON text in.
// It never modifies in. See the package documentation for what it rejects.
func Transform(in []byte) ([]byte, error) {
	return AppendTransform(make([]byte, 0, len(in)), in)
}

// AppendTransform appends the canonical form of in to dst. On error dst is
// returned unchanged in length (its spare capacity may have been written).
func AppendTransform(dst, in []byte) ([]byte, error) {
	return appendTransform(dst, in, 0)
}

// appendTransform is AppendTransform for a text that sits inside depth
// arrays and objects, which count towards MaxDepth.
func appendTransform(dst, in []byte, depth int) ([]byte, error) {
	return appendTransformMode(dst, in, depth, false)
}

// appendTransformMode is appendTransform; with sameDigits, an integer
// literal is accepted only when canonical JSON writes it with the same
// digits (see Marshal).
func appendTransformMode(dst, in []byte, depth int, sameDigits bool) ([]byte, error) {
	p := parser{out: dst, sameDigits: sameDigits}
	p.Reset(in, depth, MaxDepth)
	if err := p.top(); err != nil {
		return dst, err
	}
	return p.out, nil
}

// Valid reports whether b is already exactly in canonical form: it is
// Transform(b) == b without keeping the copy. It returns nil or an error
// saying what is wrong.
func Valid(b []byte) error {
	if isCanonical(b) {
		return nil
	}
	p := parserPool.Get().(*parser)
	defer func() {
		if cap(p.out) <= 64<<10 {
			*p = parser{Scanner: Scanner{scratch: p.scratch[:0]}, out: p.out[:0], members: p.members[:0], reordered: p.reordered[:0]}
			parserPool.Put(p)
		}
	}()
	p.Reset(b, 0, MaxDepth)
	if err := p.top(); err != nil {
		return err
	}
	if !bytes.Equal(p.out, b) {
		at := 0
		for at < len(p.out) && at < len(b) && p.out[at] == b[at] {
			at++
		}
		return &SyntaxError{Offset: at, Err: ErrNotCanonical}
	}
	return nil
}

// parserPool recycles the buffers Valid needs, so checking a payload on a
// hot path does not allocate.
var parserPool = sync.Pool{New: func() any { return new(parser) }}

type member struct {
	key        []byte // decoded key (may alias the input)
	start, end int    // span of `"key":value` in out, without commas
}

// parser writes the canonical form of what its Scanner reads.
type parser struct {
	Scanner
	out       []byte
	members   []member // a stack shared by all open objects
	reordered []byte   // reorder buffer

	sameDigits bool // Marshal's rule: an integer literal keeps its digits
}

// top reads the one value of the text and what may follow it.
func (p *parser) top() error {
	if err := p.value(); err != nil {
		return err
	}
	return p.Finish()
}

func (p *parser) value() error {
	switch c := p.Peek(); {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, _, err := p.ReadString()
		if err != nil {
			return err
		}
		p.out = AppendString(p.out, s)
		return nil
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	return p.Unexpected()
}

func (p *parser) literal(word string) error {
	if err := p.ReadLiteral(word); err != nil {
		return err
	}
	p.out = append(p.out, word...)
	return nil
}

// open enters the array or object at the next byte and writes its
// opening bracket, or both brackets when it is empty; done is true when
// it was empty or refused.
func (p *parser) open(brackets string) (done bool, err error) {
	empty, err := p.Open()
	switch {
	case err != nil:
		return true, err
	case empty:
		p.out = append(p.out, brackets...)
		return true, nil
	}
	p.out = append(p.out, brackets[0])
	return false, nil
}

func (p *parser) array() error {
	if done, err := p.open("[]"); done {
		return err
	}
	for {
		if err := p.value(); err != nil {
			return err
		}
		more, err := p.Next(']')
		if err != nil {
			return err
		}
		if !more {
			p.out = append(p.out, ']')
			return nil
		}
		p.out = append(p.out, ',')
	}
}

func (p *parser) object() error {
	objStart := p.pos
	if done, err := p.open("{}"); done {
		return err
	}
	base := len(p.members)
	defer func() { p.members = p.members[:base] }()
	sorted := true
	for {
		key, keyAt, esc, err := p.Key()
		if err != nil {
			return err
		}
		if len(p.members) > base {
			prev := p.members[len(p.members)-1].key
			switch c := CompareUTF16(prev, key); {
			case c == 0:
				return &SyntaxError{Offset: keyAt, Err: ErrDuplicateKey, Detail: strconv.Quote(string(key))}
			case c > 0:
				sorted = false
			}
			p.out = append(p.out, ',')
		}
		if esc {
			p.scratch = nil // the key keeps the buffer it was unescaped into
		}
		start := len(p.out)
		p.out = AppendString(p.out, key)
		p.out = append(p.out, ':')
		if err := p.value(); err != nil {
			return err
		}
		p.members = append(p.members, member{key: key, start: start, end: len(p.out)})
		more, err := p.Next('}')
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if !sorted {
		if err := p.reorder(base, objStart); err != nil {
			return err
		}
	}
	p.out = append(p.out, '}')
	return nil
}

// reorder sorts the members of the object whose members start at base and
// rewrites their bytes in p.out in sorted order.
func (p *parser) reorder(base, objStart int) error {
	ms := p.members[base:]
	// insertion sort is fine for small objects; use a stable merge for large.
	sortMembers(ms)
	for i := 1; i < len(ms); i++ {
		if CompareUTF16(ms[i-1].key, ms[i].key) == 0 {
			return &SyntaxError{Offset: objStart, Err: ErrDuplicateKey, Detail: strconv.Quote(string(ms[i].key))}
		}
	}
	regionStart := len(p.out)
	for _, m := range ms {
		if m.start < regionStart {
			regionStart = m.start
		}
	}
	p.reordered = append(p.reordered[:0], p.out[regionStart:]...)
	p.out = p.out[:regionStart]
	for i, m := range ms {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.out = append(p.out, p.reordered[m.start-regionStart:m.end-regionStart]...)
	}
	return nil
}

func sortMembers(ms []member) {
	if len(ms) <= 12 {
		for i := 1; i < len(ms); i++ {
			for j := i; j > 0 && CompareUTF16(ms[j-1].key, ms[j].key) > 0; j-- {
				ms[j-1], ms[j] = ms[j], ms[j-1]
			}
		}
		return
	}
	mid := len(ms) / 2
	sortMembers(ms[:mid])
	sortMembers(ms[mid:])
	merged := make([]member, 0, len(ms))
	i, j := 0, mid
	for i < mid && j < len(ms) {
		if CompareUTF16(ms[j].key, ms[i].key) < 0 {
			merged = append(merged, ms[j])
			j++
		} else {
			merged = append(merged, ms[i])
			i++
		}
	}
	merged = append(merged, ms[i:mid]...)
	merged = append(merged, ms[j:]...)
	copy(ms, merged)
}

// CompareUTF16 orders two UTF-8 strings by their UTF-16 code units, the key
// order RFC 8785 prescribes. It differs from byte order only where a
// character above U+FFFF meets one in U+E000..U+FFFF.
func CompareUTF16(a, b []byte) int { return compareKeys(a, false, b, false) }

func utf16Units(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	hi, lo := utf16.EncodeRune(r)
	return uint16(hi), uint16(lo)
}

func (p *parser) number() error {
	start := p.pos
	lit, f, isInt, err := p.ReadFloat()
	if err != nil {
		return err
	}
	n := len(p.out)
	p.out = AppendFloat(p.out, f)
	if isInt && p.sameDigits && !bytes.Equal(p.out[n:], lit) {
		return &SyntaxError{Offset: start, Err: ErrUnsafeInteger, Detail: string(lit) + " would be written " + string(p.out[n:])}
	}
	return nil
}

// intLiteral returns the double that the integer literal lit (an optional
// '-' and digits, no fraction, no exponent) stands for, and whether
// canonical JSON accepts it: when lit is exactly that double's value
// (9007199254740992, 1000000000000000000000), or when lit is that double's
// own canonical text (1152921504606847000, which RFC 8785 writes for 2^60
// although it is 24 above it). Any other integer literal would be read by
// a double-parsing reader as a different number than its digits say
// (9007199254740993 as 9007199254740992), so it is refused.
func intLiteral(lit []byte) (float64, bool) {
	mag := lit
	if mag[0] == '-' {
		mag = mag[1:]
	}
	if len(mag) <= 16 {
		if u, _ := strconv.ParseUint(string(mag), 10, 64); u <= MaxSafeInteger {
			if len(mag) < len(lit) {
				return -float64(u), true // exact
			}
			return float64(u), true
		}
	}
	if len(mag) > maxIntDigits {
		return 0, false // beyond the largest double
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return 0, false // overflow
	}
	var tmp [maxIntDigits + 1]byte
	a := math.Abs(f)
	if bytes.Equal(AppendFloat(tmp[:0], a), mag) || bytes.Equal(strconv.AppendFloat(tmp[:0], a, 'f', 0, 64), mag) {
		return f, true
	}
	return 0, false
}

// maxIntDigits is the number of digits of the largest double's integer
// value (1.7976931348623157e308 has 309).
const maxIntDigits = 309

// AppendFloat appends the ECMAScript (ES2015 Number.prototype.toString)
// form of a finite f, as RFC 8785 §3.2.2.3 prescribes. f must be finite:
// for NaN or ±Inf the output is not JSON, so callers check first (Marshal
// and Transform do).
func AppendFloat(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if f == math.Trunc(f) && f >= -MaxSafeInteger && f <= MaxSafeInteger {
		// An integer up to 2^53−1 is written as its decimal digits.
		return strconv.AppendInt(dst, int64(f), 10)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits and exponent.
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d.ddddde±XX
	mant := e
	exp := 0
	for i, c := range e {
		if c == 'e' {
			mant = e[:i]
			x, _ := strconv.Atoi(string(e[i+1:]))
			exp = x
			break
		}
	}
	var digs [24]byte
	d := digs[:0]
	for _, c := range mant {
		if c != '.' {
			d = append(d, c)
		}
	}
	k := len(d)
	n := exp + 1 // value = 0.d × 10^n
	switch {
	case k <= n && n <= 21:
		dst = append(dst, d...)
		for i := 0; i < n-k; i++ {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, d[:n]...)
		dst = append(dst, '.')
		dst = append(dst, d[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for i := 0; i < -n; i++ {
			dst = append(dst, '0')
		}
		dst = append(dst, d...)
	default:
		dst = append(dst, d[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, d[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// AppendString appends s (UTF-8) as a canonical JSON string: only '"', '\\'
// and control characters are escaped; \b \f \n \r \t use their short forms
// and the others \u00xx in lower-case hex. s must be valid UTF-8.
func AppendString[T ~string | ~[]byte](dst []byte, s T) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
