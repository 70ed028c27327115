package main

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

// TestBeliefCheckpoints: a belief session's own log with checkpoints (as
// belief's FileStorage writes it) replays, each checkpoint compared with
// the events before it, and inspect names the checkpoints instead of
// reading them as audit events.
func TestBeliefCheckpoints(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := belief.NewFileStorage(dir, trace.FileOptions{Sync: trace.SyncManual})
	require.NoError(t, err)
	srv, err := belief.NewServer(ctx, st, belief.WithCheckpointEvery(3), belief.WithIDs(idSource("s")))
	require.NoError(t, err)
	sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b", "c", "d", "e", "f", "g", "h"}})
	require.NoError(t, err)
	for i, h := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		_, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "obs", ObservationID: fmt.Sprint(i), Eliminated: []string{h}})
		require.NoError(t, err)
	}
	require.NoError(t, srv.Close())
	require.NoError(t, st.Close())
	paths, err := filepath.Glob(filepath.Join(dir, "*.trace"))
	require.NoError(t, err)
	require.Len(t, paths, 1)

	r := verity(t, "replay", paths[0])
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "belief checkpoints: 2, each agrees with the events before it")
	assert.Contains(t, r.stdout, "8 events, 1 survivors [h]")

	r = verity(t, "inspect", paths[0], "--kind", belief.KindCheckpoint)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "checkpoint: the session's state after the events before it")
	assert.NotContains(t, r.stdout, "unreadable")
}
