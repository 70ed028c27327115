package kernel

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/verity-go/verity/internal/strictjson"
)

// readValue reads a typed-JSON value (see Value.MarshalJSON) in one pass:
// a number literal with a fraction or exponent is a float, otherwise an
// int within ±(2^53−1); {"$int":"…"}, {"$float":"…"} and
// {"$object":{…}} are the escapes MarshalJSON writes.
func readValue(d *strictjson.Decoder) (Value, error) {
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
			if n, ok := parseCount(digits); ok && n <= maxSafe {
				if lit[0] == '-' {
					return Int(-int64(n)), nil
				}
				return Int(int64(n)), nil
			}
		}
		v, err := numberValue(string(lit))
		if err != nil {
			return Value{}, d.Fail("value", err)
		}
		return v, nil
	case strictjson.Array:
		items := []Value{}
		err := d.Array(func(int) error {
			v, err := readValue(d)
			items = append(items, v)
			return err
		})
		return listValue(items), err
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
		v, err := readValue(d)
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
	return objectValue(o.keys, o.vals), nil
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
