package sqlmigrate_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/sqlmigrate"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

func TestMigrateRunsStepsOnce(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		db := b.OpenNew(t)
		d := sqlmigrate.Dialect(b.Dialect)
		calls := 0
		step := func(ctx context.Context, q sqlmigrate.Querier, d sqlmigrate.Dialect) error {
			calls++
			_, err := q.ExecContext(ctx, "CREATE TABLE migrate_probe_"+strconv.Itoa(calls)+" (x BIGINT)")
			return err
		}
		m := sqlmigrate.Migration{Component: "probe", Steps: []sqlmigrate.Step{step}}
		require.NoError(t, sqlmigrate.Migrate(ctx, db, d, m))
		require.NoError(t, sqlmigrate.Migrate(ctx, db, d, m))
		assert.Equal(t, 1, calls)
		m.Steps = append(m.Steps, step)
		require.NoError(t, sqlmigrate.Migrate(ctx, db, d, m))
		assert.Equal(t, 2, calls)
		v, err := sqlmigrate.Version(ctx, db, d, "probe")
		require.NoError(t, err)
		assert.Equal(t, int64(2), v)

		// A failing step rolls the whole migration back.
		failing := sqlmigrate.Migration{Component: "failing", Steps: []sqlmigrate.Step{
			sqlmigrate.Exec(func(sqlmigrate.Dialect) []string { return []string{"CREATE TABLE migrate_half (x BIGINT)"} }),
			func(ctx context.Context, q sqlmigrate.Querier, d sqlmigrate.Dialect) error {
				return errors.New("step two fails")
			},
		}}
		require.Error(t, sqlmigrate.Migrate(ctx, db, d, failing))
		v, err = sqlmigrate.Version(ctx, db, d, "failing")
		require.NoError(t, err)
		assert.Equal(t, int64(0), v)
		_, err = db.ExecContext(ctx, "CREATE TABLE migrate_half (x BIGINT)")
		require.NoError(t, err, "the first step's table was rolled back")

		// A database at a newer version is refused, not touched.
		require.ErrorIs(t, sqlmigrate.Migrate(ctx, db, d, sqlmigrate.Migration{Component: "probe", Steps: m.Steps[:1]}), sqlmigrate.ErrSchema)
		assert.Equal(t, 2, calls)
	})
}

func TestMigrateRefusesBadArguments(t *testing.T) {
	ctx := context.Background()
	assert.ErrorIs(t, sqlmigrate.Migrate(ctx, nil, "mysql", sqlmigrate.Migration{}), sqlmigrate.ErrDialect)
	assert.Error(t, sqlmigrate.Migrate(ctx, nil, sqlmigrate.SQLite, sqlmigrate.Migration{}))
}

func TestDialect(t *testing.T) {
	assert.NoError(t, sqlmigrate.Postgres.Valid())
	assert.NoError(t, sqlmigrate.SQLite.Valid())
	assert.ErrorIs(t, sqlmigrate.Dialect("mysql").Valid(), sqlmigrate.ErrDialect)
	assert.Equal(t, "SELECT $1, $2 WHERE x = $3", sqlmigrate.Postgres.Rebind("SELECT ?, ? WHERE x = ?"))
	assert.Equal(t, "SELECT ?, ?", sqlmigrate.SQLite.Rebind("SELECT ?, ?"))
}

// TestRebindNumbersPlaceholdersInOrder: for PostgreSQL the n-th ? becomes
// $n and nothing else changes; for SQLite the query is unchanged.
func TestRebindNumbersPlaceholdersInOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pieces := rapid.SliceOf(rapid.StringMatching(`[^?]*`)).Draw(t, "pieces")
		query := strings.Join(pieces, "?")
		var want strings.Builder
		for i, p := range pieces {
			if i > 0 {
				want.WriteString("$" + strconv.Itoa(i))
			}
			want.WriteString(p)
		}
		if got := sqlmigrate.Postgres.Rebind(query); got != want.String() {
			t.Fatalf("Postgres.Rebind(%q) = %q, want %q", query, got, want.String())
		}
		if got := sqlmigrate.SQLite.Rebind(query); got != query {
			t.Fatalf("SQLite.Rebind(%q) = %q", query, got)
		}
	})
}
