//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package trace

import (
	"errors"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesAreNotLogs: OpenFile, OpenFileReadOnly and RepairFile
// refuse a FIFO (with no writer), /dev/zero, a directory and a socket at
// once, as a *NotRegularError that matches ErrNotRegular and ErrNotLog —
// never blocking, never reading "0 entries" from a device.
func TestSpecialFilesAreNotLogs(t *testing.T) {
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
	defer ln.Close()
	opens := map[string]func(string) error{
		"OpenFile": func(p string) error {
			f, err := OpenFile(p, FileOptions{})
			if err == nil {
				f.Close()
			}
			return err
		},
		"OpenFileReadOnly": func(p string) error {
			f, err := OpenFileReadOnly(p)
			if err == nil {
				f.Close()
			}
			return err
		},
		"RepairFile": func(p string) error { _, err := RepairFile(p); return err },
	}
	for _, path := range []string{fifo, "/dev/zero", dir, sock} {
		for name, open := range opens {
			done := make(chan error, 1)
			go func() { done <- open(path) }()
			select {
			case err := <-done:
				var nr *NotRegularError
				if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) || !errors.Is(err, ErrNotLog) {
					t.Errorf("%s(%s): %v, want a *NotRegularError", name, path, err)
				} else if nr.Path != path {
					t.Errorf("%s(%s): the error names %s", name, path, nr.Path)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s(%s) blocks", name, path)
			}
		}
	}
}
