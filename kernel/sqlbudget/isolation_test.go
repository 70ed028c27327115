package sqlbudget_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// serializablePools opens n pools, standing in for n processes, on a new
// PostgreSQL database whose default isolation is serializable, and
// a Store over each.
func serializablePools(t *testing.T, n int) []*sqlbudget.Store {
	t.Helper()
	dsn := sqltest.SerializablePostgresSchema(t)
	all := make([]*sqlbudget.Store, n)
	for i := range all {
		var err error
		all[i], err = sqlbudget.Open(ctx, sqltest.Open(t, sqltest.PostgresDriver, dsn), sqlstore.Postgres)
		require.NoError(t, err)
	}
	return all
}

// TestSerializableDefaultIsolation: a charge waits for the budget's row and
// then re-checks its condition against what the previous charge left,
// which is READ COMMITTED behaviour. On a PostgreSQL database whose
// default_transaction_isolation is serializable, concurrent charges and
// refunds must still succeed or be refused with the kernel's sentinels
// (never a serialization failure), and T1 must hold.
func TestSerializableDefaultIsolation(t *testing.T) {
	const pools, tries, cost, limit = 4, 15, 3, 3 * 25
	all := serializablePools(t, pools)
	_, err := all[0].Create(ctx, "shared", limit)
	require.NoError(t, err)
	var mu sync.Mutex
	var gross, refunded int64
	var wg sync.WaitGroup
	errs := make(chan error, pools)
	for p := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bud, err := all[p].Open(ctx, "shared")
			if err != nil {
				errs <- err
				return
			}
			for i := 0; i < tries; i++ {
				a := fmt.Sprintf("p%d-%d", p, i)
				err := bud.Charge(ctx, a, cost)
				if errors.Is(err, kernel.CheckBudget) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				r := int64(i % 2)
				if err := bud.Refund(ctx, a, r); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				gross += cost
				refunded += r
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	bud, err := all[0].Open(ctx, "shared")
	require.NoError(t, err)
	s, err := bud.Snapshot(ctx)
	require.NoError(t, err)
	assert.LessOrEqual(t, int64(s.Gross-s.Refunded), int64(limit), "T1")
	assert.Equal(t, gross, int64(s.Gross))
	assert.Equal(t, refunded, int64(s.Refunded))
}

// TestSerializableDefaultIsolationCreate: racing OpenOrCreates of one
// budget all succeed on a serializable-by-default database, rather than
// failing with serialization errors.
func TestSerializableDefaultIsolationCreate(t *testing.T) {
	const pools = 4
	all := serializablePools(t, pools)
	for round := 0; round < 20; round++ {
		id := fmt.Sprintf("fleet-%d", round)
		errs := make([]error, pools)
		var wg sync.WaitGroup
		for i := range all {
			wg.Add(1)
			go func() { defer wg.Done(); _, errs[i] = all[i].OpenOrCreate(ctx, id, kernel.Unit) }()
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d pool %d", round, i)
		}
	}
}
