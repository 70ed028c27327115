package kernel

// The readers DecodeValue, DecodeState and DecodeAction replaced:
// canon.Decode into a generic tree, then a conversion. The entry decoder
// DecodeEntry replaced (entry_old_test.go) uses them too;
// FuzzDecodeValueAgrees checks that the new readers accept what these
// accepted.

import (
	"encoding/json"
	"fmt"
	"github.com/verity-go/verity/internal/jsonvalue"
	"github.com/verity-go/verity/kernel/value"
	"math"
	"strconv"
	"strings"

	"github.com/verity-go/verity/internal/canon"
)

// decodeJSON parses one JSON text strictly (canon.Decode: no duplicate
// keys, valid UTF-8, no integer literal a double would round, bounded
// depth), keeping number literals as written, so "1" and "1.0" stay
// distinguishable and an int is read from its exact digits.
func decodeJSON(b []byte) (any, error) {
	x, err := canon.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return x, nil
}

// fromJSON converts a decoded typed-JSON value: a number literal with a
// fraction or exponent is a float, otherwise an int within ±(2^53−1) (a
// plain integer literal beyond is refused: a double reader would read
// another number from the same text); {"$int":"…"},
// {"$float":"…"} and {"$object":{…}} are the escapes MarshalJSON writes.
func fromJSON(x any, depth int) (value.Value, error) {
	if depth > 512 {
		return value.Value{}, fmt.Errorf("%w: nested more than %d levels", ErrDecode, 512)
	}
	switch v := x.(type) {
	case nil:
		return value.Null(), nil
	case bool:
		return value.Bool(v), nil
	case string:
		return value.String(v), nil
	case json.Number:
		return number(string(v))
	case []any:
		items := make([]value.Value, len(v))
		for i, it := range v {
			iv, err := fromJSON(it, depth+1)
			if err != nil {
				return value.Value{}, err
			}
			items[i] = iv
		}
		return value.List(items...), nil
	case map[string]any:
		if len(v) == 1 {
			for k, inner := range v {
				switch k {
				case "$int":
					s, ok := inner.(string)
					if !ok {
						return value.Value{}, fmt.Errorf("%w: $int needs a decimal string", ErrDecode)
					}
					i, err := strconv.ParseInt(s, 10, 64)
					if err != nil || strconv.FormatInt(i, 10) != s {
						return value.Value{}, fmt.Errorf("%w: $int %q is not a canonical int64", ErrDecode, s)
					}
					return value.Int(i), nil
				case "$float":
					s, ok := inner.(string)
					if !ok {
						return value.Value{}, fmt.Errorf("%w: $float needs a decimal string", ErrDecode)
					}
					if s == "" || strings.ContainsAny(s, "xXpP_iInN") {
						return value.Value{}, fmt.Errorf("%w: $float %q is not a decimal number", ErrDecode, s)
					}
					f, err := strconv.ParseFloat(s, 64)
					if err != nil || math.IsInf(f, 0) {
						return value.Value{}, fmt.Errorf("%w: $float %q is not a finite number", ErrDecode, s)
					}
					return value.Float(f), nil
				case "$object":
					m, ok := inner.(map[string]any)
					if !ok {
						return value.Value{}, fmt.Errorf("%w: $object needs an object", ErrDecode)
					}
					return objectFromJSON(m, depth)
				}
			}
		}
		return objectFromJSON(v, depth)
	}
	return value.Value{}, fmt.Errorf("%w: unexpected %T", ErrDecode, x)
}

func objectFromJSON(m map[string]any, depth int) (value.Value, error) {
	fields := make(map[string]value.Value, len(m))
	for k, it := range m {
		iv, err := fromJSON(it, depth+1)
		if err != nil {
			return value.Value{}, err
		}
		fields[k] = iv
	}
	return value.Object(fields), nil
}

// oldDecodeValue decodes typed JSON into a Value (see Value.MarshalJSON).
func oldDecodeValue(b []byte) (value.Value, error) {
	x, err := decodeJSON(b)
	if err != nil {
		return value.Value{}, err
	}
	return fromJSON(x, 0)
}

// oldDecodeState decodes a JSON object of variable → typed value (the form
// State.MarshalJSON writes).
func oldDecodeState(b []byte) (State, error) {
	x, err := decodeJSON(b)
	if err != nil {
		return State{}, err
	}
	m, ok := x.(map[string]any)
	if !ok {
		return State{}, fmt.Errorf("%w: a state is a JSON object", ErrDecode)
	}
	bl := newBuilder(State{})
	for k, it := range m {
		v, err := fromJSON(it, 1)
		if err != nil {
			return State{}, within(err, "variable %q", k)
		}
		bl.set(k, v)
	}
	return bl.state(), nil
}

var actionFields = map[string]bool{
	"id": true, "name": true, "description": true, "effects": true, "cost": true, "category": true,
	"reversible": true, "precondition": true, "postcondition": true, "tags": true,
}

// oldDecodeAction decodes and validates an action. Every problem found is
// reported (joined); nothing is guessed or rounded.
func oldDecodeAction(b []byte) (Action, error) {
	x, err := decodeJSON(b)
	if err != nil {
		return Action{}, err
	}
	return actionFromJSON(x)
}

func actionFromJSON(x any) (Action, error) {
	m, ok := x.(map[string]any)
	if !ok {
		return Action{}, fmt.Errorf("%w: an action is a JSON object", ErrDecode)
	}
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrDecode}, args...)...))
	}
	str := func(field string) string {
		v, present := m[field]
		if !present {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad("%s must be a string", field)
		}
		return s
	}
	for k := range m {
		if !actionFields[k] {
			bad("unknown field %q", k)
		}
	}
	a := Action{
		ID: str("id"), Name: str("name"), Description: str("description"), Category: str("category"),
		Precondition: str("precondition"), Postcondition: str("postcondition"),
	}
	if r, present := m["reversible"]; present {
		if bv, ok := r.(bool); ok {
			a.Reversible = bv
		} else {
			bad("reversible must be a boolean")
		}
	}
	if c, present := m["cost"]; present {
		var text string
		isText := true
		switch cv := c.(type) {
		case json.Number:
			text = string(cv)
		case string:
			text = cv
		default:
			isText = false
			bad("cost must be a number or a decimal string")
		}
		if isText {
			cost, err := ParseCost(text)
			if err != nil {
				errs = append(errs, err)
			}
			a.Cost = cost
		}
	}
	if t, present := m["tags"]; present {
		list, ok := t.([]any)
		if !ok {
			bad("tags must be a list of strings")
		}
		for i, it := range list {
			s, ok := it.(string)
			if !ok {
				bad("tag %d must be a string", i)
				continue
			}
			a.Tags = append(a.Tags, s)
		}
	}
	if e, present := m["effects"]; present {
		list, ok := e.([]any)
		if !ok {
			bad("effects must be a list")
		}
		for i, it := range list {
			eff, err := effectFromJSON(it)
			if err != nil {
				errs = append(errs, within(err, "effect %d", i))
				continue
			}
			a.Effects = append(a.Effects, eff)
		}
	}
	if len(errs) == 0 {
		if err := a.validate(); err != nil {
			return Action{}, err
		}
		return a, nil
	}
	return Action{}, joinErrors(errs...)
}

func effectFromJSON(x any) (Effect, error) {
	m, ok := x.(map[string]any)
	if !ok {
		return Effect{}, fmt.Errorf("%w: an effect is a JSON object", ErrDecode)
	}
	for k := range m {
		if k != "op" && k != "key" && k != "value" && k != "initial" {
			return Effect{}, fmt.Errorf("%w: unknown effect field %q", ErrDecode, k)
		}
	}
	opName, ok := m["op"].(string)
	if !ok {
		return Effect{}, fmt.Errorf("%w: effect op must be a string", ErrDecode)
	}
	op, err := parseOp(opName)
	if err != nil {
		return Effect{}, err
	}
	key, ok := m["key"].(string)
	if !ok {
		return Effect{}, fmt.Errorf("%w: effect key must be a string", ErrDecode)
	}
	raw, present := m["value"]
	if op != OpDelete && !present {
		return Effect{}, fmt.Errorf("%w: %s needs a value", ErrDecode, op)
	}
	var v value.Value
	if present {
		if v, err = fromJSON(raw, 1); err != nil {
			return Effect{}, err
		}
	}
	e := Effect{Op: op, Key: key, Value: v}
	if raw, present := m["initial"]; present {
		if op != OpCount {
			return Effect{}, fmt.Errorf("%w: only count takes an initial value", ErrDecode)
		}
		if e.Initial, err = fromJSON(raw, 1); err != nil {
			return Effect{}, err
		}
	} else if op == OpCount {
		return Effect{}, fmt.Errorf("%w: count needs an initial value", ErrDecode)
	}
	return e, e.validate()
}

func number(s string) (value.Value, error) {
	v, err := jsonvalue.Number(s)
	return value.Value(v), err
}
