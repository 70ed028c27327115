//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package toolgate_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/verity-go/verity/kernel/toolgate"
)

// TestLoadPolicyRefusesSpecialFiles: a FIFO with no writer, /dev/zero and
// a directory are not policy files: LoadPolicy refuses them at once,
// saying what they are, instead of blocking or reading forever.
func TestLoadPolicyRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "policy.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{fifo: "a named pipe (FIFO)", "/dev/zero": "a character device", dir: "a directory"} {
		done := make(chan error, 1)
		go func() {
			_, err := toolgate.LoadPolicy(path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path+" is "+kind+", not a regular file") {
				t.Errorf("LoadPolicy(%s): %v", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("LoadPolicy(%s) blocks", path)
		}
	}
}
