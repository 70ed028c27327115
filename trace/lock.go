package trace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/verity-go/verity/internal/osfile"
)

// LockedError reports a log file (or a directory of logs) that another
// writer holds open: a second writer is refused at once rather than
// forking the chain. PID is the holder's process id where the operating
// system can say (Linux), 0 otherwise. It matches ErrLocked.
type LockedError struct {
	Path string
	PID  int
}

func (e *LockedError) Error() string {
	switch {
	case e.PID == os.Getpid():
		return fmt.Sprintf("trace: %s is already open for writing in this process (pid %d): one writer at a time", e.Path, e.PID)
	case e.PID > 0:
		return fmt.Sprintf("trace: %s is open for writing by process %d: one writer at a time", e.Path, e.PID)
	}
	return fmt.Sprintf("trace: %s is open for writing by another process: one writer at a time", e.Path)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// NotRegularError reports a path that is not a regular file: a named
// pipe, a device, a directory or a socket is never a log, and opening one
// is refused without reading it (which could block forever or never
// end). It matches ErrNotRegular and ErrNotLog.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the file's type bits
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("trace: %s is %s, not a regular file: it cannot be a log", e.Path, osfile.TypeName(e.Mode))
}

func (e *NotRegularError) Unwrap() []error { return []error{ErrNotRegular, ErrNotLog} }

// openRegular opens a log file (osfile.OpenRegular: never blocking, only
// a regular file) and, for a writer (flag other than O_RDONLY), takes the
// one-writer lock, held until the file is closed.
func openRegular(name string, flag int) (*os.File, error) {
	f, err := osfile.OpenRegular(name, flag, 0o600)
	var nr *osfile.NotRegularError
	if errors.As(err, &nr) {
		return nil, &NotRegularError{Path: name, Mode: nr.Mode}
	}
	if err != nil {
		return nil, err
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		if err := Lock(f); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

// Lock takes the one-writer lock on f, an open file, until f is closed: a
// *LockedError naming f and, where the system can say, the holder if
// another open file holds it. OpenFile and RepairFile take it on the log
// file; belief's FileStorage takes it on a lock file in its directory.
// See the package documentation, "One writer", for what it covers.
func Lock(f *os.File) error {
	err := osfile.Lock(f)
	var held *osfile.HeldError
	if errors.As(err, &held) {
		return &LockedError{Path: f.Name(), PID: held.PID}
	}
	if err != nil {
		return fmt.Errorf("trace: lock %s: %w", f.Name(), err)
	}
	return nil
}

// writerActive reports whether another open file holds the writer's lock
// on f: a log being appended to, whose final record may be half written.
func writerActive(f *os.File) bool {
	held, known := osfile.Held(f)
	return held && known
}
