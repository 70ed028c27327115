package sqlapproval

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// encodeNames is the column form of a list of names: a JSON array of
// strings ("[]" for none).
func encodeNames(names []string) string {
	if names == nil {
		names = []string{}
	}
	b, err := json.Marshal(names)
	if err != nil { // unreachable: strings always marshal
		return "[]"
	}
	return string(b)
}

// decodeNames reads a names column back: exactly one JSON array of at
// most MaxNames strings, each 1 to MaxIDLen bytes of UTF-8 without NUL,
// the whole valid UTF-8 (encoding/json would replace a bad byte
// silently). Anything else — a column written by something other than
// this package — is an error naming the column, never a panic.
func decodeNames(column, s string) ([]string, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("%w: column %s is not UTF-8", ErrInvalid, column)
	}
	var raw []*string
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, fmt.Errorf("%w: column %s is not a JSON array of strings: %v", ErrInvalid, column, err)
	}
	if raw == nil {
		return nil, fmt.Errorf("%w: column %s is null, not an array", ErrInvalid, column)
	}
	names := make([]string, len(raw))
	for i, p := range raw {
		if p == nil {
			return nil, fmt.Errorf("%w: column %s holds null at %d", ErrInvalid, column, i)
		}
		names[i] = *p
	}
	if err := checkNames("column "+column, names); err != nil {
		return nil, err
	}
	return names, nil
}
