package belief

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

// TestOwnerSurvivesReopen: the owner a DECLARE_SESSION records comes back
// when the session is read again from its log, whether the state is
// rebuilt by replaying the events or restored from a checkpoint, and a
// replay of the audit log reproduces it.
func TestOwnerSurvivesReopen(t *testing.T) {
	for _, every := range []int{0, 1} {
		ctx := context.Background()
		dir := t.TempDir()
		fs, err := NewFileStorage(dir, trace.FileOptions{})
		require.NoError(t, err)
		srv, err := NewServer(ctx, fs, WithCheckpointEvery(every))
		require.NoError(t, err)
		s, st, err := srv.Declare(ctx, DeclareRequest{Hypotheses: []string{"a", "b"}, Owner: "alice"})
		require.NoError(t, err)
		require.Equal(t, "alice", st.Owner())
		_, _, err = s.Eliminate(ctx, EliminateRequest{SourceID: "s", ObservationID: "o", Eliminated: []string{"a"}})
		require.NoError(t, err)
		id := s.ID()
		require.NoError(t, srv.Close())
		require.NoError(t, fs.Close())

		fs, err = NewFileStorage(dir, trace.FileOptions{})
		require.NoError(t, err)
		srv, err = NewServer(ctx, fs, WithCheckpointEvery(every))
		require.NoError(t, err)
		s, err = srv.Session(ctx, id)
		require.NoError(t, err)
		st, err = s.State(ctx)
		require.NoError(t, err)
		require.Equal(t, "alice", st.Owner(), "checkpoint every %d", every)
		evs, err := s.Events(ctx, "")
		require.NoError(t, err)
		replayed, err := Replay(evs)
		require.NoError(t, err)
		require.Equal(t, "alice", replayed.Owner())
		require.NoError(t, srv.Close())
		require.NoError(t, fs.Close())
	}
}

// TestOwnerIsRecordedOnlyWhenSet: a session declared without an owner
// writes the same DECLARE_SESSION payload as before owners existed.
func TestOwnerIsRecordedOnlyWhenSet(t *testing.T) {
	_, ev, err := Declare("s1", DeclareRequest{Hypotheses: []string{"a"}}, Stamp{EventID: "e1", Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	require.NotContains(t, string(ev.Payload), "owner")
	_, ev, err = Declare("s1", DeclareRequest{Hypotheses: []string{"a"}, Owner: "bob"}, Stamp{EventID: "e1", Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	require.NoError(t, err)
	require.Contains(t, string(ev.Payload), `"owner":"bob"`)
}
