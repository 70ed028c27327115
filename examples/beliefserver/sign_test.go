package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

func writeSignerKey(t *testing.T, name string, perm os.FileMode) (string, *trace.CheckpointVerifier) {
	t.Helper()
	skey, vkey, err := trace.GenerateCheckpointKey(nil, name)
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "signer.key")
	require.NoError(t, os.WriteFile(p, []byte(skey+"\n"), perm))
	require.NoError(t, os.Chmod(p, perm))
	v, err := trace.ParseVerifierKey(vkey)
	require.NoError(t, err)
	return p, v
}

// sessionCheckpoint verifies DIR/ID.trace.checkpoint (origin KEYNAME/ID)
// and that DIR/ID.trace extends it; it returns the checkpoint and the
// log's head.
func sessionCheckpoint(t *testing.T, dir, id string, v *trace.CheckpointVerifier) (trace.Checkpoint, trace.Head) {
	t.Helper()
	note, err := os.ReadFile(filepath.Join(dir, id+".trace.checkpoint"))
	require.NoError(t, err)
	c, err := v.Verify(note, v.Name()+"/"+id)
	require.NoError(t, err)
	ro, err := trace.OpenFileReadOnly(filepath.Join(dir, id+".trace"))
	require.NoError(t, err)
	defer ro.Close()
	h, err := trace.VerifyStoreAgainst(context.Background(), ro, c.Head())
	require.NoError(t, err, "the session's log extends its checkpoint")
	return c, h
}

// TestSignedSessionCheckpoints: with -data and -sign-key, each session's
// log keeps its own signed checkpoint beside it, every -sign-every
// entries and at its final head when the server stops; a checkpoint of
// one session does not pass for another's (its origin names the session).
func TestSignedSessionCheckpoints(t *testing.T) {
	dir := t.TempDir()
	key, v := writeSignerKey(t, "beliefs.example", 0o600)
	base, stop, _ := start(t, "-data", dir, "-sign-key", key, "-sign-every", "2")
	var ids []string
	for range 2 {
		code, created := call(t, "POST", base+"/v1/sessions", declare)
		require.Equal(t, 201, code)
		ids = append(ids, created["session_id"].(string))
	}
	for i, h := range []string{"a", "b"} {
		code, _ := call(t, "POST", base+"/v1/sessions/"+ids[0]+"/eliminate",
			`{"source_id":"s","observation_id":"o`+h+`","eliminated":["`+h+`"]}`)
		require.Equal(t, 200, code, "elimination %d", i)
	}
	c, _ := sessionCheckpoint(t, dir, ids[0], v)
	assert.Zero(t, c.Size%2, "while running, a checkpoint at a multiple of -sign-every")
	assert.Positive(t, c.Size)
	require.NoError(t, stop())

	for _, id := range ids {
		c, h := sessionCheckpoint(t, dir, id, v)
		assert.Equal(t, h, c.Head(), "on stop, the checkpoint is the log's final head")
		assert.Equal(t, v.Name()+"/"+id, c.Origin)
	}
	other, err := os.ReadFile(filepath.Join(dir, ids[1]+".trace.checkpoint"))
	require.NoError(t, err)
	_, err = v.Verify(other, v.Name()+"/"+ids[0])
	assert.ErrorIs(t, err, trace.ErrCheckpointOrigin)

	// The checkpoint files are not sessions.
	base, stop, logs := start(t, "-data", dir, "-sign-key", key)
	assert.Contains(t, logs.String(), `"sessions_recovered":2`)
	code, _ := call(t, "GET", base+"/v1/sessions/"+ids[1], "")
	assert.Equal(t, 200, code)
	require.NoError(t, stop())
}

func TestSignKeyUsageExit2(t *testing.T) {
	key, _ := writeSignerKey(t, "beliefs.example", 0o600)
	open, _ := writeSignerKey(t, "beliefs.example", 0o644)
	garbage := filepath.Join(t.TempDir(), "garbage.key")
	require.NoError(t, os.WriteFile(garbage, []byte("hello\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-sign-key", key}, "-sign-key needs -data DIR"},
		{[]string{"-sign-key", key, "-db", "sqlite:" + filepath.Join(t.TempDir(), "x.db")}, "-sign-key needs -data DIR"},
		{[]string{"-sign-key", open, "-data", t.TempDir()}, "chmod 600"},
		{[]string{"-sign-key", garbage, "-data", t.TempDir()}, "malformed key"},
		{[]string{"-sign-key", filepath.Join(t.TempDir(), "none"), "-data", t.TempDir()}, "no such file"},
		{[]string{"-sign-every", "x"}, "invalid value"},
	} {
		var out bytes.Buffer
		cmd := command(append([]string{"-addr", "127.0.0.1:0"}, tc.args...)...)
		cmd.Stderr = &out
		err := cmd.Run()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%q", tc.args)
		assert.Equal(t, 2, ee.ExitCode(), "%q: %s", tc.args, out.String())
		assert.Contains(t, out.String(), tc.want)
	}
}
