// Package trace is Verity's one log: append-only, hash-chained, verifiable
// by anyone, and replayable. Every shell in the library (kernel actions,
// belief audit events, claim decisions, speculative-lane write intents)
// records into a trace.Log, so one verifier and one replayer serve them all.
//
// # Usage
//
//	store, err := trace.OpenFile("agent.log", trace.FileOptions{}) // verifies what it opens
//	if err != nil {
//		return err
//	}
//	log, err := trace.NewLog(store)
//	if err != nil {
//		return err
//	}
//	defer log.Close()
//	e, err := log.AppendValue(ctx, "agent.step", map[string]any{"action": "deploy"})
//	if err != nil {
//		return err
//	}
//	head := log.Head() // keep it where the log's writer cannot change it
//	...
//	_, err = log.VerifyAgainst(ctx, head) // a changed or cut-off log fails
//
// Append takes any JSON text and stores its canonical form; At(t) stamps
// the entry with the caller's instant (so a shell's record and its entry
// agree), After(head) appends only if the head is still head. Memory is
// the in-memory store (NewMemoryLog is a Log over one), File the embedded
// default, and trace/sqlstore keeps logs in PostgreSQL or SQLite.
//
// # Entries and the chain
//
// An Entry has a sequence number (from 0), the previous entry's hash (the
// Genesis hash, 32 zero bytes, for entry 0), a kind (a short dotted name
// such as "kernel.execute"), a payload in RFC 8785 canonical JSON, a UTC
// time with nanoseconds, and its own hash: SHA-256 over a domain-separated,
// length-prefixed byte layout that covers every other field. FORMAT.md in
// this directory specifies the layout, the file format and worked examples
// precisely enough to verify a log in another language; ValidFields states
// the field rules every store applies.
//
// # Pure core
//
// Next is the append step as a pure function: (head, kind, payload, time) →
// (entry, new head). A Head is what a log looks like from outside: its size
// and last hash. Verify checks a slice of entries; a Verifier checks a
// stream in constant memory. Both apply every rule a log file's reader
// applies (the field rules, the chain, each entry's hash), so they accept
// exactly the entries OpenFile would read back. VerifyAgainst also checks
// that the log extends a head kept elsewhere, so cutting entries off the
// end is caught (*TruncatedError) as well as changing them
// (*ChainBreakError, carrying the index and the expected and actual
// values).
//
// # Log and stores
//
// Log wraps a Store: it serialises appends (the chain never forks, however
// many goroutines append), stamps entries with its clock unless At says
// otherwise, and streams entries back (Entries, from any sequence number).
// An Append with After is the primitive for optimistic concurrency when
// several processes share a store; without it, Append re-reads the head and
// retries when another writer got there first.
//
// Stores implement the small Store interface, whose contract (ownership,
// ordering, field rules, atomic batches, ErrConflict on a batch that does
// not continue the head, durability) is documented on the type and checked
// by the conformance suite in trace/storetest. File is an append-only file
// of length-prefixed, self-checking records; its SyncPolicy fsyncs every
// append, shares one fsync among concurrent appenders (group commit, see
// below), or leaves syncing to the caller. OpenFile verifies the whole chain and applies the field rules
// the writer applies, so it reads exactly what Append writes. A final
// record cut short by a crash is a *TornTailError, which RepairFile cuts
// off after saving the bytes in a side file; damage anywhere else is a
// *CorruptRecordError or *ChainBreakError naming the entry and is never
// repaired; a file without the format's magic is a *NotLogError. After an
// fsync fails the store refuses further work (ErrBroken) until reopened.
// DESIGN.md explains these choices and gives the performance figures.
//
// # Durability and group commit
//
// A File's SyncPolicy says when an append is durable. SyncEveryAppend
// (the zero value) fsyncs inside every Append. SyncGroup is group commit:
// an appender writes its record under the Log's lock, then waits outside
// it for an fsync that covers it; when none is running the appender runs
// it itself, and every record written while an fsync runs is covered by
// the next one. A lone appender pays one fsync, as with SyncEveryAppend;
// n concurrent appenders pay about two between them (GroupMaxDelay, when
// set, holds each fsync back to gather more). SyncManual leaves syncing
// to File.Sync. FileOptions.OnSync reports every fsync's duration, the
// records it covered and its error, for a latency histogram.
//
// DeferDurability goes one step further for a shell that decides under a
// lock of its own (the tool gate's per-caller turn, a kernel session's
// mutex): appends under its context return as soon as the record is
// written, and Durability.Wait, called after the lock is released, waits
// for the fsync. The shell must not act on, or report, an entry before
// Wait returns nil. A CheckpointStore over such a File keeps its group
// commit, and checkpoints only entries that are durable.
//
// What a crash can lose, exactly. Under SyncEveryAppend and SyncGroup an
// Append that returned nil (under DeferDurability: whose Wait returned
// nil) is on disk: no crash loses it. A crash of the process alone loses
// nothing written either, since the operating system keeps the written
// bytes; a crash of the machine (power, kernel) may lose records that
// were written but not yet covered by a completed fsync, and since an
// fsync covers every byte written before it, what is lost is always a
// suffix of the log, possibly ending in a torn record (RepairFile). So a
// record decided on the state an earlier, lost record left is lost with
// it, and the log that reopens is one the writer had at some moment. An
// fsync that fails breaks the store (ErrBroken): the waiting appenders
// get the error and nothing more is written until the log is reopened.
//
// # One writer
//
// A log file has one writer at a time. OpenFile takes an exclusive,
// advisory operating system lock on the log file itself and holds it until
// Close; a second OpenFile of the same file, in this process or another,
// fails at once with a *LockedError (errors.Is ErrLocked) that names the
// file and, on Linux, the process holding it. RepairFile takes the same
// lock. Readers (OpenFileReadOnly, and the verity command's verify,
// inspect and view) take no lock: they work while a writer appends and read
// up to the last complete record. Two writers would otherwise each append
// after the head they saw and fork the chain.
//
// The lock is on the file, not on a lock file beside it, so there is no
// second file to leave behind or to delete by mistake, and it goes wherever
// the log goes. On Linux it is an open file description lock (fcntl
// F_OFD_SETLK): it belongs to the open file, so closing another descriptor
// of the log (a reader's) never drops it, it is refused to a second open in
// the same process, the kernel releases it when the holder exits however it
// exits (never stale), and a reader can test for it without taking it. On
// the BSDs and macOS it is flock(2), with the same ownership but no holder
// pid and no test, so there a reader that meets an incomplete final record
// reports it as a torn tail. Other systems take no lock. The lock is
// advisory: it binds the writers in this module (File, RepairFile, and
// through them belief's FileStorage, which also locks its directory,
// claims' LogPending over a File, the tool gate and verity-mcp), not a
// program writing the bytes by other means. It is not to be relied upon on
// a network file system (NFS maps it onto its own lock protocol, which can
// lose locks when a client or server restarts; others may lock only on one
// machine): a log that several machines write belongs in trace/sqlstore,
// whose stores refuse a batch that does not continue the head.
//
// # Only regular files
//
// A log is a regular file. OpenFile, OpenFileReadOnly and RepairFile open
// without blocking (O_NONBLOCK) and check the type of the file they opened
// (fstat, so a path swapped after a check cannot slip through): a named
// pipe, a device such as /dev/zero, a directory or a socket is a
// *NotRegularError (ErrNotRegular, and ErrNotLog), never read.
//
// # Signed checkpoints
//
// A Checkpoint is a head with the name of the log it belongs to (its
// origin), signed with an Ed25519 key in the text format of C2SP's
// signed-note and tlog-checkpoint, so that transparency-log tooling (and
// golang.org/x/mod/sumdb/note) reads it:
//
//	example.com/agent-7
//	1042
//	W4s0CKlsGNt9bxTt0Gk6cWxE1F+1cnG0JmmKxG8TSIs=
//
//	— example.com/agent-7 Az3grl…base64 of (key id || signature)…=
//
// The first line is the origin, the second the log's size (its number of
// entries), the third the base64 of the hash of entry Size-1 — this log is
// a hash chain, not a Merkle tree, so the third line is that entry's hash
// where a tree log puts its root. Then a blank line and signature lines
// "— NAME BASE64(key id || signature)": the key id is the first four bytes
// of SHA-256(NAME || 0x0A || 0x01 || public key), the signature is Ed25519
// over the three text lines with their newlines. Keys are text in
// x/mod's forms: a verifier key NAME+HASH+BASE64(0x01 || public key), a
// signer key PRIVATE+KEY+NAME+HASH+BASE64(0x01 || seed), HASH the key id
// in hex (GenerateCheckpointKey, ParseSignerKey, ParseVerifierKey,
// ReadSignerKeyFile refuses a key file others may read).
//
// CheckpointSigner.Sign writes a checkpoint; ParseCheckpoint reads one
// strictly (three text lines, no extension lines, canonical base64, one
// rule per field: what it accepts is what Sign writes); a
// CheckpointVerifier's Verify checks the signature by its key (others,
// such as a witness's cosignature, are ignored as the format requires) and
// the origin, which defaults to the key's name. A log extends a
// checkpoint when it has at least Size entries and its entry at Size-1 has
// the checkpoint's hash: VerifyAgainst(entries, c.Head()), or
// VerifyStoreAgainst. CheckpointStore wraps a Store and rewrites a
// checkpoint file (atomically) every N entries and on Close.
//
// What a checkpoint kept by someone else proves: that the key's holder saw
// the log at that size with that head, so any later change to an entry up
// to that size — even a rewrite of the whole log with every hash
// recomputed, which Verify alone accepts — and any truncation below it is
// detected. What it does not prove: anything about the entries after it
// (they are as trustworthy as the chain alone, until the next
// checkpoint); anything at all against whoever holds the signer key, who
// can rewrite the log and sign a new checkpoint of the rewritten one
// (keep the key away from the log's host, or keep earlier checkpoints: two
// checkpoints one log cannot both extend expose it); anything if the
// checkpoint is kept where the log's holder can replace it (store it with
// someone else: an auditor, a ticket, a transparency log). There is no
// witness cosigning here: nothing stops the key holder from showing
// different checkpoints to different people.
//
// # What it does not cover
//
// A hash chain proves that a log has not changed since someone saw its
// head; it cannot stop whoever controls the storage from rewriting the
// whole log and presenting a new head. Keep heads somewhere the writer does
// not control (another service, a receipt to the user, a signed checkpoint)
// and verify against them. The payload's meaning is the recording
// package's business; trace only guarantees its bytes.
package trace
