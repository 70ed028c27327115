// Package jsonvalue implements the strictly typed JSON value that
// kernel/value publishes (as a defined type, with its own documented
// methods) and the kernel stores in its states: construction, accessors,
// the typed canonical JSON form, the one-pass strict reader and the
// binary form the state fingerprint hashes. The functions and methods
// here that kernel/value does not publish (NewList, Elems, AppendJSON,
// AppendHashable, Read, ...) are the kernel's plumbing.
package jsonvalue

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
)

// Sentinel errors, published by kernel/value (and ErrDecode by kernel).
var (
	// ErrInvalidValue: a value that is not JSON (NaN, ±Inf, invalid UTF-8,
	// too deep, an unsupported Go type).
	ErrInvalidValue = errors.New("kernel: invalid value")
	// ErrDecode: JSON input that cannot be decoded.
	ErrDecode = errors.New("kernel: malformed JSON")
)

// Kind is the JSON type of a Value. Integers and floats are distinct kinds.
type Kind uint8

// The kinds of Value. The zero Value is Null.
const (
	KindNull Kind = iota
	KindBool
	KindInt
	KindFloat
	KindString
	KindList
	KindObject
)

var kindNames = [...]string{"null", "bool", "int", "float", "string", "list", "object"}

// String returns the lower-case name of the kind ("int", "list", ...).
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is an immutable JSON value with strict typing: the integer 1, the
// float 1.0 and the string "1" are three different values, and so are 0.0
// and -0.0 (floats compare by their IEEE-754 bits). The zero Value is null.
//
// A Value never shares memory with what it was built from or what it hands
// out: List, Object and Of copy their input, Items, Fields and Go copy
// their output.
type Value struct {
	kind Kind
	bits uint64     // bool (0/1), int64, float64 bits
	str  string     // string
	ref  *composite // list or object
}

type composite struct {
	items []Value  // list items, or object values
	keys  []string // object keys, sorted by byte order (parallel to items)
}

// NewList returns a list that owns items (no copy).
func NewList(items []Value) Value {
	return Value{kind: KindList, ref: &composite{items: items}}
}

// NewObject returns an object that owns keys (sorted by byte order,
// distinct) and items, its values in the same order (no copy).
func NewObject(keys []string, items []Value) Value {
	return Value{kind: KindObject, ref: &composite{items: items, keys: keys}}
}

// Elems returns the items of a list or the values of an object, not
// copied: the caller must not modify them.
func (v Value) Elems() []Value {
	if v.ref == nil {
		return nil
	}
	return v.ref.items
}

// Keys returns the keys of an object, sorted by byte order, not copied.
func (v Value) Keys() []string {
	if v.ref == nil {
		return nil
	}
	return v.ref.keys
}

// Null returns the JSON null.
func Null() Value { return Value{} }

// Bool returns a boolean value.
func Bool(b bool) Value {
	if b {
		return Value{kind: KindBool, bits: 1}
	}
	return Value{kind: KindBool}
}

// Int returns an integer value.
func Int(i int64) Value { return Value{kind: KindInt, bits: uint64(i)} }

// Float returns a float value. NaN and ±Inf are not JSON values: a State,
// Effect or Action holding one is rejected with ErrInvalidValue.
func Float(f float64) Value { return Value{kind: KindFloat, bits: math.Float64bits(f)} }

// String returns a string value. It must be valid UTF-8 (checked where the
// value enters a State, Effect or Action).
func String(s string) Value { return Value{kind: KindString, str: s} }

// List returns a list holding copies of items.
func List(items ...Value) Value {
	return NewList(slices.Clone(items))
}

// Object returns an object value with the given fields (the map is copied).
func Object(fields map[string]Value) Value {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	items := make([]Value, len(keys))
	for i, k := range keys {
		items[i] = fields[k]
	}
	return NewObject(keys, items)
}

// Of converts a Go value to a Value: nil, bool, string (kept a string,
// never parsed as a number), every integer kind (an unsigned value beyond
// int64 is an error), float32 and float64 (finite), []any, []Value,
// map[string]any, map[string]Value, and Value itself; public, if not nil,
// converts the caller's own types (kernel/value's Value, []Value and
// map[string]Value) and reports whether x was one. Anything else is an
// error wrapping ErrInvalidValue.
func Of(x any, public func(any) (Value, bool)) (Value, error) {
	return valueOf(x, 0, public)
}

const maxDepth = 512

func valueOf(x any, depth int, public func(any) (Value, bool)) (Value, error) {
	if depth > maxDepth {
		return Value{}, fmt.Errorf("%w: nested more than %d levels", ErrInvalidValue, maxDepth)
	}
	switch v := x.(type) {
	case nil:
		return Null(), nil
	case Value:
		return v, v.Validate(depth)
	case bool:
		return Bool(v), nil
	case string:
		if !utf8.ValidString(v) {
			return Value{}, fmt.Errorf("%w: string is not valid UTF-8", ErrInvalidValue)
		}
		return String(v), nil
	case int:
		return Int(int64(v)), nil
	case int8:
		return Int(int64(v)), nil
	case int16:
		return Int(int64(v)), nil
	case int32:
		return Int(int64(v)), nil
	case int64:
		return Int(v), nil
	case uint:
		return fromUint(uint64(v))
	case uint8:
		return Int(int64(v)), nil
	case uint16:
		return Int(int64(v)), nil
	case uint32:
		return Int(int64(v)), nil
	case uint64:
		return fromUint(v)
	case float32:
		return checkedFloat(float64(v))
	case float64:
		return checkedFloat(v)
	case []Value:
		for _, it := range v {
			if err := it.Validate(depth + 1); err != nil {
				return Value{}, err
			}
		}
		return List(v...), nil
	case []any:
		items := make([]Value, len(v))
		for i, it := range v {
			iv, err := valueOf(it, depth+1, public)
			if err != nil {
				return Value{}, err
			}
			items[i] = iv
		}
		return NewList(items), nil
	case map[string]Value:
		for k, it := range v {
			if !utf8.ValidString(k) {
				return Value{}, fmt.Errorf("%w: object key is not valid UTF-8", ErrInvalidValue)
			}
			if err := it.Validate(depth + 1); err != nil {
				return Value{}, err
			}
		}
		return Object(v), nil
	case map[string]any:
		m := make(map[string]Value, len(v))
		for k, it := range v {
			if !utf8.ValidString(k) {
				return Value{}, fmt.Errorf("%w: object key is not valid UTF-8", ErrInvalidValue)
			}
			iv, err := valueOf(it, depth+1, public)
			if err != nil {
				return Value{}, err
			}
			m[k] = iv
		}
		return Object(m), nil
	default:
		if public != nil {
			if v, ok := public(x); ok {
				return v, v.Validate(depth)
			}
		}
		return Value{}, fmt.Errorf("%w: unsupported Go type %T", ErrInvalidValue, x)
	}
}

func fromUint(u uint64) (Value, error) {
	if u > math.MaxInt64 {
		return Value{}, fmt.Errorf("%w: integer %d overflows int64", ErrInvalidValue, u)
	}
	return Int(int64(u)), nil
}

func checkedFloat(f float64) (Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Value{}, fmt.Errorf("%w: float %v is not a JSON number", ErrInvalidValue, f)
	}
	return Float(f), nil
}

// Validate checks what the constructors cannot: finite floats, UTF-8
// strings and keys, nesting depth.
func (v Value) Validate(depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: nested more than %d levels", ErrInvalidValue, maxDepth)
	}
	switch v.kind {
	case KindNull, KindBool, KindInt:
		return nil
	case KindFloat:
		f := math.Float64frombits(v.bits)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: float %v is not a JSON number", ErrInvalidValue, f)
		}
		return nil
	case KindString:
		if !utf8.ValidString(v.str) {
			return fmt.Errorf("%w: string is not valid UTF-8", ErrInvalidValue)
		}
		return nil
	case KindList, KindObject:
		for _, k := range v.Keys() {
			if !utf8.ValidString(k) {
				return fmt.Errorf("%w: object key is not valid UTF-8", ErrInvalidValue)
			}
		}
		for _, it := range v.Elems() {
			if err := it.Validate(depth + 1); err != nil {
				return err
			}
		}
		return nil
	default:
		return fmt.Errorf("%w: unknown kind %d", ErrInvalidValue, v.kind)
	}
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return v.kind }

// AsBool returns the boolean and true if v is a bool.
func (v Value) AsBool() (bool, bool) { return v.bits == 1, v.kind == KindBool }

// AsInt returns the integer and true if v is an int (never for a float).
func (v Value) AsInt() (int64, bool) { return int64(v.bits), v.kind == KindInt }

// AsFloat returns the float and true if v is a float (never for an int).
func (v Value) AsFloat() (float64, bool) { return math.Float64frombits(v.bits), v.kind == KindFloat }

// AsString returns the string and true if v is a string.
func (v Value) AsString() (string, bool) { return v.str, v.kind == KindString }

// Len returns the number of items of a list or fields of an object, else 0.
func (v Value) Len() int { return len(v.Elems()) }

// Items returns a copy of a list's items (nil for other kinds).
func (v Value) Items() []Value {
	if v.kind != KindList {
		return nil
	}
	return slices.Clone(v.Elems())
}

// Index returns item i of a list and true, or false if out of range.
func (v Value) Index(i int) (Value, bool) {
	if v.kind != KindList || i < 0 || i >= len(v.Elems()) {
		return Value{}, false
	}
	return v.Elems()[i], true
}

// Field returns an object's field and true, or false if absent.
func (v Value) Field(key string) (Value, bool) {
	if v.kind != KindObject {
		return Value{}, false
	}
	i, ok := slices.BinarySearch(v.Keys(), key)
	if !ok {
		return Value{}, false
	}
	return v.Elems()[i], true
}

// Fields returns a copy of an object's fields (nil for other kinds).
func (v Value) Fields() map[string]Value {
	if v.kind != KindObject {
		return nil
	}
	m := make(map[string]Value, len(v.Keys()))
	for i, k := range v.Keys() {
		m[k] = v.Elems()[i]
	}
	return m
}

// Go returns a fresh Go representation: nil, bool, int64, float64, string,
// []any or map[string]any.
func (v Value) Go() any {
	switch v.kind {
	case KindBool:
		return v.bits == 1
	case KindInt:
		return int64(v.bits)
	case KindFloat:
		return math.Float64frombits(v.bits)
	case KindString:
		return v.str
	case KindList:
		out := make([]any, len(v.Elems()))
		for i, it := range v.Elems() {
			out[i] = it.Go()
		}
		return out
	case KindObject:
		out := make(map[string]any, len(v.Keys()))
		for i, k := range v.Keys() {
			out[k] = v.Elems()[i].Go()
		}
		return out
	default:
		return nil
	}
}

// Equal reports strict equality: same kind and same content, floats by
// their bits, lists item by item (order and duplicates matter).
func (v Value) Equal(w Value) bool {
	if v.kind != w.kind || v.bits != w.bits || v.str != w.str ||
		len(v.Elems()) != len(w.Elems()) || len(v.Keys()) != len(w.Keys()) {
		return false
	}
	if v.ref == w.ref {
		return true
	}
	for i := range v.Keys() {
		if v.Keys()[i] != w.Keys()[i] {
			return false
		}
	}
	for i := range v.Elems() {
		if !v.Elems()[i].Equal(w.Elems()[i]) {
			return false
		}
	}
	return true
}

// String returns the value's JSON form (see MarshalJSON).
func (v Value) String() string {
	return string(v.AppendJSON(nil))
}

// MarshalJSON returns the value's typed canonical JSON (see "JSON" in the
// package documentation): RFC 8785 text in which an integral float and an
// integer beyond ±(2^53−1) are written {"$float":"1"} and {"$int":"…"}.
func (v Value) MarshalJSON() ([]byte, error) {
	if err := v.Validate(0); err != nil {
		return nil, err
	}
	return v.AppendJSON(nil), nil
}

// MaxSafe is 2^53−1, the largest magnitude of an int written as a plain
// number literal. Beyond it an int is written {"$int":"…"} even when it is
// exactly a double, which canonical JSON would accept as a literal: RFC
// 8785 writes such a double with the shortest digits that identify it, not
// its value (2^60 as 1152921504606847000), so the canonical literal would
// no longer be the int. Up to 2^53−1 the literal is the int's exact digits
// and every reader, one that parses numbers as doubles or one that parses
// them as int64, reads back the same int.
const MaxSafe = 1<<53 - 1

// AppendJSON appends the typed canonical JSON form. v must be valid.
func (v Value) AppendJSON(dst []byte) []byte {
	switch v.kind {
	case KindNull:
		return append(dst, "null"...)
	case KindBool:
		if v.bits == 1 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case KindInt:
		i := int64(v.bits)
		if i >= -MaxSafe && i <= MaxSafe {
			return strconv.AppendInt(dst, i, 10)
		}
		dst = append(dst, `{"$int":"`...)
		dst = strconv.AppendInt(dst, i, 10)
		return append(dst, `"}`...)
	case KindFloat:
		f := math.Float64frombits(v.bits)
		start := len(dst)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			// Not a JSON value (never in a State, Effect or Action); written
			// for diagnostics only, in a form every decoder rejects.
			dst = append(dst, `{"$float":"`...)
			dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
			return append(dst, `"}`...)
		}
		if f == 0 && math.Signbit(f) {
			return append(dst, `{"$float":"-0"}`...)
		}
		dst = canon.AppendFloat(dst, f)
		if bytes.ContainsAny(dst[start:], ".e") {
			return dst
		}
		text := string(dst[start:])
		dst = append(dst[:start], `{"$float":"`...)
		dst = append(dst, text...)
		return append(dst, `"}`...)
	case KindString:
		return canon.AppendString(dst, v.str)
	case KindList:
		dst = append(dst, '[')
		for i, it := range v.Elems() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = it.AppendJSON(dst)
		}
		return append(dst, ']')
	case KindObject:
		wrap := len(v.Keys()) == 1 && isReservedKey(v.Keys()[0])
		if wrap {
			dst = append(dst, `{"$object":`...)
		}
		dst = AppendMembers(dst, v.Keys(), func(dst []byte, i int) []byte { return v.Elems()[i].AppendJSON(dst) })
		if wrap {
			dst = append(dst, '}')
		}
		return dst
	}
	return dst
}

func isReservedKey(k string) bool { return k == "$int" || k == "$float" || k == "$object" }

// AppendMembers writes an object whose keys are sorted by byte order, in the
// UTF-16 order RFC 8785 requires.
func AppendMembers(dst []byte, keys []string, val func([]byte, int) []byte) []byte {
	order := utf16Order(keys)
	dst = append(dst, '{')
	for n, i := range order {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = canon.AppendString(dst, keys[i])
		dst = append(dst, ':')
		dst = val(dst, i)
	}
	return append(dst, '}')
}

// utf16Order returns the indices of keys (sorted by bytes) in UTF-16 order.
// Byte order and UTF-16 order differ only for keys with characters at or
// above U+E000, so the common case is the identity.
func utf16Order(keys []string) []int {
	order := make([]int, len(keys))
	special := false
	for i, k := range keys {
		order[i] = i
		if !special && strings.ContainsFunc(k, func(r rune) bool { return r >= 0xE000 }) {
			special = true
		}
	}
	if special {
		slices.SortStableFunc(order, func(a, b int) int { return CompareUTF16(keys[a], keys[b]) })
	}
	return order
}

// CompareUTF16 compares two strings by their UTF-16 code units, the
// order RFC 8785 sorts keys in.
func CompareUTF16(a, b string) int { return canon.CompareUTF16([]byte(a), []byte(b)) }

// AppendHashable appends the unambiguous binary encoding the fingerprint
// hashes: a kind byte, then fixed-width numbers or length-prefixed bytes.
func (v Value) AppendHashable(dst []byte) []byte {
	dst = append(dst, byte(v.kind))
	switch v.kind {
	case KindBool, KindInt, KindFloat:
		dst = binary.BigEndian.AppendUint64(dst, v.bits)
	case KindString:
		dst = binary.AppendUvarint(dst, uint64(len(v.str)))
		dst = append(dst, v.str...)
	case KindList:
		dst = binary.AppendUvarint(dst, uint64(len(v.Elems())))
		for _, it := range v.Elems() {
			dst = it.AppendHashable(dst)
		}
	case KindObject:
		dst = binary.AppendUvarint(dst, uint64(len(v.Elems())))
		for i, it := range v.Elems() {
			dst = binary.AppendUvarint(dst, uint64(len(v.Keys()[i])))
			dst = append(dst, v.Keys()[i]...)
			dst = it.AppendHashable(dst)
		}
	}
	return dst
}
