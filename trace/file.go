package trace

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// fileMagic opens every log file; see FORMAT.md.
const fileMagic = "VTRACE1\n"

// Record sizes (FORMAT.md §4). A body holds the fixed-size fields, a kind
// of 1 to MaxKindLen bytes and a payload of canonical JSON, so at least 1
// and at most MaxPayloadLen bytes.
const (
	frameHeaderLen = 8 // u32be length, u32be CRC-32C of the length
	bodyFixedLen   = int64(8 + 32 + 4 + timeLen + 4 + 32)
	minBodyLen     = bodyFixedLen + 1 + 1
	maxBodyLen     = bodyFixedLen + MaxKindLen + MaxPayloadLen
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxKeptFrames is the largest append buffer a File keeps for the next
// append; a larger one (a batch of large entries) is left to the
// collector.
const maxKeptFrames = 64 << 10

// SyncPolicy says when the File store calls fsync.
type SyncPolicy int

const (
	// SyncEveryAppend fsyncs before every Append returns (the default).
	SyncEveryAppend SyncPolicy = iota
	// SyncGroup is group commit: concurrent appenders share one fsync. An
	// append returns once a sync covering it completes. With GroupMaxDelay
	// zero (the default) a sync starts as soon as a record is waiting and
	// no sync is running, and every record written while one runs is
	// covered by the next: a lone appender pays one fsync, as with
	// SyncEveryAppend, and n concurrent appenders pay about two between
	// them. With GroupMaxDelay set, a sync runs when GroupMaxBatch records
	// are waiting or GroupMaxDelay has passed since the first of them was
	// written, whichever comes first.
	SyncGroup
	// SyncManual never fsyncs on its own; call File.Sync. Appends that
	// were not followed by a successful Sync may be lost in a crash.
	SyncManual
)

// FileOptions configures OpenFile. The zero value is the safe default: an
// fsync per append.
type FileOptions struct {
	Sync          SyncPolicy    // default SyncEveryAppend
	GroupMaxBatch int           // SyncGroup with GroupMaxDelay: this many waiting records start a sync at once (default 64)
	GroupMaxDelay time.Duration // SyncGroup: longest wait before a sync (default 0: none, a sync starts when none is running)

	// OnSync, when set, is called after every fsync that makes appended
	// records durable (under any policy, File.Sync and Close included;
	// not the syncs of OpenFile), with how long it took, how many records
	// it covered and its error: the hook for an fsync latency histogram.
	// It is called without the store's lock held, from the goroutine that
	// ran the fsync; it must return quickly.
	OnSync func(SyncStat)

	fs       fileSystem // nil: the operating system's; the crash tests inject faults here
	readOnly bool       // set by OpenFileReadOnly
}

// SyncStat describes one fsync of appended records (FileOptions.OnSync).
type SyncStat struct {
	Duration time.Duration // how long the fsync took
	Records  int           // records it made durable (written since the previous sync)
	Err      error         // the fsync's error; the store is then broken
}

// TornTailError reports a final record that was cut short or damaged,
// as a crash in the middle of an append leaves it. The entries before
// Offset are intact and verified; RepairFile cuts the tail off.
type TornTailError struct {
	Path   string
	Index  uint64 // sequence number the torn record would have had
	Offset int64  // where the torn record starts
	Size   int64  // file size
	Reason string
	Head   Head // the head of the entries before the torn record: what RepairFile keeps
}

func (e *TornTailError) Error() string {
	return fmt.Sprintf("trace: %s: torn final record (entry %d) at offset %d of %d: %s; RepairFile cuts it off",
		e.Path, e.Index, e.Offset, e.Size, e.Reason)
}

func (e *TornTailError) Unwrap() error { return ErrTornTail }

// CorruptRecordError reports damage before the end of a log file: a record
// that does not decode or does not match its own hash while later bytes
// follow it. It is never repaired automatically.
type CorruptRecordError struct {
	Path   string
	Index  uint64
	Offset int64
	Reason string
	Head   Head // the head of the entries before Index, which verified (zero when a later read found the damage)
}

func (e *CorruptRecordError) Error() string {
	return fmt.Sprintf("trace: %s: corrupt record at entry %d (offset %d): %s", e.Path, e.Index, e.Offset, e.Reason)
}

func (e *CorruptRecordError) Unwrap() error { return ErrCorrupt }

// NotLogError reports a file that does not begin with the trace file magic
// (nor with a prefix of it, which would be a torn header): it is not a
// trace log, or its first bytes were overwritten. It matches ErrNotLog and,
// since like a corrupt record it is never repaired, ErrCorrupt.
type NotLogError struct {
	Path   string
	Header []byte // the file's first bytes, at most len(magic)
}

func (e *NotLogError) Error() string {
	return fmt.Sprintf("trace: %s is not a trace log file: it begins %q, not %q", e.Path, e.Header, fileMagic)
}

func (e *NotLogError) Unwrap() []error { return []error{ErrNotLog, ErrCorrupt} }

// File is the embedded default Store: one append-only file of
// length-prefixed, self-checking records (FORMAT.md). Opening it verifies
// the whole chain. It is safe for concurrent use within one process. One
// File at a time writes a log file: OpenFile holds an exclusive operating
// system lock on the file while it is open, and a second writer (in this
// process or another) is refused with a *LockedError (see "One writer" in
// the package documentation).
type File struct {
	path string
	fs   fileSystem
	opts FileOptions

	mu      sync.Mutex
	f       fsFile
	head    Head
	offsets []int64 // frame offset of each entry
	size    int64   // end of the last complete record
	broken  error
	frames  []byte // the buffer appends encode their records in (cap at most maxKeptFrames)
	closed  bool
	closing bool // a Close is under way; a second one returns ErrClosed

	// group commit
	written, synced uint64 // records written / known durable
	syncing         bool   // an appender is running the group's fsync (GroupMaxDelay 0)
	cond            *sync.Cond
	kick, full      chan struct{}
	done            chan struct{}
	syncerDone      chan struct{}
}

// OpenFile opens or creates the log file at path. A new file is created
// with its header, fsynced, and its directory fsynced. An existing file is
// read and verified from the first byte, applying the same field rules as
// Append: a torn final record is reported as a *TornTailError (run
// RepairFile), a file that does not begin with the magic as a *NotLogError,
// any other damage as a *CorruptRecordError or *ChainBreakError naming the
// entry. An existing empty (0-byte) file is an empty log. A file that
// verifies is fsynced, and so is its directory (an earlier open may have
// created the file and failed before syncing it).
//
// The File holds the log's one-writer lock until Close: if another File
// (in any process) holds it, OpenFile fails at once with a *LockedError
// (ErrLocked) naming the file and, on Linux, the holder's pid. A path that
// is not a regular file (a named pipe, a device, a directory, a socket)
// is refused without blocking, as a *NotRegularError.
func OpenFile(path string, opts FileOptions) (*File, error) {
	s, err := openFile(path, opts)
	if err != nil {
		return nil, ioError(err)
	}
	return s, nil
}

// OpenFileReadOnly opens an existing log file for reading, as an auditor
// or a copy on read-only media needs: it reads and verifies the file as
// OpenFile does, but never creates, writes, syncs or repairs it (a 0-byte
// file reads as an empty log and stays 0 bytes). Append returns
// ErrReadOnly. It takes no lock, so it works while a writer appends: it
// reads the log as it was when opened. A final record that is incomplete
// while a writer holds the log is an append in progress, and the log reads
// up to the last complete record (on Linux, where a reader can ask
// whether a writer holds the lock); with no writer, it is a
// *TornTailError as with OpenFile, and RepairFile is the explicit way to
// cut it. Anything but a regular file is a *NotRegularError.
func OpenFileReadOnly(path string) (*File, error) {
	return OpenFile(path, FileOptions{Sync: SyncManual, readOnly: true})
}

// ioError gives an error of the file system (which names the operation and
// the file) the package's prefix; the package's own errors carry it and
// pass unchanged.
func ioError(err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "trace: ") {
		return err
	}
	return fmt.Errorf("trace: %w", err)
}

// reason is err as the Reason of a *TornTailError or *CorruptRecordError,
// whose own message carries the package's prefix and says that the record
// is corrupt: neither is repeated ("hash mismatch: …", not "trace: corrupt
// record: hash mismatch: …").
func reason(err error) string {
	return strings.TrimPrefix(strings.TrimPrefix(err.Error(), ErrCorrupt.Error()+": "), "trace: ")
}

func openFile(path string, opts FileOptions) (*File, error) {
	if opts.fs == nil {
		opts.fs = osFS{}
	}
	if opts.GroupMaxBatch <= 0 {
		opts.GroupMaxBatch = 64
	}
	if opts.GroupMaxDelay < 0 {
		opts.GroupMaxDelay = 0
	}
	var f fsFile
	var ro *os.File // the read-only file
	var err error
	if opts.readOnly {
		if ro, err = openRegular(path, os.O_RDONLY); err == nil {
			f = osFile{ro}
		}
	} else {
		f, err = opts.fs.OpenFile(path)
	}
	if err != nil {
		return nil, err
	}
	s := &File{path: path, fs: opts.fs, opts: opts, f: f}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	if size == 0 && opts.readOnly {
		s.size = 0 // an empty log: nothing to read, and nothing written
	} else if size == 0 {
		if err := s.writeHeader(); err != nil {
			f.Close()
			return nil, err
		}
	} else {
		sc, err := scanFile(path, f, size)
		if err != nil {
			f.Close()
			return nil, err
		}
		// A reader that finds the final record incomplete while a writer
		// holds the log is looking at an append in progress, not at a
		// crash: it reads up to the last complete record.
		if sc.torn != nil && !(ro != nil && writerActive(ro)) {
			f.Close()
			return nil, sc.torn
		}
		s.head, s.offsets, s.size = sc.head, sc.offsets, sc.end
		if !opts.readOnly {
			// What we just read may sit in the page cache from a process
			// whose fsync failed; sync it so every entry we report is durable.
			if err := f.Sync(); err != nil {
				f.Close()
				return nil, err
			}
			// The file may be one an earlier OpenFile created and failed to
			// finish (or a crash interrupted) before its directory was synced;
			// sync it so that the file itself survives a crash.
			if err := s.fs.SyncDir(filepath.Dir(path)); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	s.written, s.synced = s.head.Size, s.head.Size
	s.cond = sync.NewCond(&s.mu)
	if opts.Sync == SyncGroup && opts.GroupMaxDelay > 0 {
		s.kick = make(chan struct{}, 1)
		s.full = make(chan struct{}, 1)
		s.done = make(chan struct{})
		s.syncerDone = make(chan struct{})
		go s.syncer()
	}
	return s, nil
}

func (s *File) writeHeader() error {
	if _, err := s.f.Write([]byte(fileMagic)); err != nil {
		return err
	}
	if err := s.f.Sync(); err != nil {
		return err
	}
	// Sync the directory even when the empty file existed already: an
	// earlier OpenFile may have created it and failed before doing so.
	if err := s.fs.SyncDir(filepath.Dir(s.path)); err != nil {
		return err
	}
	s.size = int64(len(fileMagic))
	return nil
}

// scanResult is what reading a log file found.
type scanResult struct {
	head    Head
	offsets []int64
	end     int64          // end of the last good record
	torn    *TornTailError // set when the file ends in a torn record
}

// scanFile reads and verifies every record. Damage before the final record
// is an error; a damaged final record is reported in torn.
func scanFile(path string, r io.ReaderAt, size int64) (scanResult, error) {
	var res scanResult
	hdr := make([]byte, min(size, int64(len(fileMagic))))
	if _, err := r.ReadAt(hdr, 0); err != nil {
		return res, err
	}
	if !bytes.HasPrefix([]byte(fileMagic), hdr) {
		return res, &NotLogError{Path: path, Header: hdr}
	}
	if len(hdr) < len(fileMagic) {
		res.torn = &TornTailError{Path: path, Offset: 0, Size: size, Reason: "file header cut short"}
		return res, nil
	}
	off := int64(len(fileMagic))
	br := bufio.NewReaderSize(io.NewSectionReader(r, off, size-off), 1<<16)
	var head Head
	// pre holds the tag byte and then a record body: the entry's preimage
	// followed by its hash.
	pre := []byte{entryTag}
	var fh [frameHeaderLen]byte
	for off < size {
		idx := head.Size
		remaining := size - off
		torn := func(reason string) (scanResult, error) {
			res.head, res.end = head, off
			res.torn = &TornTailError{Path: path, Index: idx, Offset: off, Size: size, Reason: reason, Head: head}
			return res, nil
		}
		corrupt := func(reason string) (scanResult, error) {
			return res, &CorruptRecordError{Path: path, Index: idx, Offset: off, Reason: reason, Head: head}
		}
		if remaining < frameHeaderLen {
			return torn("frame header cut short")
		}
		if _, err := io.ReadFull(br, fh[:]); err != nil {
			return res, err
		}
		n := binary.BigEndian.Uint32(fh[0:4])
		if crc32.Checksum(fh[0:4], castagnoli) != binary.BigEndian.Uint32(fh[4:8]) {
			// Only zeros after the header: a pre-allocated tail, or a crash
			// that kept part of the final record's header (it may straddle
			// two pages) and nothing after it.
			if allZero(r, off+frameHeaderLen, size) {
				if fh == [frameHeaderLen]byte{} {
					return torn("zero-filled tail")
				}
				return torn("frame header checksum mismatch, only zeros after it")
			}
			return corrupt("frame header checksum mismatch")
		}
		if int64(n) < minBodyLen || int64(n) > maxBodyLen {
			return corrupt(fmt.Sprintf("record length %d outside %d..%d", n, minBodyLen, maxBodyLen))
		}
		if int64(n) > remaining-frameHeaderLen {
			return torn(fmt.Sprintf("record of %d bytes, %d present", n, remaining-frameHeaderLen))
		}
		pre = slices.Grow(pre[:1], int(n))[:1+n]
		if _, err := io.ReadFull(br, pre[1:]); err != nil {
			return res, err
		}
		h, err := checkRecord(pre, head)
		if err != nil {
			// A record that is well formed and matches its own hash is
			// intact; if it does not link, the chain is broken (a record
			// removed, reordered or forged). A crash cannot make such a
			// record, so this holds for the final record too.
			if _, ok := err.(*ChainBreakError); ok {
				return res, err
			}
			// A damaged record is a torn tail when it is the last record
			// written: at the end of the file, or followed only by zeros (a
			// crash kept the new size, not every new page).
			if end := off + frameHeaderLen + int64(n); end == size || allZero(r, end, size) {
				return torn(reason(err))
			}
			return corrupt(reason(err))
		}
		res.offsets = append(res.offsets, off)
		head = Head{Size: idx + 1, Hash: h}
		off += frameHeaderLen + int64(n)
	}
	res.head = head
	res.end = off
	return res, nil
}

// checkRecord checks one record, given as its tag byte followed by its
// body, against the head before it: first its fields (parseBody, an error
// wrapping ErrMalformed), then its own hash (wrapping ErrCorrupt), then
// that it links to head (a *ChainBreakError). It returns the record's hash.
func checkRecord(pre []byte, head Head) (Hash, error) {
	r, err := parseBody(pre[1:])
	if err != nil {
		return Hash{}, err
	}
	if sum := Hash(sha256.Sum256(pre[:len(pre)-len(Hash{})])); sum != r.hash {
		return Hash{}, fmt.Errorf("%w: hash mismatch: stored %s, the record's fields hash to %s", ErrCorrupt, r.hash, sum)
	}
	return r.hash, linkError(head, r.seq, r.prev)
}

func allZero(r io.ReaderAt, from, to int64) bool {
	buf := make([]byte, 4096)
	for from < to {
		n := int64(len(buf))
		if to-from < n {
			n = to - from
		}
		if _, err := r.ReadAt(buf[:n], from); err != nil {
			return false
		}
		for _, c := range buf[:n] {
			if c != 0 {
				return false
			}
		}
		from += n
	}
	return true
}

// appendFrame writes one record: frame header and body (FORMAT.md).
func appendFrame(b []byte, e Entry) []byte {
	n := int(bodyFixedLen) + len(e.Kind) + len(e.Payload)
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(n))
	b = append(b, l[:]...)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(l[:], castagnoli))
	start := len(b)
	b = appendPreimage(b, e.Seq, e.Prev, e.Kind, e.Time, e.Payload)
	// the body is the hash preimage without its tag byte, then the hash
	copy(b[start:], b[start+1:])
	b = b[:len(b)-1]
	return append(b, e.Hash[:]...)
}

// record is a record body split into its fields, pointing into the body.
type record struct {
	seq     uint64
	prev    Hash
	kind    []byte
	time    time.Time
	payload []byte
	hash    Hash
}

// parseBody splits a record body into its fields and checks them against
// the rules of FORMAT.md §1: lengths, kind, time and payload. It copies
// nothing and does not check the hash.
func parseBody(b []byte) (record, error) {
	var r record
	if int64(len(b)) < minBodyLen || int64(len(b)) > maxBodyLen {
		return r, fmt.Errorf("%w: record body of %d bytes, outside %d..%d", ErrMalformed, len(b), minBodyLen, maxBodyLen)
	}
	r.seq = binary.BigEndian.Uint64(b[0:8])
	copy(r.prev[:], b[8:40])
	kl := int64(binary.BigEndian.Uint32(b[40:44]))
	if kl > MaxKindLen || 44+kl+int64(timeLen)+4 > int64(len(b))-32 {
		return r, fmt.Errorf("%w: kind length %d", ErrMalformed, kl)
	}
	p := 44 + int(kl)
	r.kind = b[44:p]
	if err := validKind(r.kind); err != nil {
		return r, err
	}
	t, err := parseTime(b[p : p+timeLen])
	if err != nil {
		return r, err
	}
	r.time = t
	p += timeLen
	pl := int64(binary.BigEndian.Uint32(b[p : p+4]))
	p += 4
	if pl != int64(len(b)-32-p) {
		return r, fmt.Errorf("%w: payload length %d does not fit the record", ErrMalformed, pl)
	}
	r.payload = b[p : len(b)-32]
	if err := ValidPayload(r.payload); err != nil {
		return r, err
	}
	copy(r.hash[:], b[len(b)-32:])
	return r, nil
}

// decodeBody parses a record body into an Entry that owns its bytes. It
// checks the fields as parseBody does; the hash is checked by the Verifier.
func decodeBody(b []byte) (Entry, error) {
	r, err := parseBody(b)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Seq: r.seq, Prev: r.prev, Kind: string(r.kind), Payload: bytes.Clone(r.payload), Time: r.time, Hash: r.hash}, nil
}

// Head implements Store.
func (s *File) Head(ctx context.Context) (Head, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return Head{}, err
	}
	return s.head, nil
}

func (s *File) usable() error {
	if s.closed {
		return ErrClosed
	}
	return s.broken
}

// Append implements Store. It returns when the entries are durable under
// the store's sync policy. A batch with an entry the format cannot hold (an
// invalid kind, a time outside years 0000-9999, a payload that is not
// canonical JSON or is over MaxPayloadLen) is rejected with ErrMalformed
// and nothing is written: Append writes exactly what OpenFile reads back.
func (s *File) Append(ctx context.Context, entries ...Entry) error {
	wait, err := s.appendDeferred(ctx, entries, false)
	if err != nil || wait == nil {
		return err
	}
	return wait()
}

// appendDeferred appends entries and returns what to wait on for their
// durability (nil: nothing). checked: a Log built them (with next, from a
// canonical payload), so their fields are not checked a second time.
func (s *File) appendDeferred(ctx context.Context, entries []Entry, checked bool) (wait func() error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var stat *SyncStat // an fsync made under the lock, reported after it
	defer func() {
		if stat != nil {
			s.opts.OnSync(*stat)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return nil, err
	}
	if s.opts.readOnly {
		return nil, ErrReadOnly
	}
	if err := continues(s.head, entries); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	// Refuse what the file format cannot hold (parseBody would reject it
	// on the next open and the log would read as corrupt).
	if !checked {
		for _, e := range entries {
			if err := ValidFields(e); err != nil {
				return nil, fmt.Errorf("%w (entry %d)", err, e.Seq)
			}
		}
	}
	// The frames go out in one write from a buffer the File keeps (sized
	// once, so that an append allocates nothing for its bytes).
	n := 0
	for _, e := range entries {
		n += frameHeaderLen + int(bodyFixedLen) + len(e.Kind) + len(e.Payload)
	}
	buf := slices.Grow(s.frames[:0], n)
	kept := len(s.offsets)
	for _, e := range entries {
		s.offsets = append(s.offsets, s.size+int64(len(buf)))
		buf = appendFrame(buf, e)
	}
	if cap(buf) <= maxKeptFrames {
		s.frames = buf[:0]
	}
	if n, err := s.f.Write(buf); err != nil || n != len(buf) {
		if err == nil {
			err = io.ErrShortWrite
		}
		s.offsets = s.offsets[:kept]
		// Put the file back as it was; if that fails we no longer know
		// what is on disk, so refuse further appends until reopened.
		if terr := s.f.Truncate(s.size); terr != nil {
			s.broken = fmt.Errorf("%w: write failed (%v) and truncate failed (%v)", ErrBroken, err, terr)
		}
		return nil, fmt.Errorf("trace: append to %s: %w", s.path, err)
	}
	s.size += int64(len(buf))
	last := entries[len(entries)-1]
	s.head = Head{Size: last.Seq + 1, Hash: last.Hash}
	s.written = s.head.Size
	switch s.opts.Sync {
	case SyncEveryAppend:
		records := int(s.written - s.synced)
		start := time.Now()
		err := s.f.Sync()
		if s.opts.OnSync != nil {
			if err != nil {
				records = 0
			}
			stat = &SyncStat{Duration: time.Since(start), Records: records, Err: err}
		}
		if err != nil {
			s.broken = fmt.Errorf("%w: fsync failed: %v", ErrBroken, err)
			return nil, s.broken
		}
		s.synced = s.written
		return nil, nil
	case SyncGroup:
		target := s.written
		if s.opts.GroupMaxDelay == 0 {
			return func() error { return s.waitSynced(target) }, nil
		}
		select {
		case s.kick <- struct{}{}:
		default:
		}
		if s.written-s.synced >= uint64(s.opts.GroupMaxBatch) {
			select {
			case s.full <- struct{}{}:
			default:
			}
		}
		return func() error { return s.waitSynced(target) }, nil
	default:
		return nil, nil
	}
}

// waitSynced returns once the first target records are durable. With
// GroupMaxDelay zero the waiter runs the fsync itself when none is
// running (it leads the group: its fsync covers every record written so
// far); the others wait for it and, if it did not cover them, one of them
// leads the next.
func (s *File) waitSynced(target uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.synced >= target {
			return nil
		}
		if s.broken != nil {
			return s.broken
		}
		if s.closed {
			return ErrClosed
		}
		if s.opts.GroupMaxDelay == 0 && !s.syncing {
			s.syncing = true
			s.syncLocked()
			s.syncing = false
			s.cond.Broadcast()
			continue
		}
		s.cond.Wait()
	}
}

// syncLocked fsyncs what has been written so far with s.mu released
// during the fsync (s.mu is held on entry and on return), records the
// outcome and reports it to OnSync. The caller wakes the waiters.
func (s *File) syncLocked() {
	upto := s.written
	if upto == s.synced || s.broken != nil {
		return
	}
	f := s.f
	s.mu.Unlock()
	start := time.Now()
	err := f.Sync()
	d := time.Since(start)
	s.mu.Lock()
	records := 0
	if err != nil {
		if s.broken == nil {
			s.broken = fmt.Errorf("%w: fsync failed: %v", ErrBroken, err)
		}
	} else if upto > s.synced {
		records = int(upto - s.synced)
		s.synced = upto
	}
	if s.opts.OnSync != nil {
		s.mu.Unlock()
		s.opts.OnSync(SyncStat{Duration: d, Records: records, Err: err})
		s.mu.Lock()
	}
}

// syncer runs group commits until the store is closed (SyncGroup with a
// GroupMaxDelay).
func (s *File) syncer() {
	defer close(s.syncerDone)
	for {
		select {
		case <-s.kick:
		case <-s.done:
			return
		}
		for {
			timer := time.NewTimer(s.opts.GroupMaxDelay)
			select {
			case <-s.full:
			case <-timer.C:
			case <-s.done:
			}
			timer.Stop()
			s.syncOnce()
			s.mu.Lock()
			more := s.written > s.synced && s.broken == nil && !s.closed
			s.mu.Unlock()
			if !more {
				break
			}
		}
	}
}

// syncOnce fsyncs what has been written so far and wakes its waiters.
func (s *File) syncOnce() {
	s.mu.Lock()
	for s.syncing { // one group fsync at a time
		s.cond.Wait()
	}
	s.syncing = true
	s.syncLocked()
	s.syncing = false
	s.cond.Broadcast()
	s.mu.Unlock()
}

// Sync makes every record written so far durable. With SyncManual this is
// the only fsync; with SyncGroup it fsyncs at once instead of waiting for
// the next group commit (and wakes that commit's waiters); with
// SyncEveryAppend there is nothing left to sync and it returns at once.
func (s *File) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.usable(); err != nil {
		return err
	}
	for s.syncing {
		s.cond.Wait()
	}
	if err := s.usable(); err != nil {
		return err
	}
	s.syncing = true
	s.syncLocked()
	s.syncing = false
	s.cond.Broadcast()
	return s.usable()
}

// Entries implements Store, streaming records from the file.
func (s *File) Entries(ctx context.Context, from uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		s.mu.Lock()
		if err := s.usable(); err != nil {
			s.mu.Unlock()
			yield(Entry{}, err)
			return
		}
		if from >= uint64(len(s.offsets)) {
			s.mu.Unlock()
			return
		}
		start, end, f := s.offsets[from], s.size, s.f
		s.mu.Unlock()
		br := bufio.NewReaderSize(io.NewSectionReader(f, start, end-start), 1<<16)
		var frame []byte
		for off := start; off < end; {
			if err := ctx.Err(); err != nil {
				yield(Entry{}, err)
				return
			}
			var fh [frameHeaderLen]byte
			if _, err := io.ReadFull(br, fh[:]); err != nil {
				yield(Entry{}, fmt.Errorf("trace: read %s at %d: %w", s.path, off, err))
				return
			}
			n := binary.BigEndian.Uint32(fh[0:4])
			if crc32.Checksum(fh[0:4], castagnoli) != binary.BigEndian.Uint32(fh[4:8]) || int64(n) > maxBodyLen {
				yield(Entry{}, &CorruptRecordError{Path: s.path, Offset: off, Reason: "frame header checksum mismatch on read"})
				return
			}
			if cap(frame) < int(n) {
				frame = make([]byte, n)
			}
			frame = frame[:n]
			if _, err := io.ReadFull(br, frame); err != nil {
				yield(Entry{}, fmt.Errorf("trace: read %s at %d: %w", s.path, off, err))
				return
			}
			e, err := decodeBody(frame)
			if err != nil {
				yield(Entry{}, &CorruptRecordError{Path: s.path, Offset: off, Reason: reason(err)})
				return
			}
			if !yield(e, nil) {
				return
			}
			off += frameHeaderLen + int64(n)
		}
	}
}

// Close implements Store: it stops the group-commit syncer, makes pending
// records durable and closes the file.
func (s *File) Close() error {
	s.mu.Lock()
	if s.closed || s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	s.closing = true
	s.mu.Unlock()
	if s.done != nil {
		close(s.done)
		<-s.syncerDone
	}
	var err error
	s.mu.Lock()
	for s.syncing { // an appender's group fsync
		s.cond.Wait()
	}
	if s.broken == nil && s.synced < s.written {
		s.syncing = true
		s.syncLocked()
		s.syncing = false
		err = s.broken
	}
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return ioError(err)
}

// RepairResult says what RepairFile did.
type RepairResult struct {
	Entries  uint64 // entries kept (all verified)
	CutBytes int64  // bytes removed from the end of the log
	SideFile string // where the removed bytes were saved ("" if none)
}

// RepairFile cuts a torn final record off the log at path. The removed
// bytes are first written and fsynced to path+".torn-<offset>" (or, if an
// earlier repair left that file, path+".torn-<offset>.<n>") so nothing is
// lost. Damage anywhere before the final record, and a final record that
// is intact but does not link (a chain break, not a crash), are not
// repaired: the *CorruptRecordError or *ChainBreakError is returned and the
// file is left alone. A log with no torn tail (an empty file too) is left
// alone, and a missing one is an error wrapping fs.ErrNotExist. RepairFile
// takes the writer's lock: a log that a writer holds open (whose final
// record may be an append in progress) is refused with a *LockedError.
func RepairFile(path string) (RepairResult, error) {
	res, err := repairFile(path, osFS{})
	return res, ioError(err)
}

func repairFile(path string, fsys fileSystem) (RepairResult, error) {
	// fileSystem.OpenFile creates a missing file; repairing one must not.
	if ok, err := fsys.Exists(path); err != nil {
		return RepairResult{}, err
	} else if !ok {
		return RepairResult{}, fmt.Errorf("trace: repair %s: %w", path, fs.ErrNotExist)
	}
	f, err := fsys.OpenFile(path)
	if err != nil {
		return RepairResult{}, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return RepairResult{}, err
	}
	if size == 0 { // nothing written yet, nothing torn (OpenFile writes the header)
		return RepairResult{}, nil
	}
	sc, err := scanFile(path, f, size)
	if err != nil {
		return RepairResult{}, err
	}
	if sc.torn == nil {
		return RepairResult{Entries: sc.head.Size}, nil
	}
	cut := sc.torn.Offset
	tail := make([]byte, size-cut)
	if _, err := f.ReadAt(tail, cut); err != nil {
		return RepairResult{}, err
	}
	// Never overwrite what an earlier repair kept aside at this offset.
	side := fmt.Sprintf("%s.torn-%d", path, cut)
	for i := 1; ; i++ {
		ok, err := fsys.Exists(side)
		if err != nil {
			return RepairResult{}, err
		}
		if !ok {
			break
		}
		side = fmt.Sprintf("%s.torn-%d.%d", path, cut, i)
	}
	sf, err := fsys.OpenFile(side)
	if err != nil {
		return RepairResult{}, err
	}
	if err := sf.Truncate(0); err != nil {
		sf.Close()
		return RepairResult{}, err
	}
	if _, err := sf.Write(tail); err != nil {
		sf.Close()
		return RepairResult{}, err
	}
	if err := sf.Sync(); err != nil {
		sf.Close()
		return RepairResult{}, err
	}
	if err := sf.Close(); err != nil {
		return RepairResult{}, err
	}
	if err := fsys.SyncDir(filepath.Dir(path)); err != nil {
		return RepairResult{}, err
	}
	if err := f.Truncate(cut); err != nil {
		return RepairResult{}, err
	}
	if err := f.Sync(); err != nil {
		return RepairResult{}, err
	}
	return RepairResult{Entries: sc.head.Size, CutBytes: size - cut, SideFile: side}, nil
}
