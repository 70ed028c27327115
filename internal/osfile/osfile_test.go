//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package osfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// specialFiles makes one path of each kind that is not a regular file.
func specialFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return map[string]string{"fifo": fifo, "device": "/dev/zero", "directory": dir, "socket": sock}
}

// TestOpenRegularRefusesSpecialFiles: a FIFO with no writer, /dev/zero, a
// directory and a socket are refused at once (never blocking), for
// reading and for writing, as a *NotRegularError; a regular file opens.
func TestOpenRegularRefusesSpecialFiles(t *testing.T) {
	for name, path := range specialFiles(t) {
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE | os.O_APPEND} {
			done := make(chan error, 1)
			go func() {
				f, err := OpenRegular(path, flag, 0o600)
				if err == nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				var nr *NotRegularError
				if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s (flag %#x): %v, want a *NotRegularError", name, flag, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s (flag %#x): the open blocks", name, flag)
			}
		}
	}
	reg := filepath.Join(t.TempDir(), "file")
	f, err := OpenRegular(reg, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}
