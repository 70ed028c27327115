// The shell: Server and Session over a Storage, and the tests that check
// them.
//
//   - Every event recorded in the session's trace log, its payload the
//     canonical event, its time the event's own (one clock, trace.At):
//     TestServerRecordsEveryEventInTrace.
//   - Many goroutines over many sessions (-race): TestServerConcurrent.
//   - Optimistic concurrency on the audit head: TestExpectHead.
//   - Two servers over one store: a session opened by many goroutines is
//     one Session (TestConcurrentOpenKeepsOneSession); a lost append race
//     catches up and retries, and gives up as CONFLICT
//     (TestAppendRetriesExhaustedIsConflict).
//   - A store that does not hold a belief log, or no longer extends the
//     session, is refused: TestCatchUpRejectsForeignEntries,
//     TestServerRestartRefusesTamperedLog,
//     TestCatchUpRefusesAStoreThatDoesNotExtendTheSession.

package belief_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

func counterIDs(prefix string) func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s%06d", prefix, n.Add(1)) }
}

func fixedClock() func() time.Time {
	var n atomic.Int64
	return func() time.Time { return t0.Add(time.Duration(n.Add(1)) * time.Microsecond) }
}

func newServer(t *testing.T, st belief.Storage, opts ...belief.Option) *belief.Server {
	t.Helper()
	srv, err := belief.NewServer(context.Background(), st, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

func TestServerRecordsEveryEventInTrace(t *testing.T) {
	ctx := context.Background()
	storage := belief.NewMemoryStorage()
	srv := newServer(t, storage, belief.WithIDs(counterIDs("id-")), belief.WithClock(fixedClock()))
	sess, st, err := srv.Declare(ctx, belief.DeclareRequest{Ontology: onto, Hypotheses: []string{"a", "b", "c"}})
	require.NoError(t, err)
	assert.Equal(t, "id-000001", sess.ID())
	assert.Equal(t, 3, st.NSurvivors())

	r, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o1", Eliminated: []string{"a"}})
	require.NoError(t, err)
	again, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o1", Eliminated: []string{"a"}})
	require.NoError(t, err)
	assert.True(t, again.Repeated)
	assert.Equal(t, r.AuditEventID, again.AuditEventID)
	_, _, err = sess.EnterObligation(ctx, belief.ObligationRequest{ObligationID: "ob", MinTotalEliminations: 1})
	require.NoError(t, err)
	_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o2", Eliminated: []string{"b"}})
	require.NoError(t, err)
	ex, _, err := sess.RequestExit(ctx, belief.ExitRequest{ObligationID: "ob"})
	require.NoError(t, err)
	assert.True(t, ex.Approved)
	c, _, err := sess.DeclareConclusion(ctx, belief.ConclusionRequest{ConclusionID: "root-cause"})
	require.NoError(t, err)
	assert.True(t, c.Accepted)
	term, st, err := sess.RequestTermination(ctx, belief.TerminationRequest{})
	require.NoError(t, err)
	assert.True(t, term.Approved)
	assert.True(t, st.Terminated())

	// One trace entry per recorded event (the repeat added none), kinds
	// named after the verbs, payloads equal to the canonical audit entries.
	head, err := sess.Verify(ctx)
	require.NoError(t, err)
	evs, err := sess.Events(ctx, "")
	require.NoError(t, err)
	require.Equal(t, uint64(len(evs)), head.Size)
	assert.Equal(t, uint64(7), head.Size)
	i := 0
	store, err := storage.Open(ctx, sess.ID())
	require.NoError(t, err)
	for e, err := range store.Entries(ctx, 0) {
		require.NoError(t, err)
		assert.Equal(t, evs[i].Verb.Kind(), e.Kind)
		c, err := evs[i].Canonical()
		require.NoError(t, err)
		assert.Equal(t, string(c), string(e.Payload))
		assert.True(t, e.Time.Equal(evs[i].Time), "the trace entry carries the event's time")
		i++
	}
	rebuilt, err := belief.Replay(evs)
	require.NoError(t, err)
	snap, err := sess.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, snap, rebuilt.Snapshot())
}

func TestServerDefaultIDsAreUUIDv7(t *testing.T) {
	srv := newServer(t, belief.NewMemoryStorage())
	sess, st, err := srv.Declare(context.Background(), belief.DeclareRequest{Hypotheses: []string{"a"}})
	require.NoError(t, err)
	for _, s := range []string{sess.ID(), *st.Snapshot().AuditHeadEventID} {
		u, err := uuid.Parse(s)
		require.NoError(t, err)
		assert.Equal(t, uuid.Version(7), u.Version())
	}
}

func TestServerSessionNotFound(t *testing.T) {
	srv := newServer(t, belief.NewMemoryStorage())
	_, err := srv.Session(context.Background(), "nope")
	requireCode(t, err, belief.CodeSessionNotFound)
	dir := t.TempDir()
	fs, err := belief.NewFileStorage(dir, trace.FileOptions{})
	require.NoError(t, err)
	fsrv := newServer(t, fs)
	for _, id := range []string{"nope", "../etc/passwd", "", "a/b"} {
		_, err = fsrv.Session(context.Background(), id)
		requireCode(t, err, belief.CodeSessionNotFound)
	}
}

func TestServerInvalidDeclareCreatesNothing(t *testing.T) {
	st := belief.NewMemoryStorage()
	srv := newServer(t, st)
	_, _, err := srv.Declare(context.Background(), belief.DeclareRequest{})
	requireCode(t, err, belief.CodeInvalidRequest)
	ids, err := st.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, ids)
}

func TestExpectHead(t *testing.T) {
	ctx := context.Background()
	srv := newServer(t, belief.NewMemoryStorage())
	sess, st, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b", "c"}})
	require.NoError(t, err)
	head := *st.Snapshot().AuditHeadEventID
	_, st2, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o1", Eliminated: []string{"a"}}, belief.ExpectHead(head))
	require.NoError(t, err)
	// The old head is now stale.
	_, st3, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o2", Eliminated: []string{"b"}}, belief.ExpectHead(head))
	requireCode(t, err, belief.CodeConflict)
	assert.ErrorIs(t, err, belief.ErrStaleHead)
	assert.Equal(t, st2.Snapshot(), st3.Snapshot(), "nothing applied")
	var be *belief.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, *st2.Snapshot().AuditHeadEventID, be.Details["audit_head_event_id"])
	for _, call := range []func(belief.CallOption) error{
		func(o belief.CallOption) error {
			_, _, err := sess.EnterObligation(ctx, belief.ObligationRequest{ObligationID: "x"}, o)
			return err
		},
		func(o belief.CallOption) error {
			_, _, err := sess.RequestExit(ctx, belief.ExitRequest{ObligationID: "x"}, o)
			return err
		},
		func(o belief.CallOption) error {
			_, _, err := sess.DeclareConclusion(ctx, belief.ConclusionRequest{ConclusionID: "x"}, o)
			return err
		},
		func(o belief.CallOption) error {
			_, _, err := sess.RequestTermination(ctx, belief.TerminationRequest{}, o)
			return err
		},
	} {
		assert.ErrorIs(t, call(belief.ExpectHead(head)), belief.ErrStaleHead)
	}
}

// TestServerConcurrent runs many goroutines over many sessions (run it
// with -race): every elimination is applied exactly once and every
// session's log verifies and replays to its snapshot — with the default
// cache, and with a cache of one idle session and a checkpoint every 7
// events, where sessions are closed and opened again all the time.
func TestServerConcurrent(t *testing.T) {
	t.Run("default", func(t *testing.T) { testServerConcurrent(t) })
	t.Run("cache=1", func(t *testing.T) { testServerConcurrent(t, belief.WithCacheSize(1), belief.WithCheckpointEvery(7)) })
}

func testServerConcurrent(t *testing.T, opts ...belief.Option) {
	ctx := context.Background()
	srv := newServer(t, belief.NewMemoryStorage(), opts...)
	const sessions, workers, perWorker = 8, 8, 20
	hyps := make([]string, workers*perWorker+1)
	for i := range hyps {
		hyps[i] = fmt.Sprintf("h%04d", i)
	}
	var ids []string
	for range sessions {
		s, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: hyps})
		require.NoError(t, err)
		ids = append(ids, s.ID())
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*workers)
	for _, id := range ids {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sess, err := srv.Session(ctx, id)
				if err != nil {
					errs <- err
					return
				}
				for i := range perWorker {
					h := hyps[w*perWorker+i]
					r, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: fmt.Sprint("w", w), ObservationID: h, Eliminated: []string{h}})
					if err != nil || len(r.Applied) != 1 {
						errs <- fmt.Errorf("eliminate %s: %v %v", h, r, err)
						return
					}
					if _, err := sess.Snapshot(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		sess, err := srv.Session(ctx, id)
		require.NoError(t, err)
		snap, err := sess.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{hyps[len(hyps)-1]}, snap.Survivors)
		evs, err := sess.Events(ctx, "")
		require.NoError(t, err)
		assert.Len(t, evs, 1+workers*perWorker)
		r, err := belief.Replay(evs)
		require.NoError(t, err)
		assert.Equal(t, snap, r.Snapshot())
		_, err = sess.Verify(ctx)
		require.NoError(t, err)
	}
}

func TestCatchUpRejectsForeignEntries(t *testing.T) {
	ctx := context.Background()
	shared := belief.NewMemoryStorage()
	srv := newServer(t, shared)
	sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b"}})
	require.NoError(t, err)
	store, err := shared.Open(ctx, sess.ID())
	require.NoError(t, err)
	intruder, err := trace.NewLog(store)
	require.NoError(t, err)
	_, err = intruder.Append(ctx, "kernel.execute", []byte(`{"x":1}`))
	require.NoError(t, err)
	_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o", Eliminated: []string{"a"}})
	var re *belief.ReplayError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 1, re.Index)
}

func TestServerRestartRefusesTamperedLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fs, err := belief.NewFileStorage(dir, trace.FileOptions{})
	require.NoError(t, err)
	srv, err := belief.NewServer(ctx, fs)
	require.NoError(t, err)
	sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b"}})
	require.NoError(t, err)
	id := sess.ID()
	require.NoError(t, srv.Close())
	// Append an event that is a valid trace entry but not a valid belief
	// event: its verb does not match its kind.
	store, err := fs.Open(ctx, id)
	require.NoError(t, err)
	l, err := trace.NewLog(store)
	require.NoError(t, err)
	_, err = l.Append(ctx, "belief.eliminate", []byte(`{"not":"an audit entry"}`))
	require.NoError(t, err)
	require.NoError(t, store.Close())
	srv, err = belief.NewServer(ctx, fs)
	require.NoError(t, err, "a Server reads a session's log when the session is first used")
	defer srv.Close()
	_, err = srv.Session(ctx, id)
	require.Error(t, err)
	assert.Contains(t, err.Error(), id)
	var re *belief.ReplayError
	assert.True(t, errors.As(err, &re))
}

// TestConcurrentOpenKeepsOneSession: many goroutines asking a second
// server for a session it has not opened yet all get the same *Session.
func TestConcurrentOpenKeepsOneSession(t *testing.T) {
	ctx := context.Background()
	shared := belief.NewMemoryStorage()
	a := newServer(t, shared)
	c := newServer(t, shared)
	sess, _, err := a.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b"}}) // after c started
	require.NoError(t, err)
	b := newServer(t, belief.NewMemoryStorage()) // sees nothing of shared
	_, err = b.Session(ctx, sess.ID())
	requireCode(t, err, belief.CodeSessionNotFound)
	var wg sync.WaitGroup
	got := make([]*belief.Session, 16)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.Session(ctx, sess.ID())
			if err == nil {
				got[i] = s
			}
		}()
	}
	wg.Wait()
	for _, s := range got {
		require.NotNil(t, s)
		assert.Same(t, got[0], s)
	}
	require.NoError(t, c.Close())
	_, err = c.Session(ctx, sess.ID())
	assert.ErrorIs(t, err, belief.ErrServerClosed)
	_, _, err = c.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"x"}})
	assert.ErrorIs(t, err, belief.ErrServerClosed)
}

// swapStorage hands out stores whose contents a test can replace, as an
// operator restoring an old backup or a SQL rollback would.
type swapStorage struct {
	*belief.MemoryStorage
	mu     sync.Mutex
	stores map[string]*swapStore
}

type swapStore struct {
	mu  sync.Mutex
	cur trace.Store
}

func (s *swapStore) get() trace.Store                             { s.mu.Lock(); defer s.mu.Unlock(); return s.cur }
func (s *swapStore) Head(ctx context.Context) (trace.Head, error) { return s.get().Head(ctx) }
func (s *swapStore) Append(ctx context.Context, es ...trace.Entry) error {
	return s.get().Append(ctx, es...)
}
func (s *swapStore) Entries(ctx context.Context, from uint64) iter.Seq2[trace.Entry, error] {
	return s.get().Entries(ctx, from)
}
func (s *swapStore) Close() error { return nil }

func (w *swapStorage) Create(ctx context.Context, id string) (trace.Store, error) {
	st, err := w.MemoryStorage.Create(ctx, id)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &swapStore{cur: st}
	w.stores[id] = s
	return s, nil
}

// TestCatchUpRefusesAStoreThatDoesNotExtendTheSession: when the store's
// head is no longer an extension of the head the session has verified
// (its log was cut back or rewritten), the session reports it instead of
// serving events the store no longer holds.
func TestCatchUpRefusesAStoreThatDoesNotExtendTheSession(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"Shorter", "SameSizeRewritten"} {
		t.Run(name, func(t *testing.T) {
			storage := &swapStorage{MemoryStorage: belief.NewMemoryStorage(), stores: map[string]*swapStore{}}
			srv := newServer(t, storage)
			sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b", "c"}})
			require.NoError(t, err)
			// Keep a copy of the log as it is after the declaration.
			backup := trace.NewMemory()
			for e, err := range storage.stores[sess.ID()].get().Entries(ctx, 0) {
				require.NoError(t, err)
				require.NoError(t, backup.Append(ctx, e))
			}
			_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o1", Eliminated: []string{"a"}})
			require.NoError(t, err)
			if name == "SameSizeRewritten" {
				// A different second event in the backup: same size, another head.
				l, err := trace.NewLog(backup)
				require.NoError(t, err)
				_, err = l.Append(ctx, "kernel.execute", []byte(`{"x":1}`))
				require.NoError(t, err)
			}
			sw := storage.stores[sess.ID()]
			sw.mu.Lock()
			sw.cur = backup
			sw.mu.Unlock()
			_, err = sess.Snapshot(ctx)
			require.Error(t, err, "the store no longer holds the session's events")
			assert.ErrorIs(t, err, trace.ErrTruncated)
			_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o2", Eliminated: []string{"b"}})
			assert.ErrorIs(t, err, trace.ErrTruncated)
		})
	}
}

// busyStore is a store on which another writer always wins the append
// race: its head never moves for us, every Append is a trace conflict.
type busyStore struct{ trace.Store }

func (b busyStore) Append(ctx context.Context, es ...trace.Entry) error {
	return fmt.Errorf("%w: another writer appended first", trace.ErrConflict)
}

type busyStorage struct {
	*belief.MemoryStorage
	busy bool
}

func (b *busyStorage) Open(ctx context.Context, id string) (trace.Store, error) {
	st, err := b.MemoryStorage.Open(ctx, id)
	if err != nil || !b.busy {
		return st, err
	}
	return busyStore{st}, nil
}

// TestAppendRetriesExhaustedIsConflict: a mutation that keeps losing the
// append race gives up after 32 retries (maxAppendRetries) with CONFLICT (retry later),
// not an internal error, and records nothing.
func TestAppendRetriesExhaustedIsConflict(t *testing.T) {
	ctx := context.Background()
	storage := &busyStorage{MemoryStorage: belief.NewMemoryStorage()}
	a := newServer(t, storage)
	sess, _, err := a.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b"}})
	require.NoError(t, err)
	storage.busy = true
	b := newServer(t, storage)
	other, err := b.Session(ctx, sess.ID())
	require.NoError(t, err)
	_, st, err := other.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o", Eliminated: []string{"a"}})
	requireCode(t, err, belief.CodeConflict)
	assert.Equal(t, 2, st.NSurvivors(), "nothing applied")
	assert.Equal(t, uint64(1), st.Len(), "nothing recorded")
}
