// Checkpoints and the session cache of the Server:
//
//   - A checkpoint that disagrees with the events before it is refused by a
//     full verification (VerifyLog, Session.Verify) and by a Server
//     catching up with it; opening a session trusts its latest checkpoint
//     but refuses one the events after it do not replay on:
//     TestForgedCheckpointIsRefused.
//   - The cache never closes a session an operation is using, and closes
//     idle ones beyond its size: TestCacheNeverClosesASessionInUse.
//   - Opening replays only the events after the latest checkpoint:
//     TestOpenReplaysOnlyTheTail.
//   - Concurrency with a cache of one: TestServerConcurrent (cache=1).
//   - Restoring from any checkpoint payload never panics, and a
//     restored state writes a checkpoint it restores from alike:
//     FuzzCheckpoint.

package belief

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// entriesOf reads every entry of a store.
func entriesOf(t *testing.T, st trace.Store) []trace.Entry {
	t.Helper()
	var out []trace.Entry
	for e, err := range st.Entries(context.Background(), 0) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// forge rewrites member key of the checkpoint payload p (canonical JSON
// again).
func forge(t *testing.T, p []byte, key string, v any) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(p, &m))
	m[key] = v
	b, err := canon.Marshal(m)
	require.NoError(t, err)
	return b
}

// rechained stores entries in a new MemoryStorage under id, with entry i's
// payload replaced by payload and every entry after it re-chained, as a
// forger who can write the whole log would: the trace chain verifies.
func rechained(t *testing.T, id string, entries []trace.Entry, i int, payload []byte) *MemoryStorage {
	t.Helper()
	ctx := context.Background()
	storage := NewMemoryStorage()
	store, err := storage.Create(ctx, id)
	require.NoError(t, err)
	var h trace.Head
	for j, e := range entries {
		p := e.Payload
		if j == i {
			p = payload
		}
		ne, next, err := trace.Next(h, e.Kind, p, e.Time)
		require.NoError(t, err)
		require.NoError(t, store.Append(ctx, ne))
		h = next
	}
	_, err = trace.VerifyStore(ctx, store)
	require.NoError(t, err, "the forged log's trace chain verifies")
	return storage
}

func eliminate(t *testing.T, s *Session, obs string, ids ...string) {
	t.Helper()
	_, _, err := s.Eliminate(context.Background(), EliminateRequest{SourceID: "s", ObservationID: obs, Eliminated: ids})
	require.NoError(t, err)
}

func TestForgedCheckpointIsRefused(t *testing.T) {
	ctx := context.Background()
	storage := NewMemoryStorage()
	srv, err := NewServer(ctx, storage, WithCheckpointEvery(2))
	require.NoError(t, err)
	defer srv.Close()
	sess, _, err := srv.Declare(ctx, DeclareRequest{Hypotheses: []string{"a", "b", "c", "d"}})
	require.NoError(t, err)
	eliminate(t, sess, "o1", "a") // 2 events: a checkpoint at entry 2
	store, err := storage.Open(ctx, sess.ID())
	require.NoError(t, err)
	entries := entriesOf(t, store)
	require.Len(t, entries, 3)
	require.Equal(t, KindCheckpoint, entries[2].Kind)
	resurrected := forge(t, entries[2].Payload, "survivors", []string{"a", "b", "c", "d"})

	t.Run("VerifyLog", func(t *testing.T) {
		forged := rechained(t, sess.ID(), entries, 2, resurrected)
		fstore, err := forged.Open(ctx, sess.ID())
		require.NoError(t, err)
		_, _, err = VerifyLog(ctx, fstore)
		var re *ReplayError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, 2, re.Index)
		assert.Contains(t, re.Reason, "the checkpoint disagrees with the events before it: survivors")
		// The same log unforged verifies.
		_, h, err := VerifyLog(ctx, store)
		require.NoError(t, err)
		assert.Equal(t, uint64(3), h.Size)
	})

	t.Run("OpenTrustsTheLatestCheckpoint", func(t *testing.T) {
		// Documented: opening restores from the latest checkpoint without
		// replaying the events before it; Verify replays them.
		forged := rechained(t, sess.ID(), entries, 2, resurrected)
		other, err := NewServer(ctx, forged)
		require.NoError(t, err)
		defer other.Close()
		s, err := other.Session(ctx, sess.ID())
		require.NoError(t, err)
		snap, err := s.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, 4, snap.NSurvivors, "the open trusted the checkpoint")
		_, err = s.Verify(ctx)
		require.ErrorIs(t, err, ErrReplay)
		assert.ErrorContains(t, err, sess.ID())
	})

	t.Run("OpenRefusesACheckpointTheTailDoesNotReplayOn", func(t *testing.T) {
		eliminate(t, sess, "o2", "b") // an event after the checkpoint
		entries := entriesOf(t, store)
		require.Len(t, entries, 4)
		forged := rechained(t, sess.ID(), entries, 2, resurrected)
		other, err := NewServer(ctx, forged)
		require.NoError(t, err)
		defer other.Close()
		_, err = other.Session(ctx, sess.ID())
		var re *ReplayError
		require.ErrorAs(t, err, &re)
		assert.Contains(t, re.Reason, "survivors_after_hash")
	})

	t.Run("CatchUp", func(t *testing.T) {
		// Another writer appends a checkpoint that disagrees with the
		// session: the Server that holds the session refuses it.
		shared := NewMemoryStorage()
		a, err := NewServer(ctx, shared, WithCheckpointEvery(0))
		require.NoError(t, err)
		defer a.Close()
		s, _, err := a.Declare(ctx, DeclareRequest{Hypotheses: []string{"a", "b", "c"}})
		require.NoError(t, err)
		eliminate(t, s, "o1", "a")
		st, err := s.State(ctx)
		require.NoError(t, err)
		genuine, err := st.checkpoint(mark{})
		require.NoError(t, err)
		for _, bad := range []struct {
			key string
			v   any
		}{
			{"survivors", []string{"a", "b", "c"}},
			{"terminated", true},
			{"observations", []any{}},
			{"events", 5},
		} {
			t.Run(bad.key, func(t *testing.T) {
				storage := NewMemoryStorage()
				sstore, err := storage.Create(ctx, s.ID())
				require.NoError(t, err)
				store, err := shared.Open(ctx, s.ID())
				require.NoError(t, err)
				for _, e := range entriesOf(t, store) {
					require.NoError(t, sstore.Append(ctx, e))
				}
				b, err := NewServer(ctx, storage, WithCheckpointEvery(0))
				require.NoError(t, err)
				defer b.Close()
				sb, err := b.Session(ctx, s.ID())
				require.NoError(t, err)
				lg, err := trace.NewLog(sstore)
				require.NoError(t, err)
				_, err = lg.Append(ctx, KindCheckpoint, forge(t, genuine, bad.key, bad.v))
				require.NoError(t, err)
				_, err = sb.Snapshot(ctx)
				var re *ReplayError
				require.ErrorAs(t, err, &re, "%v", err)
				assert.Equal(t, 2, re.Index)
				assert.Contains(t, re.Reason, "the checkpoint disagrees with the events before it: "+bad.key)
			})
		}
		// The genuine checkpoint is accepted.
		store, err := shared.Open(ctx, s.ID())
		require.NoError(t, err)
		lg, err := trace.NewLog(store)
		require.NoError(t, err)
		_, err = lg.Append(ctx, KindCheckpoint, genuine)
		require.NoError(t, err)
		eliminate(t, s, "o2", "b")
		_, err = s.Verify(ctx)
		require.NoError(t, err)
	})
}

// trackingStorage counts the stores open at once and can hold one
// session's appends until released.
type trackingStorage struct {
	*MemoryStorage
	open, maxOpen atomic.Int64
	mu            sync.Mutex
	holdID        string
	held, release chan struct{}
}

type trackedStore struct {
	trace.Store
	ts     *trackingStorage
	id     string
	closed atomic.Bool
}

func (s *trackedStore) Append(ctx context.Context, es ...trace.Entry) error {
	if s.closed.Load() {
		return trace.ErrClosed
	}
	s.ts.mu.Lock()
	hold := s.id == s.ts.holdID
	s.ts.mu.Unlock()
	if hold {
		s.ts.held <- struct{}{}
		<-s.ts.release
	}
	if s.closed.Load() {
		return errors.New("appending to a store the cache closed")
	}
	return s.Store.Append(ctx, es...)
}

func (s *trackedStore) Entries(ctx context.Context, from uint64) iter.Seq2[trace.Entry, error] {
	return s.Store.Entries(ctx, from)
}

func (s *trackedStore) Close() error {
	if s.closed.Swap(true) {
		return trace.ErrClosed
	}
	s.ts.open.Add(-1)
	return nil
}

func (ts *trackingStorage) track(id string, st trace.Store, err error) (trace.Store, error) {
	if err != nil {
		return nil, err
	}
	n := ts.open.Add(1)
	for {
		m := ts.maxOpen.Load()
		if n <= m || ts.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	return &trackedStore{Store: st, ts: ts, id: id}, nil
}

func (ts *trackingStorage) Create(ctx context.Context, id string) (trace.Store, error) {
	st, err := ts.MemoryStorage.Create(ctx, id)
	return ts.track(id, st, err)
}

func (ts *trackingStorage) Open(ctx context.Context, id string) (trace.Store, error) {
	st, err := ts.MemoryStorage.Open(ctx, id)
	return ts.track(id, st, err)
}

// TestCacheNeverClosesASessionInUse: with a cache of one idle session, an
// operation that is under way on one session while many others are used
// keeps its store open and completes; idle sessions beyond the cache are
// closed, so at most the cache plus the sessions in use are open at once.
func TestCacheNeverClosesASessionInUse(t *testing.T) {
	ctx := context.Background()
	ts := &trackingStorage{MemoryStorage: NewMemoryStorage(), held: make(chan struct{}), release: make(chan struct{})}
	srv, err := NewServer(ctx, ts, WithCacheSize(1))
	require.NoError(t, err)
	defer srv.Close()
	var ids []string
	for range 5 {
		s, _, err := srv.Declare(ctx, DeclareRequest{Hypotheses: []string{"a", "b"}})
		require.NoError(t, err)
		ids = append(ids, s.ID())
	}
	assert.LessOrEqual(t, ts.open.Load(), int64(1), "one idle session stays open")
	ts.mu.Lock()
	ts.holdID = ids[0]
	ts.mu.Unlock()
	slow, err := srv.Session(ctx, ids[0])
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, _, err := slow.Eliminate(ctx, EliminateRequest{SourceID: "s", ObservationID: "slow", Eliminated: []string{"a"}})
		done <- err
	}()
	<-ts.held // the elimination is under way
	for i := range 20 {
		s, err := srv.Session(ctx, ids[1+i%4])
		require.NoError(t, err)
		eliminate(t, s, fmt.Sprint(i), "b")
	}
	assert.LessOrEqual(t, ts.open.Load(), int64(2), "the session in use and one idle session")
	close(ts.release)
	require.NoError(t, <-done, "the session in use was not closed under it")
	snap, err := slow.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, snap.Survivors)
	assert.LessOrEqual(t, ts.maxOpen.Load(), int64(3), "at most the cache, the session in use and the one opening")
}

// countingStore counts the entries read from it.
type countingStore struct {
	trace.Store
	read *atomic.Int64
}

func (c countingStore) Entries(ctx context.Context, from uint64) iter.Seq2[trace.Entry, error] {
	return func(yield func(trace.Entry, error) bool) {
		for e, err := range c.Store.Entries(ctx, from) {
			c.read.Add(1)
			if !yield(e, err) {
				return
			}
		}
	}
}

type countingStorage struct {
	*MemoryStorage
	read atomic.Int64
}

func (c *countingStorage) Open(ctx context.Context, id string) (trace.Store, error) {
	st, err := c.MemoryStorage.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	return countingStore{st, &c.read}, nil
}

// TestOpenReplaysOnlyTheTail: a Server opening a session of 25 events
// with a checkpoint every 10 restores it from the checkpoint after event
// 20 and replays the 5 events after it: the State it serves holds only
// those, and answers as the writer's does.
func TestOpenReplaysOnlyTheTail(t *testing.T) {
	ctx := context.Background()
	storage := &countingStorage{MemoryStorage: NewMemoryStorage()}
	a, err := NewServer(ctx, storage, WithCheckpointEvery(10))
	require.NoError(t, err)
	defer a.Close()
	hyps := benchHyps(30)
	s, _, err := a.Declare(ctx, DeclareRequest{Hypotheses: hyps})
	require.NoError(t, err)
	for i := 1; i < 25; i++ {
		eliminate(t, s, fmt.Sprint(i), hyps[i])
	}
	want, err := s.State(ctx)
	require.NoError(t, err)
	wantEvents, err := s.Events(ctx, "")
	require.NoError(t, err)

	b, err := NewServer(ctx, storage, WithCheckpointEvery(10))
	require.NoError(t, err)
	defer b.Close()
	start := time.Now()
	sb, err := b.Session(ctx, s.ID())
	require.NoError(t, err)
	t.Logf("opened in %v", time.Since(start))
	assert.Equal(t, int64(27), storage.read.Load(), "the open read each entry once")
	got, err := sb.State(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(20), got.p.base, "restored from the checkpoint after event 20")
	held := 0
	for n := got.p.events; n != nil; n = n.prev {
		held++
	}
	assert.Equal(t, 5, held, "only the 5 events after it were replayed")
	assert.Equal(t, want.Snapshot(), got.Snapshot())
	_, err = got.Events("")
	assert.ErrorIs(t, err, errNotHeld)
	evs, err := sb.Events(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, wantEvents, evs, "Session.Events reads the others from the log")
	_, err = sb.Verify(ctx)
	require.NoError(t, err)
}

// FuzzCheckpoint: restoring from any checkpoint payload never panics; a
// state restored from one is restored alike from the checkpoint it
// writes (the encoding is a fixed point).
func FuzzCheckpoint(f *testing.F) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, _, err := Declare("s", DeclareRequest{Hypotheses: []string{"a", "b", "😀"}}, Stamp{EventID: "e0", Time: t0})
	require.NoError(f, err)
	s, _, _, err = s.Eliminate(EliminateRequest{SourceID: "x", ObservationID: "1", Eliminated: []string{"a"}}, Stamp{EventID: "e1", Time: t0})
	require.NoError(f, err)
	s, _, err = s.EnterObligation(ObligationRequest{ObligationID: "ob", MinTotalEliminations: 1}, Stamp{EventID: "e2", Time: t0})
	require.NoError(f, err)
	seed, err := s.checkpoint(mark{})
	require.NoError(f, err)
	f.Add(seed)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"events":1,"hypotheses":["a"],"survivors":["a","a"],"session_id":"s"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := restorer{id: "s"}
		if r.add(b) != nil {
			return
		}
		st, m, err := r.state()
		if err != nil {
			return
		}
		again, err := st.checkpoint(mark{})
		require.NoError(t, err)
		r2 := restorer{id: "s"}
		require.NoError(t, r2.add(again))
		st2, m2, err := r2.state()
		require.NoError(t, err)
		assert.Equal(t, st.Snapshot(), st2.Snapshot())
		assert.Equal(t, m.events, m2.events)
		again2, err := st2.checkpoint(mark{})
		require.NoError(t, err)
		assert.Equal(t, string(again), string(again2))
	})
}
