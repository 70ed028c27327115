package kernel

import (
	"github.com/verity-go/verity/internal/strictjson"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
)

// DecodeState decodes a JSON object of variable → typed value (the form
// State.MarshalJSON writes), as strictly as value.Decode reads a value.
func DecodeState(b []byte) (State, error) {
	var s wState
	if err := strictjson.Unmarshal(b, &s); err != nil {
		return State{}, &decodeError{err: err}
	}
	return s.s, nil
}

// Action JSON: an object with "id" (required), "name", "description",
// "effects" (a list of {"op", "key", "value"}), "cost" (a decimal number
// or string, exact), "category", "reversible", "precondition",
// "postcondition" and "tags". Unknown fields are errors.

// DecodeAction decodes and validates an action, as strictly as
// value.Decode. Every problem found is reported, each with its JSON
// Pointer; nothing is guessed or rounded.
func DecodeAction(b []byte) (Action, error) {
	var a wAction
	if err := strictjson.Unmarshal(b, &a); err != nil {
		return Action{}, &decodeError{err: err}
	}
	return a.a, nil
}

// MarshalJSON writes the action's canonical JSON (the form DecodeAction
// reads and the trace records).
func (a Action) MarshalJSON() ([]byte, error) {
	if err := a.validate(); err != nil {
		return nil, err
	}
	return a.appendJSON(nil), nil
}

// appendJSON writes the canonical JSON of a valid action. Field names are
// ASCII, written in sorted order.
func (a Action) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"category":`...)
	dst = canon.AppendString(dst, a.Category)
	dst = append(dst, `,"cost":"`...)
	dst = a.Cost.appendDecimal(dst)
	dst = append(dst, `","description":`...)
	dst = canon.AppendString(dst, a.Description)
	dst = append(dst, `,"effects":`...)
	dst = appendEffects(dst, a.Effects)
	dst = append(dst, `,"id":`...)
	dst = canon.AppendString(dst, a.ID)
	dst = append(dst, `,"name":`...)
	dst = canon.AppendString(dst, a.Name)
	dst = append(dst, `,"postcondition":`...)
	dst = canon.AppendString(dst, a.Postcondition)
	dst = append(dst, `,"precondition":`...)
	dst = canon.AppendString(dst, a.Precondition)
	dst = append(dst, `,"reversible":`...)
	dst = strconv.AppendBool(dst, a.Reversible)
	dst = append(dst, `,"tags":[`...)
	for i, t := range a.Tags {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = canon.AppendString(dst, t)
	}
	return append(dst, "]}"...)
}

func appendEffects(dst []byte, effects []Effect) []byte {
	dst = append(dst, '[')
	for i, e := range effects {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		if e.Op == OpCount {
			dst = append(dst, `"initial":`...)
			dst = jv(e.Initial).AppendJSON(dst)
			dst = append(dst, ',')
		}
		dst = append(dst, `"key":`...)
		dst = canon.AppendString(dst, e.Key)
		dst = append(dst, `,"op":"`...)
		dst = append(dst, e.Op.String()...)
		dst = append(dst, '"')
		if e.Op != OpDelete {
			dst = append(dst, `,"value":`...)
			dst = jv(e.Value).AppendJSON(dst)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// MarshalJSON writes {"key","op","value"} (no value for delete; count
// adds "initial").
func (e Effect) MarshalJSON() ([]byte, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	b := appendEffects(nil, []Effect{e})
	return b[1 : len(b)-1], nil
}

// validUTF8 replaces invalid UTF-8 so that a diagnostic can be recorded.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
