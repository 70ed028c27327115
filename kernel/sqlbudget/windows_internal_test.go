package sqlbudget

import (
	"context"
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
