package trace

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"sync"
)

// Store keeps the entries of one log. Implementations must be safe for
// concurrent use.
//
// Ownership: Append must not retain the slice it is given (callers reuse
// it) but may keep the entries' Payload bytes, which callers must not
// modify afterwards; Entries yields entries the caller owns.
//
// Ordering: a store holds a gap-free sequence 0..Size-1. Append must reject,
// with an error wrapping ErrConflict and without storing anything, a batch
// whose first entry does not continue the store's current head (its Seq is
// not Size, or its Prev is not the last hash). This is what keeps two
// writers from forking the chain. Stores need not re-verify hashes on
// Append (Log has computed them); they must store every field exactly.
//
// Fields: Append must reject, with an error wrapping ErrMalformed and
// without storing anything, a batch with an entry ValidFields refuses (a
// bad kind, a time outside years 0000-9999, a payload that is empty, not
// canonical JSON or longer than MaxPayloadLen), so that every store holds
// only what a log file's reader accepts.
//
// Durability: when Append returns nil the entries are as durable as the
// store promises (memory: for the life of the process; File: on disk per
// its sync policy). A store that cannot tell whether a failed write reached
// the disk returns errors wrapping ErrBroken until it is reopened.
type Store interface {
	// Head returns the store's current size and last hash.
	Head(ctx context.Context) (Head, error)
	// Append adds entries that continue the current head, atomically: all or none.
	Append(ctx context.Context, entries ...Entry) error
	// Entries yields the entries from sequence number from, in order. It
	// stops at the end of the log as it was when iteration started or
	// later; an error ends the iteration.
	Entries(ctx context.Context, from uint64) iter.Seq2[Entry, error]
	// Close releases resources; later calls return ErrClosed.
	Close() error
}

// Memory is the reference Store, in memory. Entries live in fixed-size
// chunks so that a growing log never copies what it already holds.
type Memory struct {
	mu     sync.RWMutex
	chunks [][]Entry
	n      uint64
	closed bool
}

const memChunk = 4096

func (m *Memory) at(i uint64) Entry { return m.chunks[i/memChunk][i%memChunk] }

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{} }

// Head implements Store.
func (m *Memory) Head(ctx context.Context) (Head, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return Head{}, ErrClosed
	}
	return m.headLocked(), nil
}

func (m *Memory) headLocked() Head {
	if m.n == 0 {
		return Head{}
	}
	return Head{Size: m.n, Hash: m.at(m.n - 1).Hash}
}

// Append implements Store.
func (m *Memory) Append(ctx context.Context, entries ...Entry) error {
	return m.appendEntries(ctx, entries, false)
}

// appendChecked appends entries whose fields a Log has already checked
// (it builds every entry it appends with next, from a canonical payload),
// without checking them a second time.
func (m *Memory) appendChecked(ctx context.Context, entries []Entry) error {
	return m.appendEntries(ctx, entries, true)
}

func (m *Memory) appendEntries(ctx context.Context, entries []Entry, checked bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if err := continues(m.headLocked(), entries); err != nil {
		return err
	}
	if !checked {
		for _, e := range entries {
			if err := ValidFields(e); err != nil {
				return fmt.Errorf("%w (entry %d)", err, e.Seq)
			}
		}
	}
	for _, e := range entries {
		if m.n%memChunk == 0 {
			// The first chunk starts small and grows, so that a short log
			// (one per belief session, say) does not hold a 4096-entry
			// array; later chunks are allocated whole.
			size := memChunk
			if m.n == 0 {
				size = 16
			}
			m.chunks = append(m.chunks, make([]Entry, 0, size))
		}
		c := len(m.chunks) - 1
		m.chunks[c] = append(m.chunks[c], e)
		m.n++
	}
	return nil
}

// continues checks that entries form a run that extends h, by sequence and
// previous hash (not by recomputing hashes).
func continues(h Head, entries []Entry) error {
	for _, e := range entries {
		if e.Seq != h.Size || e.Prev != h.Hash {
			return fmt.Errorf("%w: entry %d does not continue head (size %d, hash %s)", ErrConflict, e.Seq, h.Size, h.Hash)
		}
		h = Head{Size: e.Seq + 1, Hash: e.Hash}
	}
	return nil
}

// Entries implements Store.
func (m *Memory) Entries(ctx context.Context, from uint64) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for i := from; ; i++ {
			if err := ctx.Err(); err != nil {
				yield(Entry{}, err)
				return
			}
			m.mu.RLock()
			if m.closed {
				m.mu.RUnlock()
				yield(Entry{}, ErrClosed)
				return
			}
			if i >= m.n {
				m.mu.RUnlock()
				return
			}
			e := m.at(i)
			m.mu.RUnlock()
			e.Payload = bytes.Clone(e.Payload)
			if !yield(e, nil) {
				return
			}
		}
	}
}

// Close implements Store.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	return nil
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
