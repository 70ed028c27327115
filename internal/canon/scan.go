package canon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Scanner reads the tokens of one JSON text by the rules of strict JSON,
// the ones Transform enforces: RFC 8259's grammar, valid UTF-8, no lone
// surrogate, no integer literal a double reader would round, no number
// beyond the doubles, nesting at most MaxDepth deep. Transform is built on
// it, and so is every reader that parses JSON on its own
// (internal/strictjson), so these rules are written once.
//
// A Scanner knows the tokens, not the document: its caller dispatches on
// Peek, reads a string, a number or a literal (ReadString, ReadNumber,
// ReadLiteral), or opens an object or an array (Open) and walks its
// members and elements (Key, Next). Duplicate keys are the caller's to
// find, since only the caller keeps the keys. Every error is a
// *SyntaxError with the byte offset and one of the sentinel errors.
type Scanner struct {
	in       []byte
	pos      int
	depth    int
	maxDepth int
	scratch  []byte // unescaped strings
}

// Reset makes s read in from its start, nested depth levels deep already
// and with maxDepth levels allowed (0 means MaxDepth). The buffer of
// unescaped strings is kept for the next text, up to 64 KiB.
func (s *Scanner) Reset(in []byte, depth, maxDepth int) {
	if maxDepth <= 0 {
		maxDepth = MaxDepth
	}
	scratch := s.scratch[:0]
	if cap(scratch) > 64<<10 {
		scratch = nil
	}
	*s = Scanner{in: in, depth: depth, maxDepth: maxDepth, scratch: scratch}
}

// Input returns the text being read.
func (s *Scanner) Input() []byte { return s.in }

// Offset returns the byte offset of the next unread byte.
func (s *Scanner) Offset() int { return s.pos }

// SetOffset goes back (or on) to an offset Offset returned.
func (s *Scanner) SetOffset(off int) { s.pos = off }

// Depth returns how many arrays and objects are open.
func (s *Scanner) Depth() int { return s.depth }

// SetDepth restores a depth Depth returned, after a caller abandoned the
// values it had opened and went back with SetOffset.
func (s *Scanner) SetDepth(depth int) { s.depth = depth }

// SkipSpace passes over JSON white space.
func (s *Scanner) SkipSpace() {
	for s.pos < len(s.in) && isSpace[s.in[s.pos]] {
		s.pos++
	}
}

// isSpace marks JSON's white space.
var isSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// Peek passes over white space and returns the next byte, or 0 at the
// end of the input: '{', '[', '"', 't', 'f', 'n', '-' or a digit start a
// value, anything else is an error (Unexpected).
func (s *Scanner) Peek() byte {
	s.SkipSpace()
	if s.pos >= len(s.in) {
		return 0
	}
	return s.in[s.pos]
}

// Fail returns err (a sentinel) as a *SyntaxError at the next unread byte.
func (s *Scanner) Fail(err error, detail string) error {
	return &SyntaxError{Offset: s.pos, Err: err, Detail: detail}
}

// Unexpected returns the error for a next byte that starts no value.
func (s *Scanner) Unexpected() error {
	if s.pos >= len(s.in) {
		return s.Fail(ErrSyntax, "unexpected end of input")
	}
	return s.Fail(ErrSyntax, fmt.Sprintf("unexpected character %q", s.in[s.pos]))
}

// Finish passes over trailing white space and reports anything after
// the top-level value.
func (s *Scanner) Finish() error {
	s.SkipSpace()
	if s.pos != len(s.in) {
		return s.Fail(ErrSyntax, "data after the top-level value")
	}
	return nil
}

// ReadLiteral reads the literal word (true, false or null) at the next byte.
func (s *Scanner) ReadLiteral(word string) error {
	if !bytes.HasPrefix(s.in[s.pos:], []byte(word)) {
		return s.Fail(ErrSyntax, "invalid literal")
	}
	s.pos += len(word)
	return nil
}

// Open enters the object or array whose '{' or '[' is the next byte and
// passes over white space after it. When it is empty, Open reads its
// closing bracket too, leaves it and reports empty.
func (s *Scanner) Open() (empty bool, err error) {
	if s.depth++; s.depth > s.maxDepth {
		return false, s.tooDeep()
	}
	closer := s.in[s.pos] + 2 // '{'+2 == '}', '['+2 == ']'
	if s.pos++; s.Peek() != closer {
		return false, nil
	}
	s.pos++
	s.depth--
	return true, nil
}

func (s *Scanner) tooDeep() error {
	return s.Fail(ErrTooDeep, fmt.Sprintf("more than %d levels", s.maxDepth))
}

// Key reads an object member's key and the ':' after it, and passes over
// white space up to the value. It returns the key unescaped (valid until
// the next ReadString or Key when it held an escape, else aliasing the
// input), its offset and whether it held an escape.
func (s *Scanner) Key() (key []byte, at int, escaped bool, err error) {
	s.SkipSpace()
	at = s.pos
	if s.pos >= len(s.in) || s.in[s.pos] != '"' {
		return nil, at, false, s.Fail(ErrSyntax, "expected a string key")
	}
	if key, escaped, err = s.ReadString(); err != nil {
		return nil, at, escaped, err
	}
	s.SkipSpace()
	if s.pos >= len(s.in) || s.in[s.pos] != ':' {
		return nil, at, escaped, s.Fail(ErrSyntax, "expected ':' after key")
	}
	s.pos++
	s.SkipSpace()
	return key, at, escaped, nil
}

// Next reads what follows a member or an element of the open object
// (closer '}') or array (closer ']'): a ',' (more is true) or the closer,
// which leaves it.
func (s *Scanner) Next(closer byte) (more bool, err error) {
	if s.SkipSpace(); s.pos < len(s.in) {
		if c := s.in[s.pos]; c == ',' {
			s.pos++
			return true, nil
		} else if c == closer {
			s.pos++
			s.depth--
			return false, nil
		}
	}
	return false, s.notNext(closer)
}

// notNext says what Next expected.
func (s *Scanner) notNext(closer byte) error {
	switch {
	case s.pos >= len(s.in) && closer == '}':
		return s.Fail(ErrSyntax, "unterminated object")
	case s.pos >= len(s.in):
		return s.Fail(ErrSyntax, "unterminated array")
	case closer == '}':
		return s.Fail(ErrSyntax, "expected ',' or '}' in object")
	}
	return s.Fail(ErrSyntax, "expected ',' or ']' in array")
}

// plainASCII marks the bytes a string holds as they are: printable ASCII
// other than '"' and '\\'.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainWord reports whether all eight bytes of w are plainASCII (the bit
// tricks of "Bit Twiddling Hacks": x-0x01…01 &^ x sets a byte's high bit
// when the byte is zero, x-0x20…20 &^ x when it is below 0x20, each exact
// for bytes below 0x80, and a byte from 0x80 has its high bit already).
// skipPlain uses it to pass over eight plain bytes at a time.
func plainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, b := w^(ones*'"'), w^(ones*'\\') // a zero byte where w has '"', '\\'
	return (w|(w-ones*0x20)&^w|(q-ones)&^q|(b-ones)&^b)&highs == 0
}

// skipPlain returns the first offset from pos on that a string cannot
// hold as it is: the end of in, '"', '\\', a control character or the
// first byte of what is not UTF-8 (a byte from 0x80 there). It passes
// over printable ASCII and valid UTF-8, which excludes the surrogates'
// three-byte forms.
func skipPlain(in []byte, pos int) int {
	if pos = skipASCII(in, pos); pos < len(in) && in[pos] >= utf8.RuneSelf {
		return skipUTF8(in, pos)
	}
	return pos
}

// skipASCII is skipPlain for printable ASCII only; it is small enough to
// be inlined where strings are read.
func skipASCII(in []byte, pos int) int {
	for pos+8 <= len(in) && plainWord(binary.LittleEndian.Uint64(in[pos:])) {
		pos += 8
	}
	for pos < len(in) && plainASCII[in[pos]] {
		pos++
	}
	return pos
}

// skipUTF8 is skipPlain from a byte from 0x80 on.
func skipUTF8(in []byte, pos int) int {
	for pos < len(in) && in[pos] >= utf8.RuneSelf {
		r, n := utf8.DecodeRune(in[pos:])
		if r == utf8.RuneError && n <= 1 {
			return pos
		}
		pos = skipASCII(in, pos+n)
	}
	return pos
}

// ReadString reads the string whose opening quote is the next byte and
// returns it unescaped, with whether it held an escape. Without one the
// result aliases the input; with one it is valid until the next ReadString or Key.
func (s *Scanner) ReadString() (str []byte, escaped bool, err error) {
	start := s.pos + 1
	if s.pos = skipASCII(s.in, start); s.pos < len(s.in) && s.in[s.pos] >= utf8.RuneSelf {
		s.pos = skipUTF8(s.in, s.pos)
	}
	if s.pos < len(s.in) && s.in[s.pos] == '"' {
		s.pos++
		return s.in[start : s.pos-1], false, nil
	}
	buf, err := s.unescape(append(s.scratch[:0], s.in[start:s.pos]...))
	s.scratch = buf[:0]
	if err != nil {
		return nil, true, err
	}
	return buf, true, nil
}

// unescape reads on in a string from the first byte skipPlain stopped at,
// appending what it holds to buf.
func (s *Scanner) unescape(buf []byte) ([]byte, error) {
	for {
		if s.pos >= len(s.in) {
			return buf, s.Fail(ErrSyntax, "unterminated string")
		}
		switch c := s.in[s.pos]; {
		case c == '"':
			s.pos++
			return buf, nil
		case c >= utf8.RuneSelf:
			return buf, s.Fail(ErrInvalidUTF8, "")
		case c < 0x20:
			return buf, s.Fail(ErrSyntax, "control character in string")
		case s.pos+1 >= len(s.in): // a backslash, last
			return buf, s.Fail(ErrSyntax, "unterminated escape")
		}
		if e := s.in[s.pos+1]; e == 'u' {
			r, err := s.escapedRune()
			if err != nil {
				return buf, err
			}
			buf = utf8.AppendRune(buf, r)
		} else {
			if e = unescaped[e]; e == 0 {
				return buf, s.Fail(ErrSyntax, fmt.Sprintf("invalid escape \\%c", s.in[s.pos+1]))
			}
			buf = append(buf, e)
			s.pos += 2
		}
		run := s.pos
		s.pos = skipPlain(s.in, run)
		buf = append(buf, s.in[run:s.pos]...)
	}
}

// unescaped maps the byte after a backslash to the byte the escape
// stands for, 0 where it is no escape (\u is read on its own).
var unescaped = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// escapedRune reads the \uXXXX escape at the next byte, and the low half
// that must follow a high surrogate.
func (s *Scanner) escapedRune() (rune, error) {
	at := s.pos
	r, err := s.hex4(at + 2)
	if err != nil {
		return 0, err
	}
	s.pos += 6
	if !utf16.IsSurrogate(r) {
		return r, nil
	}
	if r >= 0xDC00 || s.pos+1 >= len(s.in) || s.in[s.pos] != '\\' || s.in[s.pos+1] != 'u' {
		return 0, &SyntaxError{Offset: at, Err: ErrLoneSurrogate}
	}
	r2, err := s.hex4(s.pos + 2)
	if err != nil {
		return 0, err
	}
	if r2 < 0xDC00 || r2 > 0xDFFF {
		return 0, &SyntaxError{Offset: at, Err: ErrLoneSurrogate}
	}
	s.pos += 6
	return utf16.DecodeRune(r, r2), nil
}

func (s *Scanner) hex4(at int) (rune, error) {
	if at+4 > len(s.in) {
		return 0, &SyntaxError{Offset: at, Err: ErrSyntax, Detail: "short \\u escape"}
	}
	var r rune
	for i := range 4 {
		v := hexDigit(s.in[at+i])
		if v < 0 {
			return 0, &SyntaxError{Offset: at + i, Err: ErrSyntax, Detail: "invalid hex digit in \\u escape"}
		}
		r = r<<4 | rune(v)
	}
	return r, nil
}

// hexDigit returns the value of a hex digit, -1 for another byte.
func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// ReadNumber reads the number at the next byte and returns its literal as
// written (it aliases the input) and whether it is an integer literal (no
// fraction, no exponent). The literal matched the grammar and passed
// CheckNumber.
func (s *Scanner) ReadNumber() (lit []byte, isInt bool, err error) {
	lit, _, isInt, err = s.ReadFloat()
	return lit, isInt, err
}

// ReadFloat is ReadNumber, with the double the literal stands for.
func (s *Scanner) ReadFloat() (lit []byte, f float64, isInt bool, err error) {
	start := s.pos
	end, isInt, detail := scanNumber(s.in, start)
	if detail != "" {
		s.pos = end
		return nil, 0, false, s.Fail(ErrSyntax, detail)
	}
	s.pos = end
	lit = s.in[start:end]
	f, err = numberValue(lit, isInt)
	if err != nil {
		return nil, 0, false, &SyntaxError{Offset: start, Err: err, Detail: string(lit)}
	}
	return lit, f, isInt, nil
}

// scanNumber matches the JSON number grammar at in[pos:], whose first
// byte is '-' or a digit. It returns the end of the number and whether it
// is an integer literal; when the grammar fails, detail says what was
// expected at end.
func scanNumber(in []byte, pos int) (end int, isInt bool, detail string) {
	if in[pos] == '-' {
		pos++
	}
	intStart := pos
	pos = digits(in, pos)
	switch {
	case pos == intStart:
		return pos, false, "digit expected"
	case pos-intStart > 1 && in[intStart] == '0':
		return intStart, false, "leading zero"
	}
	isInt = true
	if pos < len(in) && in[pos] == '.' {
		isInt = false
		d := pos + 1
		if pos = digits(in, d); pos == d {
			return pos, false, "digit expected after '.'"
		}
	}
	if pos < len(in) && (in[pos] == 'e' || in[pos] == 'E') {
		isInt = false
		pos++
		if pos < len(in) && (in[pos] == '+' || in[pos] == '-') {
			pos++
		}
		d := pos
		if pos = digits(in, d); pos == d {
			return pos, false, "digit expected in exponent"
		}
	}
	return pos, isInt, ""
}

func digits(in []byte, pos int) int {
	for pos < len(in) && in[pos] >= '0' && in[pos] <= '9' {
		pos++
	}
	return pos
}

// numberValue returns the double a literal of the number grammar stands
// for, or ErrUnsafeInteger for an integer literal a double reader would
// round, or ErrNonFinite for a literal beyond the doubles.
func numberValue(lit []byte, isInt bool) (float64, error) {
	if isInt {
		f, ok := intLiteral(lit)
		if !ok {
			return 0, ErrUnsafeInteger
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, ErrNonFinite
	}
	return f, nil
}

// CheckNumber applies canonical JSON's number rules to a literal that
// already matches the JSON number grammar (isInt: no fraction, no
// exponent): ErrUnsafeInteger for an integer literal a double reader would
// round, ErrNonFinite for a literal beyond the doubles. It is the rule
// Scanner.ReadNumber applies, for readers that hold a literal already.
func CheckNumber(lit []byte, isInt bool) error {
	_, err := numberValue(lit, isInt)
	return err
}
