package toolgate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/verity-go/verity/trace"
)

// ErrDecode: an entry is not a well-formed toolgate entry.
var ErrDecode = errors.New("toolgate: malformed entry")

// DecodeEntry reads a KindRefuse or KindResult entry back: a RefuseEntry or
// a ResultEntry. It is strict — one JSON object, no unknown or duplicate
// members, every required member present — and returns an error wrapping
// ErrDecode otherwise, or for an entry of another kind.
func DecodeEntry(e trace.Entry) (any, error) {
	switch e.Kind {
	case KindRefuse:
		var r RefuseEntry
		if err := decodeStrict(e.Payload, &r, "session", "caller", "call_id", "tool", "reason", "explanation", "arguments_sha256", "arguments_size"); err != nil {
			return nil, err
		}
		return r, nil
	case KindResult:
		var r ResultEntry
		if err := decodeStrict(e.Payload, &r, "session", "caller", "call_id", "exec_id", "tool", "ok", "output_sha256", "output_size", "charged"); err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: kind %q is not a toolgate entry", ErrDecode, e.Kind)
}

// decodeStrict decodes one JSON object into v, refusing unknown and
// duplicate members, trailing data and missing required members.
func decodeStrict(data []byte, v any, required ...string) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if members == nil {
		return fmt.Errorf("%w: not an object", ErrDecode)
	}
	if err := noDuplicateMembers(data); err != nil {
		return err
	}
	for _, name := range required {
		if _, ok := members[name]; !ok {
			return fmt.Errorf("%w: missing member %q", ErrDecode, name)
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the object", ErrDecode)
	}
	return nil
}

// noDuplicateMembers refuses an object that names a member twice (the
// entries are flat objects).
func noDuplicateMembers(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %w", ErrDecode, err)
		}
		name, _ := t.(string)
		if seen[name] {
			return fmt.Errorf("%w: duplicate member %q", ErrDecode, name)
		}
		seen[name] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("%w: %w", ErrDecode, err)
		}
	}
	return nil
}
