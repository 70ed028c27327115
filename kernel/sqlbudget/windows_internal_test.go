package sqlbudget

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestWindowsMigrateFromVersion1: a database whose budget tables are at
// version 1 (before rate windows) is migrated to version 2 by Open; its
// budgets and their charges are kept, and windows work.
func TestWindowsMigrateFromVersion1(t *testing.T) {
	ctx := context.Background()
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		db := b.OpenNew(t)
		d := sqlmigrate.Dialect(b.Dialect)
		v1 := sqlmigrate.Migration{Component: budgetMigration.Component, Steps: budgetMigration.Steps[:1]}
		require.NoError(t, sqlmigrate.Migrate(ctx, db, d, v1))
		_, err := db.Exec(d.Rebind("INSERT INTO "+BudgetsTable+" (budget_id, limit_amount, gross, refunded) VALUES (?, ?, ?, 0)"), "old", 10, 4)
		require.NoError(t, err)

		bs, err := Open(ctx, db, b.Dialect)
		require.NoError(t, err)
		v, err := sqlmigrate.Version(ctx, db, d, "budget")
		require.NoError(t, err)
		assert.EqualValues(t, 2, v)
		bud, err := bs.Open(ctx, "old")
		require.NoError(t, err)
		s, err := bud.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, kernel.BudgetSnapshot{Limit: 10, Gross: 4}, s)
		ok, seen, err := bs.Admit(ctx, "k", time.Unix(1, 0), time.Second, 1)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Zero(t, seen)

		// A second Open finds nothing to do.
		_, err = Open(ctx, db, b.Dialect)
		require.NoError(t, err)
	})
}

// FuzzAdmit: Admit on a SQLite database never panics; it refuses exactly
// the windows it cannot decide (invalid key, duration not positive,
// negative limit, a time outside int64 nanoseconds) with its sentinels,
// changes nothing when it refuses, and otherwise never admits beyond the
// limit.
func FuzzAdmit(f *testing.F) {
	f.Add("k", int64(0), int64(time.Second), 1)
	f.Add("", int64(0), int64(time.Second), 1)
	f.Add("k", int64(math.MaxInt64), int64(1), 1)
	f.Add("k", int64(math.MinInt64), int64(math.MaxInt64), 0)
	f.Add("k\x00", int64(5), int64(-1), -1)
	ctx := context.Background()
	db := sqltest.SQLite(f)
	bs, err := Open(ctx, db, "sqlite")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string, atNs, perNs int64, limit int) {
		at := time.Unix(0, atNs)
		if limit > 1000 {
			limit %= 1000
		}
		var before int
		if err := db.QueryRow("SELECT count(*) FROM " + WindowsTable).Scan(&before); err != nil {
			t.Fatal(err)
		}
		ok, seen, err := bs.Admit(ctx, key, at, time.Duration(perNs), limit)
		invalid := validID("k", key) != nil || perNs <= 0 || limit < 0 || atNs == math.MaxInt64
		if invalid != (err != nil) {
			t.Fatalf("Admit(%q, %d, %d, %d) = %v, want invalid=%v", key, atNs, perNs, limit, err, invalid)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidID) && !errors.Is(err, ErrInvalidWindow) {
				t.Fatalf("error %v is neither sentinel", err)
			}
			var after int
			if err := db.QueryRow("SELECT count(*) FROM " + WindowsTable).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if after != before {
				t.Fatalf("a refused window changed %d rows to %d", before, after)
			}
			return
		}
		if ok && seen >= limit || !ok && seen < limit {
			t.Fatalf("admitted %v with %d seen of %d", ok, seen, limit)
		}
	})
}
