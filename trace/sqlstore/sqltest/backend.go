package sqltest

import (
	"database/sql"
	"os"
	"testing"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/trace/sqlstore"
)

// Backend is one real database the tests run against.
type Backend struct {
	Name    string
	Dialect sqlstore.Dialect
	Driver  string
	// NewDSN makes a new, empty database (a PostgreSQL schema or a SQLite
	// file) and returns its DSN; it skips t when the database is absent.
	NewDSN func(t testing.TB) string
}

// Backends are the databases every SQL test runs on: PostgreSQL (skipped,
// naming VERITY_PG_DSN, when it is unset) and a SQLite file (always).
var Backends = []Backend{
	{"postgres", sqlstore.Postgres, PostgresDriver, PostgresSchema},
	{"sqlite", sqlstore.SQLite, SQLiteDriver, func(t testing.TB) string { return SQLiteDSN(SQLitePath(t)) }},
}

// Runner is *testing.T or *testing.B.
type Runner[T any] interface {
	testing.TB
	Run(name string, f func(T)) bool
}

// ForEach runs fn as a subtest (or sub-benchmark) of t on every backend,
// named after it.
func ForEach[T Runner[T]](t T, fn func(t T, b Backend)) {
	for _, b := range Backends {
		t.Run(b.Name, func(t T) { fn(t, b) })
	}
}

// Open opens a pool on dsn (see the package function Open).
func (b Backend) Open(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	return Open(t, b.Driver, dsn)
}

// OpenNew makes a new, empty database and opens a pool on it.
func (b Backend) OpenNew(t testing.TB) *sql.DB {
	t.Helper()
	return b.Open(t, b.NewDSN(t))
}

// Rebind rewrites a query written with ? placeholders into b's form, for
// tests that write to the tables directly.
func (b Backend) Rebind(query string) string {
	return sqlmigrate.Dialect(b.Dialect).Rebind(query)
}

// Environment variables that tell a helper process (the test binary run
// again) which database to open.
const (
	helperDriverEnv  = "VERITY_SQLTEST_DRIVER"
	helperDSNEnv     = "VERITY_SQLTEST_DSN"
	helperDialectEnv = "VERITY_SQLTEST_DIALECT"
)

// HelperEnv returns the environment entries that make OpenFromEnv, in a
// helper process, open the database at dsn on b.
func (b Backend) HelperEnv(dsn string) []string {
	return []string{helperDriverEnv + "=" + b.Driver, helperDSNEnv + "=" + dsn, helperDialectEnv + "=" + string(b.Dialect)}
}

// OpenFromEnv opens, in a helper process, the database its parent named
// with HelperEnv, and returns the pool and its dialect. Run other than by
// a parent (as part of the whole suite, say), it skips t, naming parent,
// the test that starts it.
func OpenFromEnv(t testing.TB, parent string) (*sql.DB, sqlstore.Dialect) {
	t.Helper()
	dsn := os.Getenv(helperDSNEnv)
	if dsn == "" {
		t.Skipf("helper process for %s", parent)
	}
	return Open(t, os.Getenv(helperDriverEnv), dsn), sqlstore.Dialect(os.Getenv(helperDialectEnv))
}
