package kernel

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Trace entry kinds written by a Session.
const (
	KindStart    = "kernel.start"
	KindExecute  = "kernel.execute"
	KindReject   = "kernel.reject"
	KindRollback = "kernel.rollback"
)

// SharedBudget is a budget held outside the process (for example in a SQL
// database shared by several processes). A Session configured with one
// consults it inside its atomic path, after its own checks pass: Charge
// reserves the cost before the execution is recorded, Refund compensates
// when recording fails and gives back a rolled-back execution's cost.
type SharedBudget interface {
	// Charge atomically takes cost units for actionID from the shared
	// balance, or returns an error wrapping ErrBudgetExceeded.
	Charge(ctx context.Context, actionID string, cost int64) error
	// Refund gives back amount units of what actionID was charged; never
	// more than was charged (error otherwise).
	Refund(ctx context.Context, actionID string, amount int64) error
}

// Option configures a Session.
type Option func(*sessionConfig)

type sessionConfig struct {
	shared    SharedBudget
	sessionID string
	execID    func() string
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

// WithIDs sets the source of execution ids; they must never repeat
// (a SharedBudget may see them from many sessions). The default is a
// prefix, "/" and a counter advanced by every committed or attempted
// execution: the prefix is the session id for the Session NewSession
// returns, and a fresh UUIDv7 for each Session Replay returns, so ids never
// repeat even for attempts that a failed trace append left unrecorded.
func WithIDs(next func() string) Option {
	return func(c *sessionConfig) { c.execID = next }
}

// Session is the thin shell around the pure kernel: it owns the current
// world State and Meter, serialises evaluate-and-commit under one
// mutex (the specification's atomic path, so concurrent callers can never
// act on the same snapshot, overspend, or fork the trace), and records
// every execution, rejection and rollback in a trace.Log. It is safe for
// concurrent use.
type Session struct {
	mu      sync.Mutex
	k       *Kernel
	ks      Meter
	world   State
	log     *trace.Log
	shared  SharedBudget
	id      string
	execID  func() string
	prefix  string        // default exec id prefix
	counter uint64        // exec ids handed out by the default source
	history history       // committed executions, oldest first
	buf     []byte        // payload scratch, reused under mu
	checks  []CheckResult // Verdict.Checks scratch for Execute, reused under mu
}

// NewSession starts a session of k from initial, recording a kernel.start
// entry (the configuration and the full initial state) in log.
func NewSession(ctx context.Context, log *trace.Log, k *Kernel, initial State, opts ...Option) (*Session, error) {
	s, err := newSession(log, k, initial, opts)
	if err != nil {
		return nil, err
	}
	if _, err := log.AppendCanonical(ctx, KindStart, s.startPayload(nil)); err != nil {
		return nil, fmt.Errorf("kernel: recording session start: %w", err)
	}
	return s, nil
}

func newSession(log *trace.Log, k *Kernel, initial State, opts []Option) (*Session, error) {
	if k == nil || log == nil {
		return nil, fmt.Errorf("%w: a session needs a kernel and a log", ErrInvalidConfig)
	}
	var cfg sessionConfig
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
	s := &Session{k: k, ks: k.Start(), world: initial, log: log, shared: cfg.shared, id: cfg.sessionID, execID: cfg.execID, prefix: cfg.sessionID}
	return s, nil
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Kernel returns the session's kernel.
func (s *Session) Kernel() *Kernel { return s.k }

// Log returns the session's trace log.
func (s *Session) Log() *trace.Log { return s.log }

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
	return s.ks
}

// Evaluate evaluates a against the current states without committing or
// recording anything.
func (s *Session) Evaluate(a Action) Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.k.Evaluate(s.ks, s.world, a)
}

func (s *Session) nextExecID() string {
	if s.execID != nil {
		return s.execID()
	}
	s.counter++
	var stack [96]byte // one allocation (the string) for the usual prefix
	b := append(stack[:0], s.prefix...)
	b = append(b, '/')
	b = strconv.AppendUint(b, s.counter, 10)
	return string(b)
}

// Execute evaluates and commits a atomically: under the session's mutex it
// runs the kernel's checks, charges the shared budget if there is one,
// records the execution (or the rejection) in the trace, and only then
// replaces the session's states. If the action is rejected, the shared
// budget refuses, or the trace cannot record, the session is unchanged
// (T5) and the error says why (a *RejectedError for a rejection).
func (s *Session) Execute(ctx context.Context, a Action) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The Verdict's Checks are in the session's scratch buffer: only its
	// Warnings (copied by commit) leave this call, or a clone on rejection.
	v := s.k.evaluate(s.ks, s.world, a, s.checks, len(a.Effects))
	s.checks = v.Checks
	if !v.Allowed {
		v.Checks = slices.Clone(v.Checks)
		return Record{}, s.recordReject(ctx, a, v, nil)
	}
	id := s.nextExecID()
	if !utf8.ValidString(id) {
		return Record{}, fmt.Errorf("%w: execution id is not valid UTF-8", ErrInvalidConfig)
	}
	// rec.Action shares the caller's slices until the copies below; it is
	// only read (payload) in between, under the mutex.
	world, ks, rec, err := s.k.commit(s.ks, s.world, &v, id)
	if err != nil {
		return Record{}, err
	}
	// A zero-cost action takes nothing from the shared budget and does not
	// consult it, so an unreachable shared budget cannot block the
	// emergency escape (T8).
	charged := s.shared != nil && rec.Action.Cost > 0
	if charged {
		if err := s.shared.Charge(ctx, id, int64(rec.Action.Cost)); err != nil {
			return Record{}, s.recordReject(ctx, a, v, err) // clones v.Checks
		}
	}
	s.buf = appendExecutePayload(s.buf[:0], s.id, &rec)
	if _, err := s.log.AppendCanonical(ctx, KindExecute, s.buf); err != nil {
		err = fmt.Errorf("kernel: recording execution (nothing committed): %w", err)
		if charged {
			if rerr := s.shared.Refund(ctx, id, int64(rec.Action.Cost)); rerr != nil {
				err = joinErrors(err, fmt.Errorf("kernel: compensating shared refund failed: %w", rerr))
			}
		}
		return Record{}, err
	}
	s.world, s.ks = world, ks
	// The session keeps its own copy for Rollback, and the caller gets
	// another: neither shares a slice with a or with each other.
	hist := rec.packedClone()
	if t := len(rec.Action.Tags); t > 0 { // both copies of the tags in one allocation
		tags := make([]string, 2*t)
		copy(tags, rec.Action.Tags)
		copy(tags[t:], rec.Action.Tags)
		hist.Action.Tags, rec.Action.Tags = tags[:t:t], tags[t:]
	} else {
		hist.Action.Tags, rec.Action.Tags = slices.Clone(rec.Action.Tags), slices.Clone(rec.Action.Tags)
	}
	s.history.add(hist)
	// rec.Inverse (evaluate made it fresh, with room for the action's
	// effects after it) and rec.Warnings (commit made it) are the caller's.
	if n, m := len(rec.Action.Effects), len(rec.Inverse); n > 0 && cap(rec.Inverse) >= m+n {
		rec.Action.Effects = append(rec.Inverse[m:m:m+n], rec.Action.Effects...)
		rec.Inverse = rec.Inverse[:m:m]
	} else {
		rec.Action.Effects = slices.Clone(rec.Action.Effects)
	}
	return rec, nil
}

// recordReject records a rejection (sharedErr non-nil: the shared budget
// refused) and returns the error for the caller.
func (s *Session) recordReject(ctx context.Context, a Action, v Verdict, sharedErr error) error {
	var rej error = &RejectedError{Verdict: v}
	if sharedErr != nil {
		v.Allowed = false
		v.Checks = append(slices.Clone(v.Checks), CheckResult{Check: CheckSharedBudget, Status: StatusFailed, Reason: sharedErr.Error(), Err: sharedErr})
		rej = &RejectedError{Verdict: v}
	}
	s.buf = appendRejectPayload(s.buf[:0], s.id, a, v, s.world.Fingerprint(), s.ks)
	if _, err := s.log.AppendCanonical(ctx, KindReject, s.buf); err != nil {
		return joinErrors(rej, fmt.Errorf("kernel: recording rejection: %w", err))
	}
	return rej
}

// CheckSharedBudget is the check a Session adds to a Verdict when its
// SharedBudget refuses the charge.
const CheckSharedBudget CheckName = "shared_budget"

// Rollback undoes execution execID, which must be the last one not yet
// rolled back (the current state must be the one it produced: T7's
// fingerprint check). The refund goes to the session's budget and, if
// there is one, the shared budget; the step counter is not decremented;
// the rollback is recorded. If the shared refund fails after the rollback
// was recorded, the rollback stands and the error reports the refund
// failure (the shared balance then overstates spending, the safe
// direction for T1).
func (s *Session) Rollback(ctx context.Context, execID string) (RollbackRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec := s.history.find(execID)
	if rec == nil {
		return RollbackRecord{}, fmt.Errorf("%w: %q", ErrUnknownExecution, execID)
	}
	world, ks, rr, err := s.k.Rollback(s.ks, s.world, *rec)
	if err != nil {
		return RollbackRecord{}, err
	}
	s.buf = appendRollbackPayload(s.buf[:0], s.id, &rr)
	if _, err := s.log.AppendCanonical(ctx, KindRollback, s.buf); err != nil {
		return RollbackRecord{}, fmt.Errorf("kernel: recording rollback (nothing changed): %w", err)
	}
	s.world, s.ks = world, ks
	if s.shared != nil && rr.Refund > 0 {
		if err := s.shared.Refund(ctx, execID, int64(rr.Refund)); err != nil {
			return rr, fmt.Errorf("kernel: rollback recorded, shared refund failed: %w", err)
		}
	}
	return rr, nil
}

// History returns the committed executions, oldest first (deep copies).
func (s *Session) History() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.history.all()
}

// history stores Records in fixed-size chunks, so that adding one never
// copies the earlier ones.
type history struct {
	chunks [][]Record
	n      int
}

const historyChunk = 256

func (h *history) add(r Record) {
	if len(h.chunks) == 0 || len(h.chunks[len(h.chunks)-1]) == historyChunk {
		h.chunks = append(h.chunks, make([]Record, 0, historyChunk))
	}
	last := &h.chunks[len(h.chunks)-1]
	*last = append(*last, r)
	h.n++
}

// find returns the Record of execID, searching from the newest (rollbacks
// are of recent executions).
func (h *history) find(execID string) *Record {
	for c := len(h.chunks) - 1; c >= 0; c-- {
		chunk := h.chunks[c]
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i].ExecID == execID {
				return &chunk[i]
			}
		}
	}
	return nil
}

func (h *history) all() []Record {
	out := make([]Record, 0, h.n)
	for _, c := range h.chunks {
		for _, r := range c {
			out = append(out, r.clone())
		}
	}
	return out
}

// ---- payloads (canonical JSON, keys in sorted order, built by hand) ----

func appendCount(dst []byte, n uint64) []byte {
	if n <= maxSafe {
		return strconv.AppendUint(dst, n, 10)
	}
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, n, 10)
	return append(dst, '"')
}

func appendCost(dst []byte, c Cost) []byte {
	dst = append(dst, '"')
	dst = c.appendDecimal(dst)
	return append(dst, '"')
}

func appendFP(dst []byte, f Fingerprint) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for _, b := range f {
		dst = append(dst, hex[b>>4], hex[b&15])
	}
	return append(dst, '"')
}

func appendBudget(dst []byte, b BudgetSnapshot) []byte {
	dst = append(dst, `{"gross":`...)
	dst = appendCost(dst, b.Gross)
	dst = append(dst, `,"limit":`...)
	dst = appendCost(dst, b.Limit)
	dst = append(dst, `,"refunded":`...)
	dst = appendCost(dst, b.Refunded)
	return append(dst, '}')
}

func appendChecks(dst []byte, checks []CheckResult, onlyNotPassed bool) []byte {
	dst = append(dst, '[')
	n := 0
	for _, c := range checks {
		if onlyNotPassed && c.Status == StatusPassed {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = append(dst, `{"check":`...)
		dst = canon.AppendString(dst, string(c.Check))
		dst = append(dst, `,"name":`...)
		dst = canon.AppendString(dst, validUTF8(c.Name))
		dst = append(dst, `,"reason":`...)
		dst = canon.AppendString(dst, validUTF8(c.Reason))
		dst = append(dst, `,"status":"`...)
		dst = append(dst, c.Status.String()...)
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}

func appendExecutePayload(dst []byte, session string, r *Record) []byte {
	dst = append(dst, `{"action":`...)
	dst = r.Action.appendJSON(dst)
	dst = append(dst, `,"after":`...)
	dst = appendFP(dst, r.After)
	dst = append(dst, `,"before":`...)
	dst = appendFP(dst, r.Before)
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, r.Budget)
	dst = append(dst, `,"emergency":`...)
	dst = strconv.AppendBool(dst, r.Emergency)
	dst = append(dst, `,"emergency_steps":`...)
	dst = appendCount(dst, r.EmergencySteps)
	dst = append(dst, `,"exec":`...)
	dst = canon.AppendString(dst, r.ExecID)
	dst = append(dst, `,"inverse":`...)
	dst = appendEffects(dst, r.Inverse)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, session)
	dst = append(dst, `,"steps":`...)
	dst = appendCount(dst, r.Steps)
	dst = append(dst, `,"warnings":`...)
	dst = appendChecks(dst, r.Warnings, true)
	return append(dst, '}')
}

func appendRejectPayload(dst []byte, session string, a Action, v Verdict, state Fingerprint, ks Meter) []byte {
	dst = append(dst, `{"action":`...)
	if a.Validate() == nil {
		dst = a.appendJSON(dst)
	} else {
		// A malformed action cannot be written faithfully; record its id.
		dst = append(dst, `{"id":`...)
		dst = canon.AppendString(dst, validUTF8(a.ID))
		dst = append(dst, '}')
	}
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, snapshot(ks.budget))
	dst = append(dst, `,"checks":`...)
	dst = appendChecks(dst, v.Checks, false)
	dst = append(dst, `,"emergency":`...)
	dst = strconv.AppendBool(dst, v.Emergency)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, session)
	dst = append(dst, `,"state":`...)
	dst = appendFP(dst, state)
	dst = append(dst, `,"steps":`...)
	dst = appendCount(dst, ks.steps)
	return append(dst, '}')
}

func appendRollbackPayload(dst []byte, session string, r *RollbackRecord) []byte {
	dst = append(dst, `{"after":`...)
	dst = appendFP(dst, r.After)
	dst = append(dst, `,"before":`...)
	dst = appendFP(dst, r.Before)
	dst = append(dst, `,"budget":`...)
	dst = appendBudget(dst, r.Budget)
	dst = append(dst, `,"effects":`...)
	dst = appendEffects(dst, r.Effects)
	dst = append(dst, `,"exec":`...)
	dst = canon.AppendString(dst, r.ExecID)
	dst = append(dst, `,"refund":`...)
	dst = appendCost(dst, r.Refund)
	dst = append(dst, `,"session":`...)
	dst = canon.AppendString(dst, session)
	dst = append(dst, `,"steps":`...)
	dst = appendCount(dst, r.Steps)
	return append(dst, '}')
}

func (s *Session) startPayload(dst []byte) []byte {
	k := s.k
	dst = append(dst, `{"budget":`...)
	dst = appendCost(dst, k.budget)
	dst = append(dst, `,"emergency":[`...)
	ids := make([]string, 0, len(k.emergency))
	for id := range k.emergency {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, compareUTF16)
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = canon.AppendString(dst, validUTF8(id))
	}
	dst = append(dst, `],"invariants":[`...)
	for i, inv := range k.invariants {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"enforcement":"`...)
		dst = append(dst, inv.Enforcement.String()...)
		dst = append(dst, `","name":`...)
		dst = canon.AppendString(dst, validUTF8(inv.Name))
		dst = append(dst, '}')
	}
	dst = append(dst, `],"max_steps":`...)
	dst = appendCount(dst, k.maxSteps)
	dst = append(dst, `,"min_cost":`...)
	dst = appendCost(dst, k.minCost)
	dst = append(dst, `,"preconditions":[`...)
	for i, p := range k.preconds {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = canon.AppendString(dst, validUTF8(p.Name))
	}
	dst = append(dst, `],"session":`...)
	dst = canon.AppendString(dst, s.id)
	dst = append(dst, `,"state":`...)
	dst = s.world.AppendJSON(dst)
	return append(dst, '}')
}
