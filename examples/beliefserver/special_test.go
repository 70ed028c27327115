//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecialFilesRefused: the command given a FIFO with no writer, or
// /dev/zero, or a file over its bound as -token-file, -tls-cert, -tls-key
// or -sign-key exits 2 at once with a message saying what the path is. A
// FIFO used to block the start for ever, deaf to SIGTERM, and
// -tls-cert /dev/zero read gigabytes.
func TestSpecialFilesRefused(t *testing.T) {
	certFile, keyFile, _ := writeCert(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	huge := filepath.Join(dir, "huge.pem")
	require.NoError(t, os.WriteFile(huge, bytes.Repeat([]byte("A"), maxPEMBytes+1), 0o600))
	const isFIFO = "is a named pipe (FIFO), not a regular file"
	const isDevice = "/dev/zero is a character device, not a regular file"
	for _, tc := range []struct {
		name string
		args []string
		says string
	}{
		{"token-file FIFO", []string{"-token-file", fifo}, isFIFO},
		{"token-file /dev/zero", []string{"-token-file", "/dev/zero"}, isDevice},
		{"tls-cert FIFO", []string{"-tls-cert", fifo, "-tls-key", keyFile}, isFIFO},
		{"tls-key FIFO", []string{"-tls-cert", certFile, "-tls-key", fifo}, isFIFO},
		{"tls-cert /dev/zero", []string{"-tls-cert", "/dev/zero", "-tls-key", keyFile}, isDevice},
		{"tls-cert too large", []string{"-tls-cert", huge, "-tls-key", keyFile}, "larger than 1048576 bytes"},
		{"sign-key FIFO", []string{"-data", t.TempDir(), "-sign-key", fifo}, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			cmd := command(append([]string{"-addr", "127.0.0.1:0"}, tc.args...)...)
			cmd.Stderr = &out
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				require.True(t, errors.As(err, &ee), "%v: %s", err, out.String())
				assert.Equal(t, 2, ee.ExitCode(), out.String())
				assert.Contains(t, out.String(), tc.says)
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("blocks: %s", out.String())
			}
		})
	}
}
