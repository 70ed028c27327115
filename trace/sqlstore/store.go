package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/trace"
)

// Table names. They are fixed so that every process sharing a database
// finds the same logs.
const (
	LogsTable    = "verity_trace_logs"
	EntriesTable = "verity_trace_entries"
)

// MaxIDLen is the longest log id, in bytes.
const MaxIDLen = 256

// defaultPageSize is how many entries a read fetches per query unless
// WithPageSize says otherwise.
const defaultPageSize = 256

// maxRowsPerInsert bounds the rows of one multi-row INSERT (7 parameters a
// row stays far below every driver's parameter limit).
const maxRowsPerInsert = 256

// traceMigration is the schema history of the trace tables.
var traceMigration = sqlmigrate.Migration{
	Component: "trace",
	Steps: []sqlmigrate.Step{
		// Version 1: one row per log, one row per entry keyed by
		// (log_id, seq). The primary key is what makes a fork impossible:
		// a second entry at a sequence number that is taken is refused by
		// the database itself.
		sqlmigrate.Exec(func(d sqlmigrate.Dialect) []string {
			return []string{
				"CREATE TABLE " + LogsTable + " (log_id " + d.Key() + " PRIMARY KEY)",
				"CREATE TABLE " + EntriesTable + " (" +
					"log_id " + d.Key() + " NOT NULL REFERENCES " + LogsTable + " (log_id), " +
					"seq BIGINT NOT NULL CHECK (seq >= 0), " +
					"prev " + d.Blob() + " NOT NULL CHECK (" + d.ByteLength() + "(prev) = 32), " +
					"kind TEXT NOT NULL, " +
					"payload " + d.Blob() + " NOT NULL, " +
					"time TEXT NOT NULL, " +
					"hash " + d.Blob() + " NOT NULL CHECK (" + d.ByteLength() + "(hash) = 32), " +
					"PRIMARY KEY (log_id, seq))",
			}
		}),
	},
}

// SchemaVersionTrace is the trace tables' current schema version (the
// number of steps in their migration).
const SchemaVersionTrace = 1

// Logs is a database holding any number of named trace logs. It is safe
// for concurrent use, and any number of processes may open the same
// database: they see the same logs, and appends to one log from several
// processes serialise through the database.
type Logs struct {
	db       *sql.DB
	d        sqlmigrate.Dialect
	pageSize int
	// writers serialises this process's SQLite write transactions (see
	// Store); unused for PostgreSQL.
	writers sync.Mutex

	qCreate, qExists, qIDsFrom, qIDsAfter string
	qHead, qPrev, qPage, qAppendOne       string
	qInsert                               sync.Map // row count → INSERT statement, built on first use
}

// Option configures Open.
type Option func(*Logs)

// WithPageSize sets how many entries (and log ids) a read fetches per
// query (default 256). Memory used by a read is bounded by one
// page of entries.
func WithPageSize(n int) Option {
	return func(l *Logs) {
		if n > 0 {
			l.pageSize = n
		}
	}
}

// Open prepares db, which the host opened with a driver for dialect d,
// creating or migrating the trace tables (see Migrate). It does not take
// ownership of db: closing it stays the host's job.
func Open(ctx context.Context, db *sql.DB, d Dialect, opts ...Option) (*Logs, error) {
	if err := d.Valid(); err != nil {
		return nil, err
	}
	if db == nil {
		return nil, errors.New("sqlstore: Open needs a *sql.DB")
	}
	if err := Migrate(ctx, db, d); err != nil {
		return nil, err
	}
	l := &Logs{db: db, d: sqlmigrate.Dialect(d), pageSize: defaultPageSize}
	for _, o := range opts {
		o(l)
	}
	rebind := l.d.Rebind
	l.qCreate = rebind("INSERT INTO " + LogsTable + " (log_id) VALUES (?) ON CONFLICT (log_id) DO NOTHING")
	l.qExists = rebind("SELECT 1 FROM " + LogsTable + " WHERE log_id = ?")
	l.qIDsFrom = rebind("SELECT log_id FROM " + LogsTable + " WHERE log_id >= ? ORDER BY log_id LIMIT ?")
	l.qIDsAfter = rebind("SELECT log_id FROM " + LogsTable + " WHERE log_id > ? ORDER BY log_id LIMIT ?")
	l.qHead = rebind("SELECT seq, hash FROM " + EntriesTable + " WHERE log_id = ? ORDER BY seq DESC LIMIT 1")
	l.qPrev = rebind("SELECT hash FROM " + EntriesTable + " WHERE log_id = ? AND seq = ?")
	l.qAppendOne = appendOneQuery(l.d)
	l.qPage = rebind("SELECT seq, prev, kind, payload, time, hash FROM " + EntriesTable +
		" WHERE log_id = ? AND seq >= ? ORDER BY seq LIMIT ?")
	return l, nil
}

// appendOneQuery is the statement that appends one entry after the first,
// in one round trip: it inserts the row only if the log holds the entry
// before it with the hash the new entry names as previous, and nothing if
// its position is taken. Parameters: log id, seq, prev, kind, payload,
// time, hash (PostgreSQL needs their types spelled out in a SELECT list).
func appendOneQuery(d sqlmigrate.Dialect) string {
	p := func(n int, pgType string) string {
		if d == sqlmigrate.Postgres {
			return "CAST($" + strconv.Itoa(n) + " AS " + pgType + ")"
		}
		return "?" + strconv.Itoa(n)
	}
	return "INSERT INTO " + EntriesTable + " (log_id, seq, prev, kind, payload, time, hash) " +
		"SELECT " + p(1, "TEXT") + ", " + p(2, "BIGINT") + ", " + p(3, "BYTEA") + ", " + p(4, "TEXT") + ", " +
		p(5, "BYTEA") + ", " + p(6, "TEXT") + ", " + p(7, "BYTEA") +
		" WHERE EXISTS (SELECT 1 FROM " + EntriesTable + " WHERE log_id = " + p(1, "TEXT") +
		" AND seq = " + p(2, "BIGINT") + " - 1 AND hash = " + p(3, "BYTEA") + ")" +
		" ON CONFLICT (log_id, seq) DO NOTHING"
}

// insertQuery returns the statement that inserts rows entries.
func (l *Logs) insertQuery(rows int) string {
	if q, ok := l.qInsert.Load(rows); ok {
		return q.(string)
	}
	q := buildInsert(l.d, rows)
	l.qInsert.Store(rows, q)
	return q
}

func buildInsert(d sqlmigrate.Dialect, rows int) string {
	b := []byte("INSERT INTO " + EntriesTable + " (log_id, seq, prev, kind, payload, time, hash) VALUES ")
	for i := 0; i < rows; i++ {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, "(?, ?, ?, ?, ?, ?, ?)"...)
	}
	b = append(b, " ON CONFLICT (log_id, seq) DO NOTHING"...)
	return d.Rebind(string(b))
}

// validID checks a log id: 1 to MaxIDLen bytes of valid UTF-8 without
// NUL. Create and Open refuse another with ErrInvalidID.
func validID(id string) error {
	if len(id) == 0 || len(id) > MaxIDLen {
		return fmt.Errorf("%w: must be 1 to %d bytes, got %d", ErrInvalidID, MaxIDLen, len(id))
	}
	if !utf8.ValidString(id) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidID, id)
	}
	for i := 0; i < len(id); i++ {
		if id[i] == 0 {
			return fmt.Errorf("%w: %q contains NUL", ErrInvalidID, id)
		}
	}
	return nil
}

// Create registers a new, empty log and returns its store. It fails with
// ErrExists if the id is taken (by this or any other process).
func (l *Logs) Create(ctx context.Context, id string) (*Store, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	res, err := l.execReadCommitted(ctx, l.qCreate, id)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: creating log %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("sqlstore: creating log %q: %w", id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %q", ErrExists, id)
	}
	return l.store(id), nil
}

// Open returns the store of an existing log, or ErrNotFound.
func (l *Logs) Open(ctx context.Context, id string) (*Store, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	var one int
	err := l.db.QueryRowContext(ctx, l.qExists, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlstore: opening log %q: %w", id, err)
	}
	return l.store(id), nil
}

// OpenOrCreate returns the store of log id, registering it first if it
// does not exist yet.
func (l *Logs) OpenOrCreate(ctx context.Context, id string) (*Store, error) {
	if err := validID(id); err != nil {
		return nil, err
	}
	if _, err := l.execReadCommitted(ctx, l.qCreate, id); err != nil {
		return nil, fmt.Errorf("sqlstore: creating log %q: %w", id, err)
	}
	return l.store(id), nil
}

// execReadCommitted runs one statement. On PostgreSQL it runs in a READ
// COMMITTED transaction (see sqlmigrate.Dialect.TxOptions), so that an
// INSERT ... ON CONFLICT DO NOTHING racing another process's insert of
// the same key stores nothing rather than failing with a serialization
// error when the database's default isolation is higher.
func (l *Logs) execReadCommitted(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if l.d != sqlmigrate.Postgres {
		return l.db.ExecContext(ctx, query, args...)
	}
	tx, err := l.db.BeginTx(ctx, l.d.TxOptions())
	if err != nil {
		return nil, err
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		_ = tx.Rollback()
		return nil, err
	}
	return res, tx.Commit()
}

func (l *Logs) store(id string) *Store { return &Store{logs: l, id: id} }

// IDs yields the ids of every log, in byte-wise order, fetching a page
// at a time. Logs created while the iteration runs may or may not appear.
func (l *Logs) IDs(ctx context.Context) iter.Seq2[string, error] {
	return l.IDsWithPrefix(ctx, "")
}

// IDsWithPrefix yields, in byte-wise order, the ids of the logs that
// start with prefix (so that several users of one database, such as
// belief sessions and kernel workers, can keep their logs apart).
func (l *Logs) IDsWithPrefix(ctx context.Context, prefix string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		after, first := prefix, true
		for {
			page, err := l.idPage(ctx, after, first)
			if err != nil {
				yield("", err)
				return
			}
			for _, id := range page {
				if !strings.HasPrefix(id, prefix) {
					return
				}
				if !yield(id, nil) {
					return
				}
			}
			if len(page) < l.pageSize {
				return
			}
			after, first = page[len(page)-1], false
		}
	}
}

// idPage reads the next page of ids: from "from" inclusive on the first
// page, after it on the later ones.
func (l *Logs) idPage(ctx context.Context, from string, inclusive bool) ([]string, error) {
	q := l.qIDsAfter
	if inclusive {
		q = l.qIDsFrom
	}
	rows, err := l.db.QueryContext(ctx, q, from, l.pageSize)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: listing logs: %w", err)
	}
	defer rows.Close()
	var page []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlstore: listing logs: %w", err)
		}
		page = append(page, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: listing logs: %w", err)
	}
	return page, nil
}

// Store is one log in a SQL database; it implements trace.Store. Several
// Store values (in one process or many) may serve the same log at once.
//
// Append of one entry (what trace.Log does) is a single statement, one
// round trip: INSERT ... SELECT ... WHERE EXISTS (the previous entry with
// the hash the new one names) ON CONFLICT (log_id, seq) DO NOTHING. A
// batch runs in one transaction that inserts the entries and then checks
// that the entry before the first one is stored with the batch's previous
// hash. Two writers that race for the same sequence number are ordered by
// the primary key (log_id, seq): the database keeps the first to commit
// and the other's insert stores nothing, so the loser's Append returns an
// error wrapping trace.ErrConflict and leaves the log unchanged. trace.Log
// answers that by re-reading the head and retrying (WithConflictRetries),
// so writers in different processes serialise without any lock held
// between appends, and the chain never forks.
//
// SQLite admits one writer at a time. Appends from one process (through
// one Logs) queue on a mutex for it; other processes wait on SQLite's
// busy timeout, whose sleeps grow with each retry, so a SQLite file
// serves many goroutines of one process far better than many processes.
//
// Close marks the Store closed; it does not close the *sql.DB.
type Store struct {
	logs   *Logs
	id     string
	closed atomic.Bool
}

var _ trace.Store = (*Store)(nil)

// ID returns the log's id.
func (s *Store) ID() string { return s.id }

// Head implements trace.Store.
func (s *Store) Head(ctx context.Context) (trace.Head, error) {
	if s.closed.Load() {
		return trace.Head{}, trace.ErrClosed
	}
	var (
		seq  int64
		hash []byte
	)
	err := s.logs.db.QueryRowContext(ctx, s.logs.qHead, s.id).Scan(&seq, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return trace.Head{}, nil
	}
	if err != nil {
		return trace.Head{}, fmt.Errorf("sqlstore: reading head of %q: %w", s.id, err)
	}
	h, err := toHash(hash)
	if err != nil || seq < 0 {
		return trace.Head{}, fmt.Errorf("%w: log %q entry %d: bad stored hash", trace.ErrCorrupt, s.id, seq)
	}
	return trace.Head{Size: uint64(seq) + 1, Hash: h}, nil
}

// Append implements trace.Store. See Store for how concurrent appends are
// ordered.
func (s *Store) Append(ctx context.Context, entries ...trace.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return trace.ErrClosed
	}
	if len(entries) == 0 {
		return nil
	}
	first := entries[0]
	for i, e := range entries {
		if i > 0 && (e.Seq != entries[i-1].Seq+1 || e.Prev != entries[i-1].Hash) {
			return fmt.Errorf("%w: entry %d of the batch does not continue entry %d", trace.ErrConflict, e.Seq, entries[i-1].Seq)
		}
		if e.Seq > math.MaxInt64-uint64(len(entries)) {
			return fmt.Errorf("%w: sequence number %d out of range", trace.ErrConflict, e.Seq)
		}
		if err := trace.ValidFields(e); err != nil {
			return fmt.Errorf("%w (entry %d)", err, e.Seq)
		}
	}
	if first.Seq == 0 && first.Prev != trace.Genesis {
		return fmt.Errorf("%w: entry 0 must follow the genesis hash", trace.ErrConflict)
	}

	if s.logs.d == sqlmigrate.SQLite {
		s.logs.writers.Lock()
		defer s.logs.writers.Unlock()
	}
	if len(entries) == 1 && first.Seq > 0 {
		return s.appendOne(ctx, first)
	}
	tx, err := s.logs.db.BeginTx(ctx, s.logs.d.TxOptions())
	if err != nil {
		return fmt.Errorf("sqlstore: append to %q: %w", s.id, err)
	}
	if err := s.insert(ctx, tx, entries); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlstore: append to %q: commit: %w", s.id, err)
	}
	return nil
}

// appendOne appends a single entry after the first in one statement (no
// explicit transaction: a statement is atomic on its own). A batch of one
// cannot be half stored, so the statement's condition — the previous
// entry is stored with the right hash — and the primary key decide alone.
func (s *Store) appendOne(ctx context.Context, e trace.Entry) error {
	n, err := affected(s.logs.db.ExecContext(ctx, s.logs.qAppendOne,
		s.id, int64(e.Seq), e.Prev[:], e.Kind, e.Payload, trace.FormatTime(e.Time), e.Hash[:]))
	if serializationFailure(err) {
		// The statement runs on its own, in the session's default
		// isolation; above READ COMMITTED a racing writer's commit makes
		// it fail rather than store nothing. Either way nothing is stored
		// and another writer moved the log.
		return fmt.Errorf("%w: log %q moved under entry %d: %w", trace.ErrConflict, s.id, e.Seq, err)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: append to %q: %w", s.id, err)
	}
	if n != 1 {
		return fmt.Errorf("%w: log %q already has entry %d, or its entry %d does not have hash %s", trace.ErrConflict, s.id, e.Seq, e.Seq-1, e.Prev)
	}
	return nil
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// insert writes the batch inside tx and checks that it continues the
// stored log. Writing first means SQLite takes its write lock at the
// transaction's first statement (waiting on the busy timeout), and
// PostgreSQL makes a racing insert of the same key wait for the first
// transaction to finish.
func (s *Store) insert(ctx context.Context, tx *sql.Tx, entries []trace.Entry) error {
	args := make([]any, 0, 7*min(len(entries), maxRowsPerInsert))
	for start := 0; start < len(entries); start += maxRowsPerInsert {
		chunk := entries[start:min(start+maxRowsPerInsert, len(entries))]
		args = args[:0]
		for _, e := range chunk {
			args = append(args, s.id, int64(e.Seq), e.Prev[:], e.Kind, e.Payload, trace.FormatTime(e.Time), e.Hash[:])
		}
		res, err := tx.ExecContext(ctx, s.logs.insertQuery(len(chunk)), args...)
		if err != nil {
			return fmt.Errorf("sqlstore: append to %q: %w", s.id, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("sqlstore: append to %q: %w", s.id, err)
		}
		if n != int64(len(chunk)) {
			return fmt.Errorf("%w: log %q already has an entry at sequence %d..%d", trace.ErrConflict, s.id, chunk[0].Seq, chunk[len(chunk)-1].Seq)
		}
	}
	first := entries[0]
	if first.Seq == 0 {
		return nil
	}
	var prev []byte
	err := tx.QueryRowContext(ctx, s.logs.qPrev, s.id, int64(first.Seq-1)).Scan(&prev)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: log %q has no entry %d to continue", trace.ErrConflict, s.id, first.Seq-1)
	}
	if err != nil {
		return fmt.Errorf("sqlstore: append to %q: %w", s.id, err)
	}
	if h, err := toHash(prev); err != nil || h != first.Prev {
		return fmt.Errorf("%w: entry %d of log %q does not have the previous hash %s", trace.ErrConflict, first.Seq-1, s.id, first.Prev)
	}
	return nil
}

// Entries implements trace.Store. It reads one page of entries per query
// and holds no connection or transaction while the caller handles them,
// so a loop that appends to the log while reading it does not block.
func (s *Store) Entries(ctx context.Context, from uint64) iter.Seq2[trace.Entry, error] {
	return func(yield func(trace.Entry, error) bool) {
		if from > math.MaxInt64 {
			return
		}
		next := int64(from)
		var buf []trace.Entry
		for {
			if err := ctx.Err(); err != nil {
				yield(trace.Entry{}, err)
				return
			}
			if s.closed.Load() {
				yield(trace.Entry{}, trace.ErrClosed)
				return
			}
			page, err := s.page(ctx, next, buf)
			if err != nil {
				yield(trace.Entry{}, err)
				return
			}
			for _, e := range page {
				if !yield(e, nil) {
					return
				}
			}
			if len(page) < s.logs.pageSize {
				return
			}
			next = int64(page[len(page)-1].Seq) + 1
			clear(page) // drop references to payloads the caller now owns
			buf = page
		}
	}
}

// page reads up to pageSize entries from sequence number from into buf
// (reused between pages) and closes the query before returning.
func (s *Store) page(ctx context.Context, from int64, buf []trace.Entry) ([]trace.Entry, error) {
	rows, err := s.logs.db.QueryContext(ctx, s.logs.qPage, s.id, from, s.logs.pageSize)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: reading %q: %w", s.id, err)
	}
	defer rows.Close()
	page := buf[:0]
	var (
		seq              int64
		kind             string
		payload          []byte
		prev, hash, when sql.RawBytes // decoded before the next row replaces them
	)
	for rows.Next() {
		payload = nil
		if err := rows.Scan(&seq, &prev, &kind, &payload, &when, &hash); err != nil {
			return nil, fmt.Errorf("sqlstore: reading %q: %w", s.id, err)
		}
		e, err := decodeRow(seq, prev, kind, payload, when, hash)
		if err != nil {
			return nil, fmt.Errorf("%w (log %q)", err, s.id)
		}
		page = append(page, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlstore: reading %q: %w", s.id, err)
	}
	return page, nil
}

// decodeRow turns a stored row back into an entry, checking every field
// rule a writer applies (trace.ValidFields), so that the store reads back
// only what its Append could have written; the hash chain is checked by
// trace.Verifier, not here. It keeps payload and copies what it needs of
// the other byte slices.
func decodeRow(seq int64, prev []byte, kind string, payload []byte, when []byte, hash []byte) (trace.Entry, error) {
	if seq < 0 {
		return trace.Entry{}, fmt.Errorf("%w: negative sequence number %d", trace.ErrCorrupt, seq)
	}
	p, err := toHash(prev)
	if err != nil {
		return trace.Entry{}, fmt.Errorf("%w: entry %d prev: %v", trace.ErrCorrupt, seq, err)
	}
	h, err := toHash(hash)
	if err != nil {
		return trace.Entry{}, fmt.Errorf("%w: entry %d hash: %v", trace.ErrCorrupt, seq, err)
	}
	t, ok := parseWireTime(when)
	if !ok {
		return trace.Entry{}, fmt.Errorf("%w: entry %d: time %q is not YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ naming a UTC instant", trace.ErrCorrupt, seq, when)
	}
	e := trace.Entry{Seq: uint64(seq), Prev: p, Kind: kind, Payload: payload, Time: t, Hash: h}
	if err := trace.ValidFields(e); err != nil {
		return trace.Entry{}, fmt.Errorf("%w: entry %d: %s", trace.ErrCorrupt, seq, strings.TrimPrefix(err.Error(), "trace: "))
	}
	return e, nil
}

func toHash(b []byte) (trace.Hash, error) {
	var h trace.Hash
	if len(b) != len(h) {
		return h, fmt.Errorf("stored hash is %d bytes, want %d", len(b), len(h))
	}
	copy(h[:], b)
	return h, nil
}

// Close implements trace.Store: later calls return trace.ErrClosed. The
// *sql.DB stays open.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return trace.ErrClosed
	}
	return nil
}
