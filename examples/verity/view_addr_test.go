//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestViewRefusesAPublicAddressUnlessTold: the built command, asked to
// serve the page on every interface or on a non-loopback address, exits
// 2 at once saying why and how to do it anyway; with --public it serves
// and says on stderr to whom. A loopback address serves as before. It
// used to serve 0.0.0.0 without a word.
func TestViewRefusesAPublicAddressUnlessTold(t *testing.T) {
	bin := verityBinary(t)
	logPath, _ := fileLog(t, 3)
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:0", "example.com:0"} {
		r := verityProcess(t, bin, 30*time.Second, "view", logPath, "--addr", addr)
		assert.Equal(t, exitUsage, r.code, "%s: %s", addr, r.stderr)
		assert.Contains(t, r.stderr, "is not a loopback address", addr)
		assert.Contains(t, r.stderr, "--public", addr)
		assert.NotContains(t, r.stderr, "serving http", addr)
	}

	serve := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"view", logPath}, args...)...)
		cmd.WaitDelay = time.Second
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		var said strings.Builder
		lines := bufio.NewScanner(stderr)
		for lines.Scan() {
			said.WriteString(lines.Text() + "\n")
			if strings.Contains(lines.Text(), "serving http://") {
				break
			}
		}
		require.Contains(t, said.String(), "serving http://", "%q", args)
		require.NoError(t, cmd.Process.Signal(os.Interrupt))
		for lines.Scan() {
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Errorf("%q: exit %d after an interrupt: %s", args, ee.ExitCode(), said.String())
		}
		return said.String()
	}
	said := serve("--addr", "127.0.0.1:0")
	assert.NotContains(t, said, "--public")
	said = serve("--addr", "0.0.0.0:0", "--public")
	assert.Contains(t, said, "--public: serving the whole log, without authentication, to anyone who reaches every interface")
}
