//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package bearer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/osfile"
)

// TestLoadFileOnlyARegularFileWithinItsBound: a FIFO with no writer and
// /dev/zero are refused at once, as not regular files (the FIFO used to
// block for ever); a file over MaxJWKSBytes is refused as too large.
func TestLoadFileOnlyARegularFileWithinItsBound(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "jwks")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	huge := filepath.Join(dir, "huge.json")
	require.NoError(t, os.WriteFile(huge, bytes.Repeat([]byte(" "), MaxJWKSBytes+1), 0o600))
	for path, want := range map[string]error{fifo: osfile.ErrNotRegular, "/dev/zero": osfile.ErrNotRegular, huge: osfile.ErrTooLarge} {
		done := make(chan error, 1)
		go func() {
			_, err := LoadFile(path)
			done <- err
		}()
		select {
		case err := <-done:
			assert.True(t, errors.Is(err, want), "%s: %v, want %v", path, err, want)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: LoadFile blocks", path)
		}
	}
}
