package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

// writeKey writes a new checkpoint key pair's signer key file (mode perm)
// and returns its path and verifier.
func writeKey(t testing.TB, name string, perm os.FileMode) (string, *trace.CheckpointVerifier) {
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

// checkCheckpoint verifies the checkpoint beside logPath with v and that
// the log extends it; it returns the checkpoint.
func checkCheckpoint(t testing.TB, logPath string, v *trace.CheckpointVerifier) trace.Checkpoint {
	t.Helper()
	note, err := os.ReadFile(logPath + ".checkpoint")
	require.NoError(t, err)
	c, err := v.Verify(note, "")
	require.NoError(t, err)
	ro, err := trace.OpenFileReadOnly(logPath)
	require.NoError(t, err)
	defer ro.Close()
	_, err = trace.VerifyStoreAgainst(context.Background(), ro, c.Head())
	require.NoError(t, err, "the log extends its checkpoint")
	return c
}

// TestSignedCheckpoints: with -sign-key the proxy keeps LOG.checkpoint,
// signed by the key, rewritten every -checkpoint-every entries while it
// runs and at the final head on exit; the log extends each one.
func TestSignedCheckpoints(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "notes.txt", "buy milk")
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	key, v := writeKey(t, "example.com/proxy", 0o600)
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-sign-key", key, "-checkpoint-every", "4", "--"}, up.argv()...), nil)

	var sizes []uint64
	for range 5 {
		res := p.call(t, "read_file", map[string]any{"path": "notes.txt"})
		require.False(t, res.IsError, text(res))
		if _, err := os.Stat(logPath + ".checkpoint"); err == nil {
			c := checkCheckpoint(t, logPath, v)
			assert.Zero(t, c.Size%4, "a checkpoint while running is at a multiple of 4 entries, got %d", c.Size)
			sizes = append(sizes, c.Size)
		}
	}
	require.NotEmpty(t, sizes, "checkpoints were written while the proxy ran")
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	c := checkCheckpoint(t, logPath, v)
	ro, err := trace.OpenFileReadOnly(logPath)
	require.NoError(t, err)
	h, err := ro.Head(context.Background())
	require.NoError(t, err)
	require.NoError(t, ro.Close())
	assert.Equal(t, h, c.Head(), "on exit the checkpoint is the final head")
	assert.Equal(t, "example.com/proxy", c.Origin)
	assert.Contains(t, p.stderr.String(), `msg=checkpoint path=`+logPath+".checkpoint")
}

func TestSignKeyUsage(t *testing.T) {
	pol := writePolicy(t, "10", "")
	open, _ := writeKey(t, "example.com/proxy", 0o644)
	garbage := filepath.Join(t.TempDir(), "garbage.key")
	require.NoError(t, os.WriteFile(garbage, []byte("PRIVATE+KEY+x+00000000+AAAA\n"), 0o600))
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"every without key": {[]string{"-checkpoint-every", "3"}, "-checkpoint-every needs -sign-key"},
		"missing key":       {[]string{"-sign-key", filepath.Join(t.TempDir(), "none.key")}, "no such file"},
		"malformed key":     {[]string{"-sign-key", garbage}, "malformed key"},
		"open key":          {[]string{"-sign-key", open}, "chmod 600"},
		"bad every":         {[]string{"-sign-key", garbage, "-checkpoint-every", "-1"}, "invalid value"},
	} {
		t.Run(name, func(t *testing.T) {
			args := append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "l")}, tc.args...)
			var stderr bytes.Buffer
			code := run(context.Background(), append(args, "--", "true"), strings.NewReader(""), io.Discard, &stderr)
			assert.Equal(t, 2, code, stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}
