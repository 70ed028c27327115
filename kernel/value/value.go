package value

import (
	"github.com/verity-go/verity/internal/jsonvalue"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrInvalidValue: a value that is not JSON (NaN, ±Inf, invalid UTF-8,
	// too deep, an unsupported Go type).
	ErrInvalidValue = jsonvalue.ErrInvalidValue
	// ErrDecode: JSON input that cannot be decoded (the same error as
	// kernel.ErrDecode).
	ErrDecode = jsonvalue.ErrDecode
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

// String returns the lower-case name of the kind ("int", "list", ...).
func (k Kind) String() string { return jsonvalue.Kind(k).String() }

// Value is an immutable JSON value with strict typing: the integer 1, the
// float 1.0 and the string "1" are three different values, and so are 0.0
// and -0.0 (floats compare by their IEEE-754 bits). The zero Value is null.
//
// A Value never shares memory with what it was built from or what it hands
// out: List, Object and Of copy their input, Items, Fields and Go copy
// their output.
type Value jsonvalue.Value

func (v Value) impl() jsonvalue.Value { return jsonvalue.Value(v) }

// Null returns the JSON null.
func Null() Value { return Value{} }

// Bool returns a boolean value.
func Bool(b bool) Value { return Value(jsonvalue.Bool(b)) }

// Int returns an integer value.
func Int(i int64) Value { return Value(jsonvalue.Int(i)) }

// Float returns a float value. NaN and ±Inf are not JSON values: a State,
// Effect or Action holding one is rejected with ErrInvalidValue.
func Float(f float64) Value { return Value(jsonvalue.Float(f)) }

// String returns a string value. It must be valid UTF-8 (checked where the
// value enters a State, Effect or Action).
func String(s string) Value { return Value(jsonvalue.String(s)) }

// List returns a list holding copies of items.
func List(items ...Value) Value { return Value(jsonvalue.NewList(impls(items))) }

// Object returns an object value with the given fields (the map is copied).
func Object(fields map[string]Value) Value {
	m := make(map[string]jsonvalue.Value, len(fields))
	for k, v := range fields {
		m[k] = jsonvalue.Value(v)
	}
	return Value(jsonvalue.Object(m))
}

// Of converts a Go value to a Value: nil, bool, string (kept a string,
// never parsed as a number), every integer kind (an unsigned value beyond
// int64 is an error), float32 and float64 (finite), []any, []Value,
// map[string]any, map[string]Value, and Value itself. Anything else is an
// error wrapping ErrInvalidValue, and so is a value that is not JSON (NaN,
// ±Inf, invalid UTF-8, nested more than 512 levels).
func Of(x any) (Value, error) {
	v, err := jsonvalue.Of(x, fromPublic)
	return Value(v), err
}

// fromPublic converts this package's types for jsonvalue.Of.
func fromPublic(x any) (jsonvalue.Value, bool) {
	switch x := x.(type) {
	case Value:
		return jsonvalue.Value(x), true
	case []Value:
		return jsonvalue.NewList(impls(x)), true
	case map[string]Value:
		return Object(x).impl(), true
	}
	return jsonvalue.Value{}, false
}

// impls copies items into a new slice of their implementation.
func impls(items []Value) []jsonvalue.Value {
	out := make([]jsonvalue.Value, len(items))
	for i, it := range items {
		out[i] = jsonvalue.Value(it)
	}
	return out
}

// publics copies items into a new slice of Values.
func publics(items []jsonvalue.Value) []Value {
	out := make([]Value, len(items))
	for i, it := range items {
		out[i] = Value(it)
	}
	return out
}

// Decode decodes typed JSON into a Value (see MarshalJSON), strictly: no
// duplicate key, valid UTF-8, no integer literal a double would round,
// nesting at most 512 deep. Every error wraps ErrDecode and names the
// problem's place by its JSON Pointer.
func Decode(b []byte) (Value, error) {
	v, err := jsonvalue.Decode(b)
	return Value(v), err
}

// Kind returns the value's kind.
func (v Value) Kind() Kind { return Kind(v.impl().Kind()) }

// AsBool returns the boolean and true if v is a bool.
func (v Value) AsBool() (bool, bool) { return v.impl().AsBool() }

// AsInt returns the integer and true if v is an int (never for a float).
func (v Value) AsInt() (int64, bool) { return v.impl().AsInt() }

// AsFloat returns the float and true if v is a float (never for an int).
func (v Value) AsFloat() (float64, bool) { return v.impl().AsFloat() }

// AsString returns the string and true if v is a string.
func (v Value) AsString() (string, bool) { return v.impl().AsString() }

// Len returns the number of items of a list or fields of an object, else 0.
func (v Value) Len() int { return v.impl().Len() }

// Items returns a copy of a list's items (nil for other kinds).
func (v Value) Items() []Value {
	if v.Kind() != KindList {
		return nil
	}
	return publics(v.impl().Elems())
}

// Index returns item i of a list and true, or false if out of range.
func (v Value) Index(i int) (Value, bool) {
	it, ok := v.impl().Index(i)
	return Value(it), ok
}

// Field returns an object's field and true, or false if absent.
func (v Value) Field(key string) (Value, bool) {
	it, ok := v.impl().Field(key)
	return Value(it), ok
}

// Fields returns a copy of an object's fields (nil for other kinds).
func (v Value) Fields() map[string]Value {
	if v.Kind() != KindObject {
		return nil
	}
	keys, vals := v.impl().Keys(), v.impl().Elems()
	m := make(map[string]Value, len(keys))
	for i, k := range keys {
		m[k] = Value(vals[i])
	}
	return m
}

// Go returns a fresh Go representation: nil, bool, int64, float64, string,
// []any or map[string]any.
func (v Value) Go() any { return v.impl().Go() }

// Equal reports strict equality: same kind and same content, floats by
// their bits, lists item by item (order and duplicates matter).
func (v Value) Equal(w Value) bool { return v.impl().Equal(w.impl()) }

// String returns the value's JSON form (see MarshalJSON).
func (v Value) String() string { return v.impl().String() }

// MarshalJSON returns the value's typed canonical JSON (see "JSON" in the
// package documentation): RFC 8785 text in which an integral float and an
// integer beyond ±(2^53−1) are written {"$float":"1"} and {"$int":"…"}.
// A value that is not JSON is an error wrapping ErrInvalidValue.
func (v Value) MarshalJSON() ([]byte, error) { return v.impl().MarshalJSON() }
