// Package sqlmigrate is what Verity's SQL packages (trace/sqlstore,
// kernel/sqlbudget, speculative/sqlbackend, claims/sqlpending) share below their public APIs: the few spellings that
// differ between the SQL dialects, and versioned schema migrations that
// are idempotent and safe when several processes start at once.
//
// Each component that keeps tables in a Verity database (such as "trace"
// or "budget") declares its schema history as a Migration and calls
// Migrate before it uses the tables. Versions are recorded per component
// in the table verity_schema (component, version).
package sqlmigrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Dialect names the SQL database behind a *sql.DB. trace/sqlstore.Dialect
// is the public name of the same values.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// Errors. trace/sqlstore exports them as ErrDialect and ErrSchema, the
// names callers test with errors.Is; their text names that package.
var (
	ErrDialect = errors.New("sqlstore: unsupported dialect")
	ErrSchema  = errors.New("sqlstore: database schema is newer than this package")
)

// Valid reports whether d is a supported dialect.
func (d Dialect) Valid() error {
	switch d {
	case Postgres, SQLite:
		return nil
	}
	return fmt.Errorf("%w: %q (want %q or %q)", ErrDialect, string(d), Postgres, SQLite)
}

// Rebind rewrites a query written with ? placeholders into the dialect's
// form: $1, $2, ... for PostgreSQL, unchanged for SQLite. Queries must not
// contain a literal question mark.
func (d Dialect) Rebind(query string) string {
	if d != Postgres {
		return query
	}
	var b strings.Builder
	b.Grow(len(query) + 8)
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// Blob returns the column type for binary data: BYTEA or BLOB.
func (d Dialect) Blob() string {
	if d == Postgres {
		return "BYTEA"
	}
	return "BLOB"
}

// Key returns the column type for text keys that sort byte-wise in both
// dialects (PostgreSQL's default collation follows the locale).
func (d Dialect) Key() string {
	if d == Postgres {
		return `TEXT COLLATE "C"`
	}
	return "TEXT"
}

// Serial returns the column definition of an integer primary key the
// database assigns in increasing order: an identity column for
// PostgreSQL, an AUTOINCREMENT rowid for SQLite (never reused).
func (d Dialect) Serial() string {
	if d == Postgres {
		return "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	return "INTEGER PRIMARY KEY AUTOINCREMENT"
}

// ByteLength returns the SQL function that gives a binary value's length
// in bytes.
func (d Dialect) ByteLength() string {
	if d == Postgres {
		return "octet_length"
	}
	return "length"
}

// TxOptions returns the options for read-write transactions. For
// PostgreSQL it asks for READ COMMITTED explicitly: the conditional
// statements that order concurrent writers (and the migration lock) rely
// on a statement that waited for another transaction seeing what that
// transaction committed, which a database or role whose
// default_transaction_isolation is repeatable read or serializable would
// turn into serialization failures (or, for a migration, into a second
// CREATE TABLE). SQLite transactions are serializable whatever is asked,
// and its drivers may refuse other levels: nil.
func (d Dialect) TxOptions() *sql.TxOptions {
	if d == Postgres {
		return &sql.TxOptions{Isolation: sql.LevelReadCommitted}
	}
	return nil
}

// Querier is what migration steps run statements through: a *sql.Tx or a
// *sql.Conn holding a transaction.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Step moves a component's schema one version up, inside the migration's
// transaction.
type Step func(ctx context.Context, q Querier, d Dialect) error

// Exec returns a step that runs the statements stmts spells for the
// dialect, in order.
func Exec(stmts func(d Dialect) []string) Step {
	return func(ctx context.Context, q Querier, d Dialect) error {
		for _, s := range stmts(d) {
			if _, err := q.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
}

// Migration is the schema history of one component: Steps[i] moves the
// schema from version i to version i+1. Steps are append-only: a released
// step is never edited, a change is a new step.
type Migration struct {
	Component string
	Steps     []Step
}

const schemaTable = "verity_schema"

// lockKey is the PostgreSQL advisory lock taken while migrating (an
// arbitrary constant: the ASCII bytes of "verity" as an integer).
const lockKey = 0x766572697479

// Migrate brings m's component to its latest schema version, idempotently
// and safely when several processes start at once: the whole migration
// runs in one transaction under an exclusive lock (a PostgreSQL advisory
// transaction lock; SQLite's BEGIN IMMEDIATE), so one process applies the
// missing steps and the others then find nothing to do. A failing step
// rolls the whole migration back. A database whose version is newer than
// len(m.Steps) is refused with ErrSchema.
func Migrate(ctx context.Context, db *sql.DB, d Dialect, m Migration) error {
	if err := d.Valid(); err != nil {
		return err
	}
	if db == nil {
		return errors.New("sqlstore: Migrate needs a *sql.DB")
	}
	return withWriteLock(ctx, db, d, func(q Querier) error {
		if d == Postgres {
			if _, err := q.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(lockKey)); err != nil {
				return fmt.Errorf("sqlstore: migration lock: %w", err)
			}
		}
		if _, err := q.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+schemaTable+
			" (component "+d.Key()+" PRIMARY KEY, version BIGINT NOT NULL CHECK (version >= 0))"); err != nil {
			return fmt.Errorf("sqlstore: creating %s: %w", schemaTable, err)
		}
		version, err := Version(ctx, q, d, m.Component)
		if err != nil {
			return fmt.Errorf("sqlstore: reading %s schema version: %w", m.Component, err)
		}
		if version > int64(len(m.Steps)) {
			return fmt.Errorf("%w: %s is at version %d, this package knows %d", ErrSchema, m.Component, version, len(m.Steps))
		}
		if version == int64(len(m.Steps)) {
			return nil
		}
		for i := version; i < int64(len(m.Steps)); i++ {
			if err := m.Steps[i](ctx, q, d); err != nil {
				return fmt.Errorf("sqlstore: migrating %s to version %d: %w", m.Component, i+1, err)
			}
		}
		if _, err := q.ExecContext(ctx, d.Rebind("INSERT INTO "+schemaTable+" (component, version) VALUES (?, ?) "+
			"ON CONFLICT (component) DO UPDATE SET version = excluded.version"), m.Component, int64(len(m.Steps))); err != nil {
			return fmt.Errorf("sqlstore: recording %s schema version: %w", m.Component, err)
		}
		return nil
	})
}

// Version returns the schema version recorded for component (0 if none)
// through q, a *sql.DB or a transaction. The version table must exist.
func Version(ctx context.Context, q Querier, d Dialect, component string) (int64, error) {
	var v int64
	err := q.QueryRowContext(ctx, d.Rebind("SELECT version FROM "+schemaTable+" WHERE component = ?"), component).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v, err
}

// withWriteLock runs fn inside a transaction that holds the database's
// write lock from its first statement: for SQLite, BEGIN IMMEDIATE on a
// dedicated connection (a deferred transaction that reads before it writes
// can fail to upgrade its lock); for PostgreSQL, an ordinary transaction
// (fn takes the locks it needs).
func withWriteLock(ctx context.Context, db *sql.DB, d Dialect, fn func(Querier) error) error {
	if d == Postgres {
		tx, err := db.BeginTx(ctx, d.TxOptions())
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if err := fn(conn); err != nil {
		if _, rerr := conn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
			// The connection's transaction state is unknown: discard it
			// rather than return it to the pool.
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		if _, rerr := conn.ExecContext(context.Background(), "ROLLBACK"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		return err
	}
	return nil
}
