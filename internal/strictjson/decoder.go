package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

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
	lx           canon.Scanner // the tokens, by strict JSON's rules
	allowUnknown bool
	path         []seg
	problems     []problem
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
	return &problem{path: violation.Join(d.Pointer(), name), rule: rule, msg: fmt.Sprintf(format, args...), offset: d.lx.Offset()}
}

// ErrorfAt is Errorf for the value at pointer, an RFC 6901 JSON Pointer
// into the text (one within the value being read).
func (d *Decoder) ErrorfAt(pointer, rule, format string, args ...any) error {
	return &problem{path: pointer, rule: rule, msg: fmt.Sprintf(format, args...), offset: d.lx.Offset()}
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

func (d *Decoder) fatalAt(off int, err error, detail string) error {
	return d.syntax(&canon.SyntaxError{Offset: off, Err: err, Detail: detail})
}

// syntax makes the Scanner's error (a *canon.SyntaxError) a fatal
// problem: the text is refused as a whole, so the problem is the
// document's (its offset says where).
func (d *Decoder) syntax(err error) error {
	se, ok := err.(*canon.SyntaxError)
	if !ok {
		return err
	}
	msg := fmt.Sprintf("%s at offset %d", trimPkg(se.Err.Error()), se.Offset)
	if se.Detail != "" {
		msg += ": " + se.Detail
	}
	rule := violation.RuleSyntax
	if se.Err == canon.ErrDuplicateKey {
		rule = violation.RuleDuplicateKey
	}
	return &problem{rule: rule, msg: msg, cause: se, offset: se.Offset, fatal: true}
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
	return &problem{path: d.Pointer(), rule: rule, msg: fmt.Sprintf(format, args...), offset: d.lx.Offset()}
}

// Fail returns err as a problem with the value being read, under rule;
// errors.Is and errors.As see err.
func (d *Decoder) Fail(rule string, err error) error {
	return &problem{path: d.Pointer(), rule: rule, msg: err.Error(), cause: err, offset: d.lx.Offset()}
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
	return &problem{path: d.Pointer(), rule: violation.RuleType, msg: WantMessage(want, d.Peek()), cause: ErrType, offset: d.lx.Offset()}
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
	return &problem{path: d.Pointer(), rule: "value", msg: err.Error(), cause: err, offset: d.lx.Offset()}
}

func isFatal(err error) bool {
	var p *problem
	return errors.As(err, &p) && p.fatal
}

// Peek returns the kind of the next value without reading it.
func (d *Decoder) Peek() Kind {
	switch c := d.lx.Peek(); {
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
func (d *Decoder) Offset() int { d.lx.SkipSpace(); return d.lx.Offset() }

// Rewind returns to an offset Offset returned earlier.
func (d *Decoder) Rewind(off int) { d.lx.SetOffset(off) }

// FirstKey returns the first member's key (unescaped) when the next
// value is an object with members, without reading anything.
func (d *Decoder) FirstKey() (string, bool) {
	if d.Peek() != Object {
		return "", false
	}
	start, depth := d.lx.Offset(), d.lx.Depth()
	defer func() { d.lx.SetOffset(start); d.lx.SetDepth(depth) }()
	if empty, err := d.lx.Open(); empty || err != nil {
		return "", false
	}
	k, _, _, err := d.lx.Key()
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
	if err := d.lx.ReadLiteral(w); err != nil {
		return d.syntax(err)
	}
	return nil
}

// ReadBool reads true or false.
func (d *Decoder) ReadBool() (bool, error) {
	if d.Peek() != Bool {
		return false, d.typeError("a boolean")
	}
	if d.lx.Input()[d.lx.Offset()] == 't' {
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
	s, _, err := d.lx.ReadString()
	if err != nil {
		return nil, d.syntax(err)
	}
	return s, nil
}

func (d *Decoder) number() ([]byte, bool, error) {
	lit, isInt, err := d.lx.ReadNumber()
	if err != nil {
		return nil, false, d.syntax(err)
	}
	return lit, isInt, nil
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

// members reads the object at the next byte, calling fn with each key
// (valid until fn reads on) and its offset; fn reads the value.
func (d *Decoder) members(fn func(key []byte, at int) error) error {
	if empty, err := d.lx.Open(); empty || err != nil {
		return d.syntax(err)
	}
	for {
		key, at, _, err := d.lx.Key()
		if err != nil {
			return d.syntax(err)
		}
		if err := fn(key, at); err != nil {
			return err
		}
		if more, err := d.lx.Next('}'); !more || err != nil {
			return d.syntax(err)
		}
	}
}

// Array reads an array, calling fn for each element with its index; fn
// reads the element.
func (d *Decoder) Array(fn func(i int) error) error {
	if d.Peek() != Array {
		return d.typeError("an array")
	}
	if empty, err := d.lx.Open(); empty || err != nil {
		return d.syntax(err)
	}
	for i := 0; ; i++ {
		d.pushIndex(i)
		err := fn(i)
		d.pop()
		if err != nil {
			return err
		}
		if more, err := d.lx.Next(']'); !more || err != nil {
			return d.syntax(err)
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
	return d.syntax(d.lx.Unexpected())
}

// Raw reads the next value and returns its bytes as written.
func (d *Decoder) Raw() ([]byte, error) {
	start := d.Offset()
	if err := d.Skip(); err != nil {
		return nil, err
	}
	return d.lx.Input()[start:d.lx.Offset()], nil
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
	var d Decoder
	d.lx.Reset(raw, 0, 0)
	return d.Peek()
}
