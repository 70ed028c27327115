// Package storagetest is the conformance suite for belief.Storage
// implementations, in the manner of testing/slogtest and trace/storetest:
// a storage's tests call Run with a function that makes a Storage over a
// new, empty backend, and every Storage in Verity (belief.MemoryStorage,
// belief.FileStorage, belief/sqlstorage on PostgreSQL and SQLite) passes
// the same checks.
//
// # What it checks
//
//   - Contract: List of a new backend is empty and otherwise sorted
//     byte-wise; Create of an existing id is an error wrapping
//     belief.ErrConflict (code CONFLICT) that leaves the existing log
//     alone; Open of a missing id wraps belief.ErrSessionNotFound (code
//     SESSION_NOT_FOUND); what is appended through Create's store is read
//     back through Open's.
//   - TwoServers (skipped when reopen is nil): two Servers over one
//     backend behave like two processes. Each catches up with the other's
//     eliminations, the idempotence table (repeat and CONFLICT) and
//     obligations travel through the store, ExpectHead sees the other
//     server's head (ErrStaleHead), concurrent eliminations from both
//     never fork the log, both end with equal snapshots equal to a replay
//     of the events, the log verifies, and a third Server started then
//     lists and replays the session.
//   - Restart: sessions survive a new Server (over a reopened Storage,
//     when reopen is given): same session list, snapshots and events, a
//     terminated session stays terminated, the idempotence table comes
//     back, new eliminations are accepted and the log verifies.
//   - CacheOfOne: Servers that keep one idle session open and write a
//     checkpoint every few events (two of them, with different intervals,
//     when reopen is given) serve six sessions in turn, so that sessions
//     are opened from their latest checkpoint again and again and catch up
//     with each other's events and checkpoints; every answer (results,
//     error codes, snapshots, events since any event) is the pure core's,
//     also after a restart, and every log verifies in full.
//   - Checkpoints: a Server writing a checkpoint every second event puts
//     one after every second event of the log; a Server started afterwards
//     restores the session from the latest one with the same snapshot,
//     events (since events before and after a checkpoint), idempotence
//     table and obligations, and goes on.
//
// # Start-up and kill -9
//
// Fill writes many sessions into a Storage fast (the pure core's events,
// one batch per session) and BenchmarkStart measures a Server's start-up
// time and first-request latency over them. Workload, Kill and CheckAcks
// are the kill -9 harness: a helper process (the test binary run again)
// eliminates from several goroutines and prints what it acknowledged, the
// test kills it with SIGKILL at a random moment, and a restarted Server
// must find every acknowledged event in logs that verify in full.
//
// # Reopen and Close
//
// Scenarios that need a second view of the same backend call reopen,
// which returns another Storage over the sessions of st, as another
// process would open it: st itself for a MemoryStorage (its stores are
// shared like a database), a new connection pool on the same database for
// a SQL storage. A nil reopen says the backend is single-process
// (belief.FileStorage: trace.File must not be opened twice at once): the
// TwoServers scenario is skipped and Restart reuses st.
//
// Restart stops a process: it closes its Server and then, if the Storage
// implements io.Closer (a test may wrap a Storage to close its connection
// pool, say), closes the Storage and checks the error, before it calls
// reopen. Storages are never closed when reopen is nil.
//
// Session ids are those of belief's shell ([A-Za-z0-9_-], which every
// Storage accepts): the suite does not check which other ids an
// implementation refuses.
package storagetest
