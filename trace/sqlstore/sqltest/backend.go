package sqltest

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

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
// On PostgreSQL the helper's connections carry an application name
// derived from dsn, by which AwaitHelpers finds them.
func (b Backend) HelperEnv(dsn string) []string {
	if b.Dialect == sqlstore.Postgres {
		if named, err := WithParam(dsn, "application_name", helperName(dsn)); err == nil {
			dsn = named
		}
	}
	return []string{helperDriverEnv + "=" + b.Driver, helperDSNEnv + "=" + dsn, helperDialectEnv + "=" + string(b.Dialect)}
}

// helperName is the application name of the helper processes on dsn.
func helperName(dsn string) string {
	sum := sha256.Sum256([]byte(dsn))
	return "verity_helper_" + hex.EncodeToString(sum[:8])
}

// AwaitHelpers waits until no connection of a helper process started with
// HelperEnv(dsn) remains. A helper killed with SIGKILL can leave its last
// statement running in the PostgreSQL server, which may still commit it;
// a test that checks the database after a kill waits here first, or two
// reads of the same data may differ. SQLite has no server: once the
// process is gone, so is anything it had in flight.
func (b Backend) AwaitHelpers(t testing.TB, dsn string) {
	t.Helper()
	if b.Dialect != sqlstore.Postgres {
		return
	}
	db := b.Open(t, dsn)
	defer db.Close()
	name := helperName(dsn)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := db.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&n)
		if err != nil {
			t.Fatalf("sqltest: waiting for helper connections: %v", err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sqltest: %d helper connections still open after 30s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
