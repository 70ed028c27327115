// Package trace is Verity's one log: append-only, hash-chained, verifiable
// by anyone, and replayable. Every shell in the library — kernel actions,
// belief audit events, claim decisions, speculative-lane write intents —
// records into a trace.Log, so one verifier and one replayer serve them all.
//
// # Entries and the chain
//
// An Entry has a sequence number (from 0), the previous entry's hash (the
// Genesis hash, 32 zero bytes, for entry 0), a kind (a short dotted name
// such as "kernel.execute"), a payload in RFC 8785 canonical JSON
// (internal/canon), a UTC time with nanoseconds, and its own hash. The hash
// is SHA-256 over a domain-separated, length-prefixed byte layout that
// covers every other field:
//
//	hash = SHA-256( 0x00 ‖ seq:u64be ‖ prev:32 ‖ len(kind):u32be ‖ kind ‖
//	                time:30 ‖ len(payload):u32be ‖ payload )
//
// where time is "YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ" (always 30 bytes) and the
// leading 0x00 is the entry tag (RFC 6962 style domain separation).
// FORMAT.md in this directory specifies the layout, the file format and a
// worked example precisely enough to verify a log in another language.
//
// # Pure core
//
// Next is the append step as a pure function: (head, kind, payload, time) →
// (entry, new head). A Head is what a log looks like from outside: its size
// and last hash. Verify checks a slice of entries; a Verifier checks a
// stream in constant memory; VerifyAgainst also checks that the log extends
// a head kept elsewhere, so cutting entries off the end is caught
// (*TruncatedError) as well as changing them (*ChainBreakError, carrying
// the index and the expected and actual values).
//
// # Shell
//
// Log wraps a Store: it serialises appends (the chain never forks, however
// many goroutines append), stamps entries with its clock, and streams
// entries back (Entries, from any sequence number). AppendAfter appends only
// if the head is what the caller expects, the primitive for optimistic
// concurrency when several processes share a store; Append re-reads the head
// and retries when another writer got there first.
//
// Stores implement the small Store interface, whose contract (ownership,
// ordering, atomic batches, ErrConflict on a batch that does not continue
// the head, durability) is documented on the type and checked by the
// conformance suite in trace/storetest:
//
//   - Memory is the reference store.
//   - File is the embedded default: an append-only file of length-prefixed,
//     self-checking records. Its SyncPolicy fsyncs every append, or shares
//     one fsync among concurrent appenders (group commit, bounded by batch
//     size and delay), or leaves syncing to the caller. The directory is
//     fsynced when the file is created. OpenFile verifies the whole chain
//     and applies the field rules Append applies (kind, time, payload in
//     canonical JSON), so it reads exactly what Append writes; a file that
//     does not begin with the format's magic is a *NotLogError.
//     A final record cut short by a crash is a *TornTailError, and
//     RepairFile cuts it off after saving the cut bytes in a side file;
//     damage anywhere before the final record is a *CorruptRecordError or
//     *ChainBreakError naming the entry, and is never repaired; nor is an
//     intact final record that does not link (a *ChainBreakError: a crash
//     cannot make one, a removed or forged record can). After an
//     fsync fails the store refuses further work (ErrBroken): the kernel may
//     have dropped the dirty pages, so the only safe continuation is to
//     reopen and re-read what is really on disk.
//
// # Guarantees and the tests that check them
//
//   - Tamper evidence: changing any field of any entry is detected at or
//     before that entry (TestTamperEvidence, TestChainBreakReportsWhere).
//   - Truncation is detected against a trusted head
//     (TestVerifyAgainstDetectsTruncation).
//   - No fork under concurrency (TestLogConcurrentAppendsNeverFork,
//     storetest ConcurrentLogsNeverFork, run with -race).
//   - Crash safety of File: after any sequence of appends, syncs, injected
//     short writes and failed fsyncs, crashes and reopens, the log is a
//     prefix of what was appended, holds everything acknowledged as
//     durable, and verifies (TestFileCrashRecovery, a rapid state machine).
//   - Every single-byte change of a log file is detected on open
//     (TestFileEveryByteFlipDetected); torn tails are repaired without loss
//     (TestFileTornTailRepair); mid-log damage never is
//     (TestFileMidCorruptionNeverRepaired).
//   - The byte layout is pinned by TestHashWorkedExample, whose hashes were
//     checked independently of this code.
//   - The reader holds what the writer holds: a record opens if and only if
//     the writer accepts its fields (TestFileReaderAcceptsExactlyWhatTheWriterWrites,
//     FuzzOpenFile), and File.Append refuses what a reopen would refuse
//     (TestFileAppendWritesWhatOpenReads).
//   - The language-neutral test vectors in testdata/vectors (FORMAT.md §7)
//     give each reading outcome; TestVectors checks OpenFile against them,
//     TestVectorsUpToDate that they are what the generator writes, and
//     TestVectorsWriterAgrees that the writer writes the valid ones.
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
