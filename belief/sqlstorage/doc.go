// Package sqlstorage keeps belief sessions in a SQL database: it is a
// belief.Storage whose session logs are trace/sqlstore logs, in SQLite
// (durable, one machine) or PostgreSQL (shared by several server
// processes or machines).
//
// # Usage
//
// The host opens the database with its driver (this package imports none):
//
//	import _ "github.com/jackc/pgx/v5/stdlib"
//	db, _ := sql.Open("pgx", "postgres://app@db.internal/verity")
//	storage, _ := sqlstorage.Open(ctx, db, sqlstore.Postgres)
//	srv, _ := belief.NewServer(ctx, storage) // sessions open on first use
//
// A session's log is named "belief/" + its session id (WithPrefix changes
// the prefix, which keeps deployments sharing one database apart, and
// keeps belief sessions apart from other logs such as kernel workers').
//
// # Several servers, restarts
//
// Any number of belief servers may use one database at once. Each
// session's order is decided by the database: an event is appended only
// if it continues the log's head (the primary key on (log id, sequence)
// refuses a second entry at a position), and a server that lost a race
// catches up by replaying the other server's events before it decides
// again (belief.Session catches up and retries an append with trace.After).
// So two servers never fork a session, each sees the other's eliminations,
// idempotent repeats and obligations, and ExpectHead conflicts work
// across them. Because every event is in the database, a server that
// restarts — or a new one — opens each session on first use, from its
// latest checkpoint, to the same state; a log changed in the database
// fails verification and is refused, naming the session.
//
// # Guarantees and the tests that check them
//
// Every test runs on PostgreSQL (when VERITY_PG_DSN is set; otherwise it
// skips, naming the variable) and on a SQLite file.
//
//   - The belief.Storage conformance suite (belief/storagetest): conflict on
//     a second Create, not found on a missing id, sorted List; two servers
//     with their own connection pools serve the same sessions consistently,
//     including concurrent writers on both; sessions survive a restart (new
//     pool, new server) with the same snapshots, events and idempotence
//     table: TestStorageConformance.
//   - SQL specifics (impossible ids, store ids, List limited to the
//     prefix): TestStorageContract.
//   - Three server processes serve one session at once; nothing is lost
//     or duplicated and the log replays: TestServerProcesses.
//   - A tampered session is refused on restart: TestRestartRefusesTamperedLog.
//   - A server process killed with SIGKILL during concurrent eliminations,
//     trial after trial, loses nothing it acknowledged, and every session
//     verifies in full after it: TestKillDuringEliminations.
//   - Start-up time and first-request latency over 10,000 sessions:
//     BenchmarkServerStart.
//
// # What it does not cover
//
// Sessions are never deleted (logs are append-only). The package does not
// cache across servers: each server holds the sessions it has open (a
// bounded cache) and catches up from the database before every decision,
// which costs one head query per call. Connection pooling, timeouts and durability
// settings are the host's driver configuration.
package sqlstorage
