package belief

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/verity-go/verity/internal/osfile"
	"github.com/verity-go/verity/trace"
)

// Storage hands out one trace.Store per session: the session's audit log.
// Implementations must be safe for concurrent use. Several Servers (in one
// process or several) may share one Storage whose stores are shared; the
// Session shell catches up and appends only after the head it has seen
// (trace.After), so they never fork a log.
type Storage interface {
	// Create makes the empty store of a new session; an existing one is
	// an error wrapping ErrConflict.
	Create(ctx context.Context, sessionID string) (trace.Store, error)
	// Open returns the store of an existing session, or an error wrapping
	// ErrSessionNotFound.
	Open(ctx context.Context, sessionID string) (trace.Store, error)
	// List returns the ids of all sessions, sorted.
	List(ctx context.Context) ([]string, error)
}

// MemoryStorage keeps every session's log in a trace.Memory for the life
// of the value. Every Open of a
// session returns the same underlying store, so two Servers over one
// MemoryStorage behave like two processes over a shared database. Closing
// a returned store does not discard the log.
type MemoryStorage struct {
	mu     sync.Mutex
	stores map[string]*trace.Memory
}

// NewMemoryStorage returns an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{stores: map[string]*trace.Memory{}}
}

// sharedStore lends a store without letting the borrower close it.
type sharedStore struct{ trace.Store }

func (sharedStore) Close() error { return nil }

// Create implements Storage.
func (m *MemoryStorage) Create(ctx context.Context, sessionID string) (trace.Store, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.stores[sessionID]; ok {
		return nil, fmt.Errorf("%w: session %q already exists", ErrConflict, sessionID)
	}
	st := trace.NewMemory()
	m.stores[sessionID] = st
	return sharedStore{st}, nil
}

// Open implements Storage.
func (m *MemoryStorage) Open(ctx context.Context, sessionID string) (trace.Store, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.stores[sessionID]
	if !ok {
		return nil, &Error{Err: ErrSessionNotFound, Message: fmt.Sprintf("no session %q", sessionID)}
	}
	return sharedStore{st}, nil
}

// List implements Storage.
func (m *MemoryStorage) List(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.stores))
	for id := range m.stores {
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// FileStorage keeps each session's log in its own trace.File, named
// <session id>.trace in one directory. Session ids must be 1 to 128
// characters of [A-Za-z0-9_-] (UUIDs are); any other id is not found,
// which also keeps path separators out of file names.
//
// One FileStorage at a time uses a directory: NewFileStorage takes the
// operating system's one-writer lock (trace.Lock) on the file .lock in it
// and holds it until Close, so a second one (another server process, or
// the same process) is refused with an error matching trace.ErrLocked that
// names the holder's pid where the system can say. Each session's log
// file is locked too while it is open (trace.OpenFile). Two servers
// writing one directory would each append to a session's log after the
// head it saw and fork it. Readers (the verity command) take no lock. See
// trace's "One writer" for what the lock does not cover (network file
// systems).
type FileStorage struct {
	dir  string
	opts trace.FileOptions
	mu   sync.Mutex
	lock *os.File // holds the directory's lock; nil once closed
}

// lockName is the file in a FileStorage's directory that holds its lock.
const lockName = ".lock"

// fileSuffix is the file name suffix of a session log.
const fileSuffix = ".trace"

// NewFileStorage returns a FileStorage over dir, creating it if needed.
// opts is passed to trace.OpenFile (the zero value fsyncs every append).
// It locks dir until Close; a directory another FileStorage holds is an
// error matching trace.ErrLocked.
func NewFileStorage(dir string, opts trace.FileOptions) (*FileStorage, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lf, err := osfile.OpenRegular(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("belief: lock data directory %s: %w", dir, err)
	}
	if err := trace.Lock(lf); err != nil {
		lf.Close()
		return nil, fmt.Errorf("belief: data directory %s is in use: %w", dir, err)
	}
	return &FileStorage{dir: dir, opts: opts, lock: lf}, nil
}

// Close releases the directory's lock. Stores it handed out stay usable
// until closed themselves; close them first (a Server's Close does).
func (f *FileStorage) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lock == nil {
		return trace.ErrClosed
	}
	err := f.lock.Close()
	f.lock = nil
	return err
}

func safeID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (f *FileStorage) path(id string) string { return filepath.Join(f.dir, id+fileSuffix) }

// Create implements Storage.
func (f *FileStorage) Create(ctx context.Context, sessionID string) (trace.Store, error) {
	if !safeID(sessionID) {
		return nil, &Error{Err: ErrInvalidRequest, Message: fmt.Sprintf("session id %q cannot name a file", sessionID)}
	}
	// Claim the name atomically (O_EXCL), so that of two concurrent
	// Creates of one id exactly one succeeds; trace.OpenFile then writes
	// the header into the empty file.
	claim, err := os.OpenFile(f.path(sessionID), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("%w: session %q already exists", ErrConflict, sessionID)
	} else if err != nil {
		return nil, err
	}
	if err := claim.Close(); err != nil {
		return nil, err
	}
	return trace.OpenFile(f.path(sessionID), f.opts)
}

// Open implements Storage.
func (f *FileStorage) Open(ctx context.Context, sessionID string) (trace.Store, error) {
	notFound := &Error{Err: ErrSessionNotFound, Message: fmt.Sprintf("no session %q", sessionID)}
	if !safeID(sessionID) {
		return nil, notFound
	}
	if _, err := os.Stat(f.path(sessionID)); errors.Is(err, fs.ErrNotExist) {
		return nil, notFound
	} else if err != nil {
		return nil, err
	}
	return trace.OpenFile(f.path(sessionID), f.opts)
}

// List implements Storage.
func (f *FileStorage) List(ctx context.Context) ([]string, error) {
	des, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		name := de.Name()
		if de.Type().IsRegular() && strings.HasSuffix(name, fileSuffix) {
			if id := strings.TrimSuffix(name, fileSuffix); safeID(id) {
				out = append(out, id)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
