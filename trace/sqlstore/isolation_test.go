package sqlstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestSerializableDefaultIsolation: the ordering of racing writers and of
// racing migrations rests on READ COMMITTED (a statement that waited for
// another transaction sees what it committed). A PostgreSQL database
// whose default_transaction_isolation is serializable or repeatable read
// (a common hardening setting) must still give the race loser
// trace.ErrConflict, not a serialization failure, and let any number of
// processes migrate a new database at once.
func TestSerializableDefaultIsolation(t *testing.T) {
	ctx := context.Background()
	dsn := sqltest.SerializablePostgresSchema(t)
	const pools = 4
	all := make([]*sqlstore.Logs, pools)
	errs := make([]error, pools)
	var wg sync.WaitGroup
	for i := range all {
		db := sqltest.Open(t, sqltest.PostgresDriver, dsn)
		wg.Add(1)
		go func() { defer wg.Done(); all[i], errs[i] = sqlstore.Open(ctx, db, sqlstore.Postgres) }()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "pool %d migrating a new database", i)
	}
	id := newID()
	_, err := all[0].Create(ctx, id)
	require.NoError(t, err)
	for round := 0; round < 20; round++ {
		s1, err := all[0].Open(ctx, id)
		require.NoError(t, err)
		s2, err := all[1].Open(ctx, id)
		require.NoError(t, err)
		race(t, s1, s2, round)
	}
	s, err := all[2].Open(ctx, id)
	require.NoError(t, err)
	_, err = trace.VerifyStore(ctx, s)
	require.NoError(t, err)
}

// TestSerializableDefaultIsolationCreate: on the same database, racing
// Creates of one id give one store and ErrExists, and racing
// OpenOrCreates all succeed, rather than serialization failures.
func TestSerializableDefaultIsolationCreate(t *testing.T) {
	ctx := context.Background()
	dsn := sqltest.SerializablePostgresSchema(t)
	const pools = 4
	all := make([]*sqlstore.Logs, pools)
	for i := range all {
		var err error
		all[i], err = sqlstore.Open(ctx, sqltest.Open(t, sqltest.PostgresDriver, dsn), sqlstore.Postgres)
		require.NoError(t, err)
	}
	for round := 0; round < 20; round++ {
		id := newID()
		errs := make([]error, 2*pools)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i < pools {
					_, errs[i] = all[i].Create(ctx, id)
				} else {
					_, errs[i] = all[i-pools].OpenOrCreate(ctx, id)
				}
			}()
		}
		wg.Wait()
		created := 0
		for i, err := range errs {
			switch {
			case i >= pools:
				require.NoError(t, err, "round %d OpenOrCreate %d", round, i)
			case err == nil:
				created++
			default:
				require.ErrorIs(t, err, sqlstore.ErrExists, "round %d Create %d", round, i)
			}
		}
		require.LessOrEqual(t, created, 1, "round %d", round)
	}
}
