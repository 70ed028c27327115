package sqlmigrate

import (
	"context"
	"database/sql"
)

// WithWriteLock runs fn inside a read-write transaction that, on SQLite,
// holds the database's write lock from its first statement (BEGIN
// IMMEDIATE on a dedicated connection, so that a transaction that reads
// before it writes never fails to upgrade its lock), and on PostgreSQL is
// an ordinary READ COMMITTED transaction in which fn takes the locks it
// needs. fn's error rolls the transaction back; otherwise it commits.
func WithWriteLock(ctx context.Context, db *sql.DB, d Dialect, fn func(Querier) error) error {
	return withWriteLock(ctx, db, d, fn)
}
