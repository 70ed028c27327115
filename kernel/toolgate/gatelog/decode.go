package gatelog

import (
	"errors"
	"fmt"

	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/trace"
)

// ErrDecode: an entry is not a well-formed toolgate entry.
var ErrDecode = errors.New("gatelog: malformed entry")

// Decode reads back every kind of entry the gate writes itself (its
// kernel and claims sessions write theirs, read by kernel.Decode and
// claims.DecodeRecord): a Refuse
// (KindRefuse), a Result (KindResult), a RefuseAnswer
// (KindRefuseAnswer), an Ask (KindAsk) or an Expire
// (KindExpire). It is strict — one JSON object, no unknown or duplicate
// members (names spelled exactly), no null, every required member
// present, a tier that is a risk tier and an expired state that is one —
// and returns an error wrapping ErrDecode otherwise, or for an
// entry of another kind.
func Decode(e trace.Entry) (any, error) {
	switch e.Kind {
	case KindRefuse:
		return decodeAs[Refuse](e.Payload)
	case KindResult:
		return decodeAs[Result](e.Payload)
	case KindRefuseAnswer:
		return decodeAs[RefuseAnswer](e.Payload)
	case KindDeclassify:
		return decodeAs[Declassify](e.Payload)
	case KindAsk:
		v, err := decodeAs[Ask](e.Payload)
		if err == nil && !v.(Ask).Tier.Valid() {
			return nil, fmt.Errorf("%w: /tier: %q is not a risk tier", ErrDecode, v.(Ask).Tier)
		}
		return v, err
	case KindExpire:
		v, err := decodeAs[Expire](e.Payload)
		if err != nil {
			return nil, err
		}
		x := v.(Expire)
		if !x.Tier.Valid() {
			return nil, fmt.Errorf("%w: /tier: %q is not a risk tier", ErrDecode, x.Tier)
		}
		if x.State != "waiting" && x.State != "approved" && x.State != "denied" {
			return nil, fmt.Errorf("%w: /state: %q is not waiting, approved or denied", ErrDecode, x.State)
		}
		return x, nil
	}
	return nil, fmt.Errorf("%w: kind %q is not a toolgate entry", ErrDecode, e.Kind)
}

// decodeAs reads one entry of type T.
func decodeAs[T any](payload []byte) (any, error) {
	var r T
	if err := decodeStrict(payload, &r); err != nil {
		return nil, err
	}
	return r, nil
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
