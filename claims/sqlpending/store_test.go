/*
This file checks the SQL pending store. Every test runs on PostgreSQL (when
VERITY_PG_DSN is set; otherwise it skips, naming the variable) and on a
SQLite file.

	the claims.PendingStore contract (claims/pendingtest), with
	conditional swaps of which exactly one of concurrent ones wins   TestConformance
	a kill -9 while a Session evaluates and approves loses nothing
	acknowledged; the log verifies; a rebuild from it agrees         TestKillDuringEvaluations
	errors name their origin once                                    TestErrorsPrefixedOnce
*/

package sqlpending_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/claims/pendingtest"
	"github.com/verity-go/verity/claims/sqlpending"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

func open(t testing.TB, d sqlstore.Dialect, db *sql.DB) *sqlpending.Store {
	t.Helper()
	s, err := sqlpending.Open(context.Background(), db, d)
	require.NoError(t, err)
	return s
}

// claimsLog opens the Session's log "claims" in db.
func claimsLog(t testing.TB, d sqlstore.Dialect, db *sql.DB) *trace.Log {
	t.Helper()
	ctx := context.Background()
	logs, err := sqlstore.Open(ctx, db, d)
	require.NoError(t, err)
	store, err := logs.OpenOrCreate(ctx, "claims")
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	return log
}

func TestConformance(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		pendingtest.Run(t, func(t *testing.T) (claims.PendingStore, func() claims.PendingStore) {
			dsn := b.NewDSN(t)
			db := b.Open(t, dsn)
			return open(t, b.Dialect, db), func() claims.PendingStore {
				require.NoError(t, db.Close())
				return open(t, b.Dialect, b.Open(t, dsn))
			}
		})
	})
}

func TestErrorsPrefixedOnce(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := b.OpenNew(t)
		s := open(t, b.Dialect, db)
		_, err := s.Get(ctx, "nope")
		require.ErrorIs(t, err, claims.ErrNotPending)
		errs := []error{err}
		_, err = sqlpending.Open(ctx, nil, b.Dialect)
		errs = append(errs, err)
		require.NoError(t, db.Close())
		errs = append(errs, s.Put(ctx, claims.Pending{Bundle: pendingtest.Bundle("a")}), s.Remove(ctx, "a"))
		_, err = s.Get(ctx, "a")
		errs = append(errs, err)
		_, err = s.List(ctx)
		errs = append(errs, err)
		for _, err := range errs {
			require.Error(t, err)
			msg := err.Error()
			assert.Equal(t, 1, strings.Count(msg, "sqlpending: ")+strings.Count(msg, "claims: "), "%q", msg)
		}
	})
}

// TestHelperPendingWorkload is not a test on its own: TestKillDuringEvaluations
// runs the test binary again, and the process lands here.
func TestHelperPendingWorkload(t *testing.T) {
	db, d := sqltest.OpenFromEnv(t, "TestKillDuringEvaluations")
	ctx := context.Background()
	s, err := claims.NewSession(ctx, claimsLog(t, d, db), pendingtest.Policy(), claims.WithPending(open(t, d, db)))
	require.NoError(t, err)
	ack := pendingtest.Ack()
	ack("ready")
	require.NoError(t, pendingtest.Workload(ctx, s, fmt.Sprint(os.Getpid()), ack))
}

// TestKillDuringEvaluations: the Session's log and the store in one
// database; a process evaluating and approving from several goroutines
// is killed at a random moment, trial after trial on the same database.
func TestKillDuringEvaluations(t *testing.T) {
	trials := 10
	if testing.Short() {
		trials = 4
	}
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		dsn := b.NewDSN(t)
		checked, waiting := 0, 0
		for range trials {
			acks := pendingtest.Kill(t, "TestHelperPendingWorkload", b.HelperEnv(dsn), time.Duration(20+rand.IntN(200))*time.Millisecond)
			b.AwaitHelpers(t, dsn)
			db := b.Open(t, dsn)
			log := claimsLog(t, b.Dialect, db)
			_, err := log.Verify(ctx)
			require.NoError(t, err)
			store := open(t, b.Dialect, db)
			pendingtest.CheckAcks(t, acks, store)
			waiting = pendingtest.CheckRebuild(t, log, store)
			checked += len(acks)
			require.NoError(t, db.Close())
		}
		t.Logf("%d trials, %d acknowledged calls checked, %d bundles wait at the end", trials, checked, waiting)
	})
}
