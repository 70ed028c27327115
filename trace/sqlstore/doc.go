// Package sqlstore keeps trace logs in a SQL database through
// database/sql: SQLite for a durable log embedded in one machine,
// PostgreSQL for logs shared by several processes or machines. Each log is
// a trace.Store, so everything in Verity that records to a trace.Log can
// record to a database unchanged.
//
// # Usage
//
// The package imports no driver: the host opens the database with the
// driver of its choice and names the dialect.
//
//	import _ "modernc.org/sqlite" // registers "sqlite"; for PostgreSQL, pgx's "pgx" and sqlstore.Postgres
//
//	db, err := sql.Open("sqlite", "file:verity.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
//	if err != nil {
//		return err
//	}
//	logs, err := sqlstore.Open(ctx, db, sqlstore.SQLite) // creates or migrates the tables
//	if err != nil {
//		return err
//	}
//	st, err := logs.OpenOrCreate(ctx, "session-42") // or Create, Open; IDs lists them
//	if err != nil {
//		return err
//	}
//	log, err := trace.NewLog(st)
//	...
//	_, err = log.AppendValue(ctx, "app.event", payload)
//
// Later, or in another process, trace.VerifyStore(ctx, st) checks the whole
// log as it reads it back.
//
// # Schema
//
// Open creates the tables, or migrates them, before it returns (Migrate
// does only that, for a host that migrates ahead of time). Schema
// versions are recorded per component in verity_schema; any number of
// processes may start at once against a new database, and a database from
// a newer release is refused with ErrSchema rather than touched. The trace
// tables (SchemaVersionTrace 1):
//
//	verity_trace_logs    (log_id TEXT PRIMARY KEY)
//	verity_trace_entries (log_id, seq BIGINT, prev BLOB(32), kind TEXT,
//	                      payload BLOB, time TEXT, hash BLOB(32),
//	                      PRIMARY KEY (log_id, seq))
//
// Every field of an entry is stored exactly: the payload as the canonical
// bytes (not as a JSON column type, which could reformat it), the time in
// the log's 30-byte wire form, and both hashes. A reader needs nothing
// from the writer to check a log: it recomputes the chain. Log ids are 1
// to MaxIDLen bytes of UTF-8 without NUL; ids and listing order are
// byte-wise in both dialects. Verity's other SQL packages (the shared
// budget in kernel/sqlbudget, belief/sqlstorage) share the database and
// the version table.
//
// # Concurrent writers and reads
//
// Any number of processes may append to one log: the database orders
// racing writers, the loser's Append stores nothing and returns an error
// wrapping trace.ErrConflict, and a trace.Log answers that by re-reading
// the head and appending again (up to trace.WithConflictRetries times). No
// interleaving can fork a log: the primary key refuses a second entry at
// any sequence number, even from a writer that bypasses this package.
// SQLite admits one writer at a time, so a SQLite file serves the
// goroutines of one process much better than many processes.
//
// Entries reads a page of entries per query (WithPageSize, default 256)
// and holds no connection or transaction while the caller handles them,
// so a log of any length verifies in constant memory and a caller may
// append from inside the loop. Append refuses entries whose fields break
// trace.ValidFields (trace.ErrMalformed), and a row read back that breaks
// them, or has a malformed hash or time, is reported wrapping
// trace.ErrCorrupt: the store reads back only what its Append could have
// written. DESIGN.md gives the statements and the reasons for them.
//
// # What it does not do
//
// It does not delete or rewrite logs (a log is append-only; the tables
// have no update path). It does not close the *sql.DB, set connection
// pool limits, or choose durability settings: those belong to the host's
// driver configuration. Two settings matter: for SQLite, a busy timeout,
// so concurrent writers wait rather than fail with "database is locked";
// for both, db.SetMaxIdleConns at least the number of goroutines that
// append at once (database/sql keeps only 2 idle connections by default,
// and PostgreSQL forks a server process for every new one). It does not
// make PostgreSQL replication or backups safe; a restored backup is
// checked like any other log, by verifying it against a head kept
// elsewhere (trace.VerifyStoreAgainst).
package sqlstore
