package sqlstore_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
	"github.com/verity-go/verity/trace/storetest"
)

// backend is one real database the tests run against.
type backend struct {
	name    string
	dialect sqlstore.Dialect
	driver  string
	// dsn makes a new, empty database (a PostgreSQL schema or a SQLite
	// file) and returns its DSN; it skips t when the database is absent.
	dsn func(t testing.TB) string
}

var backends = []backend{
	{"postgres", sqlstore.Postgres, sqltest.PostgresDriver, sqltest.PostgresSchema},
	{"sqlite", sqlstore.SQLite, sqltest.SQLiteDriver, func(t testing.TB) string { return sqltest.SQLiteDSN(sqltest.SQLitePath(t)) }},
}

func forEachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// open makes a new database on b and opens Logs over it.
func (b backend) open(t testing.TB, opts ...sqlstore.Option) (*sql.DB, *sqlstore.Logs) {
	t.Helper()
	db := sqltest.Open(t, b.driver, b.dsn(t))
	logs, err := sqlstore.Open(context.Background(), db, b.dialect, opts...)
	require.NoError(t, err)
	return db, logs
}

func newID() string { return "log-" + uuid.NewString() }

func TestConformance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, logs := b.open(t)
		storetest.Run(t, func(t *testing.T) trace.Store {
			s, err := logs.Create(context.Background(), newID())
			require.NoError(t, err)
			return s
		})
	})
}

// TestConformanceSmallPages runs the suite with pages of 3 entries, so
// that every read crosses page boundaries.
func TestConformanceSmallPages(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		_, logs := b.open(t, sqlstore.WithPageSize(3))
		storetest.Run(t, func(t *testing.T) trace.Store {
			s, err := logs.Create(context.Background(), newID())
			require.NoError(t, err)
			return s
		})
	})
}

func entries(t testing.TB, h trace.Head, n int, tag string) []trace.Entry {
	t.Helper()
	out := make([]trace.Entry, 0, n)
	for i := 0; i < n; i++ {
		e, nh, err := trace.Next(h, "sqlstore.test", []byte(fmt.Sprintf(`{"i":%d,"tag":%q}`, h.Size, tag)),
			time.Date(2026, 11, 22, 6, 0, 0, int(h.Size), time.UTC))
		require.NoError(t, err)
		out = append(out, e)
		h = nh
	}
	return out
}

func readAll(t testing.TB, s trace.Store) []trace.Entry {
	t.Helper()
	var out []trace.Entry
	for e, err := range s.Entries(context.Background(), 0) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// TestDatabaseRejectsFork writes around the store, straight into the
// table: a second entry at a sequence number already taken is refused by
// the primary key, so even a writer that bypasses Append cannot fork a log.
func TestDatabaseRejectsFork(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		db, logs := b.open(t)
		id := newID()
		s, err := logs.Create(ctx, id)
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, entries(t, trace.Head{}, 2, "a")...))
		fork := entries(t, trace.Head{}, 2, "b")[1]
		_, err = db.ExecContext(ctx, b.dialect.Rebind("INSERT INTO "+sqlstore.EntriesTable+
			" (log_id, seq, prev, kind, payload, time, hash) VALUES (?, ?, ?, ?, ?, ?, ?)"),
			id, int64(fork.Seq), fork.Prev[:], fork.Kind, fork.Payload, trace.FormatTime(fork.Time), fork.Hash[:])
		require.Error(t, err, "the database accepted a second entry at sequence 1")
		got := readAll(t, s)
		require.Len(t, got, 2)
		_, err = trace.Verify(got)
		require.NoError(t, err)
	})
}

// TestAppendRaceLoserGetsConflict: two stores over one log append
// different entries at the same position; exactly one wins and the other
// gets trace.ErrConflict with nothing stored.
func TestAppendRaceLoserGetsConflict(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		_, logs := b.open(t)
		id := newID()
		_, err := logs.Create(ctx, id)
		require.NoError(t, err)
		for round := 0; round < 20; round++ {
			s1, err := logs.Open(ctx, id)
			require.NoError(t, err)
			s2, err := logs.Open(ctx, id)
			require.NoError(t, err)
			h, err := s1.Head(ctx)
			require.NoError(t, err)
			// Odd rounds race single entries (the one-statement path),
			// even rounds race batches (the transaction path).
			nx, ny := 3, 2
			if round%2 == 1 {
				nx, ny = 1, 1
			}
			batches := [][]trace.Entry{entries(t, h, nx, "x"), entries(t, h, ny, "y")}
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i, s := range []*sqlstore.Store{s1, s2} {
				wg.Add(1)
				go func() { defer wg.Done(); errs[i] = s.Append(ctx, batches[i]...) }()
			}
			wg.Wait()
			winners := 0
			for i, err := range errs {
				if err == nil {
					winners++
					continue
				}
				require.ErrorIs(t, err, trace.ErrConflict, "loser %d", i)
			}
			require.Equal(t, 1, winners, "round %d: %v", round, errs)
			got, err := trace.VerifyStore(ctx, s1)
			require.NoError(t, err)
			want := h.Size + uint64(len(batches[0]))
			if errs[0] != nil {
				want = h.Size + uint64(len(batches[1]))
			}
			require.Equal(t, want, got.Size)
		}
	})
}

func TestCreateOpenList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		_, logs := b.open(t, sqlstore.WithPageSize(2))
		ids := []string{"b", "a", "é", "a/1", "Z", "z-9"}
		for _, id := range ids {
			s, err := logs.Create(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, id, s.ID())
		}
		_, err := logs.Create(ctx, "a")
		require.ErrorIs(t, err, sqlstore.ErrExists)
		_, err = logs.Open(ctx, "missing")
		require.ErrorIs(t, err, sqlstore.ErrNotFound)
		for _, bad := range []string{"", "nul\x00", "\xff", string(make([]byte, sqlstore.MaxIDLen+1))} {
			_, err := logs.Create(ctx, bad)
			assert.ErrorIs(t, err, sqlstore.ErrInvalidID, "%q", bad)
			_, err = logs.Open(ctx, bad)
			assert.ErrorIs(t, err, sqlstore.ErrInvalidID, "%q", bad)
		}
		s, err := logs.OpenOrCreate(ctx, "c")
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, entries(t, trace.Head{}, 1, "c")...))
		s, err = logs.OpenOrCreate(ctx, "c")
		require.NoError(t, err)
		h, err := s.Head(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint64(1), h.Size, "OpenOrCreate of an existing log keeps its entries")

		var listed []string
		for id, err := range logs.IDs(ctx) {
			require.NoError(t, err)
			listed = append(listed, id)
		}
		want := append(slices.Clone(ids), "c")
		slices.Sort(want) // byte-wise, as both dialects order them
		assert.Equal(t, want, listed)

		prefixed := func(p string) []string {
			var out []string
			for id, err := range logs.IDsWithPrefix(ctx, p) {
				require.NoError(t, err)
				out = append(out, id)
			}
			return out
		}
		assert.Equal(t, []string{"a", "a/1"}, prefixed("a"))
		assert.Equal(t, []string{"z-9"}, prefixed("z"))
		assert.Equal(t, []string{"é"}, prefixed("é"))
		assert.Empty(t, prefixed("zz"))
		assert.Equal(t, listed, prefixed(""))

		n := 0
		for _, err := range logs.IDs(ctx) {
			require.NoError(t, err)
			if n++; n == 3 {
				break
			}
		}
		assert.Equal(t, 3, n)
	})
}

// TestLogsAreIndependent: entries appended to one log never show in
// another, and each log starts at sequence 0.
func TestLogsAreIndependent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		_, logs := b.open(t)
		a, err := logs.Create(ctx, "a")
		require.NoError(t, err)
		c, err := logs.Create(ctx, "c")
		require.NoError(t, err)
		require.NoError(t, a.Append(ctx, entries(t, trace.Head{}, 5, "a")...))
		require.NoError(t, c.Append(ctx, entries(t, trace.Head{}, 2, "c")...))
		assert.Len(t, readAll(t, a), 5)
		assert.Len(t, readAll(t, c), 2)
		ha, _ := a.Head(ctx)
		hc, _ := c.Head(ctx)
		assert.NotEqual(t, ha, hc)
	})
}

// TestEntriesHoldNoConnection: with a pool of one connection, a loop that
// appends while it reads (page by page) still makes progress, because a
// read holds no connection between pages.
func TestEntriesHoldNoConnection(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		db, logs := b.open(t, sqlstore.WithPageSize(4))
		db.SetMaxOpenConns(1)
		s, err := logs.Create(ctx, newID())
		require.NoError(t, err)
		lg, err := trace.New(s)
		require.NoError(t, err)
		for i := 0; i < 10; i++ {
			_, err := lg.AppendValue(ctx, "sqlstore.seed", i)
			require.NoError(t, err)
		}
		seen := 0
		for e, err := range s.Entries(ctx, 0) {
			require.NoError(t, err)
			seen++
			if e.Seq < 10 {
				_, err := lg.AppendValue(ctx, "sqlstore.during", e.Seq)
				require.NoError(t, err)
			}
		}
		assert.GreaterOrEqual(t, seen, 10, "iteration stops at the end of the log as it was when it started or later")
		h, err := lg.Verify(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint64(20), h.Size)
	})
}

// TestTamperingDetected: a reader verifies what it reads and does not
// trust the writer. Rewriting a payload breaks the chain at that entry;
// a malformed stored time is reported as corruption.
func TestTamperingDetected(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		db, logs := b.open(t)
		id := newID()
		s, err := logs.Create(ctx, id)
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, entries(t, trace.Head{}, 6, "t")...))
		_, err = db.ExecContext(ctx, b.dialect.Rebind("UPDATE "+sqlstore.EntriesTable+" SET payload = ? WHERE log_id = ? AND seq = 3"),
			[]byte(`{"i":3,"tag":"forged"}`), id)
		require.NoError(t, err)
		_, err = trace.VerifyStore(ctx, s)
		var cb *trace.ChainBreakError
		require.ErrorAs(t, err, &cb)
		assert.Equal(t, uint64(3), cb.Index)
		assert.Equal(t, "hash", cb.Field)

		_, err = db.ExecContext(ctx, b.dialect.Rebind("UPDATE "+sqlstore.EntriesTable+" SET time = ? WHERE log_id = ? AND seq = 1"),
			"yesterday", id)
		require.NoError(t, err)
		_, err = trace.VerifyStore(ctx, s)
		require.ErrorIs(t, err, trace.ErrCorrupt)
	})
}

// TestAppendRejectsMalformed: entries a database could not store
// faithfully are refused before anything is written.
func TestAppendRejectsMalformed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		_, logs := b.open(t)
		s, err := logs.Create(ctx, newID())
		require.NoError(t, err)
		good := entries(t, trace.Head{}, 1, "m")[0]
		badKind := good
		badKind.Kind = "Bad Kind\x00"
		require.ErrorIs(t, s.Append(ctx, badKind), trace.ErrMalformed)
		badTime := good
		badTime.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
		require.ErrorIs(t, s.Append(ctx, badTime), trace.ErrMalformed)
		notGenesis := good
		notGenesis.Prev[0] = 1
		require.ErrorIs(t, s.Append(ctx, notGenesis), trace.ErrConflict)
		huge := good
		huge.Seq = 1 << 63
		require.ErrorIs(t, s.Append(ctx, huge), trace.ErrConflict)
		h, err := s.Head(ctx)
		require.NoError(t, err)
		assert.Equal(t, trace.Head{}, h)
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, s.Append(canceled, good), context.Canceled)
		// The log is empty: without the error this loop would not run at
		// all, so count what it yields.
		yielded := 0
		for _, err := range s.Entries(canceled, 0) {
			require.ErrorIs(t, err, context.Canceled)
			yielded++
		}
		require.Equal(t, 1, yielded, "Entries with a canceled context yields its error")
	})
}

func TestMigrateIdempotentAndConcurrent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		dsn := b.dsn(t)
		// Several pools (standing in for processes) open a fresh database at once.
		const n = 4
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			db := sqltest.Open(t, b.driver, dsn)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = sqlstore.Open(ctx, db, b.dialect)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		db := sqltest.Open(t, b.driver, dsn)
		logs, err := sqlstore.Open(ctx, db, b.dialect)
		require.NoError(t, err)
		s, err := logs.Create(ctx, "kept")
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, entries(t, trace.Head{}, 3, "k")...))
		_, err = sqlstore.Open(ctx, db, b.dialect) // again: nothing to do, data kept
		require.NoError(t, err)
		v, err := sqlstore.SchemaVersion(ctx, db, b.dialect, "trace")
		require.NoError(t, err)
		assert.Equal(t, int64(sqlstore.SchemaVersionTrace), v)
		s, err = logs.Open(ctx, "kept")
		require.NoError(t, err)
		assert.Len(t, readAll(t, s), 3)

		// A database migrated by a newer release is refused, not downgraded.
		_, err = db.ExecContext(ctx, b.dialect.Rebind("UPDATE verity_schema SET version = ? WHERE component = ?"), 99, "trace")
		require.NoError(t, err)
		_, err = sqlstore.Open(ctx, db, b.dialect)
		require.ErrorIs(t, err, sqlstore.ErrSchema)
	})
}

func TestMigrateRunsStepsOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		db := sqltest.Open(t, b.driver, b.dsn(t))
		calls := 0
		step := func(ctx context.Context, q sqlstore.Querier, d sqlstore.Dialect) error {
			calls++
			_, err := q.ExecContext(ctx, "CREATE TABLE migrate_probe_"+strconv.Itoa(calls)+" (x BIGINT)")
			return err
		}
		m := sqlstore.Migration{Component: "probe", Steps: []func(context.Context, sqlstore.Querier, sqlstore.Dialect) error{step}}
		require.NoError(t, sqlstore.Migrate(ctx, db, b.dialect, m))
		require.NoError(t, sqlstore.Migrate(ctx, db, b.dialect, m))
		assert.Equal(t, 1, calls)
		m.Steps = append(m.Steps, step)
		require.NoError(t, sqlstore.Migrate(ctx, db, b.dialect, m))
		assert.Equal(t, 2, calls)
		v, err := sqlstore.SchemaVersion(ctx, db, b.dialect, "probe")
		require.NoError(t, err)
		assert.Equal(t, int64(2), v)

		// A failing step rolls the whole migration back.
		failing := sqlstore.Migration{Component: "failing", Steps: []func(context.Context, sqlstore.Querier, sqlstore.Dialect) error{
			func(ctx context.Context, q sqlstore.Querier, d sqlstore.Dialect) error {
				_, err := q.ExecContext(ctx, "CREATE TABLE migrate_half (x BIGINT)")
				return err
			},
			func(ctx context.Context, q sqlstore.Querier, d sqlstore.Dialect) error {
				return errors.New("step two fails")
			},
		}}
		require.Error(t, sqlstore.Migrate(ctx, db, b.dialect, failing))
		v, err = sqlstore.SchemaVersion(ctx, db, b.dialect, "failing")
		require.NoError(t, err)
		assert.Equal(t, int64(0), v)
		_, err = db.ExecContext(ctx, "CREATE TABLE migrate_half (x BIGINT)")
		require.NoError(t, err, "the first step's table was rolled back")
	})
}

func TestDialect(t *testing.T) {
	assert.NoError(t, sqlstore.Postgres.Valid())
	assert.NoError(t, sqlstore.SQLite.Valid())
	assert.ErrorIs(t, sqlstore.Dialect("mysql").Valid(), sqlstore.ErrDialect)
	assert.Equal(t, "SELECT $1, $2 WHERE x = $3", sqlstore.Postgres.Rebind("SELECT ?, ? WHERE x = ?"))
	assert.Equal(t, "SELECT ?, ?", sqlstore.SQLite.Rebind("SELECT ?, ?"))
	_, err := sqlstore.Open(context.Background(), nil, sqlstore.Dialect("oracle"))
	assert.ErrorIs(t, err, sqlstore.ErrDialect)
}

// ---- several OS processes appending to one log ----

const (
	helperEnv     = "VERITY_SQLSTORE_HELPER"
	helperAppends = 15
)

// TestHelperAppender is not a test on its own: TestProcessesNeverFork runs
// the test binary again as several processes, each of which lands here
// and appends to the shared log through its own pool and trace.Log.
func TestHelperAppender(t *testing.T) {
	if os.Getenv(helperEnv) == "" {
		t.Skip("helper process for TestProcessesNeverFork")
	}
	ctx := context.Background()
	db := sqltest.Open(t, os.Getenv("HELPER_DRIVER"), os.Getenv("HELPER_DSN"))
	logs, err := sqlstore.Open(ctx, db, sqlstore.Dialect(os.Getenv("HELPER_DIALECT")))
	require.NoError(t, err)
	s, err := logs.Open(ctx, os.Getenv("HELPER_LOG"))
	require.NoError(t, err)
	lg, err := trace.New(s, trace.WithConflictRetries(100000))
	require.NoError(t, err)
	for i := 0; i < helperAppends; i++ {
		_, err := lg.AppendValue(ctx, "sqlstore.process", map[string]any{"pid": os.Getpid(), "i": i})
		require.NoError(t, err)
	}
}

// TestProcessesNeverFork: several OS processes append to one log at once;
// every append lands exactly once and the chain verifies.
func TestProcessesNeverFork(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		dsn := b.dsn(t)
		db := sqltest.Open(t, b.driver, dsn)
		logs, err := sqlstore.Open(ctx, db, b.dialect)
		require.NoError(t, err)
		id := newID()
		s, err := logs.Create(ctx, id)
		require.NoError(t, err)
		const procs = 3
		cmds := make([]*exec.Cmd, procs)
		outs := make([][]byte, procs)
		errs := make([]error, procs)
		var wg sync.WaitGroup
		for i := range cmds {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAppender$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"=1", "HELPER_DRIVER="+b.driver, "HELPER_DSN="+dsn,
				"HELPER_DIALECT="+string(b.dialect), "HELPER_LOG="+id)
			cmds[i] = cmd
			wg.Add(1)
			go func() { defer wg.Done(); outs[i], errs[i] = cmd.CombinedOutput() }()
		}
		wg.Wait()
		for i := range cmds {
			require.NoError(t, errs[i], "process %d:\n%s", i, outs[i])
		}
		h, err := trace.VerifyStore(ctx, s)
		require.NoError(t, err)
		require.Equal(t, uint64(procs*helperAppends), h.Size)
		pids := map[float64]int{}
		for e := range s.Entries(ctx, 0) {
			var p struct{ Pid float64 }
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			pids[p.Pid]++
		}
		require.Len(t, pids, procs)
		for pid, n := range pids {
			assert.Equal(t, helperAppends, n, "process %v", pid)
		}
	})
}
