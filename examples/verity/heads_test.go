package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

// headAt returns the head of the first n entries of the log file at path.
func headAt(t *testing.T, path string, n uint64) trace.Head {
	t.Helper()
	o, err := open(context.Background(), Source{Path: path})
	require.NoError(t, err)
	defer o.close()
	var h trace.Head
	for e, err := range o.store.Entries(context.Background(), 0) {
		require.NoError(t, err)
		if e.Seq == n {
			break
		}
		h = trace.Head{Size: e.Seq + 1, Hash: e.Hash}
	}
	return h
}

// TestVerifyPrintsTheHeadThatVerified: on a torn, corrupt or broken log,
// verify prints the head of the last entry that verified (for a torn tail,
// the one `verity repair` keeps), never a zero hash; kept, it is extended
// by the repaired log.
func TestVerifyPrintsTheHeadThatVerified(t *testing.T) {
	path, _ := fileLog(t, 40)
	rec5, err := recordOffset(path, 5)
	require.NoError(t, err)
	rec6, err := recordOffset(path, 6)
	require.NoError(t, err)
	full := headAt(t, path, ^uint64(0))
	cases := []struct {
		name   string
		change func([]byte) []byte
		want   trace.Head
	}{
		{"torn_tail", func(b []byte) []byte { return b[:len(b)-7] }, headAt(t, path, full.Size-1)},
		{"corrupt", func(b []byte) []byte { b[rec5+60] ^= 1; return b }, headAt(t, path, 5)},
		{"chain_break", func(b []byte) []byte { return append(b[:rec5:rec5], b[rec6:]...) }, headAt(t, path, 5)},
	}
	zero := strings.Repeat("0", 64)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := tampered(t, path, c.change)
			r := verity(t, "verify", bad)
			require.NotEqual(t, exitOK, r.code)
			assert.Contains(t, r.stdout, fmt.Sprintf("entries  %d verified\n", c.want.Size))
			assert.Contains(t, r.stdout, "head     "+c.want.String()+"  (the last entry that verified)\n")
			assert.NotContains(t, r.stdout, zero, "never a zero hash")
		})
	}

	// The head printed for a torn log is the one the repaired log has.
	bad := tampered(t, path, cases[0].change)
	r := verity(t, "verify", bad)
	printed := strings.TrimSuffix(strings.Fields(r.stdout[strings.Index(r.stdout, "head     "):])[1], "")
	require.Equal(t, exitOK, verity(t, "repair", bad).code)
	h := verity(t, "head", bad)
	assert.Equal(t, printed, strings.TrimSpace(h.stdout))
	assert.Equal(t, exitOK, verity(t, "verify", bad, "--head", printed).code, "a printed head can be kept")
}

// TestHeadWrittenAsASizeIsAUsageError: a head whose number is the log's
// size (trace.Head's Size) rather than its last sequence number, with the
// hash of the entry before, is a usage error that says so — not a false
// alarm that the log was cut or changed. A head with a hash the log does
// not have there is still exit 6.
func TestHeadWrittenAsASizeIsAUsageError(t *testing.T) {
	path, _ := fileLog(t, 20)
	h := headAt(t, path, ^uint64(0))
	asSize := fmt.Sprintf("%d:%s", h.Size, h.Hash)
	r := verity(t, "verify", path, "--head", asSize)
	assert.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, fmt.Sprintf("is the hash of entry %d, not of entry %d", h.Size-1, h.Size))
	assert.Contains(t, r.stderr, "(here "+h.String()+")")

	// Also for an earlier head.
	early := headAt(t, path, 5)
	r = verity(t, "verify", path, "--head", fmt.Sprintf("%d:%s", early.Size, early.Hash))
	assert.Equal(t, exitUsage, r.code, r.stdout+r.stderr)

	assert.Equal(t, exitOK, verity(t, "verify", path, "--head", h.String()).code)
	other := fmt.Sprintf("%d:%064x", h.Size-1, 1)
	assert.Equal(t, exitNotExtends, verity(t, "verify", path, "--head", other).code)
}

// TestEveryCommandExitCodes: for every command, -h prints the usage with
// the exit codes and exits 0; an unknown flag, a missing or extra
// argument exits 2 with the usage; a missing file exits 1.
func TestEveryCommandExitCodes(t *testing.T) {
	path, _ := fileLog(t, 3)
	missing := filepath.Join(t.TempDir(), "missing.trace")
	for _, cmd := range []string{"verify", "head", "inspect", "replay", "export", "repair", "view"} {
		r := verity(t, cmd, "-h")
		assert.Equal(t, exitOK, r.code, "%s -h: %s", cmd, r.stderr)
		assert.Contains(t, r.stderr, "usage: verity", cmd)
		assert.Contains(t, r.stderr, "exit: 0 ok, 1 error, 2 usage", cmd)
		for _, args := range [][]string{{cmd, path, "--no-such-flag"}, {cmd}, {cmd, path, path}} {
			r := verity(t, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %s", args, r.stderr)
			assert.Contains(t, r.stderr, "usage: verity", "%q", args)
		}
		r = verityEnv(t, &env{serve: func(string) error { return nil }}, cmd, missing)
		assert.Equal(t, exitError, r.code, "%s of a missing file: %s", cmd, r.stderr)
		_, err := os.Stat(missing)
		assert.True(t, os.IsNotExist(err), "%s never creates a log", cmd)
	}
}
