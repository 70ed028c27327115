// Package osfile is the operating system's side of the files that hold
// logs and policies: OpenRegular opens only regular files, without
// blocking on anything else, ReadFile reads one whole up to a bound, and
// Lock holds the advisory lock that keeps one writer per log file
// (trace.File) and per data directory (belief's FileStorage).
//
// # Only regular files
//
// A named pipe, a device, a directory or a socket is never a log or a
// policy. Reading one can block forever (a FIFO with no writer) or never
// end (/dev/zero), so OpenRegular opens with O_NONBLOCK where the system
// has it (which changes nothing for a regular file) and checks the type
// of the file it opened (fstat), never of the path before opening, so a
// path swapped in between cannot slip through.
//
// Every file a command reads whole (a key, a certificate, a token file,
// a JWKS, a tools list) is read by ReadFile, with a bound of its own: a
// larger file is a *TooLargeError, found after reading at most one byte
// more than the bound, so that a huge file is refused at once rather
// than read into memory.
//
// # One writer
//
// On Linux the lock is an open file description ("OFD") lock, fcntl
// F_OFD_SETLK: it belongs to the open file, not to the process, so a
// second open of the same file is refused even within one process, closing
// some other descriptor of the file never drops it (as it would drop a
// classic POSIX fcntl lock), it is not inherited across exec, and the
// kernel releases it when the file is closed or its process dies, however
// it dies — a lock is never left stale. A reader can ask whether a writer
// holds it (F_OFD_GETLK) without taking anything, so readers never block
// a writer and are never blocked by one. The writer also locks one byte
// far beyond any content, at an offset that encodes its process id, so a
// refused writer can name the holder (as the holder's own pid namespace
// numbers it).
//
// On the BSDs and macOS the lock is flock(2) LOCK_EX|LOCK_NB, which has
// the same ownership rules; the holder cannot be named and Held always
// reports that it does not know. On other systems (Windows, Plan 9, WASI)
// no lock is taken: Lock succeeds and Held does not know.
//
// These are advisory locks: they exclude writers that take them (every
// writer in this module does), not a program that writes the file
// directly. On network file systems they are not to be relied upon: NFS
// maps them onto its own lock protocol, whose locks can be lost when a
// client or server restarts or a lease expires, and other network file
// systems may lock only on the local machine. Keep a log that two
// machines can reach on a database (trace/sqlstore) instead.
package osfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrHeld is returned (wrapped in a *HeldError) when another writer holds
// the lock.
var ErrHeld = errors.New("osfile: held by another writer")

// HeldError reports a lock held by another open file: PID is the holder's
// process id where the system can say, 0 otherwise.
type HeldError struct{ PID int }

func (e *HeldError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("osfile: held by process %d", e.PID)
	}
	return ErrHeld.Error()
}

func (e *HeldError) Unwrap() error { return ErrHeld }

// ErrNotRegular is returned (wrapped in a *NotRegularError) for a path
// that is not a regular file.
var ErrNotRegular = errors.New("osfile: not a regular file")

// NotRegularError reports a path that is not a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the file's type bits
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is %s, not a regular file", e.Path, TypeName(e.Mode))
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// TypeName names a file's type in a few words ("a named pipe (FIFO)").
func TypeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a regular file"
	}
	return "an irregular file"
}

// OpenRegular opens name with flag (os.O_RDONLY, or a writer's flags with
// perm for a new file) and returns it only if it is a regular file;
// anything else is a *NotRegularError. It never waits on a FIFO or a
// device.
func OpenRegular(name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := os.OpenFile(name, flag|NonBlock, perm)
	if err != nil {
		// Some special files refuse the open itself (a directory opened
		// for writing, a socket): name them as what they are.
		if st, serr := os.Stat(name); serr == nil && !st.Mode().IsRegular() {
			return nil, &NotRegularError{Path: name, Mode: st.Mode().Type()}
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: name, Mode: st.Mode().Type()}
	}
	return f, nil
}

// ErrTooLarge is returned (wrapped in a *TooLargeError) by ReadFile for
// a file larger than its bound.
var ErrTooLarge = errors.New("osfile: file too large")

// TooLargeError reports a file larger than Max bytes.
type TooLargeError struct {
	Path string
	Max  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than %d bytes", e.Path, e.Max)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// ReadFile reads the whole regular file name, of at most max bytes (max
// must not be negative). Anything but a regular file is a
// *NotRegularError, found without waiting on it (OpenRegular); a larger
// file is a *TooLargeError, found having read at most max+1 bytes.
func ReadFile(name string, max int64) ([]byte, error) {
	if max < 0 {
		return nil, fmt.Errorf("osfile: negative bound %d for %s", max, name)
	}
	f, err := OpenRegular(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, &TooLargeError{Path: name, Max: max}
	}
	return data, nil
}
