package trace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/verity-go/verity/internal/osfile"
)

// maxKeyFileBytes bounds a key file; a key is about 100 bytes.
const maxKeyFileBytes = 4096

// readKeyFile reads a key file: one key followed by at most one newline
// (LF or CRLF).
func readKeyFile(path string) (string, os.FileInfo, error) {
	f, err := osfile.OpenRegular(path, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, osfile.ErrNotRegular) {
			return "", nil, fmt.Errorf("%w: key file %s is not a regular file", ErrKeyMalformed, path)
		}
		return "", nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileBytes+1))
	if err != nil {
		return "", nil, err
	}
	if len(b) > maxKeyFileBytes {
		return "", nil, fmt.Errorf("%w: key file %s is larger than %d bytes", ErrKeyMalformed, path, maxKeyFileBytes)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", nil, fmt.Errorf("%w: key file %s is empty", ErrKeyMalformed, path)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", nil, fmt.Errorf("%w: key file %s holds more than one line", ErrKeyMalformed, path)
	}
	return s, fi, nil
}

// ReadSignerKeyFile reads a signer key file as `verity keygen` writes it
// (the key of ParseSignerKey and a newline). A file that others than its
// owner may read or write (any of the mode bits 0o077) is refused: it is
// the secret that makes checkpoints worth keeping.
func ReadSignerKeyFile(path string) (*CheckpointSigner, error) {
	s, fi, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w: key file %s has mode %04o: others may read it; chmod 600 it", ErrKeyMalformed, path, fi.Mode().Perm())
	}
	k, err := ParseSignerKey(s)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// ReadVerifierKeyFile reads a verifier key file (the key of
// ParseVerifierKey and a newline).
func ReadVerifierKeyFile(path string) (*CheckpointVerifier, error) {
	s, _, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParseVerifierKey(s)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// WriteFileAtomic writes data to path so that a reader sees the old
// content or the new, never a part: a temporary file in the same
// directory, fsynced, renamed over path, and the directory fsynced.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil // renamed; the directory cannot be opened to sync it
	}
	defer d.Close()
	_ = d.Sync()
	return nil
}

// CheckpointOptions configure a CheckpointStore.
type CheckpointOptions struct {
	Signer *CheckpointSigner
	Origin string // the checkpoint's origin; "" is the signer's key name
	Path   string // the checkpoint file, replaced atomically each time
	// Every is the number of entries between checkpoints: one is written
	// after each Append that reaches a multiple of Every (0: only on
	// Close).
	Every uint64
}

// CheckpointStore is a Store that keeps a signed checkpoint of its head
// in a file: after each Append that reaches a multiple of Every entries,
// and on Close. Writing the file never fails an Append (the entries are
// stored by then): the first error is kept, returned by Err and by Close.
type CheckpointStore struct {
	Store
	opts    CheckpointOptions
	mu      sync.Mutex
	head    Head // the store's head as of the last append seen
	written Head // the head of the last checkpoint written
	wrote   bool
	err     error
}

// NewCheckpointStore wraps s. It reads s's head, so a checkpoint written
// on Close names the head even when nothing was appended.
func NewCheckpointStore(ctx context.Context, s Store, opts CheckpointOptions) (*CheckpointStore, error) {
	if opts.Signer == nil || opts.Path == "" {
		return nil, errors.New("trace: a checkpoint store needs a signer and a path")
	}
	if opts.Origin == "" {
		opts.Origin = opts.Signer.Name()
	}
	if !validKeyName(opts.Origin) {
		return nil, fmt.Errorf("%w: origin %q: want 1 to %d bytes of UTF-8 without spaces or '+'", ErrCheckpointMalformed, opts.Origin, maxKeyNameLen)
	}
	h, err := s.Head(ctx)
	if err != nil {
		return nil, err
	}
	return &CheckpointStore{Store: s, opts: opts, head: h}, nil
}

// Append implements Store and writes a checkpoint when the new head
// reaches a multiple of Every.
func (c *CheckpointStore) Append(ctx context.Context, entries ...Entry) error {
	if err := c.Store.Append(ctx, entries...); err != nil || len(entries) == 0 {
		return err
	}
	c.advance(entries[len(entries)-1])
	return nil
}

// appendDeferred keeps the wrapped store's group commit (a File with
// SyncGroup) for a Log over the CheckpointStore: the entries are written
// under the Log's lock and waited for after it, as without the wrapper.
// The head advances, and a checkpoint is written, only once they are
// durable: a checkpoint never names entries a crash could still lose.
func (c *CheckpointStore) appendDeferred(ctx context.Context, entries []Entry, checked bool) (func() error, error) {
	ds, ok := c.Store.(deferredSyncer)
	if !ok {
		return nil, c.Append(ctx, entries...)
	}
	wait, err := ds.appendDeferred(ctx, entries, checked)
	if err != nil || len(entries) == 0 {
		return wait, err
	}
	last := entries[len(entries)-1]
	if wait == nil {
		c.advance(last)
		return nil, nil
	}
	return func() error {
		if err := wait(); err != nil {
			return err
		}
		c.advance(last)
		return nil
	}, nil
}

// advance moves the head to the durable entry last, when it is ahead,
// and writes a checkpoint when the head reaches a multiple of Every.
// Waits for group commits may end in any order; the head only grows.
func (c *CheckpointStore) advance(last Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if last.Seq+1 <= c.head.Size {
		return
	}
	old := c.head
	c.head = Head{Size: last.Seq + 1, Hash: last.Hash}
	if e := c.opts.Every; e > 0 && c.head.Size/e > old.Size/e {
		c.writeLocked()
	}
}

// Entries implements Store.
func (c *CheckpointStore) Entries(ctx context.Context, from uint64) iter.Seq2[Entry, error] {
	return c.Store.Entries(ctx, from)
}

// Checkpoint writes a checkpoint of the current head now.
func (c *CheckpointStore) Checkpoint() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeLocked()
}

func (c *CheckpointStore) writeLocked() error {
	if c.wrote && c.written == c.head {
		return nil
	}
	note, err := c.opts.Signer.Sign(Checkpoint{Origin: c.opts.Origin, Size: c.head.Size, Hash: c.head.Hash})
	if err == nil {
		err = WriteFileAtomic(c.opts.Path, note, 0o644)
	}
	if err != nil {
		err = fmt.Errorf("trace: writing the checkpoint %s: %w", c.opts.Path, err)
		if c.err == nil {
			c.err = err
		}
		return err
	}
	c.written, c.wrote = c.head, true
	return nil
}

// Err returns the first error writing a checkpoint, if any.
func (c *CheckpointStore) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close writes a checkpoint of the final head, then closes the store. It
// returns the store's error, else the first checkpoint error.
func (c *CheckpointStore) Close() error {
	c.mu.Lock()
	c.writeLocked()
	cerr := c.err
	c.mu.Unlock()
	if err := c.Store.Close(); err != nil {
		return err
	}
	return cerr
}
