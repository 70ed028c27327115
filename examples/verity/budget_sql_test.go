//go:build sql

package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestBudgetShowDB: verity budget show -db lists the shared budgets of a
// database, a budget that renews with one row per period, and -id keeps
// those of one budget.
func TestBudgetShowDB(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		db := b.Open(t, dsn)
		ctx := context.Background()
		bs, err := sqlbudget.Open(ctx, db, b.Dialect)
		require.NoError(t, err)
		fleet, err := bs.OpenOrCreate(ctx, "fleet", 5*kernel.Unit)
		require.NoError(t, err)
		day, err := fleet.ForPeriod(ctx, "2026-11-30")
		require.NoError(t, err)
		require.NoError(t, day.Charge(ctx, "x", int64(2*kernel.Unit)))
		_, err = bs.OpenOrCreate(ctx, "other", kernel.Unit)
		require.NoError(t, err)
		src := dsn
		if b.Name == "sqlite" { // file:PATH?pragmas
			path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
			src = "sqlite:" + path
		}
		r := verity(t, "budget", "show", "-db", src, "-id", "fleet")
		require.Equal(t, exitOK, r.code, r.stderr)
		assert.Regexp(t, `BUDGET\s+SPENT\s+LIMIT\s+REMAINING\nfleet\s+0\s+5\s+5\nfleet@2026-11-30\s+2\s+5\s+3\n$`, r.stdout)
	})
}
