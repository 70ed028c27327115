package claims

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/verity-go/verity/trace"
)

// Trace entry kinds written by Session.
const (
	KindEvaluate = "claims.evaluate" // one evaluation of a bundle
	KindApprove  = "claims.approve"  // one human decision and the re-evaluation it caused
)

// ErrNoLog is returned by NewSession without a trace log.
var ErrNoLog = errors.New("claims: session needs a trace log")

// Session is the shell around Evaluate and RecordApproval: it fills
// missing ids with UUIDv7s, evaluates with its policy and appends every
// evaluation and approval to a trace.Log before returning it, so that a
// decision the caller sees is always on the log. Its clock stamps each
// step once: the same instant is the bundle's timestamp (when it has
// none) or the approval's time, and the time of the trace entry that
// records it. It is safe for concurrent use.
//
// What Evaluate returns is what the Session records: every evaluation the
// gate chain makes, whatever the bundle holds (empty or unknown enum
// values, numbers outside [0,1], strings that are not UTF-8: see Record).
// A bundle the validation gate refuses is no exception: its REFUSE is
// recorded, so the log shows every bundle that was submitted, and the
// Session returns that evaluation together with a *ValidationError that
// lists the violations with their paths (those of Evaluation.Violations),
// so that a caller checking only the error does not mistake it for a
// decision on valid claims. Errors that leave the chain without a result —
// an invalid context, an approval RecordApproval rejects — are returned
// and nothing is recorded.
//
// A bundle evaluated DEFER or ESCALATE waits for people: the Session keeps
// it in its PendingStore (in memory unless WithPending gives another) until
// an evaluation decides otherwise, and Approve accepts approvals only for
// the bundle that waits.
type Session struct {
	mu      sync.Mutex
	log     *trace.Log
	policy  Policy
	clock   func() time.Time
	newID   func() string
	pending PendingStore
}

// Option configures a Session.
type Option func(*Session)

// WithClock sets the session's clock (default time.Now). It stamps
// bundles without a timestamp, approvals, and the trace entries that
// record them.
func WithClock(clock func() time.Time) Option {
	return func(s *Session) { s.clock = clock }
}

// WithIDs sets the id source used for bundles and claims without an id
// (default: UUIDv7 strings).
func WithIDs(newID func() string) Option {
	return func(s *Session) { s.newID = newID }
}

// WithPending keeps the bundles that wait for approval in store (default:
// a new MemoryPending). With a durable store (NewLogPending over a
// trace.File, claims/sqlpending) a restarted Session lists them and
// accepts their approvals; nil keeps the default.
func WithPending(store PendingStore) Option {
	return func(s *Session) {
		if store != nil {
			s.pending = store
		}
	}
}

// NewSession returns a session that evaluates with policy p and records to
// log. The policy is validated once here. NewSession reads and writes
// nothing; ctx is there for the one shape every Verity shell has.
func NewSession(ctx context.Context, log *trace.Log, p Policy, opts ...Option) (*Session, error) {
	if log == nil {
		return nil, ErrNoLog
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	s := &Session{
		log:     log,
		policy:  p,
		clock:   time.Now,
		newID:   func() string { return uuid.Must(uuid.NewV7()).String() },
		pending: NewMemoryPending(),
	}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Evaluate completes b (ids, timestamp: see ClaimBundle.Complete), runs the
// gate chain and appends a KindEvaluate entry stamped with the same
// instant. If the entry cannot be written the evaluation is not returned:
// an unrecorded decision must not be acted on. If the validation gate
// refused b, the recorded REFUSE comes back with a *ValidationError (see
// Session).
func (s *Session) Evaluate(ctx context.Context, b ClaimBundle, c Context) (Evaluation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	ev, err := Evaluate(b.Complete(s.newID, now), s.policy, c)
	if err != nil {
		return Evaluation{}, err
	}
	rec := Record{Actor: c.Actor, Clearance: c.Clearance, Bundle: ev.Bundle}
	if ev.Seq, err = s.record(ctx, KindEvaluate, rec, now); err != nil {
		return Evaluation{}, err
	}
	if err := s.track(ctx, ev.Bundle, c); err != nil {
		return Evaluation{}, err
	}
	return ev, invalidBundle(ev)
}

// Approve records approver's decision on b, stamped with the session
// clock, re-evaluates the bundle and appends one KindApprove entry, stamped
// with the same instant, holding the approval and the new evaluation. b
// must be the bundle that waits — as the last evaluation returned it, or
// as Pending lists it after a restart —, else the approval is refused
// with ErrNotPending and nothing is recorded; b is not modified.
//
// Sessions may share a PendingStore: Approve first claims the bundle in
// the store — it swaps the waiting bundle for its new evaluation, or
// removes it, only if it still waits as read — and records the approval
// only then. Of two approvals of one waiting bundle, from this Session or
// another, one is recorded and the other gets ErrNotPending. If the entry
// cannot be written, the claim is undone and the bundle waits as before.
// A crash between the two leaves the store ahead of the log with a
// decision nobody was told of; RebuildPending, which follows the log,
// makes the bundle wait again.
func (s *Session) Approve(ctx context.Context, b ClaimBundle, c Context, approver string, d ApprovalDecision, reason string) (Evaluation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, err := s.pending.Get(ctx, b.ID)
	switch {
	case errors.Is(err, ErrNotPending):
		return Evaluation{}, err
	case err != nil:
		return Evaluation{}, pendingError("reading the pending store", err)
	case !sameBundle(p.Bundle, b):
		return Evaluation{}, fmt.Errorf("%w: %q waits as a later evaluation of it (approve the bundle Pending lists)", ErrNotPending, b.ID)
	}
	now := s.clock()
	a := Approval{Approver: approver, Timestamp: now.UTC(), Decision: d, Reason: reason}
	nb, err := RecordApproval(b, a)
	if err != nil {
		return Evaluation{}, err
	}
	ev, err := Evaluate(nb, s.policy, c)
	if err != nil {
		return Evaluation{}, err
	}
	next := Pending{Bundle: ev.Bundle, Context: c}
	if err := s.claim(ctx, p, next); err != nil {
		return Evaluation{}, err
	}
	rec := Record{Actor: c.Actor, Clearance: c.Clearance, Approval: &a, Bundle: ev.Bundle}
	if ev.Seq, err = s.record(ctx, KindApprove, rec, now); err != nil {
		return Evaluation{}, s.unclaim(ctx, p, next, err)
	}
	return ev, invalidBundle(ev)
}

// claim moves the waiting bundle p to next in the store — swapped in if
// next waits, removed otherwise — only if p still waits there; a bundle
// decided meanwhile is ErrNotPending.
func (s *Session) claim(ctx context.Context, p, next Pending) error {
	var err error
	if waits(next.Bundle.Decision) {
		err = s.pending.CompareAndSwap(ctx, p, next)
	} else {
		err = s.pending.CompareAndDelete(ctx, p)
	}
	switch {
	case errors.Is(err, ErrNotPending):
		return fmt.Errorf("%w: %q was decided meanwhile", ErrNotPending, p.Bundle.ID)
	case err != nil:
		return pendingError("updating the pending store", err)
	}
	return nil
}

// unclaim undoes a claim whose approval could not be recorded (cause),
// even when ctx is done: p waits again. A bundle removed by the claim is
// put back as p.
func (s *Session) unclaim(ctx context.Context, p, next Pending, cause error) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	if waits(next.Bundle.Decision) {
		err = s.pending.CompareAndSwap(ctx, next, p)
	} else {
		err = s.pending.Put(ctx, p)
	}
	if err != nil {
		return errors.Join(cause, pendingError("restoring the pending store (RebuildPending restores it from the log)", err))
	}
	return cause
}

// track keeps the pending store in line with an evaluation just recorded.
// A failure leaves the decision on the log, and RebuildPending brings the
// store back in line.
func (s *Session) track(ctx context.Context, b ClaimBundle, c Context) error {
	var err error
	if waits(b.Decision) {
		err = s.pending.Put(ctx, Pending{Bundle: b, Context: c})
	} else {
		err = s.pending.Remove(ctx, b.ID)
	}
	if err != nil {
		return pendingError("updating the pending store (the decision is on the log; RebuildPending catches up)", err)
	}
	return nil
}

// Pending lists the bundles that wait for approval, sorted by bundle id.
func (s *Session) Pending(ctx context.Context) ([]Pending, error) {
	ps, err := s.pending.List(ctx)
	if err != nil {
		return nil, pendingError("listing pending bundles", err)
	}
	return ps, nil
}

// record appends rec as an entry of kind stamped with now, the instant
// the step read from the clock, and returns the entry's sequence number. The log refuses an instant outside the
// years 0000-9999; the zero time, which trace.At would replace with the
// log's own clock, is refused here.
func (s *Session) record(ctx context.Context, kind string, rec Record, now time.Time) (uint64, error) {
	if now.IsZero() {
		return 0, fmt.Errorf("claims: recording %s: the session clock gave the zero time: %w", kind, trace.ErrMalformed)
	}
	e, err := s.log.AppendValue(ctx, kind, rec.value(), trace.At(now))
	if err != nil {
		return 0, fmt.Errorf("claims: recording %s: %w", kind, err)
	}
	return e.Seq, nil
}

// invalidBundle returns the *ValidationError behind an evaluation that the
// validation gate refused, or nil.
func invalidBundle(ev Evaluation) error {
	if ev.StoppedAt != GateValidation || len(ev.Violations) == 0 {
		return nil
	}
	return invalid("claim bundle", ev.Violations, ErrInvalid)
}
