package kernel

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/verity-go/verity/internal/jsonvalue"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/verity-go/verity/trace"
)

// SharedBudget is a budget held outside the process (for example in a SQL
// database shared by several processes). A Session configured with one
// consults it inside its atomic path, after its own checks pass: Charge
// reserves the cost before the execution is recorded, Refund compensates
// when recording fails and gives back a rolled-back execution's cost.
type SharedBudget interface {
	// Charge atomically takes cost units for actionID from the shared
	// balance, or returns an error wrapping CheckBudget.
	Charge(ctx context.Context, actionID string, cost int64) error
	// Refund gives back amount units of what actionID was charged; never
	// more than was charged (error otherwise).
	Refund(ctx context.Context, actionID string, amount int64) error
}

// Option configures a Session.
type Option func(*sessionConfig)

type sessionConfig struct {
	shared     SharedBudget
	sessionID  string
	newID      func() string
	clock      func() time.Time
	inputLimit int
	horizon    int
	hold       bool
}

// defaultInputLimit is the input limit of a Session without WithInputLimit.
const defaultInputLimit = 64 << 10

// WithInputLimit sets how many bytes of an action's Input the session
// records in full (default 64 KiB; 0: none). Beyond it an
// entry keeps only the input's SHA-256 digest and size — enough to check
// a copy kept elsewhere, not to read it back; Replay then re-runs
// preconditions without it (a precondition that reads the input needs it
// recorded in full).
func WithInputLimit(n int) Option {
	return func(c *sessionConfig) { c.inputLimit = n }
}

// WithClock sets the session's clock (default time.Now). Every execution,
// rejection and rollback reads it once: its Record and its trace entry
// carry that same instant.
func WithClock(clock func() time.Time) Option {
	return func(c *sessionConfig) { c.clock = clock }
}

// WithIDs sets the source of execution ids; they must never repeat (a
// SharedBudget may see them from many sessions) and must not end in
// "/overrun" (Execute and Reserve refuse such an id with
// ErrInvalidConfig). The default is a prefix,
// "/" and a counter advanced by every committed or attempted execution:
// the prefix is the session id for the Session NewSession returns, and a
// fresh UUIDv7 for each Session Replay returns, so ids never repeat even
// for attempts that a failed trace append left unrecorded.
func WithIDs(newID func() string) Option {
	return func(c *sessionConfig) { c.newID = newID }
}

// WithSharedBudget makes the Session charge and refund sb as well as its
// own budget (see SharedBudget).
func WithSharedBudget(sb SharedBudget) Option {
	return func(c *sessionConfig) { c.shared = sb }
}

// WithSessionID sets the session id (default: a new UUIDv7).
func WithSessionID(id string) Option {
	return func(c *sessionConfig) { c.sessionID = id }
}

// Session is the thin shell around the pure kernel: it owns the current
// world State and Meter, serialises evaluate-and-commit under one mutex
// (the specification's atomic path, so concurrent callers can never act
// on the same snapshot, overspend, or fork the trace), and records every
// execution, rejection and rollback in a trace.Log as an Entry. It is safe
// for concurrent use.
type Session struct {
	mu         sync.Mutex
	k          *Kernel
	meter      Meter
	world      State
	log        *trace.Log
	shared     SharedBudget
	id         string
	newID      func() string
	clock      func() time.Time
	inputLimit int                 // bytes of an Input recorded in full
	prefix     string              // default exec id prefix
	counter    uint64              // exec ids handed out by the default source
	window     window              // the most recent executions, oldest first
	hold       bool                // WithHeldExecutions
	held       map[string]struct{} // executions held until Release
	kept       map[string]struct{} // executions beyond the window whose ledger entries stay
	forgotten  uint64              // executions forgotten
	dropping   map[string]struct{} // forgotten, their ledger entries not yet dropped
	scratch    sessionScratch
}

// NewSession starts a session of k from initial, recording a StartEntry
// (the configuration and the full initial state) in log.
func NewSession(ctx context.Context, log *trace.Log, k *Kernel, initial State, opts ...Option) (*Session, error) {
	s, err := newSession(log, k, initial, opts)
	if err != nil {
		return nil, err
	}
	now, err := s.now()
	if err != nil {
		return nil, err
	}
	if _, err := s.log.Append(ctx, KindStart, payload(s.startEntry()), trace.At(now)); err != nil {
		return nil, fmt.Errorf("kernel: recording session start: %w", err)
	}
	return s, nil
}

func newSession(log *trace.Log, k *Kernel, initial State, opts []Option) (*Session, error) {
	if k == nil || log == nil {
		return nil, fmt.Errorf("%w: a session needs a kernel and a log", ErrInvalidConfig)
	}
	cfg := sessionConfig{clock: time.Now, inputLimit: defaultInputLimit, horizon: defaultHorizon}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.sessionID == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("kernel: session id: %w", err)
		}
		cfg.sessionID = u.String()
	}
	if !utf8.ValidString(cfg.sessionID) {
		return nil, fmt.Errorf("%w: session id is not valid UTF-8", ErrInvalidConfig)
	}
	if cfg.clock == nil {
		return nil, fmt.Errorf("%w: a session needs a clock", ErrInvalidConfig)
	}
	if cfg.inputLimit < 0 {
		return nil, fmt.Errorf("%w: negative input limit %d", ErrInvalidConfig, cfg.inputLimit)
	}
	if cfg.horizon < 0 {
		return nil, fmt.Errorf("%w: negative horizon %d", ErrInvalidConfig, cfg.horizon)
	}
	return &Session{k: k, meter: k.Start(), world: initial, log: log, shared: cfg.shared,
		id: cfg.sessionID, newID: cfg.newID, clock: cfg.clock, inputLimit: cfg.inputLimit, prefix: cfg.sessionID,
		window: window{limit: cfg.horizon}, hold: cfg.hold}, nil
}

// now reads the session's clock once, as the log will store the instant.
// The zero time is refused: the log would stamp its own clock instead.
func (s *Session) now() (time.Time, error) {
	t := trace.Normalize(s.clock())
	if t.IsZero() {
		return t, fmt.Errorf("%w: the session clock gave the zero time", ErrInvalidConfig)
	}
	return t, nil
}

// startEntry is what NewSession records and Replay compares.
func (s *Session) startEntry() StartEntry {
	k := s.k
	e := StartEntry{Session: s.id, Budget: k.budget, MinCost: k.minCost, MaxSteps: k.maxSteps, State: s.world}
	for id := range k.emergency {
		e.Emergency = append(e.Emergency, id)
	}
	slices.SortFunc(e.Emergency, jsonvalue.CompareUTF16)
	for _, inv := range k.invariants {
		e.Invariants = append(e.Invariants, Invariant{Name: inv.Name, Enforcement: inv.Enforcement})
	}
	for _, p := range k.preconds {
		e.Preconditions = append(e.Preconditions, p.Name)
	}
	return e
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// State returns the current world state (an immutable value).
func (s *Session) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.world
}

// Meter returns the current Meter (an immutable value).
func (s *Session) Meter() Meter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meter
}

// Evaluate evaluates a against the current states without committing or
// recording anything.
func (s *Session) Evaluate(a Action) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Evaluate(s.meter, s.world, a)
}

func (s *Session) nextExecID() string {
	if s.newID != nil {
		return s.newID()
	}
	s.counter++
	var stack [96]byte // one allocation (the string) for the usual prefix
	b := append(stack[:0], s.prefix...)
	b = append(b, '/')
	b = strconv.AppendUint(b, s.counter, 10)
	return string(b)
}

// Execute evaluates and commits a atomically: under the session's mutex it
// runs Kernel.Evaluate, charges the shared budget if there is one, and
// Kernel.Commit, records the ExecuteEntry (or a RejectEntry) stamped with
// the session clock, and only then replaces the session's states. If the
// action is rejected, the shared budget refuses, or the trace cannot
// record, the session is unchanged (T5) and the error says why (a
// *RejectedError for a rejection; Verdict.Explain words it for a model).
// The Record's Seq and Hash name the trace entry: a receipt for the
// caller.
func (s *Session) Execute(ctx context.Context, a Action) (Record, error) {
	return s.commit(ctx, a, false)
}

// Reserve is Execute for a call whose cost is known only afterwards: a's
// cost is an upper bound, charged (to the shared budget too) after the
// same checks, and the execution stays open — Reservations lists it —
// until Settle records the actual cost (Kernel.Reserve). It records a
// ReserveEntry. A reservation never settled stays charged; after a crash,
// Replay rebuilds the open reservations and the host settles them.
func (s *Session) Reserve(ctx context.Context, a Action) (Record, error) {
	return s.commit(ctx, a, true)
}

func (s *Session) commit(ctx context.Context, a Action, reserve bool) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.now()
	if err != nil {
		return Record{}, err
	}
	// The Verdict lends a's slices and the session's scratch buffers: it
	// is the session's own until the copies below (or owned, on
	// rejection), read only under the mutex.
	v := s.scratch.evaluate(s.k, s.meter, s.world, a)
	defer s.scratch.clear(len(a.Effects))
	if !v.Allowed() {
		return Record{}, s.reject(ctx, now, v.owned(), nil)
	}
	id := s.nextExecID()
	if err := checkExecID(id); err != nil {
		return Record{}, err
	}
	kind := KindExecute
	var world State
	var meter Meter
	var rec Record
	if reserve {
		kind = KindReserve
		world, meter, rec, err = s.k.reserve(s.meter, s.world, &v, id)
	} else {
		world, meter, rec, err = s.k.commit(s.meter, s.world, &v, id)
	}
	if err != nil {
		return Record{}, err
	}
	// A zero-cost action takes nothing from the shared budget and does not
	// consult it, so an unreachable shared budget cannot block the
	// emergency escape (T8).
	charged := s.shared != nil && rec.Action.Cost > 0
	if charged {
		if err := s.shared.Charge(ctx, id, int64(rec.Action.Cost)); err != nil {
			return Record{}, s.reject(ctx, now, v.owned(), err)
		}
	}
	rec.Time = now
	s.scratch.payload = s.appendExecute(s.scratch.payload[:0], &rec)
	te, err := s.log.Append(ctx, kind, s.scratch.payload, trace.At(now))
	if err != nil {
		err = fmt.Errorf("kernel: recording execution (nothing committed): %w", err)
		if charged {
			// The compensation runs even when ctx is what failed the append.
			if rerr := s.shared.Refund(context.WithoutCancel(ctx), id, int64(rec.Action.Cost)); rerr != nil {
				err = joinErrors(err, fmt.Errorf("kernel: compensating shared refund failed: %w", rerr))
			}
		}
		return Record{}, err
	}
	rec.Time, rec.Seq, rec.Hash = te.Time, te.Seq, te.Hash
	s.world, s.meter = world, meter
	// The session keeps its own copy for Rollback, and the caller gets
	// another: neither shares a slice with a, the scratch or the other.
	s.remember(rec.detach(), s.hold)
	return rec, nil
}

// appendExecute appends the payload of rec's ExecuteEntry (or
// ReserveEntry: the same members) to dst, as the entry records it:
// without the input's bytes beyond the session's input limit (their
// digest and size stay).
// It takes rec by pointer so that the session's commit, the deepest frame
// of a call through the tool gate, holds no copy of the record for it.
func (s *Session) appendExecute(dst []byte, rec *Record) []byte {
	if len(rec.Action.Input) <= s.inputLimit {
		return rec.appendExecuteJSON(dst, s.id)
	}
	input := rec.Action.Input
	rec.Action.Input = nil
	dst = rec.appendExecuteJSON(dst, s.id)
	rec.Action.Input = input
	return dst
}

// sessionScratch holds the buffers a Session reuses from one action to
// the next under its mutex: a Verdict's checks and inverse, and the
// payload of the entry (trace.Log.Append keeps a copy, never the bytes it
// is given).
type sessionScratch struct {
	checks  []CheckResult
	inverse []Effect
	payload []byte
}

// evaluate is Kernel.Evaluate on a itself (its slices shared, not
// copied) and the scratch buffers.
func (sc *sessionScratch) evaluate(k *Kernel, m Meter, s State, a Action) Verdict {
	if n := k.checkCount(); cap(sc.checks) < n {
		sc.checks = make([]CheckResult, 0, n)
	}
	if n := len(a.Effects); cap(sc.inverse) < n {
		sc.inverse = make([]Effect, 0, n)
	}
	return k.evaluate(m, s, a, sc.inverse[:0], sc.checks[:0])
}

// maxScratchPayload is the largest payload buffer a session keeps for
// the next action.
const maxScratchPayload = 64 << 10

// clear drops what the buffers reference after an action of n effects,
// so that the scratch keeps no value or error alive.
func (sc *sessionScratch) clear(n int) {
	clear(sc.checks[:cap(sc.checks)])
	clear(sc.inverse[:min(n, cap(sc.inverse))])
	if cap(sc.payload) > maxScratchPayload {
		sc.payload = nil
	}
}

// Settle records the actual cost of the open reservation execID
// (Kernel.Settle): the SettleEntry is recorded, then the session's budget
// changes, then the shared budget, if there is one, is refunded the
// difference (or charged an overrun, under execID + "/overrun"). An
// actual above the reservation is committed and recorded, and returned as
// an error wrapping ErrOverrun with the record (SettleRecord.Err): the
// excess was charged only up to what remained, the rest is Unpaid (T1).
// If the shared budget fails after the settlement was recorded, the
// settlement stands and the error says so.
func (s *Session) Settle(ctx context.Context, execID string, actual Cost) (SettleRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.now()
	if err != nil {
		return SettleRecord{}, err
	}
	if s.dropped(execID) {
		return SettleRecord{}, s.beyond(execID, nil)
	}
	meter, r, err := s.k.Settle(s.meter, execID, actual)
	if errors.Is(err, ErrUnknownExecution) {
		err = s.beyond(execID, err)
	}
	if err != nil {
		return SettleRecord{}, err
	}
	r.Time = now
	te, err := s.log.Append(ctx, KindSettle, payload(SettleEntry{Session: s.id, SettleRecord: r}), trace.At(now))
	if err != nil {
		return SettleRecord{}, fmt.Errorf("kernel: recording settlement (nothing changed): %w", err)
	}
	r.Time, r.Seq, r.Hash = te.Time, te.Seq, te.Hash
	s.meter = meter
	s.forgetIfBeyond(execID)
	var errs []error
	if s.shared != nil && r.Refund > 0 {
		if err := s.shared.Refund(ctx, execID, int64(r.Refund)); err != nil {
			errs = append(errs, fmt.Errorf("kernel: settlement recorded, shared refund failed: %w", err))
		}
	}
	if s.shared != nil && r.Overrun > 0 {
		if err := s.shared.Charge(ctx, execID+overrunSuffix, int64(r.Overrun)); err != nil {
			errs = append(errs, fmt.Errorf("kernel: settlement recorded, shared overrun charge failed: %w", err))
		}
	}
	return r, joinErrors(append([]error{r.Err()}, errs...)...)
}

// overrunSuffix is appended to an execution id for the SharedBudget's
// charge of a settlement's overrun, a second charge for the same
// execution.
const overrunSuffix = "/overrun"

// checkExecID refuses an execution id the Session cannot use: one that is
// not valid UTF-8, or one ending in "/overrun", whose SharedBudget
// charge would be another execution's overrun charge.
func checkExecID(id string) error {
	switch {
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: execution id is not valid UTF-8", ErrInvalidConfig)
	case strings.HasSuffix(id, overrunSuffix):
		return fmt.Errorf("%w: execution id %q ends in %q, kept for overrun charges", ErrInvalidConfig, id, overrunSuffix)
	}
	return nil
}

// Refund gives back amount of what execution execID was charged, for
// reason, touching only the budget (Kernel.Refund): any past execution,
// settled reservation or not. The RefundEntry is recorded, then the
// session's budget changes, then the shared budget, if there is one, is
// refunded the same amount; if that fails the refund stands and the
// error says so (the shared balance then overstates spending, the safe
// direction for T1).
func (s *Session) Refund(ctx context.Context, execID string, amount Cost, reason string) (RefundRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.now()
	if err != nil {
		return RefundRecord{}, err
	}
	if s.dropped(execID) {
		return RefundRecord{}, s.beyond(execID, nil)
	}
	meter, r, err := s.k.Refund(s.meter, execID, amount, reason)
	if errors.Is(err, ErrUnknownExecution) {
		err = s.beyond(execID, err)
	}
	if err != nil {
		return RefundRecord{}, err
	}
	r.Time = now
	te, err := s.log.Append(ctx, KindRefund, payload(RefundEntry{Session: s.id, RefundRecord: r}), trace.At(now))
	if err != nil {
		return RefundRecord{}, fmt.Errorf("kernel: recording refund (nothing changed): %w", err)
	}
	r.Time, r.Seq, r.Hash = te.Time, te.Seq, te.Hash
	before := s.meter
	s.meter = meter
	if err := s.refundShared(ctx, before, execID, amount); err != nil {
		return r, fmt.Errorf("kernel: refund recorded, shared refund failed: %w", err)
	}
	return r, nil
}

// refundShared refunds amount of execID to the shared budget, if there is
// one, from its two charges (the reservation's first, then an overrun's)
// as they stood in before.
func (s *Session) refundShared(ctx context.Context, before Meter, execID string, amount Cost) error {
	if s.shared == nil {
		return nil
	}
	first, over := before.budget.sharedSplit(execID, amount)
	if first > 0 {
		if err := s.shared.Refund(ctx, execID, int64(first)); err != nil {
			return err
		}
	}
	if over > 0 {
		return s.shared.Refund(ctx, execID+overrunSuffix, int64(over))
	}
	return nil
}

// reject records the rejection of v (sharedErr non-nil: the shared budget
// refused an allowed action) and returns the error for the caller.
func (s *Session) reject(ctx context.Context, now time.Time, v Verdict, sharedErr error) error {
	if sharedErr != nil {
		v.allowed = false
		v.checks = append(slices.Clone(v.checks), CheckResult{Check: CheckSharedBudget, Status: StatusFailed, Reason: sharedErr.Error(), Err: sharedErr})
	}
	rej := v.Err()
	e := RejectEntry{Session: s.id, Action: v.action, Emergency: v.emergency, Checks: v.checks,
		Budget: snapshot(s.meter.budget), State: s.world.Fingerprint(), Steps: s.meter.steps}
	if in := v.action.Input; len(in) > 0 {
		e.InputDigest, e.InputSize = sha256.Sum256(in), len(in)
		if len(in) > s.inputLimit {
			e.Action.Input = nil
		}
	}
	entry, err := s.log.Append(ctx, KindReject, payload(e), trace.At(now))
	if err != nil {
		return joinErrors(rej, fmt.Errorf("kernel: recording rejection: %w", err))
	}
	if re, ok := rej.(*RejectedError); ok {
		re.Seq = entry.Seq
	}
	return rej
}

// CheckSharedBudget is the check a Session adds to a Verdict when its
// SharedBudget refuses the charge.
const CheckSharedBudget CheckName = "shared_budget"

// Rollback undoes execution execID, which must be the last one not yet
// rolled back (the current state must be the one it produced: T7's
// fingerprint check), with Kernel.Rollback. The refund goes to the
// session's budget and, if there is one, the shared budget; the step
// counter is not decremented; the RollbackEntry is recorded, stamped with
// the session clock. If the shared refund fails after the rollback was
// recorded, the rollback stands and the error reports the refund failure
// (the shared balance then overstates spending, the safe direction for
// T1).
func (s *Session) Rollback(ctx context.Context, execID string) (RollbackRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.now()
	if err != nil {
		return RollbackRecord{}, err
	}
	rec := s.window.find(execID)
	if rec == nil {
		return RollbackRecord{}, s.beyond(execID, fmt.Errorf("%w: %q", ErrUnknownExecution, execID))
	}
	world, meter, rr, err := s.k.Rollback(s.meter, s.world, *rec)
	if err != nil {
		return RollbackRecord{}, err
	}
	rr.Time = now
	te, err := s.log.Append(ctx, KindRollback, payload(RollbackEntry{Session: s.id, RollbackRecord: rr}), trace.At(now))
	if err != nil {
		return RollbackRecord{}, fmt.Errorf("kernel: recording rollback (nothing changed): %w", err)
	}
	rr.Time, rr.Seq, rr.Hash = te.Time, te.Seq, te.Hash
	before := s.meter
	s.world, s.meter = world, meter
	if err := s.refundShared(ctx, before, execID, rr.Refund); err != nil {
		return rr, fmt.Errorf("kernel: rollback recorded, shared refund failed: %w", err)
	}
	return rr, nil
}

// History returns the committed executions the session keeps (its last
// WithHorizon executions), oldest first (deep copies).
func (s *Session) History() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.window.all()
}
