package sqlstorage_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/belief/sqlstorage"
	"github.com/verity-go/verity/belief/storagetest"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

var ctx = context.Background()

// storage opens a new connection pool on dsn — what one server process
// would hold — and a Storage over it.
func storage(t testing.TB, b sqltest.Backend, dsn string, opts ...sqlstorage.Option) *sqlstorage.Storage {
	t.Helper()
	db := b.Open(t, dsn)
	st, err := sqlstorage.Open(ctx, db, b.Dialect, opts...)
	require.NoError(t, err)
	return st
}

func server(t testing.TB, st belief.Storage, opts ...belief.Option) *belief.Server {
	t.Helper()
	srv, err := belief.NewServer(ctx, st, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func hypotheses(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("h%02d", i)
	}
	return out
}

func TestStorageContract(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		st := storage(t, b, dsn)
		for _, id := range []string{"s2", "s1", "s3"} {
			_, err := st.Create(ctx, id)
			require.NoError(t, err)
		}
		// Conflicts, missing ids and sorting are storagetest's; these are
		// what SQL adds.
		_, err := st.Create(ctx, "bad\x00id")
		assert.Equal(t, belief.CodeInvalidRequest, belief.CodeOf(err))
		_, err = st.Open(ctx, "bad\x00id")
		assert.Equal(t, belief.CodeSessionNotFound, belief.CodeOf(err), "%v", err)
		got, err := st.Open(ctx, "s2")
		require.NoError(t, err)
		assert.Equal(t, "belief/s2", got.(*sqlstore.Store).ID())

		// Other logs in the database, and sessions under another prefix,
		// are not this storage's sessions.
		_, err = st.Logs().Create(ctx, "kernel/worker-1")
		require.NoError(t, err)
		other := storage(t, b, dsn, sqlstorage.WithPrefix("staging/"))
		_, err = other.Create(ctx, "s9")
		require.NoError(t, err)
		ids, err := st.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"s1", "s2", "s3"}, ids)
		ids, err = other.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"s9"}, ids)
		_, err = other.Open(ctx, "s1")
		assert.Equal(t, belief.CodeSessionNotFound, belief.CodeOf(err))
	})
}

// TestRestartRefusesTamperedLog: a session whose rows were changed in the
// database is refused when a restarted server first uses it, with an error
// naming it, not served.
func TestRestartRefusesTamperedLog(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		db := b.Open(t, dsn)
		st, err := sqlstorage.Open(ctx, db, b.Dialect)
		require.NoError(t, err)
		srv := server(t, st)
		sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"a", "b"}})
		require.NoError(t, err)
		_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "s", ObservationID: "o", Eliminated: []string{"a"}})
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, b.Rebind("UPDATE "+sqlstore.EntriesTable+
			" SET payload = REPLACE(payload, ?, ?) WHERE log_id = ? AND seq = 1"), `"a"`, `"b"`, st.LogID(sess.ID()))
		if err != nil { // PostgreSQL has no REPLACE on bytea; rewrite through a text round trip
			_, err = db.ExecContext(ctx, b.Rebind("UPDATE "+sqlstore.EntriesTable+
				" SET payload = convert_to(replace(convert_from(payload, 'UTF8'), ?, ?), 'UTF8') WHERE log_id = ? AND seq = 1"),
				`"a"`, `"b"`, st.LogID(sess.ID()))
		}
		require.NoError(t, err)
		srv2 := server(t, storage(t, b, dsn))
		_, err = srv2.Session(ctx, sess.ID())
		require.Error(t, err)
		assert.Contains(t, err.Error(), sess.ID())
		assert.ErrorIs(t, err, trace.ErrChainBreak)
	})
}

// pooled is a Storage with its own connection pool, which the conformance
// suite closes when it stops the process that holds it (io.Closer).
type pooled struct {
	*sqlstorage.Storage
	db  *sql.DB
	dsn string
}

func (p pooled) Close() error { return p.db.Close() }

func openPooled(t testing.TB, b sqltest.Backend, dsn string) pooled {
	t.Helper()
	db := b.Open(t, dsn)
	st, err := sqlstorage.Open(ctx, db, b.Dialect)
	require.NoError(t, err)
	return pooled{st, db, dsn}
}

// TestStorageConformance runs belief/storagetest: every server (and every
// reopen, the next process) has its own connection pool on one database,
// and a restart closes the stopped server's pool.
func TestStorageConformance(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		storagetest.Run(t,
			func(t *testing.T) belief.Storage { return openPooled(t, b, b.NewDSN(t)) },
			func(t *testing.T, st belief.Storage) belief.Storage { return openPooled(t, b, st.(pooled).dsn) })
	})
}

// ---- server processes ----

// TestHelperServer is not a test on its own: TestServerProcesses runs the
// test binary again as server processes that land here, each serving the
// shared session and eliminating its share of the hypotheses.
func TestHelperServer(t *testing.T) {
	db, dialect := sqltest.OpenFromEnv(t, "TestServerProcesses")
	st, err := sqlstorage.Open(ctx, db, dialect)
	require.NoError(t, err)
	srv := server(t, st)
	sess, err := srv.Session(ctx, os.Getenv("HELPER_SESSION"))
	require.NoError(t, err)
	for _, h := range strings.Split(os.Getenv("HELPER_HYPS"), ",") {
		_, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "proc", ObservationID: h, Eliminated: []string{h}})
		require.NoError(t, err)
	}
}

// TestServerProcesses: three server processes serve one session at once,
// each eliminating its own hypotheses; the session ends with exactly the
// survivors no process eliminated, one event per elimination, and a log
// that verifies and replays.
func TestServerProcesses(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		srv := server(t, storage(t, b, dsn))
		hyps := hypotheses(20)
		sess, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: hyps})
		require.NoError(t, err)
		const procs = 3
		outs := make([][]byte, procs)
		errs := make([]error, procs)
		var wg sync.WaitGroup
		for p := 0; p < procs; p++ {
			var mine []string
			for i := p; i < len(hyps)-2; i += procs {
				mine = append(mine, hyps[i])
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServer$", "-test.count=1")
			cmd.Env = append(append(os.Environ(), b.HelperEnv(dsn)...),
				"HELPER_SESSION="+sess.ID(), "HELPER_HYPS="+strings.Join(mine, ","))
			wg.Add(1)
			go func() { defer wg.Done(); outs[p], errs[p] = cmd.CombinedOutput() }()
		}
		wg.Wait()
		for p := range errs {
			require.NoError(t, errs[p], "process %d:\n%s", p, outs[p])
		}
		snap, err := sess.Snapshot(ctx) // catches up with the other processes
		require.NoError(t, err)
		assert.Equal(t, hyps[len(hyps)-2:], snap.Survivors)
		evs, err := sess.Events(ctx, "")
		require.NoError(t, err)
		assert.Len(t, evs, 1+len(hyps)-2, "the declaration and one event per elimination")
		replayed, err := belief.Replay(evs)
		require.NoError(t, err)
		assert.Equal(t, snap, replayed.Snapshot())
		_, err = sess.Verify(ctx)
		require.NoError(t, err)
	})
}

// BenchmarkServerStart: a Server over a SQL database holding 10,000
// sessions of 100 events each starts and answers its first request
// (storagetest.BenchmarkStart: start-ms, first-ms). Building the fixture
// takes a while; it is built once per database.
func BenchmarkServerStart(b *testing.B) {
	sqltest.ForEach(b, func(b *testing.B, be sqltest.Backend) {
		st := storage(b, be, be.NewDSN(b))
		ids, err := storagetest.Fill(ctx, st, 10_000, 100)
		require.NoError(b, err)
		storagetest.BenchmarkStart(b, st, ids)
	})
}

// TestHelperKillWorkload is not a test on its own:
// TestKillDuringEliminations runs the test binary again, and the process
// lands here.
func TestHelperKillWorkload(t *testing.T) {
	db, dialect := sqltest.OpenFromEnv(t, "TestKillDuringEliminations")
	st, err := sqlstorage.Open(ctx, db, dialect)
	require.NoError(t, err)
	srv, err := belief.NewServer(ctx, st, storagetest.KillOptions...)
	require.NoError(t, err)
	require.NoError(t, storagetest.Workload(ctx, srv, st, storagetest.Ack()))
}

// TestKillDuringEliminations: a process eliminating from several
// goroutines over sessions in the database is killed with SIGKILL at a
// random moment, trial after trial on the same database; after each, a
// restarted Server on a new pool finds every acknowledged event, and every
// session verifies in full (storagetest.CheckAcks).
func TestKillDuringEliminations(t *testing.T) {
	trials := 10
	if testing.Short() {
		trials = 4
	}
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		checked := 0
		for range trials {
			acks := storagetest.Kill(t, "TestHelperKillWorkload", b.HelperEnv(dsn), time.Duration(20+rand.IntN(200))*time.Millisecond)
			b.AwaitHelpers(t, dsn)
			p := openPooled(t, b, dsn)
			checked += storagetest.CheckAcks(t, p, acks)
			require.NoError(t, p.Close())
		}
		t.Logf("%d trials, %d acknowledged events checked", trials, checked)
	})
}
