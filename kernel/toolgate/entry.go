package toolgate

import (
	"errors"
	"fmt"

	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/trace"
)

// ErrDecode: an entry is not a well-formed toolgate entry.
var ErrDecode = errors.New("toolgate: malformed entry")

// DecodeEntry reads a KindRefuse, KindResult or KindRefuseAnswer entry
// back: a RefuseEntry, a ResultEntry or a RefuseAnswerEntry. It is strict — one JSON object, no unknown or duplicate
// members (names spelled exactly), no null, every required member present
// — and returns an error wrapping
// ErrDecode otherwise, or for an entry of another kind.
func DecodeEntry(e trace.Entry) (any, error) {
	switch e.Kind {
	case KindRefuse:
		var r RefuseEntry
		if err := decodeStrict(e.Payload, &r); err != nil {
			return nil, err
		}
		return r, nil
	case KindResult:
		var r ResultEntry
		if err := decodeStrict(e.Payload, &r); err != nil {
			return nil, err
		}
		return r, nil
	case KindRefuseAnswer:
		var r RefuseAnswerEntry
		if err := decodeStrict(e.Payload, &r); err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: kind %q is not a toolgate entry", ErrDecode, e.Kind)
}

// decodeStrict reads one JSON object into v (a pointer to an entry) in
// one pass with internal/strictjson: no unknown or duplicate member, no
// null, nothing after the object, and every member whose tag has no
// omitempty present.
func decodeStrict(data []byte, v any) error {
	if err := strictjson.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %w", ErrDecode, err)
	}
	return nil
}
