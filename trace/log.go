package trace

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/verity-go/verity/internal/canon"
)

// Log is the shell around a Store: it serialises appends so the chain never
// forks, stamps entries with its clock, and keeps the head in memory. It is
// safe for concurrent use.
//
// Entry times never go backwards within a log: an entry is stamped with
// its time (the log's clock, time.Now unless WithClock, or At's), raised
// under the append lock to the time of the entry before it when earlier —
// max(last, now). A clock stepped back, or concurrent shells that read
// their clocks before their turn to append, so give equal times, never
// earlier ones. The last time is read from the store when the log opens
// and whenever the head is re-read (another writer appended first), so
// that writers sharing a store keep it too. Verify does not require it:
// logs written before it may hold earlier times.
type Log struct {
	mu      sync.Mutex
	store   Store
	ds      deferredSyncer  // store, when it supports group commit
	ca      checkedAppender // store, when it can skip the field checks
	one     [1]Entry        // reused batch for single appends (under mu)
	pre     []byte          // the hash preimage of the entry being appended (under mu)
	head    Head
	last    time.Time // the time of the head's entry (under mu): no entry is stamped earlier
	known   bool      // last is read (an empty log's is the zero time)
	clock   func() time.Time
	retries int
}

// Option configures a Log.
type Option func(*Log)

// WithClock sets the clock that stamps entries (default time.Now).
func WithClock(clock func() time.Time) Option { return func(l *Log) { l.clock = clock } }

// WithConflictRetries sets how many times Append re-reads the store's head
// and tries again when another writer appended first (default 8). It does
// not affect an append with After, which never retries.
func WithConflictRetries(n int) Option { return func(l *Log) { l.retries = n } }

// NewLog opens a Log over store, reading its current head. It does not
// verify the store's contents; call Verify for that (File verifies on open).
func NewLog(store Store, opts ...Option) (*Log, error) {
	l := &Log{store: store, clock: time.Now, retries: 8}
	// Only the package's own stores, by their exact type: a caller's type
	// that embeds one (to intercept Append, say) would otherwise have its
	// Append bypassed through the promoted unexported methods.
	switch s := store.(type) {
	case *File:
		l.ds = s
	case *CheckpointStore:
		l.ds = s
	case *Memory:
		l.ca = s
	}
	for _, o := range opts {
		o(l)
	}
	if err := l.readHead(context.Background()); err != nil {
		return nil, err
	}
	return l, nil
}

// readHead reads the store's head into the log (mu held, or the log not
// yet shared); the time of its last entry is read when an append needs it
// (stampAfter), so that a log opened to be read reads no entry.
func (l *Log) readHead(ctx context.Context) error {
	h, err := l.store.Head(ctx)
	if err != nil {
		return err
	}
	if h != l.head {
		l.head, l.last, l.known = h, time.Time{}, h.Size == 0
	}
	return nil
}

// stampAfter reads the time of the head's entry, if not read yet (mu
// held).
func (l *Log) stampAfter(ctx context.Context) error {
	if l.known || l.head.Size == 0 {
		l.known = true
		return nil
	}
	t, err := lastTime(ctx, l.store, l.head)
	if err != nil {
		return err
	}
	l.last, l.known = t, true
	return nil
}

// lastTime is the time of the entry at the head h of store.
//
//go:noinline
func lastTime(ctx context.Context, store Store, h Head) (time.Time, error) {
	for e, err := range store.Entries(ctx, h.Size-1) {
		return e.Time, err
	}
	return time.Time{}, nil
}

// NewMemoryLog returns a Log over a new Memory store with the real clock.
func NewMemoryLog() *Log {
	l, _ := NewLog(NewMemory())
	return l
}

// Close closes the store behind the log when it has a Close method (File
// and the SQL store do; Memory has nothing to close).
func (l *Log) Close() error {
	if c, ok := l.store.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

// AppendOption changes how one Append or AppendValue writes its entry.
//
// It is a plain value, so passing options allocates nothing.
type AppendOption struct {
	at       time.Time // zero: the log's clock
	expected Head
	after    bool // expected is set
}

// At stamps the entry with t instead of the log's clock, so that a shell
// records its own record and the entry with the same instant — unless t
// is before the log's last entry, which stamps that entry's time instead
// (the returned Entry's Time is the one recorded; see Log).
func At(t time.Time) AppendOption { return AppendOption{at: t} }

// After appends only if the log's head is expected; otherwise the append
// returns an error wrapping ErrConflict and writes nothing. The head is
// re-read from the store first, so entries other processes appended are
// seen. It is the primitive for optimistic concurrency over a shared
// store, and is never retried.
func After(expected Head) AppendOption { return AppendOption{expected: expected, after: true} }

// collect merges opts; a later option of the same kind wins.
func collect(opts []AppendOption) (at time.Time, expected *Head) {
	var o AppendOption
	for _, x := range opts {
		if !x.at.IsZero() {
			o.at = x.at
		}
		if x.after {
			o.expected, o.after = x.expected, true
		}
	}
	if o.after {
		return o.at, &o.expected
	}
	return o.at, nil
}

// Store returns the store behind the log.
func (l *Log) Store() Store { return l.store }

// Head returns the head after the last append this Log made or saw.
func (l *Log) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// Append appends payload, any JSON text, in its canonical form (RFC 8785):
// a payload that is already canonical is checked in one pass and copied,
// anything else is canonicalised. The returned entry shares its Payload
// bytes with the store: treat them as read-only (Verify would report a
// change, but the log would be damaged).
func (l *Log) Append(ctx context.Context, kind string, payload []byte, opts ...AppendOption) (Entry, error) {
	c, err := canon.Canonical(payload)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	if len(c) > 0 && len(payload) > 0 && &c[0] == &payload[0] {
		c = append([]byte(nil), c...)
	}
	at, expected := collect(opts)
	return l.appendOwned(ctx, expected, at, kind, c)
}

// AppendValue appends the canonical JSON encoding of v.
func (l *Log) AppendValue(ctx context.Context, kind string, v any, opts ...AppendOption) (Entry, error) {
	c, err := canon.Marshal(v)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	at, expected := collect(opts)
	return l.appendOwned(ctx, expected, at, kind, c)
}

func (l *Log) appendOwned(ctx context.Context, expected *Head, at time.Time, kind string, payload []byte) (Entry, error) {
	l.mu.Lock()
	if expected != nil {
		if err := l.readHead(ctx); err != nil {
			l.mu.Unlock()
			return Entry{}, err
		}
		if h := l.head; h != *expected {
			l.mu.Unlock()
			return Entry{}, fmt.Errorf("%w: head is size %d hash %s, expected size %d hash %s", ErrConflict, h.Size, h.Hash, expected.Size, expected.Hash)
		}
	}
	for attempt := 0; ; attempt++ {
		if err := l.stampAfter(ctx); err != nil {
			l.mu.Unlock()
			return Entry{}, err
		}
		t := at
		if t.IsZero() {
			t = l.clock()
		}
		if t.Before(l.last) && validTime(t) == nil { // an invalid time is refused, not raised
			// Times never go backwards within a log: a clock stepped back,
			// or a shell that read its clock before its turn to append
			// came, stamps the previous entry's time.
			t = l.last
		}
		e, h, err := next(l.head, kind, payload, t, &l.pre)
		if err != nil {
			l.mu.Unlock()
			return Entry{}, err
		}
		wait, err := l.write(ctx, e)
		if err == nil {
			l.head, l.last, l.known = h, e.Time, true
			l.mu.Unlock()
			if wait != nil {
				if d, ok := ctx.Value(deferKey{}).(*Durability); ok {
					d.add(wait)
					return e, nil
				}
				if err := wait(); err != nil {
					return Entry{}, err
				}
			}
			return e, nil
		}
		if !errors.Is(err, ErrConflict) || expected != nil || attempt >= l.retries {
			l.mu.Unlock()
			return Entry{}, err
		}
		if herr := l.readHead(ctx); herr != nil {
			l.mu.Unlock()
			return Entry{}, herr
		}
	}
}

// Durability collects the appends made under a context from
// DeferDurability that are written but may not yet be durable; Wait
// returns once they all are. It is safe for concurrent use.
type Durability struct {
	mu    sync.Mutex
	waits []func() error
}

type deferKey struct{}

// DeferDurability returns a context under which a Log's appends to a
// store with group commit (a File with SyncGroup, or a CheckpointStore
// over one) return as soon as their entry is written, in order, to the
// file, without waiting for the fsync that makes it durable, and the
// Durability that waits for it. It is how
// a shell takes a decision under its own lock and waits for the decision
// to be durable after releasing the lock, so that the decisions of
// concurrent callers, even of one caller, share one fsync.
//
// Nothing may act on such an entry, or report it to anyone, before Wait
// returns nil: until then a crash of the machine (not of the process:
// written bytes are in the operating system's cache) may lose it. What is
// lost is always a suffix of the log, so a later entry — a later
// decision made on the state the lost one left — is lost with it. If Wait
// fails, the store is broken (ErrBroken) and the entries may or may not
// be on disk; reopening the log shows which. Under a store that is
// durable when Append returns (Memory, SyncEveryAppend, the SQL stores)
// the context changes nothing and Wait returns at once.
func DeferDurability(ctx context.Context) (context.Context, *Durability) {
	d := &Durability{}
	return context.WithValue(ctx, deferKey{}, d), d
}

func (d *Durability) add(wait func() error) {
	d.mu.Lock()
	d.waits = append(d.waits, wait)
	d.mu.Unlock()
}

// Wait returns once every entry appended under the context so far is
// durable, or the first error of the syncs that were to make them so.
// Entries appended later are waited for by a later Wait.
func (d *Durability) Wait() error {
	d.mu.Lock()
	waits := d.waits
	d.waits = nil
	d.mu.Unlock()
	var first error
	for _, w := range waits {
		if err := w(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// deferredSyncer is implemented by stores that can write under the Log's
// lock and wait for durability outside it, so that concurrent appenders
// share one fsync (group commit).
// Both are given entries the Log built with next, from a payload it made
// canonical, whose fields ValidFields would accept: the store's own check
// would repeat the Log's.
type deferredSyncer interface {
	appendDeferred(ctx context.Context, entries []Entry, checked bool) (wait func() error, err error)
}

// checkedAppender is implemented by stores that can append entries whose
// fields the Log has already checked without checking them again.
type checkedAppender interface {
	appendChecked(ctx context.Context, entries []Entry) error
}

func (l *Log) write(ctx context.Context, e Entry) (func() error, error) {
	l.one[0] = e
	defer func() { l.one[0] = Entry{} }()
	if l.ds != nil {
		return l.ds.appendDeferred(ctx, l.one[:], true)
	}
	if l.ca != nil {
		return nil, l.ca.appendChecked(ctx, l.one[:])
	}
	return nil, l.store.Append(ctx, l.one[:]...)
}

// Entries yields the log's entries from sequence number from, in order,
// streaming from the store.
func (l *Log) Entries(ctx context.Context, from uint64) iter.Seq2[Entry, error] {
	return l.store.Entries(ctx, from)
}

// Verify streams the whole log from its store and checks the chain. It
// returns the verified head; a break is a *ChainBreakError.
func (l *Log) Verify(ctx context.Context) (Head, error) {
	return VerifyStore(ctx, l.store)
}

// VerifyAgainst verifies the log and that it extends a head kept elsewhere
// (by an auditor, another process, a receipt), which detects truncation.
func (l *Log) VerifyAgainst(ctx context.Context, trusted Head) (Head, error) {
	return VerifyStoreAgainst(ctx, l.store, trusted)
}

// VerifyStore streams every entry of s through a Verifier, which checks
// each entry's fields, the chain and the hashes (the rules a log file's
// reader applies), and returns the verified head. A File's entries have had
// their fields checked as they were read, so for a File only the chain and
// the hashes are checked again.
func VerifyStore(ctx context.Context, s Store) (Head, error) {
	return VerifyStoreAgainst(ctx, s, Head{})
}

// VerifyStoreAgainst is VerifyStore plus the trusted-head check.
func VerifyStoreAgainst(ctx context.Context, s Store, trusted Head) (Head, error) {
	v := verifierFor(s)
	at := Genesis
	for e, err := range s.Entries(ctx, 0) {
		if err != nil {
			return v.Head(), err
		}
		if err := v.Add(e); err != nil {
			return v.Head(), err
		}
		if e.Seq+1 == trusted.Size {
			at = e.Hash
		}
	}
	return v.Head(), checkHead(trusted, v.Head(), at)
}

// verifierFor returns a Verifier for the entries of s, which skips the
// field checks when s has made them already: File.Entries parses every
// record under the field rules.
func verifierFor(s Store) Verifier {
	_, checked := s.(*File)
	return Verifier{fieldsChecked: checked}
}
