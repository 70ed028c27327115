package belief

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// AuditEntry is one event of a session's append-only audit log (§1.1).
//
// Payload is the request as recorded (canonical JSON); Outcome is the
// verb's result (canonical JSON), which replay must reproduce exactly.
// SurvivorsAfterHash is the survivors hash (see SurvivorsHash) of the
// survivors after the event, bound to PrevEventHash, the EventHash of the
// previous event (zero for the first). SurvivorsBeforeHash is the
// SurvivorsAfterHash of the previous event, so consecutive events chain
// their survivor states as well as their hashes. EventHash is SHA-256 over
// the canonical JSON of every other field (see Canonical).
type AuditEntry struct {
	Seq                 uint64
	EventID             string
	SessionID           string
	Time                time.Time
	Verb                Verb
	Payload             json.RawMessage
	Outcome             json.RawMessage
	SurvivorsBeforeHash trace.Hash
	SurvivorsAfterHash  trace.Hash
	Eliminated          []string // delta.eliminated, sorted by code point
	Notes               string
	PrevEventHash       trace.Hash
	EventHash           trace.Hash

	raw []byte // canonical bytes as built by the transition
}

// timeFormat is the wire form of an event's time: RFC 3339 in UTC with
// the shortest exact fraction of a second.
const timeFormat = time.RFC3339Nano

type auditWire struct {
	Delta               deltaWire       `json:"delta"`
	EventHash           *trace.Hash     `json:"event_hash,omitempty"`
	EventID             string          `json:"event_id"`
	Notes               string          `json:"notes,omitempty"`
	Outcome             json.RawMessage `json:"outcome"`
	Payload             json.RawMessage `json:"payload"`
	PrevEventHash       trace.Hash      `json:"prev_event_hash"`
	Seq                 uint64          `json:"seq"`
	SessionID           string          `json:"session_id"`
	SurvivorsAfterHash  trace.Hash      `json:"survivors_after_hash"`
	SurvivorsBeforeHash trace.Hash      `json:"survivors_before_hash"`
	TS                  string          `json:"ts"`
	Verb                Verb            `json:"verb"`
}

type deltaWire struct {
	Eliminated []string `json:"eliminated"`
}

// Canonical returns the RFC 8785 canonical JSON of the entry without its
// event_hash member: the exact bytes EventHash is taken over and the
// payload recorded in the trace log. The members, in canonical order, are
// delta ({"eliminated":[…]}), event_id, notes (omitted when empty),
// outcome, payload, prev_event_hash, seq, session_id,
// survivors_after_hash, survivors_before_hash, ts and verb.
func (e AuditEntry) Canonical() ([]byte, error) {
	return e.appendCanonical(make([]byte, 0, 512+len(e.Payload)+len(e.Outcome)), false)
}

// appendCanonical writes the canonical form member by member (keys in
// UTF-16 order: delta, event_hash, event_id, notes, outcome, payload,
// prev_event_hash, seq, session_id, survivors_after_hash,
// survivors_before_hash, ts, verb). Payload and outcome are
// canonicalised, so an entry decoded from any JSON spelling hashes alike.
func (e *AuditEntry) appendCanonical(b []byte, withHash bool) ([]byte, error) {
	b, err := e.appendHead(b, withHash)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"outcome":`...)
	if b, err = appendRaw(b, e.Outcome); err != nil {
		return nil, fmt.Errorf("%w: audit entry outcome: %v", ErrInvalidRequest, err)
	}
	b = append(b, `,"payload":`...)
	if b, err = appendRaw(b, e.Payload); err != nil {
		return nil, fmt.Errorf("%w: audit entry payload: %v", ErrInvalidRequest, err)
	}
	return e.appendTail(b), nil
}

// appendCanonicalTrusted is appendCanonical without the hash member for an
// entry built by a transition, whose outcome and payload (passed apart
// from e, which does not hold them yet) are canonical JSON as built
// (canon.Marshal or the canonical encoders): they are copied rather than
// checked again (empty is null). Strings are still checked for UTF-8. It
// returns where the outcome and payload start in b, so that the entry can
// point into its canonical bytes instead of holding copies, and it
// retains neither, so they may live in scratch space.
func (e *AuditEntry) appendCanonicalTrusted(b, outcome, payload []byte) (out []byte, outcomeAt, payloadAt int, err error) {
	if b, err = e.appendHead(b, false); err != nil {
		return nil, 0, 0, err
	}
	b = append(b, `,"outcome":`...)
	outcomeAt = len(b)
	if len(outcome) == 0 {
		b = append(b, "null"...)
	}
	b = append(b, outcome...)
	b = append(b, `,"payload":`...)
	payloadAt = len(b)
	if len(payload) == 0 {
		b = append(b, "null"...)
	}
	b = append(b, payload...)
	return e.appendTail(b), outcomeAt, payloadAt, nil
}

// appendHead writes the members before outcome: delta, event_hash (if
// withHash), event_id and notes.
func (e *AuditEntry) appendHead(b []byte, withHash bool) ([]byte, error) {
	for _, s := range [...]string{e.EventID, e.SessionID, e.Notes, string(e.Verb)} {
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: audit entry: invalid UTF-8", ErrInvalidRequest)
		}
	}
	if e.Seq > canon.MaxSafeInteger {
		return nil, fmt.Errorf("%w: audit entry: seq beyond 2^53-1", ErrInvalidRequest)
	}
	b = append(b, `{"delta":{"eliminated":[`...)
	for i, id := range e.Eliminated {
		if !utf8.ValidString(id) {
			return nil, fmt.Errorf("%w: audit entry: invalid UTF-8", ErrInvalidRequest)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = canon.AppendString(b, id)
	}
	b = append(b, "]}"...)
	if withHash {
		b = append(b, `,"event_hash":"`...)
		b = hex.AppendEncode(b, e.EventHash[:])
		b = append(b, '"')
	}
	b = append(b, `,"event_id":`...)
	b = canon.AppendString(b, e.EventID)
	if e.Notes != "" {
		b = append(b, `,"notes":`...)
		b = canon.AppendString(b, e.Notes)
	}
	return b, nil
}

// appendTail writes the members after payload, prev_event_hash to verb,
// and closes the object.
func (e *AuditEntry) appendTail(b []byte) []byte {
	b = append(b, `,"prev_event_hash":"`...)
	b = hex.AppendEncode(b, e.PrevEventHash[:])
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, e.Seq, 10)
	b = append(b, `,"session_id":`...)
	b = canon.AppendString(b, e.SessionID)
	b = append(b, `,"survivors_after_hash":"`...)
	b = hex.AppendEncode(b, e.SurvivorsAfterHash[:])
	b = append(b, `","survivors_before_hash":"`...)
	b = hex.AppendEncode(b, e.SurvivorsBeforeHash[:])
	b = append(b, `","ts":"`...)
	b = e.Time.UTC().AppendFormat(b, timeFormat)
	b = append(b, `","verb":`...)
	b = canon.AppendString(b, string(e.Verb))
	return append(b, '}')
}

// appendRaw appends a JSON value in canonical form; absent is null.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	if canon.Valid(raw) == nil {
		return append(b, raw...), nil
	}
	return canon.AppendTransform(b, raw)
}

// ComputeHash returns SHA-256 over Canonical, which is what EventHash must
// be.
func (e AuditEntry) ComputeHash() (trace.Hash, error) {
	b, err := e.Canonical()
	if err != nil {
		return trace.Hash{}, err
	}
	return sha256.Sum256(b), nil
}

// MarshalJSON emits the canonical form with event_hash added, which is
// the AUDIT_TRACE wire form.
func (e AuditEntry) MarshalJSON() ([]byte, error) {
	return e.appendCanonical(make([]byte, 0, 600+len(e.Payload)+len(e.Outcome)), true)
}

// DecodeAuditEntry reads one entry in the AUDIT_TRACE wire form, or a
// trace payload, which is the same without event_hash (the hash is then
// computed). The JSON must be strict (canon.Decode: no duplicate keys,
// valid UTF-8, safe integers) and unknown members are rejected. It does
// not verify anything; Replay does. It is the one way to read an entry:
// AuditEntry has no UnmarshalJSON.
func DecodeAuditEntry(b []byte) (AuditEntry, error) {
	var w auditWire
	if err := canon.DecodeInto(b, &w, true); err != nil {
		return AuditEntry{}, fmt.Errorf("%w: audit entry: %s", ErrInvalidRequest, canonReason(err))
	}
	t, err := time.Parse(timeFormat, w.TS)
	if err != nil {
		return AuditEntry{}, fmt.Errorf("%w: audit entry ts: %v", ErrInvalidRequest, err)
	}
	out := AuditEntry{
		Seq:                 w.Seq,
		EventID:             w.EventID,
		SessionID:           w.SessionID,
		Time:                t.UTC(),
		Verb:                w.Verb,
		Payload:             w.Payload,
		Outcome:             w.Outcome,
		SurvivorsBeforeHash: w.SurvivorsBeforeHash,
		SurvivorsAfterHash:  w.SurvivorsAfterHash,
		Eliminated:          w.Delta.Eliminated,
		Notes:               w.Notes,
		PrevEventHash:       w.PrevEventHash,
	}
	if w.EventHash != nil {
		out.EventHash = *w.EventHash
	} else if out.EventHash, err = out.ComputeHash(); err != nil {
		return AuditEntry{}, err
	}
	return out, nil
}

// DecodeAuditLog reads a JSON array of entries in the AUDIT_TRACE wire
// form (the events member of its response), each as DecodeAuditEntry
// does; an error names the index of the entry it is about.
func DecodeAuditLog(b []byte) ([]AuditEntry, error) {
	var raws []json.RawMessage
	if err := canon.DecodeInto(b, &raws, true); err != nil {
		return nil, fmt.Errorf("%w: audit log: %s", ErrInvalidRequest, canonReason(err))
	}
	out := make([]AuditEntry, len(raws))
	for i, raw := range raws {
		e, err := DecodeAuditEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("%w (entry %d of the log)", err, i)
		}
		out[i] = e
	}
	return out, nil
}

// canonReason is a strict-decoding error without canon's package prefix.
func canonReason(err error) string { return strings.ReplaceAll(err.Error(), "canon: ", "") }
