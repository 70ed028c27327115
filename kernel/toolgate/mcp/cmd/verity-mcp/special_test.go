//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecialFilesRefused: the built command given a FIFO (with no
// writer) or /dev/zero as -policy or -jwks exits 2 at once, a
// configuration error saying what the path is; as -log, it exits 1. It
// never blocks (a FIFO policy or JWKS used to hang the command, deaf even
// to SIGTERM).
func TestSpecialFilesRefused(t *testing.T) {
	bin := proxyBinary(t)
	up := newUpstream(t)
	pol := writePolicy(t, "10", "")
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	logPath := filepath.Join(t.TempDir(), "trace.log")
	jwksFlags := []string{"-http", "127.0.0.1:0", "-issuer", "https://issuer.example", "-resource", testResource}
	cases := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"policy FIFO", []string{"-policy", fifo, "-log", logPath}, 2, fifo + " is a named pipe (FIFO), not a regular file"},
		{"policy /dev/zero", []string{"-policy", "/dev/zero", "-log", logPath}, 2, "/dev/zero is a character device, not a regular file"},
		{"log FIFO", []string{"-policy", pol, "-log", fifo}, 1, fifo + " is a named pipe (FIFO), not a regular file"},
		{"log /dev/zero", []string{"-policy", pol, "-log", "/dev/zero"}, 1, "/dev/zero is a character device, not a regular file"},
		{"jwks FIFO", append([]string{"-policy", pol, "-log", logPath, "-jwks", fifo}, jwksFlags...), 2, fifo + " is a named pipe (FIFO), not a regular file"},
		{"jwks /dev/zero", append([]string{"-policy", pol, "-log", logPath, "-jwks", "/dev/zero"}, jwksFlags...), 2, "/dev/zero is a character device, not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, append(append(c.args, "--"), up.argv()...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			cmd.Stdin = strings.NewReader("")
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				require.True(t, errors.As(err, &ee), "%v: %s", err, stderr.String())
				assert.Equal(t, c.code, ee.ExitCode(), stderr.String())
				assert.Contains(t, stderr.String(), c.says)
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("blocks: %s", stderr.String())
			}
		})
	}
}
