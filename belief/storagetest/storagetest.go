package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

// NewStorage makes a Storage over a new, empty backend for one subtest.
// It should register any cleanup with t.Cleanup.
type NewStorage func(t *testing.T) belief.Storage

// Reopen returns another Storage over the backend of st, as another
// process would open it (see the package documentation). It should
// register any cleanup with t.Cleanup.
type Reopen func(t *testing.T, st belief.Storage) belief.Storage

// Run runs every scenario against storages made by newStorage. reopen may
// be nil for a single-process backend.
func Run(t *testing.T, newStorage NewStorage, reopen Reopen) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, NewStorage, Reopen)
	}{
		{"Contract", testContract},
		{"ConcurrentCreate", testConcurrentCreate},
		{"TwoServers", testTwoServers},
		{"Restart", testRestart},
		{"CacheOfOne", testCacheOfOne},
		{"Checkpoints", testCheckpoints},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStorage, reopen) })
	}
}

var onto = belief.OntologyBundle{
	HypothesisSpaceID:  "hs-db",
	HypothesisVersion:  "v3",
	CausalGraphRef:     "graphstore://postgres-repl",
	CausalGraphVersion: "v17",
}

func server(t *testing.T, st belief.Storage, opts ...belief.Option) *belief.Server {
	t.Helper()
	srv, err := belief.NewServer(context.Background(), st, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func counterIDs(prefix string) func() string {
	var n atomic.Int64
	return func() string { return fmt.Sprintf("%s%06d", prefix, n.Add(1)) }
}

func hypotheses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("h%02d", i)
	}
	return out
}

func testContract(t *testing.T, newStorage NewStorage, _ Reopen) {
	ctx := context.Background()
	st := newStorage(t)
	ids, err := st.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, ids, "a new backend has no sessions")

	// Byte-wise order: "S1" < "a-b" < "a_b" < "s1" < "s10" < "s2".
	for _, id := range []string{"s2", "s10", "a_b", "S1", "s1", "a-b"} {
		store, err := st.Create(ctx, id)
		require.NoError(t, err, "Create(%q)", id)
		require.NoError(t, store.Close())
	}
	want := []string{"S1", "a-b", "a_b", "s1", "s10", "s2"}
	ids, err = st.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, ids, "List is sorted byte-wise")

	// What is appended through Create's store is there through Open's.
	store, err := st.Open(ctx, "s1")
	require.NoError(t, err)
	lg, err := trace.NewLog(store)
	require.NoError(t, err)
	_, err = lg.Append(ctx, "storagetest.entry", []byte(`{"n":1}`))
	require.NoError(t, err)
	wantHead, err := store.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), wantHead.Size)
	require.NoError(t, store.Close())

	for _, id := range []string{"s1", "S1"} {
		_, err = st.Create(ctx, id)
		require.ErrorIs(t, err, belief.ErrConflict, "second Create(%q)", id)
		assert.Equal(t, belief.CodeConflict, belief.CodeOf(err))
	}
	store, err = st.Open(ctx, "s1")
	require.NoError(t, err)
	h, err := trace.VerifyStore(ctx, store)
	require.NoError(t, err)
	assert.Equal(t, wantHead, h, "a refused Create leaves the session's log alone")
	require.NoError(t, store.Close())
	ids, err = st.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, ids, "a refused Create adds no session")

	for _, id := range []string{"missing", "", "s3", "s", "s1x"} {
		_, err = st.Open(ctx, id)
		require.ErrorIs(t, err, belief.ErrSessionNotFound, "Open(%q)", id)
		assert.Equal(t, belief.CodeSessionNotFound, belief.CodeOf(err), "Open(%q): %v", id, err)
	}
}

// testTwoServers plays two processes over one backend: each catches up
// with the other's events before it mutates, appends only after that
// head (trace.After) and retries on a conflict, so the log never forks and
// both end in the same state.
// testConcurrentCreate: of many concurrent Creates of one id exactly one
// succeeds; the others get ErrConflict (Storage is safe for concurrent use).
func testConcurrentCreate(t *testing.T, newStorage NewStorage, _ Reopen) {
	st := newStorage(t)
	const n = 8
	var wg sync.WaitGroup
	var won atomic.Int32
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := st.Create(context.Background(), "race")
			if err != nil {
				errs <- err
				return
			}
			won.Add(1)
			errs <- s.Close()
		}()
	}
	wg.Wait()
	close(errs)
	conflicts := 0
	for err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, belief.ErrConflict):
			conflicts++
		default:
			t.Errorf("concurrent Create: %v", err)
		}
	}
	assert.Equal(t, int32(1), won.Load(), "exactly one Create of an id succeeds")
	assert.Equal(t, n-1, conflicts)
}

func testTwoServers(t *testing.T, newStorage NewStorage, reopen Reopen) {
	if reopen == nil {
		t.Skip("single-process backend (reopen is nil)")
	}
	ctx := context.Background()
	st := newStorage(t)
	// a numbers its ids, b draws the default UUIDv7: either way the two
	// servers' ids never collide.
	a := server(t, st, belief.WithIDs(counterIDs("a-")))
	b := server(t, reopen(t, st))
	hyps := hypotheses(41)
	sa, _, err := a.Declare(ctx, belief.DeclareRequest{Hypotheses: hyps})
	require.NoError(t, err)
	sb, err := b.Session(ctx, sa.ID()) // b opens what a created
	require.NoError(t, err)

	// Sequential interleaving: each sees the other's effect.
	_, _, err = sa.Eliminate(ctx, belief.EliminateRequest{SourceID: "a", ObservationID: "1", Eliminated: []string{"h00"}})
	require.NoError(t, err)
	r, _, err := sb.Eliminate(ctx, belief.EliminateRequest{SourceID: "b", ObservationID: "1", Eliminated: []string{"h00", "h01"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"h01"}, r.Applied)
	assert.Equal(t, []string{"h00"}, r.Ignored, "b caught up with a's elimination")
	// The idempotence table is shared through the log too.
	rep, _, err := sb.Eliminate(ctx, belief.EliminateRequest{SourceID: "a", ObservationID: "1", Eliminated: []string{"h00"}})
	require.NoError(t, err)
	assert.True(t, rep.Repeated, "the idempotence table travels through the store")
	_, _, err = sb.Eliminate(ctx, belief.EliminateRequest{SourceID: "a", ObservationID: "1", Eliminated: []string{"h05"}})
	require.Error(t, err, "same key, other body")
	assert.Equal(t, belief.CodeConflict, belief.CodeOf(err), "same key, other body: %v", err)
	// Optimistic concurrency sees the other server's head.
	s, err := sa.State(ctx)
	require.NoError(t, err)
	head, _ := s.Head()
	_, _, err = sb.EnterObligation(ctx, belief.ObligationRequest{ObligationID: "ob", MinTotalEliminations: 0}, belief.ExpectHead(head))
	require.NoError(t, err)
	_, _, err = sa.Eliminate(ctx, belief.EliminateRequest{SourceID: "a", ObservationID: "2", Eliminated: []string{"h02"}}, belief.ExpectHead(head))
	assert.ErrorIs(t, err, belief.ErrStaleHead, "a sees that b moved the head")
	ex, _, err := sa.RequestExit(ctx, belief.ExitRequest{ObligationID: "ob"})
	require.NoError(t, err, "a sees b's obligation")
	assert.True(t, ex.Approved)

	// Concurrent writers on both servers.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w, sess := range []*belief.Session{sa, sb, sa, sb} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 2 + w; i < len(hyps)-1; i += 4 {
				if _, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "c", ObservationID: hyps[i], Eliminated: []string{hyps[i]}}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	snapA, err := sa.Snapshot(ctx)
	require.NoError(t, err)
	snapB, err := sb.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, snapA, snapB)
	assert.Equal(t, []string{hyps[len(hyps)-1]}, snapA.Survivors)
	evs, err := sa.Events(ctx, "")
	require.NoError(t, err)
	evsB, err := sb.Events(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, evs, evsB, "both servers hold the same log")
	replayed, err := belief.Replay(evs)
	require.NoError(t, err)
	assert.Equal(t, snapA, replayed.Snapshot())
	h, err := sa.Verify(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(len(evs)), h.Size, "one trace entry per event")
	// A third server started now replays the whole shared log.
	cst := reopen(t, st)
	c := server(t, cst)
	ids, err := cst.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{sa.ID()}, ids)
	sc, err := c.Session(ctx, sa.ID())
	require.NoError(t, err)
	snapC, err := sc.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, snapA, snapC)
}

// testRestart stops a server and starts a new one over the same backend:
// every session comes back by replay, with the same snapshot and log, and
// keeps working.
func testRestart(t *testing.T, newStorage NewStorage, reopen Reopen) {
	ctx := context.Background()
	st := newStorage(t)
	srv, err := belief.NewServer(ctx, st)
	require.NoError(t, err)
	want := map[string]belief.Snapshot{}
	wantEvents := map[string][]belief.AuditEntry{}
	for i := range 3 {
		sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Ontology: onto, Hypotheses: []string{"a", "b", "c", "😀"},
			Metadata: json.RawMessage(`{"n":` + strconv.Itoa(i) + `}`)})
		require.NoError(t, err)
		for j := range i + 1 {
			_, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: strconv.Itoa(j), Eliminated: []string{[]string{"a", "😀", "b"}[j]}})
			require.NoError(t, err)
		}
		if i == 2 {
			_, _, err := sess.RequestTermination(ctx, belief.TerminationRequest{})
			require.NoError(t, err)
		}
		want[sess.ID()], err = sess.Snapshot(ctx)
		require.NoError(t, err)
		wantEvents[sess.ID()], err = sess.Events(ctx, "")
		require.NoError(t, err)
	}
	require.NoError(t, srv.Close())

	next := st
	if reopen != nil {
		if c, ok := st.(io.Closer); ok {
			require.NoError(t, c.Close(), "closing the stopped process's storage")
		}
		next = reopen(t, st)
	}
	srv2 := server(t, next)
	ids, err := next.List(ctx)
	require.NoError(t, err)
	require.Len(t, ids, 3)
	for id, snap := range want {
		sess, err := srv2.Session(ctx, id)
		require.NoError(t, err)
		got, err := sess.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, snap, got)
		evs, err := sess.Events(ctx, "")
		require.NoError(t, err)
		assert.Equal(t, wantEvents[id], evs)
		if snap.Terminated {
			_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "new", Eliminated: []string{"c"}})
			require.Error(t, err, "a terminated session stays terminated")
			assert.Equal(t, belief.CodeSessionTerminated, belief.CodeOf(err), "%v", err)
			continue
		}
		r, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "0", Eliminated: []string{"a"}})
		require.NoError(t, err)
		assert.True(t, r.Repeated, "the idempotence table came back")
		_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "new", Eliminated: []string{"c"}})
		require.NoError(t, err)
		_, err = sess.Verify(ctx)
		require.NoError(t, err)
	}
}
