package belief

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/verity-go/verity/internal/canon"
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
	SurvivorsBeforeHash Hash
	SurvivorsAfterHash  Hash
	Eliminated          []string // delta.eliminated, sorted by code point
	Notes               string
	PrevEventHash       Hash
	EventHash           Hash

	raw []byte // canonical bytes as built by the transition
}

// TimeFormat is the wire form of an event's time: RFC 3339 in UTC with
// the shortest exact fraction of a second.
const TimeFormat = time.RFC3339Nano

type auditWire struct {
	Delta               deltaWire       `json:"delta"`
	EventHash           *Hash           `json:"event_hash,omitempty"`
	EventID             string          `json:"event_id"`
	Notes               string          `json:"notes,omitempty"`
	Outcome             json.RawMessage `json:"outcome"`
	Payload             json.RawMessage `json:"payload"`
	PrevEventHash       Hash            `json:"prev_event_hash"`
	Seq                 uint64          `json:"seq"`
	SessionID           string          `json:"session_id"`
	SurvivorsAfterHash  Hash            `json:"survivors_after_hash"`
	SurvivorsBeforeHash Hash            `json:"survivors_before_hash"`
	TS                  string          `json:"ts"`
	Verb                Verb            `json:"verb"`
}

type deltaWire struct {
	Eliminated []string `json:"eliminated"`
}

func (e *AuditEntry) wire(withHash bool) auditWire {
	w := auditWire{
		Delta:               deltaWire{Eliminated: e.Eliminated},
		EventID:             e.EventID,
		Notes:               e.Notes,
		Outcome:             e.Outcome,
		Payload:             e.Payload,
		PrevEventHash:       e.PrevEventHash,
		Seq:                 e.Seq,
		SessionID:           e.SessionID,
		SurvivorsAfterHash:  e.SurvivorsAfterHash,
		SurvivorsBeforeHash: e.SurvivorsBeforeHash,
		TS:                  e.Time.UTC().Format(TimeFormat),
		Verb:                e.Verb,
	}
	if w.Delta.Eliminated == nil {
		w.Delta.Eliminated = []string{}
	}
	if withHash {
		h := e.EventHash
		w.EventHash = &h
	}
	return w
}

// Canonical returns the RFC 8785 canonical JSON of the entry without its
// event_hash member: the exact bytes EventHash is taken over and the
// payload recorded in the trace log. The members are delta.eliminated,
// event_id, notes (omitted when empty), outcome, payload, prev_event_hash,
// seq, session_id, survivors_after_hash, survivors_before_hash, ts and
// verb.
func (e AuditEntry) Canonical() ([]byte, error) {
	w := e.wire(false)
	return canon.Marshal(w)
}

// ComputeHash returns SHA-256 over Canonical, which is what EventHash must
// be.
func (e AuditEntry) ComputeHash() (Hash, error) {
	b, err := e.Canonical()
	if err != nil {
		return Hash{}, err
	}
	return sha256.Sum256(b), nil
}

// MarshalJSON emits the canonical form with event_hash added, which is
// the AUDIT_TRACE wire form.
func (e AuditEntry) MarshalJSON() ([]byte, error) {
	return canon.Marshal(e.wire(true))
}

// UnmarshalJSON reads the AUDIT_TRACE wire form (event_hash optional, so
// that a trace payload decodes too). Unknown members are rejected. It does
// not verify anything; Replay does.
func (e *AuditEntry) UnmarshalJSON(b []byte) error {
	var w auditWire
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("%w: audit entry: %v", ErrInvalidRequest, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: audit entry: trailing data", ErrInvalidRequest)
	}
	t, err := time.Parse(TimeFormat, w.TS)
	if err != nil {
		return fmt.Errorf("%w: audit entry ts: %v", ErrInvalidRequest, err)
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
		return fmt.Errorf("%w: audit entry: %v", ErrInvalidRequest, err)
	}
	*e = out
	return nil
}

// ParseAuditEntry decodes one entry from its canonical bytes (a trace
// payload, which has no event_hash member: the hash is computed).
func ParseAuditEntry(b []byte) (AuditEntry, error) {
	var e AuditEntry
	if err := e.UnmarshalJSON(b); err != nil {
		return AuditEntry{}, err
	}
	return e, nil
}
