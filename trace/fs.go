package trace

import (
	"io"
	"os"
	"path/filepath"
)

// fileSystem is the small slice of a file system the File store uses.
// osFS is the real one; tests substitute a fault-injecting implementation
// to simulate short writes, failed fsyncs and crashes that drop unsynced
// bytes.
type fileSystem interface {
	// OpenFile opens name for reading and writing, creating it if missing,
	// and holds the one-writer lock until the file is closed.
	OpenFile(name string) (fsFile, error)
	// Exists reports whether name exists.
	Exists(name string) (bool, error)
	// SyncDir fsyncs a directory so that a file created in it survives a crash.
	SyncDir(dir string) error
}

// fsFile is an open file: random-access reads, appending writes.
type fsFile interface {
	io.ReaderAt
	// Write appends at the end of the file.
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

// osFS is the operating system's file system.
type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// OpenFile opens name with O_RDWR|O_CREATE|O_APPEND and mode 0o600,
// only if it is a regular file, and takes the one-writer lock (lock.go).
func (osFS) OpenFile(name string) (fsFile, error) {
	f, err := openRegular(name, os.O_RDWR|os.O_CREATE|os.O_APPEND)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Exists(name string) (bool, error) {
	_, err := os.Stat(name)
	if err == nil {
		return true, nil
	}
	if os.IsNotExist(err) {
		return false, nil
	}
	return false, err
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
