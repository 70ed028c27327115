package storagetest

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
)

// testCacheOfOne: Servers that keep one idle session open
// (WithCacheSize(1)) and write a checkpoint every few events, serving many
// sessions in turn — two such Servers over one backend when reopen is
// given, with different checkpoint intervals — answer every call as the
// pure core does (the model), so every session is opened again and again,
// from its latest checkpoint, and catches up with the other Server's
// events and checkpoints; a Server started afterwards answers the same and
// every log verifies in full.
func testCacheOfOne(t *testing.T, newStorage NewStorage, reopen Reopen) {
	ctx := context.Background()
	st := newStorage(t)
	servers := []*belief.Server{server(t, st, belief.WithCacheSize(1), belief.WithCheckpointEvery(3))}
	if reopen != nil {
		servers = append(servers, server(t, reopen(t, st), belief.WithCacheSize(1), belief.WithCheckpointEvery(2)))
	}
	n := 0
	stamp := func() belief.Stamp {
		n++
		return belief.Stamp{EventID: fmt.Sprintf("model-%d", n), Time: time.Unix(int64(n), 0)}
	}
	hyps := append(hypotheses(8), "😀")
	model := map[string]belief.State{}
	var ids []string
	for range 6 {
		sess, _, err := servers[0].Declare(ctx, belief.DeclareRequest{Hypotheses: hyps})
		require.NoError(t, err)
		m, _, err := belief.Declare(sess.ID(), belief.DeclareRequest{Hypotheses: hyps}, stamp())
		require.NoError(t, err)
		model[sess.ID()] = m
		ids = append(ids, sess.ID())
	}
	rng := rand.New(rand.NewPCG(17, 3))
	steps := 400
	if testing.Short() {
		steps = 150
	}
	for i := range steps {
		id := ids[rng.IntN(len(ids))]
		sess, err := servers[rng.IntN(len(servers))].Session(ctx, id)
		require.NoError(t, err)
		m := model[id]
		what := fmt.Sprintf("step %d, session %s", i, id)
		switch rng.IntN(6) {
		case 0, 1, 2:
			req := belief.EliminateRequest{SourceID: fmt.Sprint("src", rng.IntN(2)), ObservationID: fmt.Sprint(rng.IntN(8)),
				Eliminated: pick(rng, append(hyps, "unknown"))}
			got, _, gerr := sess.Eliminate(ctx, req)
			next, want, _, werr := m.Eliminate(req, stamp())
			if sameOutcome(t, werr, gerr, what) {
				assert.Equal(t, [3]any{want.Applied, want.Ignored, want.Repeated}, [3]any{got.Applied, got.Ignored, got.Repeated}, what)
				model[id] = next
			}
		case 3:
			req := belief.ObligationRequest{ObligationID: fmt.Sprint("ob", rng.IntN(4)), MinTotalEliminations: int64(rng.IntN(3))}
			_, _, gerr := sess.EnterObligation(ctx, req)
			next, _, werr := m.EnterObligation(req, stamp())
			if sameOutcome(t, werr, gerr, what) {
				model[id] = next
			}
		case 4:
			req := belief.ExitRequest{ObligationID: fmt.Sprint("ob", rng.IntN(4))}
			got, _, gerr := sess.RequestExit(ctx, req)
			next, want, _, werr := m.RequestExit(req, stamp())
			if sameOutcome(t, werr, gerr, what) {
				assert.Equal(t, [2]any{want.Approved, want.Reason}, [2]any{got.Approved, got.Reason}, what)
				model[id] = next
			}
		case 5:
			evs, err := sess.Events(ctx, "")
			require.NoError(t, err, what)
			require.Len(t, evs, int(m.Len()), what)
			k := rng.IntN(len(evs))
			tail, err := sess.Events(ctx, evs[k].EventID)
			require.NoError(t, err, what)
			assert.Equal(t, evs[k+1:], tail, what)
		}
		snap, err := sess.Snapshot(ctx)
		require.NoError(t, err, what)
		sameSnapshot(t, model[id].Snapshot(), snap, what)
	}
	for _, srv := range servers {
		require.NoError(t, srv.Close())
	}
	next := st
	if reopen != nil {
		next = reopen(t, st)
	}
	srv := server(t, next, belief.WithCacheSize(1))
	for _, id := range ids {
		sess, err := srv.Session(ctx, id)
		require.NoError(t, err)
		snap, err := sess.Snapshot(ctx)
		require.NoError(t, err)
		sameSnapshot(t, model[id].Snapshot(), snap, "after a restart, session "+id)
		evs, err := sess.Events(ctx, "")
		require.NoError(t, err)
		replayed, err := belief.Replay(evs)
		require.NoError(t, err)
		assert.Equal(t, snap, replayed.Snapshot())
		_, err = sess.Verify(ctx)
		require.NoError(t, err, "session %s verifies in full, checkpoints included", id)
	}
}

// pick returns a random subset of ids.
func pick(rng *rand.Rand, ids []string) []string {
	var out []string
	for _, id := range ids {
		if rng.IntN(len(ids)) < 2 {
			out = append(out, id)
		}
	}
	return out
}

// sameOutcome checks that the server failed exactly when the model did,
// with the same code, and reports whether both succeeded.
func sameOutcome(t *testing.T, model, got error, what string) bool {
	t.Helper()
	if model != nil || got != nil {
		require.Error(t, model, "%s: the server refused what the model accepts: %v", what, got)
		require.Error(t, got, "%s: the server accepted what the model refuses: %v", what, model)
		assert.Equal(t, belief.CodeOf(model), belief.CodeOf(got), "%s: %v", what, got)
		return false
	}
	return true
}

// sameSnapshot compares snapshots but for the audit head's event id,
// which the server and the model draw apart.
func sameSnapshot(t *testing.T, want, got belief.Snapshot, what string) {
	t.Helper()
	require.NotNil(t, got.AuditHeadEventID, what)
	want.AuditHeadEventID, got.AuditHeadEventID = nil, nil
	assert.Equal(t, want, got, what)
}

// testCheckpoints: a Server writing a checkpoint every second event puts
// one in the session's log after every second event; a Server started
// afterwards restores the session from the latest one and answers alike:
// snapshot, events (all, and since an event before and after a
// checkpoint), the idempotence table (a repeat of an observation recorded
// before the checkpoint, and a conflict) and the obligations; the log
// verifies in full and goes on taking checkpoints.
func testCheckpoints(t *testing.T, newStorage NewStorage, reopen Reopen) {
	ctx := context.Background()
	st := newStorage(t)
	srv, err := belief.NewServer(ctx, st, belief.WithCheckpointEvery(2))
	require.NoError(t, err)
	sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Ontology: onto, Hypotheses: []string{"a", "b", "c", "d", "e"}})
	require.NoError(t, err)
	elim := func(s *belief.Session, obs, h string) (belief.EliminateResult, error) {
		r, _, err := s.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: obs, Eliminated: []string{h}})
		return r, err
	}
	_, err = elim(sess, "o1", "a")
	require.NoError(t, err)
	_, _, err = sess.EnterObligation(ctx, belief.ObligationRequest{ObligationID: "ob", MinTotalEliminations: 1})
	require.NoError(t, err)
	_, err = elim(sess, "o2", "b")
	require.NoError(t, err)
	_, _, err = sess.RequestExit(ctx, belief.ExitRequest{ObligationID: "ob"})
	require.NoError(t, err)
	_, err = elim(sess, "o3", "c")
	require.NoError(t, err)
	want, err := sess.Snapshot(ctx)
	require.NoError(t, err)
	wantEvents, err := sess.Events(ctx, "")
	require.NoError(t, err)
	require.Len(t, wantEvents, 6)
	require.NoError(t, srv.Close())

	next := st
	if reopen != nil {
		if c, ok := st.(io.Closer); ok {
			require.NoError(t, c.Close(), "closing the stopped process's storage")
		}
		next = reopen(t, st)
	}
	store, err := next.Open(ctx, sess.ID())
	require.NoError(t, err)
	var kinds []string
	for e, err := range store.Entries(ctx, 0) {
		require.NoError(t, err)
		kinds = append(kinds, e.Kind)
	}
	require.NoError(t, store.Close())
	cp := belief.KindCheckpoint
	assert.Equal(t, []string{"belief.declare_session", "belief.eliminate", cp, "belief.enter_obligation", "belief.eliminate", cp,
		"belief.request_exit", "belief.eliminate", cp}, kinds, "a checkpoint after every second event")

	srv2 := server(t, next, belief.WithCheckpointEvery(2))
	s2, err := srv2.Session(ctx, sess.ID())
	require.NoError(t, err)
	got, err := s2.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	for _, since := range []int{-1, 0, 1, 3, 4, 5} {
		id := ""
		if since >= 0 {
			id = wantEvents[since].EventID
		}
		evs, err := s2.Events(ctx, id)
		require.NoError(t, err, "since event %d", since)
		assert.Equal(t, wantEvents[since+1:], evs, "since event %d", since)
	}
	_, err = s2.Events(ctx, "nope")
	assert.Equal(t, belief.CodeEventNotFound, belief.CodeOf(err), "%v", err)
	r, err := elim(s2, "o1", "a")
	require.NoError(t, err)
	assert.True(t, r.Repeated, "an observation recorded before the checkpoint is a repeat")
	assert.Equal(t, wantEvents[1].EventID, r.AuditEventID)
	_, err = elim(s2, "o1", "d")
	assert.Equal(t, belief.CodeConflict, belief.CodeOf(err), "same key, other body: %v", err)
	_, _, err = s2.EnterObligation(ctx, belief.ObligationRequest{ObligationID: "ob"})
	assert.Equal(t, belief.CodeConflict, belief.CodeOf(err), "an obligation id is used once: %v", err)
	_, _, err = s2.RequestExit(ctx, belief.ExitRequest{ObligationID: "ob"})
	assert.Equal(t, belief.CodeObligationNotFound, belief.CodeOf(err), "%v", err)
	_, err = elim(s2, "o4", "d")
	require.NoError(t, err)
	_, _, err = s2.DeclareConclusion(ctx, belief.ConclusionRequest{ConclusionID: "e"})
	require.NoError(t, err)
	h, err := s2.Verify(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(12), h.Size, "8 events and 4 checkpoints")
	evs, err := s2.Events(ctx, "")
	require.NoError(t, err)
	replayed, err := belief.Replay(evs)
	require.NoError(t, err)
	got, err = s2.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, got, replayed.Snapshot())
}
