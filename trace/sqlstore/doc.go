// Package sqlstore keeps trace logs in a SQL database through
// database/sql: SQLite for a durable log embedded in one machine,
// PostgreSQL for logs shared by several processes or machines. Each log is
// a trace.Store, so everything in Verity that records to a trace.Log —
// kernel sessions, belief sessions, claim decisions — can record to a
// database unchanged, and trace.VerifyStore verifies what it reads back.
//
// The package imports no driver. The host opens the database with the
// driver of its choice and names the dialect:
//
//	import _ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
//	db, _ := sql.Open("pgx", "postgres://app@db.internal/verity")
//	logs, _ := sqlstore.Open(ctx, db, sqlstore.Postgres)
//
//	import _ "modernc.org/sqlite" // registers "sqlite"
//	db, _ := sql.Open("sqlite", "file:verity.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
//	logs, _ := sqlstore.Open(ctx, db, sqlstore.SQLite)
//
// then creates or opens logs by id (IDs and IDsWithPrefix list them) and
// wraps them in a trace.Log:
//
//	st, _ := logs.Create(ctx, "session-42") // or logs.Open, logs.OpenOrCreate
//	lg, _ := trace.NewLog(st)
//	lg.AppendValue(ctx, "app.event", payload)
//
// # Schema
//
// Open creates the tables, or migrates them, before it returns (Migrate
// does only that, for a host that migrates ahead of time). Schema
// versions are recorded per component in verity_schema (component,
// version); the missing steps are applied in one transaction under an
// exclusive lock (a PostgreSQL advisory lock, SQLite's BEGIN IMMEDIATE),
// so any number of processes may start at once against a new database,
// and a database from a newer release is refused with ErrSchema rather
// than touched. The trace tables (version 1):
//
//	verity_trace_logs    (log_id TEXT PRIMARY KEY)
//	verity_trace_entries (log_id, seq BIGINT, prev BLOB(32), kind TEXT,
//	                      payload BLOB, time TEXT, hash BLOB(32),
//	                      PRIMARY KEY (log_id, seq))
//
// Every field of an entry is stored exactly: the payload as the canonical
// bytes (not as a JSON column type, which could reformat it), the time in
// the log's 30-byte wire form, and both hashes. A reader needs nothing
// from the writer to check a log: it recomputes the chain. Log ids and
// listing order are byte-wise in both dialects (PostgreSQL columns use the
// "C" collation).
//
// Verity's other SQL packages share the database and the version table:
// the shared budget in kernel/sqlbudget is component "budget", migrated
// the same way.
//
// # Concurrent writers
//
// Appending one entry (what trace.Log does) is one statement:
//
//	INSERT INTO verity_trace_entries (...) SELECT <the entry>
//	 WHERE EXISTS (SELECT 1 FROM verity_trace_entries
//	                WHERE log_id = <log> AND seq = <seq> - 1 AND hash = <prev>)
//	ON CONFLICT (log_id, seq) DO NOTHING
//
// and it succeeds exactly when it stored a row. A batch is one
// transaction: it inserts the rows with ON CONFLICT DO NOTHING, checks
// that every row was stored and that the entry before the batch has the
// batch's previous hash, and rolls back otherwise. The database
// orders racing writers: the first to commit keeps its entries, the
// other's insert stores nothing (PostgreSQL makes it wait for the first
// transaction; SQLite admits one writer at a time), and its Append returns
// an error wrapping trace.ErrConflict with the log unchanged. A trace.Log
// answers a conflict by re-reading the head and appending again (up to
// trace.WithConflictRetries times), so processes sharing a log serialise
// without a lock held between appends, and no interleaving can fork the
// chain — the primary key refuses a second entry at any sequence number
// even from a writer that bypasses this package. (The first entry of a
// log, which has no previous entry to check, takes the transaction path.)
//
// SQLite admits one writer at a time: the appends of one process (one
// Logs) queue on a mutex, and other processes wait on SQLite's busy
// timeout, so a SQLite file serves the goroutines of one process much
// better than many processes.
//
// # Reads
//
// Entries reads a page of entries per query (WithPageSize, default 256)
// and holds no connection or transaction while the caller handles them:
// memory is bounded by one page, a million-entry log verifies in constant
// memory through trace.VerifyStore, and a caller may append to the log
// from inside the loop. Every stored field is checked for shape as it is
// read (hash lengths, time form); a bad field is reported wrapping
// trace.ErrCorrupt, and a changed payload or hash breaks the chain where
// it was changed.
//
// # Guarantees and the tests that check them
//
//   - The trace.Store contract, on PostgreSQL and on a SQLite file:
//     TestConformance, TestConformanceSmallPages (storetest.Run).
//   - The database itself refuses a fork: TestDatabaseRejectsFork.
//   - Racing appends: one wins, the other gets trace.ErrConflict and
//     nothing is stored: TestAppendRaceLoserGetsConflict.
//   - Several OS processes appending to one log never fork it and lose no
//     entry: TestProcessesNeverFork.
//   - The same holds, and migrations still run concurrently, on a
//     PostgreSQL database whose default isolation is serializable
//     (transactions ask for READ COMMITTED; a serialization failure of
//     the one-statement append is a conflict):
//     TestSerializableDefaultIsolation.
//   - Behaviour under random appends, stale and forged batches, reads and
//     reopenings matches a naive model: TestStoreStateMachine.
//   - Reads stream and hold no connection: TestEntriesHoldNoConnection.
//   - Tampering in the database is detected on read: TestTamperingDetected.
//   - Row decoding and id validation never panic and accept exactly the
//     stored shapes; the allocation-free time decoder agrees with
//     trace.ParseTime: FuzzDecodeRow, FuzzParseWireTime, FuzzValidID.
//   - Migration is idempotent, concurrent-safe, all-or-nothing, and
//     refuses newer schemas: TestMigrateIdempotentAndConcurrent, and
//     TestMigrateRunsStepsOnce in the migration code Verity's SQL
//     packages share (internal/sqlmigrate).
//
// The PostgreSQL tests need a server: set VERITY_PG_DSN to a postgres://
// URL, or run them under the repository's .ci/with-postgres script, which
// starts a throwaway server. Without it they skip, naming the variable;
// the SQLite tests always run.
//
// # What it does not do
//
// It does not delete or rewrite logs (a log is append-only; the tables
// have no update path). It does not close the *sql.DB, set connection
// pool limits, or choose durability settings: those belong to the host's
// driver configuration. Two settings matter: for SQLite, a busy timeout,
// so concurrent writers wait rather than fail with "database is locked";
// for both, db.SetMaxIdleConns at least the number of goroutines that
// append at once — database/sql keeps only 2 idle connections by default,
// and PostgreSQL forks a server process for every new one. It does not
// make PostgreSQL replication or backups safe; a restored backup is
// checked like any other log, by verifying it against a head kept
// elsewhere (trace.VerifyStoreAgainst).
package sqlstore
