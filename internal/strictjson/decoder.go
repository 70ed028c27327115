package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/violation"
)

// Kind is the JSON type of the next value.
type Kind uint8

// The JSON types, as Decoder.Peek reports them.
const (
	Invalid Kind = iota // not the start of a value
	Null
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"invalid JSON", "null", "a boolean", "a number", "a string", "an array", "an object"}

// String returns the kind with its article ("an object"), as the
// messages use it.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind " + strconv.Itoa(int(k))
}

// Decoder reads one JSON text. Unmarshal makes one; an Unmarshaler gets
// one positioned at its value and must read exactly that value, with the
// Read methods, Object, Array or Decode.
type Decoder struct {
	data         []byte
	pos          int
	depth        int
	maxDepth     int
	allowUnknown bool
	path         []seg
	problems     []problem
	scratch      []byte
	keys         []string // the keys of the open objects of Object, for duplicates
	context      any
}

// Context returns Options.Context.
func (d *Decoder) Context() any { return d.context }

// Report records a problem and lets reading go on: an Unmarshaler that
// finds several problems in its value reports all but the last (or all,
// and returns nil once it has read the value).
func (d *Decoder) Report(err error) {
	if err != nil {
		d.record(err)
	}
}

// ErrorfIn is Errorf for the member name of the value being read.
func (d *Decoder) ErrorfIn(name, rule, format string, args ...any) error {
	return &problem{path: violation.Join(d.Pointer(), name), rule: rule, msg: fmt.Sprintf(format, args...), offset: d.pos}
}

// ErrorfAt is Errorf for the value at pointer, an RFC 6901 JSON Pointer
// into the text (one within the value being read).
func (d *Decoder) ErrorfAt(pointer, rule, format string, args ...any) error {
	return &problem{path: pointer, rule: rule, msg: fmt.Sprintf(format, args...), offset: d.pos}
}

type seg struct {
	key   string
	index int // -1 for a member
}

// problem is one violation found, with its cause. A fatal one (the text
// is not strict JSON) ends the reading.
type problem struct {
	path   string
	rule   string
	msg    string
	cause  error
	offset int
	fatal  bool
}

func (p *problem) Error() string {
	if p.path == "" {
		return p.msg
	}
	return p.path + ": " + p.msg
}

func (p *problem) Unwrap() error { return p.cause }

// Pointer returns the RFC 6901 JSON Pointer of the value being read.
func (d *Decoder) Pointer() string {
	p := ""
	for _, s := range d.path {
		if s.index >= 0 {
			p = violation.Index(p, s.index)
		} else {
			p = violation.Join(p, s.key)
		}
	}
	return p
}

func (d *Decoder) fatal(err error, detail string) error {
	return d.fatalAt(d.pos, err, detail)
}

func (d *Decoder) fatalAt(off int, err error, detail string) error {
	msg := fmt.Sprintf("%s at offset %d", trimPkg(err.Error()), off)
	if detail != "" {
		msg += ": " + detail
	}
	rule := violation.RuleSyntax
	if err == canon.ErrDuplicateKey {
		rule = violation.RuleDuplicateKey
	}
	// The text is refused as a whole: the problem is the document's (its
	// offset says where).
	return &problem{rule: rule, msg: msg, cause: &canon.SyntaxError{Offset: off, Err: err, Detail: detail}, offset: off, fatal: true}
}

func trimPkg(s string) string {
	if i := len("canon: "); len(s) > i && s[:i] == "canon: " {
		return s[i:]
	}
	return s
}

// Errorf returns a problem with the value being read: rule names it (a
// violation rule), the message is format's. An Unmarshaler returns it.
func (d *Decoder) Errorf(rule, format string, args ...any) error {
	return &problem{path: d.Pointer(), rule: rule, msg: fmt.Sprintf(format, args...), offset: d.pos}
}

// Fail returns err as a problem with the value being read, under rule;
// errors.Is and errors.As see err.
func (d *Decoder) Fail(rule string, err error) error {
	return &problem{path: d.Pointer(), rule: rule, msg: err.Error(), cause: err, offset: d.pos}
}

// ErrType is the cause of every wrong-type problem, ErrMissing of every
// missing member, ErrUnknown of every unknown one.
var (
	ErrType    = errors.New("strictjson: wrong JSON type")
	ErrMissing = errors.New("strictjson: missing member")
	ErrUnknown = errors.New("strictjson: unknown member")
)

// typeError is the one wording of a wrong type: "want an object, got a
// string".
func (d *Decoder) typeError(want string) error {
	return &problem{path: d.Pointer(), rule: violation.RuleType, msg: WantMessage(want, d.Peek()), cause: ErrType, offset: d.pos}
}

func (d *Decoder) push(key string)  { d.path = append(d.path, seg{key: key, index: -1}) }
func (d *Decoder) pushIndex(i int)  { d.path = append(d.path, seg{index: i}) }
func (d *Decoder) pop()             { d.path = d.path[:len(d.path)-1] }
func (d *Decoder) record(err error) { d.problems = append(d.problems, *asProblem(d, err)) }

func asProblem(d *Decoder, err error) *problem {
	var p *problem
	if errors.As(err, &p) {
		return p
	}
	return &problem{path: d.Pointer(), rule: "value", msg: err.Error(), cause: err, offset: d.pos}
}

func isFatal(err error) bool {
	var p *problem
	return errors.As(err, &p) && p.fatal
}

func (d *Decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// Peek returns the kind of the next value without reading it.
func (d *Decoder) Peek() Kind {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return Invalid
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return Object
	case c == '[':
		return Array
	case c == '"':
		return String
	case c == 't' || c == 'f':
		return Bool
	case c == 'n':
		return Null
	case c == '-' || (c >= '0' && c <= '9'):
		return Number
	}
	return Invalid
}

// Offset returns the byte offset of the next value; Rewind goes back to
// an offset Offset returned within the same value an Unmarshaler reads.
func (d *Decoder) Offset() int { d.skipSpace(); return d.pos }

// Rewind returns to an offset Offset returned earlier.
func (d *Decoder) Rewind(off int) { d.pos = off }

// FirstKey returns the first member's key (unescaped) when the next
// value is an object with members, without reading anything.
func (d *Decoder) FirstKey() (string, bool) {
	if d.Peek() != Object {
		return "", false
	}
	start := d.pos
	defer func() { d.pos = start }()
	d.pos++
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", false
	}
	k, err := d.str()
	if err != nil {
		return "", false
	}
	return string(k), true
}

// ReadNull reads null.
func (d *Decoder) ReadNull() error {
	if d.Peek() != Null {
		return d.typeError("null")
	}
	return d.literal("null")
}

func (d *Decoder) literal(w string) error {
	if !bytes.HasPrefix(d.data[d.pos:], []byte(w)) {
		return d.fatal(canon.ErrSyntax, "invalid literal")
	}
	d.pos += len(w)
	return nil
}

// ReadBool reads true or false.
func (d *Decoder) ReadBool() (bool, error) {
	if d.Peek() != Bool {
		return false, d.typeError("a boolean")
	}
	if d.data[d.pos] == 't' {
		return true, d.literal("true")
	}
	return false, d.literal("false")
}

// ReadString reads a string.
func (d *Decoder) ReadString() (string, error) {
	b, err := d.ReadStringBytes()
	return string(b), err
}

// ReadStringBytes reads a string; the bytes are valid until the next read.
func (d *Decoder) ReadStringBytes() ([]byte, error) {
	if d.Peek() != String {
		return nil, d.typeError("a string")
	}
	return d.str()
}

// ReadNumber reads a number and returns its literal as written (valid
// until the next read); isInt is true when it has neither fraction nor
// exponent. The literal passed canonical JSON's rules: an integer no
// reader would round, a finite double.
func (d *Decoder) ReadNumber() (lit []byte, isInt bool, err error) {
	if d.Peek() != Number {
		return nil, false, d.typeError("a number")
	}
	return d.number()
}

func (d *Decoder) str() ([]byte, error) {
	d.pos++ // opening quote
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if c == '"' {
			s := d.data[start:d.pos]
			if !utf8.Valid(s) {
				return nil, d.badUTF8(start)
			}
			d.pos++
			return s, nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return nil, d.fatal(canon.ErrSyntax, "control character in string")
		}
		d.pos++
	}
	if d.pos >= len(d.data) {
		return nil, d.fatal(canon.ErrSyntax, "unterminated string")
	}
	if !utf8.Valid(d.data[start:d.pos]) {
		return nil, d.badUTF8(start)
	}
	buf := append(d.scratch[:0], d.data[start:d.pos]...)
	defer func() { d.scratch = buf[:0] }()
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return buf, nil
		case c < 0x20:
			return nil, d.fatal(canon.ErrSyntax, "control character in string")
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				return nil, d.fatal(canon.ErrSyntax, "unterminated escape")
			}
			switch e := d.data[d.pos+1]; e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, err := d.hex4(d.pos + 2)
				if err != nil {
					return nil, err
				}
				at := d.pos
				d.pos += 6
				if utf16.IsSurrogate(r) {
					if r >= 0xDC00 || d.pos+1 >= len(d.data) || d.data[d.pos] != '\\' || d.data[d.pos+1] != 'u' {
						return nil, d.fatalAt(at, canon.ErrLoneSurrogate, "")
					}
					r2, err := d.hex4(d.pos + 2)
					if err != nil {
						return nil, err
					}
					if r2 < 0xDC00 || r2 > 0xDFFF {
						return nil, d.fatalAt(at, canon.ErrLoneSurrogate, "")
					}
					r = utf16.DecodeRune(r, r2)
					d.pos += 6
				}
				buf = utf8.AppendRune(buf, r)
				continue
			default:
				return nil, d.fatal(canon.ErrSyntax, fmt.Sprintf("invalid escape \\%c", e))
			}
			d.pos += 2
		default:
			run := d.pos
			for d.pos < len(d.data) && d.data[d.pos] != '"' && d.data[d.pos] != '\\' && d.data[d.pos] >= 0x20 {
				d.pos++
			}
			if !utf8.Valid(d.data[run:d.pos]) {
				return nil, d.badUTF8(run)
			}
			buf = append(buf, d.data[run:d.pos]...)
		}
	}
	return nil, d.fatal(canon.ErrSyntax, "unterminated string")
}

func (d *Decoder) badUTF8(from int) error {
	off := from
	for s := d.data[from:]; len(s) > 0; {
		r, n := utf8.DecodeRune(s)
		if r == utf8.RuneError && n <= 1 {
			break
		}
		s, off = s[n:], off+n
	}
	return d.fatalAt(off, canon.ErrInvalidUTF8, "")
}

func (d *Decoder) hex4(at int) (rune, error) {
	if at+4 > len(d.data) {
		return 0, d.fatalAt(at, canon.ErrSyntax, "short \\u escape")
	}
	var r rune
	for i := range 4 {
		c := d.data[at+i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, d.fatalAt(at+i, canon.ErrSyntax, "invalid hex digit in \\u escape")
		}
		r = r<<4 | rune(v)
	}
	return r, nil
}

func (d *Decoder) number() ([]byte, bool, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	intStart := d.pos
	n := digits()
	if n == 0 {
		return nil, false, d.fatal(canon.ErrSyntax, "digit expected")
	}
	if n > 1 && d.data[intStart] == '0' {
		return nil, false, d.fatalAt(intStart, canon.ErrSyntax, "leading zero")
	}
	isInt := true
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		isInt = false
		d.pos++
		if digits() == 0 {
			return nil, false, d.fatal(canon.ErrSyntax, "digit expected after '.'")
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		isInt = false
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, false, d.fatal(canon.ErrSyntax, "digit expected in exponent")
		}
	}
	lit := d.data[start:d.pos]
	if err := canon.CheckNumber(lit, isInt); err != nil {
		return nil, false, d.fatalAt(start, err, string(lit))
	}
	return lit, isInt, nil
}

func (d *Decoder) enter() error {
	d.depth++
	if d.depth > d.maxDepth {
		return d.fatal(canon.ErrTooDeep, fmt.Sprintf("more than %d levels", d.maxDepth))
	}
	return nil
}

// Object reads an object, calling fn for each member with its key (after
// unescaping); fn reads the member's value. A key twice is an error.
func (d *Decoder) Object(fn func(key string) error) error {
	if d.Peek() != Object {
		return d.typeError("an object")
	}
	base := len(d.keys)
	defer func() { d.keys = d.keys[:base] }()
	var set map[string]struct{}
	return d.members(func(kb []byte, at int) error {
		key := string(kb)
		if set != nil {
			if _, dup := set[key]; dup {
				return d.fatalAt(at, canon.ErrDuplicateKey, strconv.Quote(key))
			}
			set[key] = struct{}{}
		} else {
			for _, k := range d.keys[base:] {
				if k == key {
					return d.fatalAt(at, canon.ErrDuplicateKey, strconv.Quote(key))
				}
			}
			d.keys = append(d.keys, key)
			if len(d.keys)-base > 16 {
				set = make(map[string]struct{}, 32)
				for _, k := range d.keys[base:] {
					set[k] = struct{}{}
				}
			}
		}
		d.push(key)
		err := fn(key)
		d.pop()
		return err
	})
}

// members reads an object at d.pos, calling fn with each key (valid until
// fn reads on) and its offset; fn reads the value.
func (d *Decoder) members(fn func(key []byte, at int) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '{'
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return d.fatal(canon.ErrSyntax, "expected a string key")
		}
		at := d.pos
		key, err := d.str()
		if err != nil {
			return err
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return d.fatal(canon.ErrSyntax, "expected ':' after key")
		}
		d.pos++
		if err := fn(key, at); err != nil {
			return err
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return d.fatal(canon.ErrSyntax, "unterminated object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return nil
		default:
			return d.fatal(canon.ErrSyntax, "expected ',' or '}' in object")
		}
	}
}

// Array reads an array, calling fn for each element with its index; fn
// reads the element.
func (d *Decoder) Array(fn func(i int) error) error {
	if d.Peek() != Array {
		return d.typeError("an array")
	}
	if err := d.enter(); err != nil {
		return err
	}
	d.pos++ // '['
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return nil
	}
	for i := 0; ; i++ {
		d.pushIndex(i)
		err := fn(i)
		d.pop()
		if err != nil {
			return err
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return d.fatal(canon.ErrSyntax, "unterminated array")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			return nil
		default:
			return d.fatal(canon.ErrSyntax, "expected ',' or ']' in array")
		}
	}
}

// Skip reads and discards the next value, as strictly as any other.
func (d *Decoder) Skip() error {
	switch d.Peek() {
	case Object:
		return d.Object(func(string) error { return d.Skip() })
	case Array:
		return d.Array(func(int) error { return d.Skip() })
	case String:
		_, err := d.str()
		return err
	case Number:
		_, _, err := d.number()
		return err
	case Bool:
		_, err := d.ReadBool()
		return err
	case Null:
		return d.literal("null")
	}
	if d.pos >= len(d.data) {
		return d.fatal(canon.ErrSyntax, "unexpected end of input")
	}
	return d.fatal(canon.ErrSyntax, fmt.Sprintf("unexpected character %q", d.data[d.pos]))
}

// Raw reads the next value and returns its bytes as written.
func (d *Decoder) Raw() ([]byte, error) {
	start := d.Offset()
	if err := d.Skip(); err != nil {
		return nil, err
	}
	return d.data[start:d.pos], nil
}

// WantMessage is the one wording of a wrong JSON type, for every reader
// in Verity: "want an object, got a string".
func WantMessage(want string, got Kind) string { return "want " + want + ", got " + got.String() }

// KindOf returns the kind of a value of a canon.Decode tree
// (map[string]any, []any, string, json.Number, bool, nil).
func KindOf(v any) Kind {
	switch v.(type) {
	case nil:
		return Null
	case bool:
		return Bool
	case string:
		return String
	case json.Number:
		return Number
	case []any:
		return Array
	case map[string]any:
		return Object
	}
	return Invalid
}

// KindOfJSON returns the kind of the JSON text raw by its first byte.
func KindOfJSON(raw []byte) Kind {
	d := Decoder{data: raw}
	return d.Peek()
}
