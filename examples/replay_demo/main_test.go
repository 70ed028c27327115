package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

func TestReplayDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, ""))
	s := out.String()
	assert.Contains(t, s, "1. declared session with 5 hypotheses")
	assert.Contains(t, s, "applied [disk-full], ignored [], 4 survivors left")
	assert.Contains(t, s, "applied [network-partition wal-corruption], ignored [disk-full], 2 survivors left")
	assert.Contains(t, s, "5. audit log: 3 events")
	assert.Contains(t, s, "6. replayed survivors [config-drift replica-lag] match the server's snapshot exactly")
	assert.Contains(t, s, "replay stops at event 1: seq 2, expected 1")
}

// TestReplayDemoKeepsTheLog: with -log the session's log is kept in the
// file, verifies, and holds the three events the script printed.
func TestReplayDemoKeepsTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "belief.trace")
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, path))
	assert.Contains(t, out.String(), "the session's log is kept in "+path)
	f, err := trace.OpenFileReadOnly(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for e, err := range f.Entries(context.Background(), 0) {
		require.NoError(t, err)
		if e.Kind != belief.KindCheckpoint {
			n++
		}
	}
	assert.Equal(t, 3, n, "declare and two eliminations")
	assert.ErrorContains(t, run(context.Background(), &bytes.Buffer{}, path), "new log")
}
