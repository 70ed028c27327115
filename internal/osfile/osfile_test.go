//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package osfile

import (
	"bytes"
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

// TestReadFileIsRegularAndBounded: ReadFile refuses every special file at
// once (a FIFO with no writer, /dev/zero — which never ends — a directory,
// a socket), reads a file of exactly its bound, and refuses one byte more
// as a *TooLargeError.
func TestReadFileIsRegularAndBounded(t *testing.T) {
	for name, path := range specialFiles(t) {
		done := make(chan error, 1)
		go func() {
			_, err := ReadFile(path, 1<<20)
			done <- err
		}()
		select {
		case err := <-done:
			var nr *NotRegularError
			if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want a *NotRegularError", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadFile blocks", name)
		}
	}
	reg := filepath.Join(t.TempDir(), "file")
	want := bytes.Repeat([]byte("x"), 100)
	if err := os.WriteFile(reg, want, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(reg, 100)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("a file of exactly its bound: %q, %v", got, err)
	}
	_, err = ReadFile(reg, 99)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Max != 99 || tl.Path != reg {
		t.Errorf("a file one byte over its bound: %v, want a *TooLargeError", err)
	}
	if _, err := ReadFile(reg, -1); err == nil {
		t.Error("a negative bound is accepted")
	}
}
