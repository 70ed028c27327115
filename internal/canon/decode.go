package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Decode parses one JSON text strictly and returns it as a tree of
// map[string]any, []any, string, bool, nil and json.Number (each number
// literal exactly as written, so "1" and "1.0" stay apart). Strictly means
// what canonical JSON accepts: no duplicate keys (compared after
// unescaping), valid UTF-8, no lone surrogates, no integer literal that a
// reader would round, nesting at most 512 deep, one value and nothing
// after it. encoding/json alone accepts all of those, silently keeping the
// last duplicate or replacing bad bytes. A refusal is a *SyntaxError.
func Decode(data []byte) (any, error) {
	var tree any
	if err := DecodeInto(data, &tree, false); err != nil {
		return nil, err
	}
	return tree, nil
}

// DecodeInto is Decode into v (a pointer) with encoding/json's rules for
// the Go type, numbers into any as json.Number, and, when strict is true,
// an error for an object member v has no field for. A refusal by the
// strict reading is a *SyntaxError; a value that does not fit v is
// encoding/json's error wrapped with ErrSyntax.
func DecodeInto(data []byte, v any, strict bool) error {
	if !isCanonical(data) {
		if _, err := Transform(data); err != nil {
			return err
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	return nil
}

// KindOf names the JSON type of a value of a Decode tree: "null",
// "boolean", "number", "string", "array" or "object" (the names JSON
// Schema uses), and the Go type of anything else.
func KindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
