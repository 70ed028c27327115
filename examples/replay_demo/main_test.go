package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplayDemo(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out))
	s := out.String()
	assert.Contains(t, s, "1. declared session with 5 hypotheses")
	assert.Contains(t, s, "applied [disk-full], ignored [], 4 survivors left")
	assert.Contains(t, s, "applied [network-partition wal-corruption], ignored [disk-full], 2 survivors left")
	assert.Contains(t, s, "5. audit log: 3 events")
	assert.Contains(t, s, "6. replayed survivors [config-drift replica-lag] match the server's snapshot exactly")
	assert.Contains(t, s, "replay stops at event 1: seq 2, expected 1")
}
