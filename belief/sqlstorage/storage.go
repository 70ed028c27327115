package sqlstorage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
)

// DefaultPrefix is put in front of a session id to name its log, so that
// belief sessions and other logs (kernel workers, say) can share one
// database without mixing.
const DefaultPrefix = "belief/"

// Storage is a belief.Storage whose session logs live in a SQL database
// through trace/sqlstore. It is safe for concurrent use, and any number
// of belief servers, in any number of processes, may use the same
// database at once.
type Storage struct {
	logs   *sqlstore.Logs
	prefix string
}

var _ belief.Storage = (*Storage)(nil)

// Option configures a Storage.
type Option func(*Storage)

// WithPrefix sets the prefix of the log ids of sessions (default
// DefaultPrefix). Servers that should see the same sessions must use the
// same prefix; different prefixes keep deployments apart in one database.
func WithPrefix(prefix string) Option { return func(s *Storage) { s.prefix = prefix } }

// New returns a Storage over logs.
func New(logs *sqlstore.Logs, opts ...Option) *Storage {
	s := &Storage{logs: logs, prefix: DefaultPrefix}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Open prepares db (opened by the host with a driver for dialect d; see
// sqlstore.Open, which creates or migrates the tables) and returns a
// Storage over it.
func Open(ctx context.Context, db *sql.DB, d sqlstore.Dialect, opts ...Option) (*Storage, error) {
	logs, err := sqlstore.Open(ctx, db, d)
	if err != nil {
		return nil, err
	}
	return New(logs, opts...), nil
}

// Logs returns the log database behind the storage.
func (s *Storage) Logs() *sqlstore.Logs { return s.logs }

// LogID returns the id of the log that holds session sessionID.
func (s *Storage) LogID(sessionID string) string { return s.prefix + sessionID }

// Create implements belief.Storage: it registers the session's log, or
// fails with an error wrapping belief.ErrConflict if another server (in
// any process) already did.
func (s *Storage) Create(ctx context.Context, sessionID string) (trace.Store, error) {
	st, err := s.logs.Create(ctx, s.LogID(sessionID))
	switch {
	case errors.Is(err, sqlstore.ErrExists):
		return nil, fmt.Errorf("%w: session %q already exists", belief.ErrConflict, sessionID)
	case errors.Is(err, sqlstore.ErrInvalidID):
		return nil, &belief.Error{Err: belief.ErrInvalidRequest, Message: fmt.Sprintf("session id %q cannot name a log: %v", sessionID, err)}
	case err != nil:
		return nil, err
	}
	return st, nil
}

// Open implements belief.Storage: the store of an existing session, or an
// error wrapping belief.ErrSessionNotFound.
func (s *Storage) Open(ctx context.Context, sessionID string) (trace.Store, error) {
	st, err := s.logs.Open(ctx, s.LogID(sessionID))
	if errors.Is(err, sqlstore.ErrNotFound) || errors.Is(err, sqlstore.ErrInvalidID) {
		return nil, &belief.Error{Err: belief.ErrSessionNotFound, Message: fmt.Sprintf("no session %q", sessionID)}
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// List implements belief.Storage: the ids of every session in the
// database (with this storage's prefix), sorted byte-wise.
func (s *Storage) List(ctx context.Context) ([]string, error) {
	var out []string
	for id, err := range s.logs.IDsWithPrefix(ctx, s.prefix) {
		if err != nil {
			return nil, err
		}
		out = append(out, id[len(s.prefix):])
	}
	return out, nil
}
