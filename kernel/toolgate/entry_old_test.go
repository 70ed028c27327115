package toolgate

import (
	"encoding/json"
	"fmt"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// oldDecodeEntry is gatelog.Decode as it was before it read with
// internal/strictjson: canon.DecodeInto (encoding/json after canon's
// check), then a map of the members for the required ones.
//
// gatelog.Decode reads a gatelog.KindRefuse, gatelog.KindResult or gatelog.KindRefuseAnswer entry
// back: a Refuse, a Result or a RefuseAnswer entry. It is strict — one JSON object, no unknown or duplicate
// members, every required member present — and returns an error wrapping
// ErrDecode otherwise, or for an entry of another kind.
func oldDecodeEntry(e trace.Entry) (any, error) {
	switch e.Kind {
	case gatelog.KindRefuse:
		var r gatelog.Refuse
		if err := oldDecodeStrict(e.Payload, &r, "session", "caller", "call_id", "tool", "reason", "explanation", "arguments_sha256", "arguments_size"); err != nil {
			return nil, err
		}
		return r, nil
	case gatelog.KindResult:
		var r gatelog.Result
		if err := oldDecodeStrict(e.Payload, &r, "session", "caller", "call_id", "exec_id", "tool", "ok", "output_sha256", "output_size", "charged"); err != nil {
			return nil, err
		}
		return r, nil
	case gatelog.KindRefuseAnswer:
		var r gatelog.RefuseAnswer
		if err := oldDecodeStrict(e.Payload, &r, "session", "caller", "reason", "explanation"); err != nil {
			return nil, err
		}
		return r, nil
	}
	return nil, fmt.Errorf("%w: kind %q is not a toolgate entry", gatelog.ErrDecode, e.Kind)
}

// decodeStrict decodes one JSON object into v with canon's strict reading
// (no duplicate or unknown members, nothing after the object) and refuses
// it when a required member is missing.
func oldDecodeStrict(data []byte, v any, required ...string) error {
	if err := canon.DecodeInto(data, v, true); err != nil {
		return fmt.Errorf("%w: %w", gatelog.ErrDecode, err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil || members == nil {
		return fmt.Errorf("%w: not an object", gatelog.ErrDecode)
	}
	for _, name := range required {
		if _, ok := members[name]; !ok {
			return fmt.Errorf("%w: missing member %q", gatelog.ErrDecode, name)
		}
	}
	return nil
}
