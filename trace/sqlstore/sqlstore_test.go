package sqlstore_test

// The guarantees of the SQL store and the tests that check them, on
// PostgreSQL and on a SQLite file (sqltest.ForEach runs each on both):
//
//   - The trace.Store contract: TestConformance, TestConformanceSmallPages
//     (storetest.Run), including that Append refuses what a reader refuses;
//     an empty payload is refused on every write path and a one-byte one
//     round-trips: TestEmptyPayloadRefused (payload_test.go).
//   - The store reads back only what its Append could have written:
//     TestReaderRefusesWhatAppendRefuses, FuzzDecodeRow (fuzz_test.go).
//   - The database itself refuses a fork: TestDatabaseRejectsFork.
//   - Racing appends: one wins, the other gets trace.ErrConflict and
//     nothing is stored: TestAppendRaceLoserGetsConflict.
//   - Several OS processes appending to one log never fork it and lose no
//     entry: TestProcessesNeverFork.
//   - The same holds, and migrations still run concurrently, on a
//     PostgreSQL database whose default isolation is serializable:
//     TestSerializableDefaultIsolation, TestSerializableDefaultIsolationCreate
//     (isolation_test.go).
//   - Behaviour under random appends, stale and forged batches, reads and
//     reopenings matches a naive model: TestStoreStateMachine (model_test.go).
//   - Reads stream and hold no connection: TestEntriesHoldNoConnection.
//   - Tampering in the database is detected on read: TestTamperingDetected.
//   - Row decoding and id validation never panic and accept exactly the
//     stored shapes; the allocation-free time decoder agrees with
//     trace.ParseTime: FuzzDecodeRow, FuzzParseWireTime, FuzzValidID.
//   - Migration is idempotent, concurrent-safe, all-or-nothing, and
//     refuses newer schemas: TestMigrateIdempotentAndConcurrent, and
//     TestMigrateRunsStepsOnce in internal/sqlmigrate.
//   - Errors name their origin once: TestErrorsPrefixedOnce (payload_test.go).
//
// The PostgreSQL tests need a server: set VERITY_PG_DSN to a postgres://
// URL, or run them under the repository's .ci/with-postgres script, which
// starts a throwaway server. Without it they skip, naming the variable;
// the SQLite tests always run.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
	"github.com/verity-go/verity/trace/storetest"
)

// open makes a new database on b and opens Logs over it.
func open(t testing.TB, b sqltest.Backend, opts ...sqlstore.Option) (*sql.DB, *sqlstore.Logs) {
	t.Helper()
	db := b.OpenNew(t)
	logs, err := sqlstore.Open(context.Background(), db, b.Dialect, opts...)
	require.NoError(t, err)
	return db, logs
}

func newID() string { return "log-" + uuid.NewString() }

// openLog makes a new database on b, opens Logs over it and creates a log
// with a new id.
func openLog(t testing.TB, b sqltest.Backend, opts ...sqlstore.Option) (*sql.DB, *sqlstore.Store) {
	t.Helper()
	db, logs := open(t, b, opts...)
	s, err := logs.Create(context.Background(), newID())
	require.NoError(t, err)
	return db, s
}

func TestConformance(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, logs := open(t, b)
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
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, logs := open(t, b, sqlstore.WithPageSize(3))
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
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db, s := openLog(t, b)
		id := s.ID()
		require.NoError(t, s.Append(ctx, entries(t, trace.Head{}, 2, "a")...))
		fork := entries(t, trace.Head{}, 2, "b")[1]
		_, err := db.ExecContext(ctx, b.Rebind("INSERT INTO "+sqlstore.EntriesTable+
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
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		_, logs := open(t, b)
		id := newID()
		_, err := logs.Create(ctx, id)
		require.NoError(t, err)
		for round := 0; round < 20; round++ {
			s1, err := logs.Open(ctx, id)
			require.NoError(t, err)
			s2, err := logs.Open(ctx, id)
			require.NoError(t, err)
			want := race(t, s1, s2, round)
			got, err := trace.VerifyStore(ctx, s1)
			require.NoError(t, err)
			require.Equal(t, want, got.Size)
		}
	})
}

// race has s1 and s2 append different entries after their log's head at
// once — batches on even rounds (the transaction path), single entries on
// odd rounds (the one-statement path) — checks that exactly one wins and
// the other gets trace.ErrConflict, and returns the size the winner left.
func race(t *testing.T, s1, s2 *sqlstore.Store, round int) uint64 {
	t.Helper()
	ctx := context.Background()
	h, err := s1.Head(ctx)
	require.NoError(t, err)
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
		require.ErrorIs(t, err, trace.ErrConflict, "round %d loser %d", round, i)
	}
	require.Equal(t, 1, winners, "round %d: %v", round, errs)
	if errs[0] != nil {
		return h.Size + uint64(len(batches[1]))
	}
	return h.Size + uint64(len(batches[0]))
}

func TestCreateOpenList(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		_, logs := open(t, b, sqlstore.WithPageSize(2))
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
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		_, logs := open(t, b)
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
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		db, s := openLog(t, b, sqlstore.WithPageSize(4))
		db.SetMaxOpenConns(1)
		lg, err := trace.NewLog(s)
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
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db, s := openLog(t, b)
		id := s.ID()
		require.NoError(t, s.Append(ctx, entries(t, trace.Head{}, 6, "t")...))
		_, err := db.ExecContext(ctx, b.Rebind("UPDATE "+sqlstore.EntriesTable+" SET payload = ? WHERE log_id = ? AND seq = 3"),
			[]byte(`{"i":3,"tag":"forged"}`), id)
		require.NoError(t, err)
		_, err = trace.VerifyStore(ctx, s)
		var cb *trace.ChainBreakError
		require.ErrorAs(t, err, &cb)
		assert.Equal(t, uint64(3), cb.Index)
		assert.Equal(t, "hash", cb.Field)

		_, err = db.ExecContext(ctx, b.Rebind("UPDATE "+sqlstore.EntriesTable+" SET time = ? WHERE log_id = ? AND seq = 1"),
			"yesterday", id)
		require.NoError(t, err)
		_, err = trace.VerifyStore(ctx, s)
		require.ErrorIs(t, err, trace.ErrCorrupt)
	})
}

// TestAppendRejectsMalformed: entries a database could not store
// faithfully are refused before anything is written.
func TestAppendRejectsMalformed(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		_, s := openLog(t, b)
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
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		dsn := b.NewDSN(t)
		// Several pools (standing in for processes) open a fresh database at once.
		const n = 4
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			db := b.Open(t, dsn)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = sqlstore.Open(ctx, db, b.Dialect)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		db := b.Open(t, dsn)
		logs, err := sqlstore.Open(ctx, db, b.Dialect)
		require.NoError(t, err)
		s, err := logs.Create(ctx, "kept")
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, entries(t, trace.Head{}, 3, "k")...))
		_, err = sqlstore.Open(ctx, db, b.Dialect) // again: nothing to do, data kept
		require.NoError(t, err)
		require.NoError(t, sqlstore.Migrate(ctx, db, b.Dialect))
		v, err := sqlmigrate.Version(ctx, db, sqlmigrate.Dialect(b.Dialect), "trace")
		require.NoError(t, err)
		assert.Equal(t, int64(sqlstore.SchemaVersionTrace), v)
		s, err = logs.Open(ctx, "kept")
		require.NoError(t, err)
		assert.Len(t, readAll(t, s), 3)

		// A database migrated by a newer release is refused, not downgraded.
		_, err = db.ExecContext(ctx, b.Rebind("UPDATE verity_schema SET version = ? WHERE component = ?"), 99, "trace")
		require.NoError(t, err)
		_, err = sqlstore.Open(ctx, db, b.Dialect)
		require.ErrorIs(t, err, sqlstore.ErrSchema)
		require.ErrorIs(t, sqlstore.Migrate(ctx, db, b.Dialect), sqlstore.ErrSchema)
	})
}

func TestDialect(t *testing.T) {
	assert.NoError(t, sqlstore.Postgres.Valid())
	assert.NoError(t, sqlstore.SQLite.Valid())
	assert.ErrorIs(t, sqlstore.Dialect("mysql").Valid(), sqlstore.ErrDialect)
	_, err := sqlstore.Open(context.Background(), nil, sqlstore.Dialect("oracle"))
	assert.ErrorIs(t, err, sqlstore.ErrDialect)
	assert.ErrorIs(t, sqlstore.Migrate(context.Background(), nil, sqlstore.Dialect("oracle")), sqlstore.ErrDialect)
	assert.Error(t, sqlstore.Migrate(context.Background(), nil, sqlstore.SQLite), "no database")
}

// ---- several OS processes appending to one log ----

const helperAppends = 15

// TestHelperAppender is not a test on its own: TestProcessesNeverFork runs
// the test binary again as several processes, each of which lands here
// and appends to the shared log through its own pool and trace.Log.
func TestHelperAppender(t *testing.T) {
	db, dialect := sqltest.OpenFromEnv(t, "TestProcessesNeverFork")
	ctx := context.Background()
	logs, err := sqlstore.Open(ctx, db, dialect)
	require.NoError(t, err)
	s, err := logs.Open(ctx, os.Getenv("HELPER_LOG"))
	require.NoError(t, err)
	lg, err := trace.NewLog(s, trace.WithConflictRetries(100000))
	require.NoError(t, err)
	for i := 0; i < helperAppends; i++ {
		_, err := lg.AppendValue(ctx, "sqlstore.process", map[string]any{"pid": os.Getpid(), "i": i})
		require.NoError(t, err)
	}
}

// TestProcessesNeverFork: several OS processes append to one log at once;
// every append lands exactly once and the chain verifies.
func TestProcessesNeverFork(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		dsn := b.NewDSN(t)
		db := b.Open(t, dsn)
		logs, err := sqlstore.Open(ctx, db, b.Dialect)
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
			cmd.Env = append(append(os.Environ(), b.HelperEnv(dsn)...), "HELPER_LOG="+id)
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
