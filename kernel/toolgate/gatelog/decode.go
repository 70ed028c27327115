package gatelog

import (
	"cmp"
	"errors"
	"fmt"
	"strings"

	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/trace"
)

// ErrDecode: an entry is not a well-formed toolgate entry.
var ErrDecode = errors.New("gatelog: malformed entry")

// Decode reads back every kind of entry the gate writes itself (its
// kernel and claims sessions write theirs, read by kernel.Decode and
// claims.DecodeRecord): a Refuse
// (KindRefuse), a Result (KindResult), a RefuseAnswer
// (KindRefuseAnswer), an Ask (KindAsk), an Expire
// (KindExpire) or a Budget (KindBudget). It is strict — one JSON object, no unknown or duplicate
// members (names spelled exactly), no null, every required member
// present, a tier that is a risk tier and an expired state that is one —
// and returns an error wrapping ErrDecode otherwise, or for an
// entry of another kind.
func Decode(e trace.Entry) (any, error) {
	switch e.Kind {
	case KindRefuse:
		v, err := decodeAs[Refuse](e.Payload)
		if err == nil {
			err = optionalHash("/definition", v.(Refuse).Definition)
		}
		if err == nil {
			err = optionalTrace(v.(Refuse).Trace)
		}
		return v, err
	case KindResult:
		v, err := decodeAs[Result](e.Payload)
		if err == nil {
			err = optionalHash("/definition", v.(Result).Definition)
		}
		if err == nil {
			err = optionalTrace(v.(Result).Trace)
		}
		return v, err
	case KindPin:
		return decodePin(e.Payload)
	case KindDrift:
		return decodeDrift(e.Payload)
	case KindRepin:
		return decodeRepin(e.Payload)
	case KindTask:
		return decodeTask(e.Payload)
	case KindRefuseAnswer:
		return decodeAs[RefuseAnswer](e.Payload)
	case KindRelay:
		return decodeRelay(e.Payload)
	case KindProtocol:
		return decodeProtocol(e.Payload)
	case KindSpawn, KindConnect, KindReload:
		return decodeGateway(e.Kind, e.Payload)
	case KindDeclassify:
		return decodeAs[Declassify](e.Payload)
	case KindSharedLabels:
		return decodeSharedLabels(e.Payload)
	case KindAsk:
		v, err := decodeAs[Ask](e.Payload)
		if err == nil && !v.(Ask).Tier.Valid() {
			return nil, fmt.Errorf("%w: /tier: %q is not a risk tier", ErrDecode, v.(Ask).Tier)
		}
		return v, err
	case KindBudget:
		v, err := decodeAs[Budget](e.Payload)
		if err != nil {
			return nil, err
		}
		b := v.(Budget)
		switch {
		case b.Action != "grant" && b.Action != "reset":
			return nil, fmt.Errorf("%w: /action: %q is not grant or reset", ErrDecode, b.Action)
		case b.Action == "grant" && b.Amount <= 0:
			return nil, fmt.Errorf("%w: /amount: a grant adds a positive amount, got %s", ErrDecode, b.Amount)
		case b.Action == "reset" && b.Amount != 0:
			return nil, fmt.Errorf("%w: /amount: a reset has no amount, got %s", ErrDecode, b.Amount)
		case b.Approver == "" || b.Reason == "":
			return nil, fmt.Errorf("%w: a budget entry names its approver and its reason", ErrDecode)
		}
		return b, nil
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

// decodePin reads a Pin: a source that is one, a hash for each tool
// (named, once: strictjson refuses a duplicate member) and for the
// instructions and lock when given.
func decodePin(payload []byte) (any, error) {
	var p Pin
	if err := decodeStrict(payload, &p); err != nil {
		return nil, err
	}
	switch p.Source {
	case "lock", "first_use":
	default:
		return nil, fmt.Errorf("%w: /source: %q is not lock or first_use", ErrDecode, p.Source)
	}
	if p.Source != "lock" && p.Lock != "" {
		return nil, fmt.Errorf("%w: /lock: a %s pin has no lock file", ErrDecode, p.Source)
	}
	for name, h := range p.Tools {
		if name == "" {
			return nil, fmt.Errorf("%w: /tools: a tool with an empty name", ErrDecode)
		}
		if err := optionalHash("/tools/"+pointerToken(name), h); err != nil || h == "" {
			return nil, cmp.Or(err, fmt.Errorf("%w: /tools/%s: empty hash", ErrDecode, pointerToken(name)))
		}
	}
	if err := optionalHash("/instructions", p.Instructions); err != nil {
		return nil, err
	}
	if err := optionalHash("/lock", p.Lock); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeDrift reads a Drift whose hashes fit its change.
func decodeDrift(payload []byte) (any, error) {
	var d Drift
	if err := decodeStrict(payload, &d); err != nil {
		return nil, err
	}
	if err := optionalHash("/pinned", d.Pinned); err != nil {
		return nil, err
	}
	if err := optionalHash("/seen", d.Seen); err != nil {
		return nil, err
	}
	bad := func(why string) (any, error) {
		return nil, fmt.Errorf("%w: a %q drift %s", ErrDecode, d.Change, why)
	}
	if (d.Change == "instructions") != (d.Tool == "") {
		return bad("names a tool exactly when it is not about instructions")
	}
	switch d.Change {
	case "changed":
		if d.Pinned == "" || d.Seen == "" || d.Pinned == d.Seen {
			return bad("needs two different hashes, pinned and seen")
		}
	case "new":
		if d.Pinned != "" || d.Seen == "" {
			return bad("has a seen hash and no pinned one")
		}
	case "removed":
		if d.Seen != "" {
			return bad("has no seen hash")
		}
	case "restored":
		if d.Pinned == "" || d.Seen != d.Pinned {
			return bad("has a seen hash equal to its pinned one")
		}
	case "instructions": // any two hashes: "" is no instructions, equal ones restored
	default:
		return nil, fmt.Errorf("%w: /change: %q is not changed, new, removed, restored or instructions", ErrDecode, d.Change)
	}
	return d, nil
}

// decodeRepin reads a Repin: hashes, a tool and an approver who did not
// request it.
func decodeRepin(payload []byte) (any, error) {
	var r Repin
	if err := decodeStrict(payload, &r); err != nil {
		return nil, err
	}
	if err := optionalHash("/old", r.Old); err != nil {
		return nil, err
	}
	if err := optionalHash("/new", r.New); err != nil || r.New == "" {
		return nil, cmp.Or(err, fmt.Errorf("%w: /new: empty hash", ErrDecode))
	}
	switch {
	case r.Tool == "":
		return nil, fmt.Errorf("%w: /tool: empty", ErrDecode)
	case r.Approver == "":
		return nil, fmt.Errorf("%w: /approver: empty", ErrDecode)
	case r.Approver == r.RequestedBy:
		return nil, fmt.Errorf("%w: /approver: %q approved a re-pin they requested", ErrDecode, r.Approver)
	}
	return r, nil
}

// optionalHash checks that h, at pointer, is "" or "sha256:" and 64
// lower-case hex digits.
func optionalHash(pointer, h string) error {
	if h == "" || ValidHash(h) {
		return nil
	}
	return fmt.Errorf("%w: %s: %.80q is not sha256: and 64 lower-case hex digits", ErrDecode, pointer, h)
}

// ValidHash reports whether h is a definition hash as the pin entries
// hold it: "sha256:" and 64 lower-case hex digits.
func ValidHash(h string) bool {
	const prefix = "sha256:"
	if len(h) != len(prefix)+64 || h[:len(prefix)] != prefix {
		return false
	}
	for _, c := range []byte(h[len(prefix):]) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// pointerToken escapes a member name as an RFC 6901 reference token.
func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
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
