package trace

import (
	"io"
	"os"
	"path/filepath"
)

// FS is the small slice of a file system the File store uses. OSFS is the
// real one; tests substitute a fault-injecting implementation to simulate
// short writes, failed fsyncs and crashes that drop unsynced bytes.
type FS interface {
	// OpenFile opens name for reading and writing, creating it if missing.
	OpenFile(name string) (FSFile, error)
	// Exists reports whether name exists.
	Exists(name string) (bool, error)
	// SyncDir fsyncs a directory so that a file created in it survives a crash.
	SyncDir(dir string) error
}

// FSFile is an open file: random-access reads, appending writes.
type FSFile interface {
	io.ReaderAt
	// Write appends at the end of the file.
	Write(p []byte) (int, error)
	Sync() error
	Truncate(size int64) error
	Size() (int64, error)
	Close() error
}

// OSFS is the operating system's file system.
type OSFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// OpenFile implements FS with O_RDWR|O_CREATE|O_APPEND and mode 0o600.
func (OSFS) OpenFile(name string) (FSFile, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Exists implements FS.
func (OSFS) Exists(name string) (bool, error) {
	_, err := os.Stat(name)
	if err == nil {
		return true, nil
	}
	if os.IsNotExist(err) {
		return false, nil
	}
	return false, err
}

// SyncDir implements FS.
func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
