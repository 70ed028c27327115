package claims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Trace entry kinds written by Session.
const (
	KindEvaluate = "claims.evaluate" // one evaluation of a bundle
	KindApprove  = "claims.approve"  // one human decision and the re-evaluation it caused
)

// ErrNoLog is returned by NewSession without a trace log.
var ErrNoLog = errors.New("claims: session needs a trace log")

// Record is the payload of a KindEvaluate or KindApprove trace entry: who
// acted with which clearance, the approval (KindApprove only) and the
// evaluated bundle, whose audit trail holds the decision, reason, gates,
// caveats and flags.
type Record struct {
	Actor     string      `json:"actor"`
	Clearance RiskTier    `json:"clearance"`
	Approval  *Approval   `json:"approval,omitempty"`
	Bundle    ClaimBundle `json:"bundle"`
}

// DecodeRecord decodes the payload of a claims trace entry strictly (the
// bundle and approval with DecodeBundle and DecodeApproval rules, no
// unknown fields).
func DecodeRecord(payload []byte) (Record, error) {
	// canon rejects duplicate keys, invalid UTF-8 and trailing data, which
	// encoding/json would accept; member names are then matched exactly,
	// where encoding/json would ignore case.
	if _, err := canon.Transform(payload); err != nil {
		return Record{}, fmt.Errorf("%w: record: %w", ErrMalformed, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil || m == nil {
		return Record{}, fmt.Errorf("%w: record: not an object", ErrMalformed)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "actor" && k != "clearance" && k != "approval" && k != "bundle" {
			return Record{}, fmt.Errorf("%w: record: unknown field %q", ErrMalformed, k)
		}
	}
	var rec Record
	if raw, ok := m["actor"]; ok {
		if err := json.Unmarshal(raw, &rec.Actor); err != nil {
			return Record{}, fmt.Errorf("%w: record: actor: %w", ErrMalformed, err)
		}
	}
	if raw, ok := m["clearance"]; ok {
		if err := json.Unmarshal(raw, &rec.Clearance); err != nil {
			return Record{}, fmt.Errorf("%w: record: clearance: %w", ErrMalformed, err)
		}
	}
	if !rec.Clearance.Valid() {
		return Record{}, fmt.Errorf("%w: record: clearance %q", ErrMalformed, rec.Clearance)
	}
	if raw, ok := m["approval"]; ok && string(raw) != "null" {
		a, err := DecodeApproval(raw)
		if err != nil {
			return Record{}, fmt.Errorf("%w: record: approval: %w", ErrMalformed, err)
		}
		rec.Approval = &a
	}
	raw, ok := m["bundle"]
	if !ok {
		return Record{}, fmt.Errorf("%w: record: no bundle", ErrMalformed)
	}
	b, err := DecodeBundle(raw)
	if err != nil {
		return Record{}, err
	}
	rec.Bundle = b
	return rec, nil
}

// Session is the shell around Evaluate and RecordApproval: it stamps times
// from a clock, fills missing ids with UUIDv7s, and appends every
// evaluation and approval to a trace.Log before returning it, so that a
// decision the caller sees is always on the log. It is safe for concurrent
// use.
type Session struct {
	mu     sync.Mutex
	log    *trace.Log
	policy Policy
	clock  func() time.Time
	newID  func() string
}

// SessionOption configures a Session.
type SessionOption func(*Session)

// WithClock sets the session's clock (default time.Now).
func WithClock(clock func() time.Time) SessionOption {
	return func(s *Session) { s.clock = clock }
}

// WithIDs sets the id source used for bundles and claims without an id
// (default: UUIDv7 strings).
func WithIDs(newID func() string) SessionOption {
	return func(s *Session) { s.newID = newID }
}

// NewSession returns a session that evaluates with policy p and records to
// log. The policy is validated once here.
func NewSession(log *trace.Log, p Policy, opts ...SessionOption) (*Session, error) {
	if log == nil {
		return nil, ErrNoLog
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Session{
		log:    log,
		policy: p,
		clock:  time.Now,
		newID:  func() string { return uuid.Must(uuid.NewV7()).String() },
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Evaluate completes b (ids, timestamp: see ClaimBundle.Complete), runs the
// gate chain and appends a KindEvaluate entry. If the entry cannot be
// written the evaluation is not returned: an unrecorded decision must not
// be acted on.
func (s *Session) Evaluate(ctx context.Context, b ClaimBundle, c Context) (Evaluation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev, err := Evaluate(b.Complete(s.newID, s.clock()), s.policy, c)
	if err != nil {
		return Evaluation{}, err
	}
	rec := Record{Actor: c.Actor, Clearance: c.Clearance, Bundle: ev.Bundle}
	if _, err := s.log.AppendValue(ctx, KindEvaluate, rec); err != nil {
		return Evaluation{}, fmt.Errorf("claims: recording evaluation: %w", err)
	}
	return ev, nil
}

// Approve records approver's decision (stamped with the session clock) on
// b, re-evaluates the bundle and appends one KindApprove entry holding the
// approval and the new evaluation. b must be a bundle evaluated before
// (so that its required approvals are known); it is not modified.
func (s *Session) Approve(ctx context.Context, b ClaimBundle, c Context, approver string, d ApprovalDecision, reason string) (Evaluation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := Approval{Approver: approver, Timestamp: s.clock().UTC(), Decision: d, Reason: reason}
	nb, err := RecordApproval(b, a)
	if err != nil {
		return Evaluation{}, err
	}
	ev, err := Evaluate(nb, s.policy, c)
	if err != nil {
		return Evaluation{}, err
	}
	rec := Record{Actor: c.Actor, Clearance: c.Clearance, Approval: &a, Bundle: ev.Bundle}
	if _, err := s.log.AppendValue(ctx, KindApprove, rec); err != nil {
		return Evaluation{}, fmt.Errorf("claims: recording approval: %w", err)
	}
	return ev, nil
}
