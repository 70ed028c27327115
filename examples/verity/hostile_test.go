//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecialFilesAreRefused: every command that reads a log refuses a
// FIFO (with no writer), /dev/zero and a directory at once, with exit 7
// and a message saying what the path is — never blocking, never "ok, 0
// entries". repair refuses them too.
func TestSpecialFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	kinds := map[string]string{fifo: "a named pipe (FIFO)", "/dev/zero": "a character device", dir: "a directory"}
	for path, kind := range kinds {
		for _, args := range [][]string{
			{"verify", path}, {"head", path}, {"inspect", path}, {"replay", path},
			{"export", path}, {"repair", path}, {"view", path},
		} {
			done := make(chan result, 1)
			go func() { done <- verityEnv(t, &env{serve: func(string) error { return nil }}, args...) }()
			select {
			case r := <-done:
				assert.Equal(t, exitNotLog, r.code, "%q: %s%s", args, r.stdout, r.stderr)
				assert.Contains(t, r.stdout+r.stderr, path+" is "+kind+", not a regular file", "%q", args)
				assert.NotContains(t, r.stdout, "result   ok", "%q", args)
			case <-time.After(20 * time.Second):
				t.Fatalf("%q blocks", args)
			}
		}
	}
}

// TestSpecialInputFilesRefused: the other files a command reads whole — a
// tools list, a cases file, a checkpoint, a key — are refused the same way
// when they are not regular files: a usage error, without waiting on them.
func TestSpecialInputFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	logPath, _ := fileLog(t, 3)
	policy := filepath.Join("testdata", "policy", "filesystem.json")
	require.Equal(t, 0, verity(t, "keygen", "-name", "example.com/test", "-out", filepath.Join(dir, "k")).code)
	for _, special := range []string{fifo, "/dev/zero", dir} {
		for _, args := range [][]string{
			{"policy", "check", "-tools", special, policy},
			{"policy", "test", policy, special},
			{"verify", logPath, "-checkpoint", special, "-pubkey", filepath.Join(dir, "k.pub")},
			{"verify", logPath, "-checkpoint", filepath.Join(dir, "x"), "-pubkey", special},
			{"checkpoint", "sign", logPath, "-key", special},
		} {
			done := make(chan result, 1)
			go func() { done <- verity(t, args...) }()
			select {
			case r := <-done:
				assert.Equal(t, exitUsage, r.code, "%q: %s%s", args, r.stdout, r.stderr)
				assert.Contains(t, r.stderr, "not a regular file", "%q", args)
			case <-time.After(20 * time.Second):
				t.Fatalf("%q blocks", args)
			}
		}
	}
}
