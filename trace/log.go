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
type Log struct {
	mu      sync.Mutex
	store   Store
	ds      deferredSyncer // store, when it supports group commit
	one     [1]Entry       // reused batch for single appends (under mu)
	head    Head
	clock   func() time.Time
	retries int
}

// Option configures a Log.
type Option func(*Log)

// WithClock sets the clock that stamps entries (default time.Now).
func WithClock(clock func() time.Time) Option { return func(l *Log) { l.clock = clock } }

// WithConflictRetries sets how many times Append re-reads the store's head
// and tries again when another writer appended first (default 8). It does
// not affect AppendAfter, which never retries.
func WithConflictRetries(n int) Option { return func(l *Log) { l.retries = n } }

// New opens a Log over store, reading its current head. It does not verify
// the store's contents; call Verify for that (File verifies on open).
func New(store Store, opts ...Option) (*Log, error) {
	l := &Log{store: store, clock: time.Now, retries: 8}
	l.ds, _ = store.(deferredSyncer)
	for _, o := range opts {
		o(l)
	}
	h, err := store.Head(context.Background())
	if err != nil {
		return nil, err
	}
	l.head = h
	return l, nil
}

// NewMemoryLog returns a Log over a new Memory store with the real clock.
func NewMemoryLog() *Log {
	l, _ := New(NewMemory())
	return l
}

// Store returns the store behind the log.
func (l *Log) Store() Store { return l.store }

// Head returns the head after the last append this Log made or saw.
func (l *Log) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// Append canonicalises payload (any JSON text) and appends it. The
// returned entry shares its Payload bytes with the store: treat them as
// read-only (Verify would report a change, but the log would be damaged).
func (l *Log) Append(ctx context.Context, kind string, payload []byte) (Entry, error) {
	c, err := canon.Transform(payload)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	return l.appendOwned(ctx, nil, kind, c)
}

// AppendValue appends the canonical JSON encoding of v.
func (l *Log) AppendValue(ctx context.Context, kind string, v any) (Entry, error) {
	c, err := canon.Marshal(v)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	return l.appendOwned(ctx, nil, kind, c)
}

// AppendCanonical appends a payload that is already canonical JSON (it is
// checked, not rewritten). Hot paths build payloads with the canon
// encoders and use this to skip a second encoding pass.
func (l *Log) AppendCanonical(ctx context.Context, kind string, payload []byte) (Entry, error) {
	if err := canon.Valid(payload); err != nil {
		return Entry{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	return l.appendOwned(ctx, nil, kind, append([]byte(nil), payload...))
}

// AppendAfter appends only if the log's head is expected; otherwise it
// returns an error wrapping ErrConflict and appends nothing. It re-reads the
// store's head first, so it also sees entries other processes appended.
// This is the primitive for optimistic concurrency over a shared store.
func (l *Log) AppendAfter(ctx context.Context, expected Head, kind string, payload []byte) (Entry, error) {
	c, err := canon.Transform(payload)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	return l.appendOwned(ctx, &expected, kind, c)
}

// AppendCanonicalAfter is AppendAfter for a payload that is already
// canonical JSON (checked, not rewritten), as AppendCanonical is to Append.
func (l *Log) AppendCanonicalAfter(ctx context.Context, expected Head, kind string, payload []byte) (Entry, error) {
	if err := canon.Valid(payload); err != nil {
		return Entry{}, fmt.Errorf("%w: payload: %w", ErrMalformed, err)
	}
	return l.appendOwned(ctx, &expected, kind, append([]byte(nil), payload...))
}

func (l *Log) appendOwned(ctx context.Context, expected *Head, kind string, payload []byte) (Entry, error) {
	l.mu.Lock()
	if expected != nil {
		h, err := l.store.Head(ctx)
		if err != nil {
			l.mu.Unlock()
			return Entry{}, err
		}
		l.head = h
		if h != *expected {
			l.mu.Unlock()
			return Entry{}, fmt.Errorf("%w: head is size %d hash %s, expected size %d hash %s", ErrConflict, h.Size, h.Hash, expected.Size, expected.Hash)
		}
	}
	for attempt := 0; ; attempt++ {
		e, h, err := next(l.head, kind, payload, l.clock())
		if err != nil {
			l.mu.Unlock()
			return Entry{}, err
		}
		wait, err := l.write(ctx, e)
		if err == nil {
			l.head = h
			l.mu.Unlock()
			if wait != nil {
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
		fresh, herr := l.store.Head(ctx)
		if herr != nil {
			l.mu.Unlock()
			return Entry{}, herr
		}
		l.head = fresh
	}
}

// deferredSyncer is implemented by stores that can write under the Log's
// lock and wait for durability outside it, so that concurrent appenders
// share one fsync (group commit).
type deferredSyncer interface {
	appendDeferred(ctx context.Context, entries []Entry) (wait func() error, err error)
}

func (l *Log) write(ctx context.Context, e Entry) (func() error, error) {
	l.one[0] = e
	defer func() { l.one[0] = Entry{} }()
	if l.ds != nil {
		return l.ds.appendDeferred(ctx, l.one[:])
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

// VerifyStore streams every entry of s through a Verifier.
func VerifyStore(ctx context.Context, s Store) (Head, error) {
	var v Verifier
	for e, err := range s.Entries(ctx, 0) {
		if err != nil {
			return v.Head(), err
		}
		if err := v.Add(e); err != nil {
			return v.Head(), err
		}
	}
	return v.Head(), nil
}

// VerifyStoreAgainst is VerifyStore plus the trusted-head check.
func VerifyStoreAgainst(ctx context.Context, s Store, trusted Head) (Head, error) {
	var v Verifier
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
