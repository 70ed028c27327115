package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/verity-go/verity/internal/sqlmigrate"
)

// Dialect names the SQL database behind a *sql.DB. The package speaks
// standard SQL plus the few spellings that differ (placeholders, binary
// column types, collation, the migration lock); the host opens the
// database with its own driver and says which dialect it is.
type Dialect string

// The supported dialects.
const (
	// Postgres is PostgreSQL 12 or later, through any database/sql driver
	// (for example github.com/jackc/pgx/v5/stdlib).
	Postgres Dialect = "postgres"
	// SQLite is SQLite 3.35 or later, through any database/sql driver (for
	// example modernc.org/sqlite). Open the database with a busy timeout
	// (modernc.org/sqlite: "?_pragma=busy_timeout(10000)") so that
	// concurrent writers wait for each other instead of failing with
	// "database is locked"; WAL mode ("_pragma=journal_mode(WAL)") lets
	// readers proceed while a writer commits.
	SQLite Dialect = "sqlite"
)

// Errors returned by the package. Concrete errors wrap them; test with
// errors.Is.
var (
	// ErrDialect: the dialect is neither Postgres nor SQLite.
	ErrDialect = sqlmigrate.ErrDialect
	// ErrSchema: the database's schema is newer than this package.
	ErrSchema = sqlmigrate.ErrSchema

	ErrNotFound  = errors.New("sqlstore: log not found")
	ErrExists    = errors.New("sqlstore: log already exists")
	ErrInvalidID = errors.New("sqlstore: invalid log id")
)

// Valid reports whether d is a supported dialect; an error wraps
// ErrDialect.
func (d Dialect) Valid() error { return sqlmigrate.Dialect(d).Valid() }

// Migrate creates the trace tables in db, opened by the host with a
// driver for dialect d, or brings them to SchemaVersionTrace. Open calls
// it; a host may also run it ahead of time, from a deployment step say.
// It is idempotent and safe when any number of processes run it at once:
// the missing steps are applied in one transaction under an exclusive
// lock (a PostgreSQL advisory lock, SQLite's BEGIN IMMEDIATE), so one
// process migrates and the others find nothing to do. A database whose
// trace schema is newer than this package is refused with ErrSchema.
func Migrate(ctx context.Context, db *sql.DB, d Dialect) error {
	return sqlmigrate.Migrate(ctx, db, sqlmigrate.Dialect(d), traceMigration)
}

// serializationFailure reports whether err carries PostgreSQL's SQLSTATE
// 40001 (serialization_failure), through the SQLState method that drivers
// such as pgx give their errors (no driver is imported).
func serializationFailure(err error) bool {
	var se interface{ SQLState() string }
	return errors.As(err, &se) && se.SQLState() == "40001"
}
