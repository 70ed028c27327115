package jsonvalue

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/verity-go/verity/internal/strictjson"
)

// Read reads a typed-JSON value (see Value.MarshalJSON) in one pass:
// a number literal with a fraction or exponent is a float, otherwise an
// int within ±(2^53−1); {"$int":"…"}, {"$float":"…"} and
// {"$object":{…}} are the escapes MarshalJSON writes.
func Read(d *strictjson.Decoder) (Value, error) {
	switch d.Peek() {
	case strictjson.Null:
		return Null(), d.ReadNull()
	case strictjson.Bool:
		b, err := d.ReadBool()
		return Bool(b), err
	case strictjson.String:
		s, err := d.ReadString()
		return String(s), err
	case strictjson.Number:
		lit, isInt, err := d.ReadNumber()
		if err != nil {
			return Value{}, err
		}
		if isInt && len(lit) <= 17 {
			digits := lit
			if lit[0] == '-' {
				digits = lit[1:]
			}
			if n, ok := ParseCount(digits); ok && n <= MaxSafe {
				if lit[0] == '-' {
					return Int(-int64(n)), nil
				}
				return Int(int64(n)), nil
			}
		}
		v, err := Number(string(lit))
		if err != nil {
			return Value{}, d.Fail("value", err)
		}
		return v, nil
	case strictjson.Array:
		items := []Value{}
		err := d.Array(func(int) error {
			v, err := Read(d)
			items = append(items, v)
			return err
		})
		return NewList(items), err
	case strictjson.Object:
		if k, ok := d.FirstKey(); ok && (k == "$int" || k == "$float" || k == "$object") {
			start := d.Offset()
			n := 0
			if err := d.Object(func(string) error { n++; return d.Skip() }); err != nil {
				return Value{}, err
			}
			d.Rewind(start)
			if n == 1 {
				return readEscape(d)
			}
		}
		return readObject(d)
	}
	return Value{}, d.Skip()
}

// readEscape reads {"$int":"…"}, {"$float":"…"} or {"$object":{…}}.
func readEscape(d *strictjson.Decoder) (Value, error) {
	var v Value
	err := d.Object(func(key string) error {
		var err error
		v, err = readEscaped(d, key)
		return err
	})
	return v, err
}

func readEscaped(d *strictjson.Decoder, key string) (Value, error) {
	if key == "$object" {
		if d.Peek() != strictjson.Object {
			return Value{}, d.Fail("value", fmt.Errorf("%w: $object needs an object", ErrDecode))
		}
		return readObject(d)
	}
	if d.Peek() != strictjson.String {
		return Value{}, d.Fail("value", fmt.Errorf("%w: %s needs a decimal string", ErrDecode, key))
	}
	s, err := d.ReadString()
	if err != nil {
		return Value{}, err
	}
	if key == "$int" {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil || strconv.FormatInt(i, 10) != s {
			return Value{}, d.Fail("value", fmt.Errorf("%w: $int %q is not a canonical int64", ErrDecode, s))
		}
		return Int(i), nil
	}
	if s == "" || strings.ContainsAny(s, "xXpP_iInN") {
		return Value{}, d.Fail("value", fmt.Errorf("%w: $float %q is not a decimal number", ErrDecode, s))
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return Value{}, d.Fail("value", fmt.Errorf("%w: $float %q is not a finite number", ErrDecode, s))
	}
	return Float(f), nil
}

// readObject reads an object of typed values (the object itself is no
// escape).
func readObject(d *strictjson.Decoder) (Value, error) {
	var o members
	err := d.Object(func(key string) error {
		v, err := Read(d)
		o.keys, o.vals = append(o.keys, key), append(o.vals, v)
		return err
	})
	if err != nil {
		return Value{}, err
	}
	if o.keys == nil {
		o.keys, o.vals = []string{}, []Value{}
	}
	o.sort()
	return NewObject(o.keys, o.vals), nil
}

// members are an object's keys and values, sorted by key.
type members struct {
	keys []string
	vals []Value
}

func (m *members) sort() {
	if !sort.StringsAreSorted(m.keys) {
		sort.Sort(m)
	}
}

func (m *members) Len() int           { return len(m.keys) }
func (m *members) Less(i, j int) bool { return m.keys[i] < m.keys[j] }
func (m *members) Swap(i, j int) {
	m.keys[i], m.keys[j] = m.keys[j], m.keys[i]
	m.vals[i], m.vals[j] = m.vals[j], m.vals[i]
}

// ReadMembers reads an object of typed values into its keys, sorted by
// byte order, and their values (duplicate keys are the reader's error).
func ReadMembers(d *strictjson.Decoder) (keys []string, vals []Value, err error) {
	var o members
	err = d.Object(func(key string) error {
		v, err := Read(d)
		o.keys, o.vals = append(o.keys, key), append(o.vals, v)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	o.sort()
	return o.keys, o.vals, nil
}

// Number converts a JSON number literal: a float if it has a fraction or
// an exponent, otherwise an int within ±(2^53−1).
func Number(s string) (Value, error) {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return Value{}, fmt.Errorf("%w: number %s is not a finite float", ErrDecode, s)
		}
		return Float(f), nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil || i > MaxSafe || i < -MaxSafe {
		// Beyond ±(2^53−1) one text would be two numbers: a double reader
		// rounds it, so such an int is written {"$int":"…"}, never plain.
		return Value{}, fmt.Errorf("%w: integer %s is beyond ±(2^53−1); write it {\"$int\":%q}", ErrDecode, s, s)
	}
	return Int(i), nil
}

// ParseCount parses canonical decimal digits (no sign, no leading zero)
// that fit a uint64.
func ParseCount(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	var n uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// Decode decodes typed JSON into a Value (see Value.AppendJSON), strictly
// (internal/strictjson): no duplicate key, valid UTF-8, no integer
// literal a double would round, nesting at most 512 deep. Its errors wrap
// ErrDecode.
func Decode(b []byte) (Value, error) {
	var v wValue
	if err := strictjson.Unmarshal(b, &v); err != nil {
		return Value{}, &decodeError{err: err}
	}
	return v.v, nil
}

type wValue struct{ v Value }

func (w *wValue) UnmarshalStrict(d *strictjson.Decoder) error {
	v, err := Read(d)
	w.v = v
	return err
}

// decodeError is a refusal by the strict JSON reader, wrapping ErrDecode
// and the reader's error: its message names the package once.
type decodeError struct{ err error }

func (e *decodeError) Error() string {
	return ErrDecode.Error() + ": " + strings.ReplaceAll(e.err.Error(), "kernel: ", "")
}

func (e *decodeError) Unwrap() []error { return []error{ErrDecode, e.err} }
