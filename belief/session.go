package belief

import (
	"container/list"
	"context"
	"errors"
	"fmt"
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

// Server is the shell around the core: the sessions of a Storage, opened
// on first use and kept in a bounded cache, with a clock, an id source and
// a Policy. It is safe for concurrent use; operations on different
// sessions run in parallel.
type Server struct {
	storage         Storage
	clock           func() time.Time
	newID           func() string
	policy          Policy
	cacheSize       int
	checkpointEvery uint64

	mu     sync.Mutex
	open   map[string]*Session // every open session, in use or idle
	idle   list.List           // the open sessions no operation uses, least recently used first
	closed bool
}

// DefaultCacheSize is how many sessions a Server keeps open when no
// operation uses them (WithCacheSize). A FileStorage holds a file open for
// each.
const DefaultCacheSize = 256

// DefaultCheckpointEvery is how many audit events a session's log holds
// between checkpoints (WithCheckpointEvery).
const DefaultCheckpointEvery = 1000

// Option configures a Server.
type Option func(*Server)

// WithClock sets the clock that stamps events (default time.Now).
func WithClock(clock func() time.Time) Option { return func(s *Server) { s.clock = clock } }

// WithIDs sets the source of session and event ids (default UUIDv7, which
// sorts by creation time). It must never return the same id twice.
func WithIDs(newID func() string) Option { return func(s *Server) { s.newID = newID } }

// WithPolicy sets the termination policy (default: force not allowed).
func WithPolicy(p Policy) Option { return func(s *Server) { s.policy = p } }

// WithCacheSize sets how many idle sessions the Server keeps open (default
// DefaultCacheSize; at least 1). Past it the least recently used idle
// session is closed; a session an operation is using is never closed, so
// the sessions open at once are at most n plus those in use.
func WithCacheSize(n int) Option { return func(s *Server) { s.cacheSize = max(n, 1) } }

// WithCheckpointEvery sets how often the Server writes a checkpoint into a
// session's log: after every n-th audit event (default
// DefaultCheckpointEvery; 0 writes none).
func WithCheckpointEvery(n int) Option {
	return func(s *Server) { s.checkpointEvery = uint64(max(n, 0)) }
}

func newUUIDv7() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only if the system's random source does; fall back
		// to a random v4 id, which is still unique.
		return uuid.NewString()
	}
	return id.String()
}

// NewServer returns a Server over storage. It reads nothing: a session is
// opened, and its log read, verified and replayed, on first use (Session,
// or an operation on a *Session), so a Server over any number of sessions
// starts at once. A session whose log does not replay is an error naming
// it when it is used.
func NewServer(ctx context.Context, storage Storage, opts ...Option) (*Server, error) {
	srv := &Server{storage: storage, clock: time.Now, newID: newUUIDv7, cacheSize: DefaultCacheSize,
		checkpointEvery: DefaultCheckpointEvery, open: map[string]*Session{}}
	for _, o := range opts {
		o(srv)
	}
	return srv, nil
}

// acquire returns the open session id, in use (never closed by the cache)
// and locked (s.mu), after prepare ran on it under its lock; release ends
// the use. A session not open yet is added to the cache first, so that
// one id is open once: prepare opens it (or, for Declare, creates it).
func (srv *Server) acquire(id string, prepare func(s *Session) error) (*Session, error) {
	srv.mu.Lock()
	if srv.closed {
		srv.mu.Unlock()
		return nil, ErrServerClosed
	}
	s := srv.open[id]
	if s == nil {
		s = &Session{id: id, srv: srv}
		srv.open[id] = s
	} else if s.idle != nil {
		srv.idle.Remove(s.idle)
		s.idle = nil
	}
	s.uses++
	srv.mu.Unlock()
	s.mu.Lock()
	err := ErrServerClosed
	if !s.closed {
		err = prepare(s)
	}
	if err != nil {
		srv.release(s)
		return nil, err
	}
	return s, nil
}

// release ends a use of s begun by acquire and unlocks it. A session no
// longer in use goes to the idle list, or out of the cache if it did not
// open; then the cache is cut back to its size.
func (srv *Server) release(s *Session) {
	opened := s.log != nil
	s.mu.Unlock()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	s.uses--
	if s.uses > 0 || srv.closed {
		return
	}
	if !opened {
		delete(srv.open, s.id)
		return
	}
	s.idle = srv.idle.PushBack(s)
	for len(srv.open) > srv.cacheSize && srv.idle.Len() > 0 {
		srv.evict(srv.idle.Remove(srv.idle.Front()).(*Session))
	}
}

// evict closes an idle session and drops it from the cache. srv.mu must
// be held.
func (srv *Server) evict(s *Session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.idle = nil
	delete(srv.open, s.id)
	if s.log != nil {
		_ = s.log.Store().Close() // idle: every append has returned
	}
	s.log, s.state, s.head, s.cp = nil, State{}, trace.Head{}, mark{}
}

// open is the prepare step of acquire for an existing session: it opens
// the session's store and reads its log unless it is open already.
func (s *Session) open(ctx context.Context) error {
	if s.log != nil {
		return nil
	}
	store, err := s.srv.storage.Open(ctx, s.id)
	if err != nil {
		return inSession(s.id, err)
	}
	log, err := trace.NewLog(store)
	if err != nil {
		store.Close()
		return inSession(s.id, err)
	}
	s.log = log
	err = s.catchUp(ctx)
	if err == nil && s.state.p == nil {
		err = &Error{Err: ErrSessionNotFound, Message: fmt.Sprintf("session %q has an empty log", s.id)}
	}
	if err != nil {
		store.Close()
		s.log, s.state, s.head, s.cp = nil, State{}, trace.Head{}, mark{}
		return err
	}
	return nil
}

// Session returns the session with the given id, opening it if it is not
// open: its log is read and verified, the state restored from its latest
// checkpoint and the events after it replayed. An unknown id is
// SESSION_NOT_FOUND. Opening one session holds up no other.
//
// The *Session stays valid after the cache closes the session: its next
// operation opens it again.
func (srv *Server) Session(ctx context.Context, id string) (*Session, error) {
	s, err := srv.acquire(id, func(s *Session) error { return s.open(ctx) })
	if err != nil {
		return nil, err
	}
	srv.release(s)
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
	s, err := srv.acquire(id, func(s *Session) error {
		if s.log != nil {
			return fmt.Errorf("%w: session %q already exists", ErrConflict, id)
		}
		store, err := srv.storage.Create(ctx, id)
		if err != nil {
			return inSession(id, err)
		}
		if s.log, err = trace.NewLog(store); err != nil {
			store.Close()
			s.log = nil
			return inSession(id, err)
		}
		if err := s.append(ctx, ev, at); err != nil {
			store.Close()
			s.log, s.head = nil, trace.Head{}
			return err
		}
		s.state = state
		s.checkpoint(ctx, at)
		return nil
	})
	if err != nil {
		return nil, State{}, err
	}
	srv.release(s)
	return s, state, nil
}

// Close closes every open session's store, waiting for the operations
// under way. The Server is unusable afterwards.
func (srv *Server) Close() error {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.closed = true
	var errs []error
	for id, s := range srv.open {
		s.mu.Lock()
		if s.log != nil {
			if err := s.log.Store().Close(); err != nil && !errors.Is(err, trace.ErrClosed) {
				errs = append(errs, fmt.Errorf("belief: closing session %s: %w", id, err))
			}
		}
		s.closed = true
		s.mu.Unlock()
	}
	srv.open = map[string]*Session{}
	srv.idle.Init()
	return errors.Join(errs...)
}

// Session is one belief session in the shell: the current State, the
// trace.Log it records into, and the mutex that orders its events. A
// *Session is a handle as well: once the Server's cache has closed it, its
// operations run on the session opened anew under its id.
type Session struct {
	id  string
	srv *Server

	// guarded by srv.mu
	uses int           // operations under way (acquire without release)
	idle *list.Element // in srv.idle when open and unused

	mu     sync.Mutex
	closed bool       // by Server.Close
	log    *trace.Log // nil until opened, and once closed by the cache
	state  State
	head   trace.Head // the trace head that state reflects
	cp     mark       // the last checkpoint at or before head
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

// use returns the open session under s's id, in use and locked; the
// caller ends with s.srv.release on what it returned.
func (s *Session) use(ctx context.Context) (*Session, error) {
	return s.srv.acquire(s.id, func(o *Session) error { return o.open(ctx) })
}

// catchUp applies the entries other writers appended to the store after
// s.head. Each is verified as a trace entry (trace.Verifier) and replayed
// as an audit event (State.Apply) or, a checkpoint, compared with the
// state reached. A session not opened yet (the zero State) is restored
// from its log's latest checkpoint instead, and only the events after it
// are replayed. s.mu must be held.
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
	if s.state.p == nil {
		return s.restore(ctx)
	}
	v := trace.NewVerifier(s.head)
	for e, err := range s.log.Entries(ctx, s.head.Size) {
		if err != nil {
			return err
		}
		if err := v.Add(e); err != nil {
			return err
		}
		// Commit per entry: what verified stays applied even if a later
		// entry fails.
		if err := s.apply(e); err != nil {
			return err
		}
		s.head = v.Head()
	}
	return nil
}

// restore reads a whole log into a session not opened yet: it verifies
// the trace chain of every entry, restores the state from the latest
// checkpoint (trusting it: the chain covers it and the Server that wrote
// it had replayed the events before it) and replays the events after it.
// s.mu must be held.
func (s *Session) restore(ctx context.Context) error {
	v := trace.NewVerifier(trace.Head{})
	r := restorer{id: s.id}
	var tail []trace.Entry
	var at trace.Head // just after the latest checkpoint
	for e, err := range s.log.Entries(ctx, 0) {
		if err != nil {
			return err
		}
		if err := v.Add(e); err != nil {
			return err
		}
		if e.Kind != KindCheckpoint {
			tail = append(tail, e)
			continue
		}
		if err := r.add(e.Payload); err != nil {
			return &ReplayError{Index: int(e.Seq), Reason: err.Error()}
		}
		tail, at = tail[:0], v.Head()
	}
	if r.last != nil {
		st, m, err := r.state()
		if err != nil {
			return &ReplayError{Index: int(at.Size - 1), Reason: err.Error()}
		}
		s.state, s.cp, s.head = st, m, at
	}
	for _, e := range tail {
		if err := s.apply(e); err != nil {
			return err
		}
		s.head = trace.Head{Size: e.Seq + 1, Hash: e.Hash}
	}
	return nil
}

// apply applies one verified trace entry of the log after s.head: an
// audit event is replayed, a checkpoint compared with the state reached
// (one that disagrees is refused). s.mu must be held.
func (s *Session) apply(e trace.Entry) error {
	if e.Kind == KindCheckpoint {
		if err := checkCheckpoint(s.state, s.cp, e.Payload); err != nil {
			return &ReplayError{Index: int(e.Seq), Reason: reason(err)}
		}
		s.cp = mark{events: s.state.Len(), obs: s.state.p.obs}
		return nil
	}
	next, err := applyEntry(s.id, s.state, e)
	if err != nil {
		return err
	}
	s.state = next
	return nil
}

// applyEntry replays the audit event a trace entry of the log of session
// id ("" for any) records.
func applyEntry(id string, state State, e trace.Entry) (State, error) {
	verb, ok := verbOfKind(e.Kind)
	if !ok {
		return state, &ReplayError{Index: int(e.Seq), Reason: fmt.Sprintf("trace kind %q is not a belief verb", e.Kind)}
	}
	ae, err := DecodeAuditEntry(e.Payload)
	if err != nil {
		return state, &ReplayError{Index: int(e.Seq), Reason: reason(err)}
	}
	if ae.Verb != verb {
		return state, &ReplayError{Index: int(e.Seq), EventID: ae.EventID, Reason: fmt.Sprintf("trace kind %q holds a %s event", e.Kind, ae.Verb)}
	}
	if state.p == nil && id != "" && ae.SessionID != id {
		return state, &ReplayError{Index: int(e.Seq), EventID: ae.EventID, Reason: fmt.Sprintf("the log of session %q declares %q", id, ae.SessionID)}
	}
	return state.Apply(ae)
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

// checkpoint writes a checkpoint after the event just recorded (stamped
// with its instant, at) when that event is a multiple of
// checkpointEvery. A checkpoint that cannot be written (another writer
// appended first, the store failed) is skipped: it only saves the next
// open some replay, and the next one will do. s.mu must be held.
func (s *Session) checkpoint(ctx context.Context, at time.Time) {
	every := s.srv.checkpointEvery
	if every == 0 || s.state.Len()%every != 0 {
		return
	}
	b, err := s.state.checkpoint(s.cp)
	if err != nil {
		return
	}
	e, err := s.log.Append(ctx, KindCheckpoint, b, trace.After(s.head), trace.At(at))
	if err != nil {
		return
	}
	s.head = trace.Head{Size: e.Seq + 1, Hash: e.Hash}
	s.cp = mark{events: s.state.Len(), obs: s.state.p.obs}
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
	s, err := s.use(ctx)
	if err != nil {
		return State{}, err
	}
	defer s.srv.release(s)
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
		s.checkpoint(ctx, at)
		return next, nil
	}
}

// State returns the session's current value after catching up with its
// store.
func (s *Session) State(ctx context.Context) (State, error) {
	s, err := s.use(ctx)
	if err != nil {
		return State{}, err
	}
	defer s.srv.release(s)
	err = s.catchUp(ctx)
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

// Events answers AUDIT_TRACE. Events before the checkpoint the session
// was restored from are read from its log, whose chain must still lead to
// the head the session reflects.
func (s *Session) Events(ctx context.Context, since string) ([]AuditEntry, error) {
	s, err := s.use(ctx)
	if err != nil {
		return nil, err
	}
	defer s.srv.release(s)
	if err := s.catchUp(ctx); err != nil {
		return nil, err
	}
	evs, err := s.state.Events(since)
	if errors.Is(err, errNotHeld) {
		evs, err = s.readEvents(ctx, since)
	}
	return evs, err
}

// readEvents reads the audit events after the one with id since (all for
// "") from the log, up to s.head, verifying the chain. s.mu must be held.
func (s *Session) readEvents(ctx context.Context, since string) ([]AuditEntry, error) {
	v := trace.NewVerifier(trace.Head{})
	out := []AuditEntry{}
	found := since == ""
	for e, err := range s.log.Entries(ctx, 0) {
		if err != nil {
			return nil, inSession(s.id, err)
		}
		if e.Seq >= s.head.Size {
			break
		}
		if err := v.Add(e); err != nil {
			return nil, inSession(s.id, err)
		}
		if e.Kind == KindCheckpoint {
			continue
		}
		ae, err := DecodeAuditEntry(e.Payload)
		if err != nil {
			return nil, inSession(s.id, &ReplayError{Index: int(e.Seq), Reason: reason(err)})
		}
		if found {
			out = append(out, ae)
		} else if ae.EventID == since {
			found = true
		}
	}
	if v.Head() != s.head {
		return nil, inSession(s.id, &trace.TruncatedError{Want: s.head, Got: v.Head()})
	}
	if !found {
		return nil, &Error{Err: ErrEventNotFound, Message: fmt.Sprintf("no event %q in session %q", since, s.id),
			Details: map[string]any{"since_event_id": since}}
	}
	return out, nil
}

// Verify checks the session's whole log as an auditor would (VerifyLog:
// the trace chain, every event replayed, every checkpoint compared) and
// returns its verified head.
func (s *Session) Verify(ctx context.Context) (trace.Head, error) {
	s, err := s.use(ctx)
	if err != nil {
		return trace.Head{}, err
	}
	defer s.srv.release(s)
	_, h, err := VerifyLog(ctx, s.log.Store())
	return h, inSession(s.id, err)
}

// VerifyLog checks the log of one session in full, from its first entry:
// the trace chain (trace.Verifier), every audit event replayed as Replay
// replays it (no event id twice), and every checkpoint compared with the
// state rebuilt from the events before it — one that disagrees is a
// *ReplayError naming its entry. It returns the state after the last
// event and the verified head.
func VerifyLog(ctx context.Context, store trace.Store) (State, trace.Head, error) {
	v := trace.NewVerifier(trace.Head{})
	var st State
	var cp mark
	seen := map[string]struct{}{}
	for e, err := range store.Entries(ctx, 0) {
		if err != nil {
			return st, v.Head(), err
		}
		if err := v.Add(e); err != nil {
			return st, v.Head(), err
		}
		if e.Kind == KindCheckpoint {
			if err := checkCheckpoint(st, cp, e.Payload); err != nil {
				return st, v.Head(), &ReplayError{Index: int(e.Seq), Reason: reason(err)}
			}
			cp = mark{events: st.Len(), obs: st.p.obs}
			continue
		}
		next, err := applyEntry("", st, e)
		if err != nil {
			return st, v.Head(), err
		}
		id, _ := next.Head()
		if _, dup := seen[id]; dup {
			return st, v.Head(), &ReplayError{Index: int(e.Seq), EventID: id, Reason: "event id already used by an earlier event"}
		}
		seen[id] = struct{}{}
		st = next
	}
	if st.p == nil {
		return st, v.Head(), &ReplayError{Reason: "the log is empty; the first event must be DECLARE_SESSION"}
	}
	return st, v.Head(), nil
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
