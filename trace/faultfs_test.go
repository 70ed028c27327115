package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// faultFS is an in-memory fileSystem that remembers what has been fsynced, so a
// test can "crash" the process and see only durable bytes (plus, if it
// likes, a torn piece of what was not synced), and can make writes short
// and fsyncs fail on demand.
type faultFS struct {
	mu          sync.Mutex
	files       map[string]*faultFile
	shortWrites int    // the next n writes write half and fail
	failSyncs   int    // the next n fsyncs fail and make nothing durable
	beforeSync  func() // called at the start of every file fsync, outside the lock
}

type faultFile struct {
	data, durable []byte
	dirDurable    bool // the directory entry survives a crash
}

type faultHandle struct {
	fs     *faultFS
	name   string
	closed bool
}

var errInjected = errors.New("injected fault")

func newFaultFS() *faultFS { return &faultFS{files: map[string]*faultFile{}} }

func (fs *faultFS) OpenFile(name string) (fsFile, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, ok := fs.files[name]; !ok {
		fs.files[name] = &faultFile{}
	}
	return &faultHandle{fs: fs, name: name}, nil
}

func (fs *faultFS) Exists(name string) (bool, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, ok := fs.files[name]
	return ok, nil
}

func (fs *faultFS) SyncDir(string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, f := range fs.files {
		f.dirDurable = true
	}
	return nil
}

// crash drops every unsynced byte except the first keep bytes of each
// file's unsynced tail (a torn write), and files whose directory entry
// was never synced.
func (fs *faultFS) crash(keep int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for name, f := range fs.files {
		if !f.dirDurable {
			delete(fs.files, name)
			continue
		}
		nd := bytes.Clone(f.durable)
		if len(f.data) > len(f.durable) && bytes.HasPrefix(f.data, f.durable) {
			extra := f.data[len(f.durable):]
			if keep < len(extra) {
				extra = extra[:keep]
			}
			nd = append(nd, extra...)
		}
		f.data = nd
	}
}

// image returns what a crash at this instant would leave of name: its
// durable bytes and the first keep bytes of its unsynced tail. The files
// themselves are left alone, so writers may go on.
func (fs *faultFS) image(name string, keep int) []byte {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.files[name]
	nd := bytes.Clone(f.durable)
	if len(f.data) > len(f.durable) && bytes.HasPrefix(f.data, f.durable) {
		extra := f.data[len(f.durable):]
		nd = append(nd, extra[:min(keep, len(extra))]...)
	}
	return nd
}

func (fs *faultFS) bytes(name string) []byte {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return bytes.Clone(fs.files[name].data)
}

func (fs *faultFS) setBytes(name string, b []byte) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.files[name]
	f.data, f.durable, f.dirDurable = bytes.Clone(b), bytes.Clone(b), true
}

func (h *faultHandle) file() (*faultFile, error) {
	if h.closed {
		return nil, errors.New("file closed")
	}
	f, ok := h.fs.files[h.name]
	if !ok {
		return nil, fmt.Errorf("%s: file vanished", h.name)
	}
	return f, nil
}

func (h *faultHandle) ReadAt(p []byte, off int64) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	f, err := h.file()
	if err != nil {
		return 0, err
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *faultHandle) Write(p []byte) (int, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	f, err := h.file()
	if err != nil {
		return 0, err
	}
	if h.fs.shortWrites > 0 {
		h.fs.shortWrites--
		half := len(p) / 2
		f.data = append(f.data, p[:half]...)
		return half, errInjected
	}
	f.data = append(f.data, p...)
	return len(p), nil
}

func (h *faultHandle) Sync() error {
	h.fs.mu.Lock()
	hook := h.fs.beforeSync
	h.fs.mu.Unlock()
	if hook != nil {
		hook()
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	f, err := h.file()
	if err != nil {
		return err
	}
	if h.fs.failSyncs > 0 {
		h.fs.failSyncs--
		return errInjected
	}
	f.durable = bytes.Clone(f.data)
	return nil
}

func (h *faultHandle) Truncate(size int64) error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	f, err := h.file()
	if err != nil {
		return err
	}
	if size > int64(len(f.data)) {
		return errors.New("truncate beyond end")
	}
	f.data = f.data[:size]
	return nil
}

func (h *faultHandle) Size() (int64, error) {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	f, err := h.file()
	if err != nil {
		return 0, err
	}
	return int64(len(f.data)), nil
}

func (h *faultHandle) Close() error {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	h.closed = true
	return nil
}
