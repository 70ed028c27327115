// Package sqlpending keeps the claim bundles that wait for approval in a
// SQL database: a claims.PendingStore for SQLite (one machine) or
// PostgreSQL (several), so that a claims.Session restarted — or another
// one, elsewhere — lists them and accepts their approvals.
//
// # Usage
//
// The host opens the database with its driver (this package imports none);
// the Session's trace can live in the same database (trace/sqlstore):
//
//	import _ "github.com/jackc/pgx/v5/stdlib"
//	db, _ := sql.Open("pgx", os.Getenv("DATABASE_URL"))
//	store, _ := sqlpending.Open(ctx, db, sqlstore.Postgres)
//	s, _ := claims.NewSession(ctx, log, policy, claims.WithPending(store))
//	waiting, _ := s.Pending(ctx) // after a restart too
//	ev, err := s.Approve(ctx, waiting[0].Bundle, waiting[0].Context, "dba", claims.ApprovalApproved, "backup verified")
//
// The package Example runs it on SQLite.
//
// One table (component "claims_pending" in the version table
// verity_schema, migrated as the trace tables are) holds one row per
// waiting bundle: the bytes of its id and its record form
// (claims.EncodePending), which keeps every value a Session may evaluate.
// Sessions sharing the table decide each bundle once: an approval changes
// the row with an UPDATE or DELETE conditional on the record it read
// (CompareAndSwap, CompareAndDelete), so of two approvals from the same
// row exactly one changes it, and the other gets claims.ErrNotPending.
// An evaluation's row is written after its log entry, an approval's
// before; claims.RebuildPending replays the Session's log into the table
// after a crash between the two.
package sqlpending
