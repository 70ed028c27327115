// Package sqltest opens the real databases that the tests of Verity's SQL
// packages run against: a PostgreSQL server named by the environment
// variable VERITY_PG_DSN (each test gets its own schema, dropped at the
// end), and SQLite database files in the test's temporary directory.
//
// The package imports no SQL driver: the test that calls it imports the
// drivers it names (github.com/jackc/pgx/v5/stdlib registers "pgx",
// modernc.org/sqlite registers "sqlite").
//
// Without VERITY_PG_DSN the PostgreSQL helpers skip the test with a
// message naming the variable; the repository's .ci/with-postgres script
// starts a throwaway server and sets it.
//
// ForEach runs a test once per entry of Backends (PostgreSQL, then a
// SQLite file); HelperEnv and OpenFromEnv hand a database to a helper
// process, the test binary run again.
package sqltest

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// Environment variable and driver names.
const (
	PostgresEnv    = "VERITY_PG_DSN"
	PostgresDriver = "pgx"
	SQLiteDriver   = "sqlite"
)

// MaxIdleConns is the idle-connection limit of the pools Open returns.
const MaxIdleConns = 16

// PostgresBaseDSN returns VERITY_PG_DSN, or skips t when it is unset.
func PostgresBaseDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		t.Skipf("PostgreSQL tests skipped: %s is not set (set it to a postgres:// URL, or run the tests under .ci/with-postgres)", PostgresEnv)
	}
	return dsn
}

// PostgresSchema creates a new, empty schema on the server named by
// VERITY_PG_DSN (skipping t when it is unset), drops it when t ends, and
// returns a DSN whose connections use it as their search path. Several
// processes given that DSN share the schema.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	base := PostgresBaseDSN(t)
	admin, err := sql.Open(PostgresDriver, base)
	if err != nil {
		t.Fatalf("sqltest: opening %s: %v (does the test import github.com/jackc/pgx/v5/stdlib?)", PostgresEnv, err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	schema := "verity_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("sqltest: creating schema on %s: %v", PostgresEnv, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("sqltest: dropping schema %s: %v", schema, err)
		}
	})
	dsn, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatalf("sqltest: %s: %v", PostgresEnv, err)
	}
	return dsn
}

// SerializablePostgresSchema is PostgresSchema for connections whose
// default_transaction_isolation is serializable (a common hardening
// setting), for tests that transactions choose their isolation rather
// than inherit the server's.
func SerializablePostgresSchema(t testing.TB) string {
	t.Helper()
	dsn, err := WithParam(PostgresSchema(t), "default_transaction_isolation", "serializable")
	if err != nil {
		t.Fatalf("sqltest: %s: %v", PostgresEnv, err)
	}
	return dsn
}

// withSearchPath adds search_path to a postgres:// URL or a key=value DSN.
func withSearchPath(dsn, schema string) (string, error) {
	return WithParam(dsn, "search_path", schema)
}

// WithParam sets a connection (run-time) parameter, such as
// default_transaction_isolation, in a postgres:// URL or a key=value DSN.
// The value must not contain spaces.
func WithParam(dsn, key, value string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	return dsn + " " + key + "=" + value, nil
}

// Postgres opens a connection pool on a new schema (see PostgresSchema),
// closed when t ends.
func Postgres(t testing.TB) *sql.DB {
	t.Helper()
	return Open(t, PostgresDriver, PostgresSchema(t))
}

// SQLiteDSN returns the DSN of the SQLite file at path, with a busy timeout
// (so that writers wait for each other) and WAL journaling.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)"
}

// SQLitePath returns the path of a new SQLite file in t's temporary
// directory.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "verity.db")
}

// SQLite opens a new SQLite database file in t's temporary directory,
// closed when t ends.
func SQLite(t testing.TB) *sql.DB {
	t.Helper()
	return Open(t, SQLiteDriver, SQLiteDSN(SQLitePath(t)))
}

// Open opens a pool with driver and dsn, checks that it answers, and
// closes it when t ends. The pool keeps up to MaxIdleConns idle
// connections: database/sql's default of 2 would make every goroutine
// beyond the second open (for PostgreSQL: fork) a new connection per call.
func Open(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("sqltest: sql.Open(%q): %v (does the test import the driver?)", driver, err)
	}
	db.SetMaxIdleConns(MaxIdleConns)
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("sqltest: connecting with %s: %v", driver, err)
	}
	return db
}
