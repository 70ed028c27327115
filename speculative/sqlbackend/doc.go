// Package sqlbackend keeps what the speculative firewall guards at rest in
// a SQL database: a speculative.Backend over database/sql for SQLite (one
// machine) and PostgreSQL (several), holding propositions, validation
// evidence, session-scoped speculative hypotheses and every status change.
//
// # Usage
//
// The host opens the database with its driver (this package imports none);
// the Steward's trace can live in the same database (trace/sqlstore):
//
//	import _ "modernc.org/sqlite"
//	db, _ := sql.Open("sqlite", "file:verity.db?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
//	backend, _ := sqlbackend.Open(ctx, db, sqlstore.SQLite)
//	logs, _ := sqlstore.Open(ctx, db, sqlstore.SQLite)
//	store, _ := logs.OpenOrCreate(ctx, "speculative")
//	log, _ := trace.NewLog(store)
//	st, _ := speculative.NewSteward(ctx, log, backend) // continues where the last Steward stopped
//	err = speculative.Compare(ctx, log, backend)         // the database agrees with the log
//
// The package Example runs it.
//
// # Tables
//
// Open creates or migrates four tables (component "speculative" in the
// version table verity_schema, migrated as the trace tables are):
//
//	verity_spec_propositions   (claim_id, document, intent)
//	verity_spec_evidence       (seq, evidence_id, claim_id, document, intent)
//	verity_spec_hypotheses     (seq, session_id, hypothesis_id, claim_id, document, intent, link_intent)
//	verity_spec_status_changes (seq, claim_id, from_status, to_status, evidence, intent)
//
// Each write is one statement. Evidence is content-addressed (a document
// already stored is not stored again); a claim's status is its last status
// change, and the changes are kept. Every row names the write intent that
// made it, which is how Applied answers a Steward restarted after a crash.
//
// # The guards
//
// Guard 3 (only the Steward writes) is the speculative package's: Apply
// takes speculative.Write values, which only a Steward can make, and
// refuses the zero Write. Guard 4 (hypotheses are session-scoped) is in
// the schema and the queries: a hypothesis row has its own table and a
// session id that is neither NULL nor empty, hypotheses are read by
// session only, and the evidence queries read the evidence table alone,
// so a hypothesis never comes back as evidence, whatever it holds.
//
// # What it does not cover
//
// Code holding the database can write to the tables directly; Compare
// (speculative.Compare) finds what such a write changed for the claims and
// sessions the Steward's log names. Rows are never deleted.
package sqlbackend
