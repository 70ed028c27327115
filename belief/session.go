package belief

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/verity-go/verity/trace"
)

// ErrStaleHead is the CONFLICT of optimistic concurrency: the caller's
// expected audit head is not the session's. It wraps ErrConflict.
var ErrStaleHead = fmt.Errorf("%w: audit head is not the expected one", ErrConflict)

// ErrServerClosed is returned by a Server after Close.
var ErrServerClosed = errors.New("belief: server closed")

// maxAppendRetries bounds how often a mutation catches up and retries
// when another writer appended to the session's store first; after that
// the mutation is CONFLICT and records nothing.
const maxAppendRetries = 32

// Server is the shell around the core: a registry of Sessions over a
// Storage, with a clock, an id source and a Policy. It is safe for
// concurrent use; operations on different sessions run in parallel.
type Server struct {
	storage Storage
	clock   func() time.Time
	newID   func() string
	policy  Policy

	mu       sync.Mutex
	sessions map[string]*Session
	closed   bool
}

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock that stamps events (default time.Now).
func WithClock(clock func() time.Time) Option { return func(s *Server) { s.clock = clock } }

// WithIDs sets the source of session and event ids (default UUIDv7, which
// sorts by creation time). It must never return the same id twice.
func WithIDs(newID func() string) Option { return func(s *Server) { s.newID = newID } }

// WithPolicy sets the termination policy (default: force not allowed).
func WithPolicy(p Policy) Option { return func(s *Server) { s.policy = p } }

func newUUIDv7() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only if the system's random source does; fall back
		// to a random v4 id, which is still unique.
		return uuid.NewString()
	}
	return id.String()
}

// NewServer opens a Server over storage and replays every session it
// lists, so that a Server over a FileStorage comes back after a restart
// with every session as it was. A session whose log does not replay is an
// error naming it.
func NewServer(ctx context.Context, storage Storage, opts ...Option) (*Server, error) {
	srv := &Server{storage: storage, clock: time.Now, newID: newUUIDv7, sessions: map[string]*Session{}}
	for _, o := range opts {
		o(srv)
	}
	ids, err := storage.List(ctx)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		sess, err := srv.open(ctx, id)
		if errors.Is(err, ErrSessionNotFound) {
			continue // an empty log: creation did not complete
		}
		if err != nil {
			srv.Close()
			return nil, inSession(id, err)
		}
		srv.sessions[id] = sess
	}
	return srv, nil
}

// open reads and replays one session's log.
func (srv *Server) open(ctx context.Context, id string) (*Session, error) {
	store, err := srv.storage.Open(ctx, id)
	if err != nil {
		return nil, inSession(id, err)
	}
	sess, err := srv.newSession(id, store)
	if err != nil {
		store.Close()
		return nil, inSession(id, err)
	}
	sess.mu.Lock()
	err = sess.catchUp(ctx)
	sess.mu.Unlock()
	if err == nil && sess.state.p == nil {
		err = &Error{Err: ErrSessionNotFound, Message: fmt.Sprintf("session %q has an empty log", id)}
	}
	if err != nil {
		store.Close()
		return nil, err
	}
	return sess, nil
}

func (srv *Server) newSession(id string, store trace.Store) (*Session, error) {
	log, err := trace.NewLog(store)
	if err != nil {
		return nil, err
	}
	return &Session{id: id, srv: srv, log: log}, nil
}

// Sessions returns the ids of the sessions this Server has open, sorted.
func (srv *Server) Sessions() []string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	out := make([]string, 0, len(srv.sessions))
	for id := range srv.sessions {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Session returns the session with the given id, opening (and replaying)
// it from the storage if another Server created it. An unknown id is
// SESSION_NOT_FOUND. Opening happens outside the registry lock, so a long
// replay does not hold up requests for other sessions.
func (srv *Server) Session(ctx context.Context, id string) (*Session, error) {
	srv.mu.Lock()
	if srv.closed {
		srv.mu.Unlock()
		return nil, ErrServerClosed
	}
	s, ok := srv.sessions[id]
	srv.mu.Unlock()
	if ok {
		return s, nil
	}
	opened, err := srv.open(ctx, id)
	if err != nil {
		return nil, err
	}
	return srv.register(opened)
}

// register adds a freshly opened session unless another goroutine got
// there first, in which case that one is kept and ours is closed.
func (srv *Server) register(s *Session) (*Session, error) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		s.log.Store().Close()
		return nil, ErrServerClosed
	}
	if prev, ok := srv.sessions[s.id]; ok {
		s.log.Store().Close()
		return prev, nil
	}
	srv.sessions[s.id] = s
	return s, nil
}

// Declare performs DECLARE_SESSION with a fresh session id and returns the
// new session and its state.
func (srv *Server) Declare(ctx context.Context, req DeclareRequest) (*Session, State, error) {
	srv.mu.Lock()
	closed := srv.closed
	srv.mu.Unlock()
	if closed {
		return nil, State{}, ErrServerClosed
	}
	id := srv.newID()
	at := srv.clock()
	state, ev, err := Declare(id, req, Stamp{EventID: srv.newID(), Time: at})
	if err != nil {
		return nil, State{}, err
	}
	store, err := srv.storage.Create(ctx, id)
	if err != nil {
		return nil, State{}, inSession(id, err)
	}
	sess, err := srv.newSession(id, store)
	if err != nil {
		store.Close()
		return nil, State{}, inSession(id, err)
	}
	if err := sess.append(ctx, ev, at); err != nil {
		store.Close()
		return nil, State{}, err
	}
	sess.state = state
	if _, err := srv.register(sess); err != nil {
		return nil, State{}, err
	}
	return sess, state, nil
}

// Close closes every session's store. The Server is unusable afterwards.
func (srv *Server) Close() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.closed = true
	var errs []error
	for id, s := range srv.sessions {
		s.mu.Lock()
		if err := s.log.Store().Close(); err != nil && !errors.Is(err, trace.ErrClosed) {
			errs = append(errs, fmt.Errorf("belief: closing session %s: %w", id, err))
		}
		s.mu.Unlock()
	}
	srv.sessions = map[string]*Session{}
	return errors.Join(errs...)
}

// Session is one belief session in the shell: the current State, the
// trace.Log it records into, and the mutex that orders its events.
type Session struct {
	id  string
	srv *Server

	mu    sync.Mutex
	log   *trace.Log
	state State
	head  trace.Head // the trace head that state reflects
}

// sessionError names the session a storage, trace or replay failure is
// about.
type sessionError struct {
	id  string
	err error
}

func (e *sessionError) Error() string {
	return fmt.Sprintf("belief: session %s: %s", e.id, reason(e.err))
}

func (e *sessionError) Unwrap() error { return e.err }

// inSession returns a failure (an error without a protocol code) naming
// session id, unless it already does. A protocol answer, nil included, is
// returned as it is.
func inSession(id string, err error) error {
	var se *sessionError
	if err == nil || CodeOf(err) != CodeInternal || errors.As(err, &se) && se.id == id {
		return err
	}
	return &sessionError{id: id, err: err}
}

// CallOption modifies one call.
type CallOption func(*callOptions)

type callOptions struct {
	expectHead string
}

// ExpectHead makes a mutation conditional: it is applied only if the
// session's audit head event id is eventID, and is otherwise an
// ErrStaleHead CONFLICT (optimistic concurrency, §5.2).
func ExpectHead(eventID string) CallOption {
	return func(o *callOptions) { o.expectHead = eventID }
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Log returns the trace log the session records into.
func (s *Session) Log() *trace.Log { return s.log }

// catchUp applies the entries other writers appended to the store after
// s.head. Each is verified as a trace entry (trace.Verifier) and replayed
// as an audit event (State.Apply). s.mu must be held.
func (s *Session) catchUp(ctx context.Context) error {
	return inSession(s.id, s.catchUpHead(ctx))
}

// catchUpHead is catchUp without naming the session in its errors.
func (s *Session) catchUpHead(ctx context.Context) error {
	// Fast path: when the store's head is the one s.state reflects there
	// is nothing to read. Head is one cheap call (a read lock for memory,
	// one query for SQL) where Entries would set up an iteration.
	if err := ctx.Err(); err != nil {
		return err
	}
	h, err := s.log.Store().Head(ctx)
	if err != nil {
		return err
	}
	if h == s.head {
		return nil
	}
	if h.Size <= s.head.Size {
		// Not an extension of what s.state reflects: the log was cut back
		// or rewritten. Reading from s.head.Size would find nothing and
		// keep serving events the store no longer holds.
		return &trace.TruncatedError{Want: s.head, Got: h}
	}
	return s.catchUpEntries(ctx)
}

// catchUpEntries is the slow path of catchUp: it reads and applies every
// entry after s.head. s.mu must be held.
func (s *Session) catchUpEntries(ctx context.Context) error {
	v := trace.NewVerifier(s.head)
	state := s.state
	for e, err := range s.log.Entries(ctx, s.head.Size) {
		if err != nil {
			return err
		}
		if err := v.Add(e); err != nil {
			return err
		}
		verb, ok := verbOfKind(e.Kind)
		if !ok {
			return &ReplayError{Index: int(e.Seq), Reason: fmt.Sprintf("trace kind %q is not a belief verb", e.Kind)}
		}
		ae, err := DecodeAuditEntry(e.Payload)
		if err != nil {
			return &ReplayError{Index: int(e.Seq), Reason: reason(err)}
		}
		if ae.Verb != verb {
			return &ReplayError{Index: int(e.Seq), EventID: ae.EventID, Reason: fmt.Sprintf("trace kind %q holds a %s event", e.Kind, ae.Verb)}
		}
		if state.p == nil && ae.SessionID != s.id {
			return &ReplayError{Index: int(e.Seq), EventID: ae.EventID, Reason: fmt.Sprintf("the log of session %q declares %q", s.id, ae.SessionID)}
		}
		next, err := state.Apply(ae)
		if err != nil {
			return err
		}
		state = next
		// Commit per entry: what verified stays applied even if a later
		// entry fails.
		s.state, s.head = state, v.Head()
	}
	return nil
}

// append records ev after s.head (trace.After), stamping the trace entry
// with at, the instant the event itself records (trace.At): one clock for
// both. ev.raw is canonical as built, so the log checks it in one pass.
// s.mu must be held.
func (s *Session) append(ctx context.Context, ev *AuditEntry, at time.Time) error {
	e, err := s.log.Append(ctx, ev.Verb.Kind(), ev.raw, trace.After(s.head), trace.At(at))
	if err != nil {
		return inSession(s.id, err)
	}
	s.head = trace.Head{Size: e.Seq + 1, Hash: e.Hash}
	return nil
}

// mutate runs one transition under the session lock: catch up, check the
// expected head, transition, append; on a trace conflict (another writer
// appended first) it catches up and runs the transition again.
func (s *Session) mutate(ctx context.Context, opts []CallOption, step func(State, Stamp) (State, *AuditEntry, error)) (State, error) {
	var expectHead string
	if len(opts) > 0 {
		o := new(callOptions) // escapes into the options; only built when there are any
		for _, f := range opts {
			f(o)
		}
		expectHead = o.expectHead
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if err := s.catchUp(ctx); err != nil {
			return s.state, err
		}
		if expectHead != "" {
			if head, _ := s.state.Head(); head != expectHead {
				return s.state, &Error{Err: ErrStaleHead,
					Message: fmt.Sprintf("audit head is %q, expected %q", head, expectHead),
					Details: map[string]any{"audit_head_event_id": head}}
			}
		}
		at := s.srv.clock()
		next, ev, err := step(s.state, Stamp{EventID: s.srv.newID(), Time: at})
		if err != nil || ev == nil {
			return s.state, err
		}
		err = s.append(ctx, ev, at)
		if errors.Is(err, trace.ErrConflict) {
			if attempt < maxAppendRetries {
				continue
			}
			// Contention, not a fault: the caller may retry later.
			return s.state, &Error{Err: ErrConflict,
				Message: fmt.Sprintf("other writers kept appending to the session; gave up after %d retries: %s", maxAppendRetries, reason(err))}
		}
		if err != nil {
			return s.state, err
		}
		s.state = next
		return next, nil
	}
}

// State returns the session's current value after catching up with its
// store.
func (s *Session) State(ctx context.Context) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.catchUp(ctx)
	return s.state, err
}

// Snapshot answers QUERY_BELIEF.
func (s *Session) Snapshot(ctx context.Context) (Snapshot, error) {
	st, err := s.State(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	return st.Snapshot(), nil
}

// Events answers AUDIT_TRACE.
func (s *Session) Events(ctx context.Context, since string) ([]AuditEntry, error) {
	st, err := s.State(ctx)
	if err != nil {
		return nil, err
	}
	return st.Events(since)
}

// Eliminate performs ELIMINATE and records it. An idempotent repeat
// records nothing and returns the first result with Repeated set.
func (s *Session) Eliminate(ctx context.Context, req EliminateRequest, opts ...CallOption) (EliminateResult, State, error) {
	var r EliminateResult
	st, err := s.mutate(ctx, opts, func(cur State, stamp Stamp) (State, *AuditEntry, error) {
		next, res, ev, err := cur.eliminate(req, stamp)
		r = res
		return next, ev, err
	})
	return r, st, err
}

// EnterObligation performs ENTER_OBLIGATION and records it.
func (s *Session) EnterObligation(ctx context.Context, req ObligationRequest, opts ...CallOption) (string, State, error) {
	var id string
	st, err := s.mutate(ctx, opts, func(cur State, stamp Stamp) (State, *AuditEntry, error) {
		next, ev, err := cur.EnterObligation(req, stamp)
		if ev != nil {
			id = ev.EventID
		}
		return next, ev, err
	})
	return id, st, err
}

// RequestExit performs REQUEST_EXIT and records its outcome.
func (s *Session) RequestExit(ctx context.Context, req ExitRequest, opts ...CallOption) (ExitResult, State, error) {
	var r ExitResult
	st, err := s.mutate(ctx, opts, func(cur State, stamp Stamp) (State, *AuditEntry, error) {
		next, res, ev, err := cur.RequestExit(req, stamp)
		r = res
		return next, ev, err
	})
	return r, st, err
}

// DeclareConclusion performs DECLARE_CONCLUSION and records its outcome.
func (s *Session) DeclareConclusion(ctx context.Context, req ConclusionRequest, opts ...CallOption) (ConclusionResult, State, error) {
	var r ConclusionResult
	st, err := s.mutate(ctx, opts, func(cur State, stamp Stamp) (State, *AuditEntry, error) {
		next, res, ev, err := cur.DeclareConclusion(req, stamp)
		r = res
		return next, ev, err
	})
	return r, st, err
}

// RequestTermination performs REQUEST_TERMINATION under the server's
// policy and records its outcome.
func (s *Session) RequestTermination(ctx context.Context, req TerminationRequest, opts ...CallOption) (TerminationResult, State, error) {
	var r TerminationResult
	st, err := s.mutate(ctx, opts, func(cur State, stamp Stamp) (State, *AuditEntry, error) {
		next, res, ev, err := cur.RequestTermination(req, s.srv.policy, stamp)
		r = res
		return next, ev, err
	})
	return r, st, err
}
