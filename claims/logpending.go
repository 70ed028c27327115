package claims

import (
	"context"
	"fmt"

	"github.com/verity-go/verity/trace"
)

// Trace entry kinds written by LogPending.
const (
	KindPendingPut    = "claims.pending.put"    // a bundle waits: its record form (EncodePending)
	KindPendingRemove = "claims.pending.remove" // a bundle no longer waits: {"bundle_id": id}
)

// LogPending is a PendingStore kept in a trace.Log — over a trace.File, a
// durable file: every Put and Remove is an entry, and opening the store
// replays them. It holds the pending bundles in memory (only those), and
// is safe for concurrent use. The log only grows; entries of other kinds
// in it are skipped, so it may be the Session's own log. Over a
// trace.File, the file's one-writer lock keeps a second process from
// opening the same store (trace.OpenFile refuses it with trace.ErrLocked),
// so two processes never approve one bundle from two copies of it.
type LogPending struct {
	pm  pendingMap
	log *trace.Log
}

// decodeRemoval reads the payload of a KindPendingRemove entry.
func decodeRemoval(b []byte) (string, error) {
	return decodeAs[string, *removalMembers](b, "pending removal", recordForm)
}

type removalMembers struct {
	BundleID text `json:"bundle_id"`
}

func (m *removalMembers) value() string { return string(m.BundleID) }

// NewLogPending opens the store kept in log, replaying its entries. An
// entry of the store's kinds that does not decode is an error.
func NewLogPending(ctx context.Context, log *trace.Log) (*LogPending, error) {
	if log == nil {
		return nil, fmt.Errorf("%w: NewLogPending needs a log", ErrMalformed)
	}
	s := &LogPending{log: log}
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return nil, pendingError("reading the pending log", err)
		}
		switch e.Kind {
		case KindPendingPut:
			p, err := DecodePending(e.Payload)
			if err != nil {
				return nil, fmt.Errorf("%w (log entry %d)", err, e.Seq)
			}
			s.pm.put(p)
		case KindPendingRemove:
			id, err := decodeRemoval(e.Payload)
			if err != nil {
				return nil, fmt.Errorf("%w (log entry %d)", err, e.Seq)
			}
			delete(s.pm.m, id)
		}
	}
	return s, nil
}

// Put implements PendingStore: it appends a KindPendingPut entry.
func (s *LogPending) Put(ctx context.Context, p Pending) error {
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	return s.put(ctx, p)
}

// Remove implements PendingStore: it appends a KindPendingRemove entry
// when the bundle is there.
func (s *LogPending) Remove(ctx context.Context, bundleID string) error {
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	if _, ok := s.pm.m[bundleID]; !ok {
		return ctx.Err()
	}
	return s.remove(ctx, bundleID)
}

// CompareAndSwap implements PendingStore: it appends a KindPendingPut
// entry when old waits.
func (s *LogPending) CompareAndSwap(ctx context.Context, old, next Pending) error {
	if err := sameID(old, next); err != nil {
		return err
	}
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	if err := s.pm.holds(old); err != nil {
		return err
	}
	return s.put(ctx, next)
}

// CompareAndDelete implements PendingStore: it appends a
// KindPendingRemove entry when old waits.
func (s *LogPending) CompareAndDelete(ctx context.Context, old Pending) error {
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	if err := s.pm.holds(old); err != nil {
		return err
	}
	return s.remove(ctx, old.Bundle.ID)
}

// put and remove record a change and make it; called with pm.mu held.
func (s *LogPending) put(ctx context.Context, p Pending) error {
	b, err := EncodePending(p)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if _, err := s.log.Append(ctx, KindPendingPut, b); err != nil {
		return pendingError("recording a pending bundle", err)
	}
	s.pm.put(p)
	return nil
}

func (s *LogPending) remove(ctx context.Context, bundleID string) error {
	if _, err := s.log.AppendValue(ctx, KindPendingRemove, map[string]any{"bundle_id": stringValue(bundleID)}); err != nil {
		return pendingError("recording a decided bundle", err)
	}
	delete(s.pm.m, bundleID)
	return nil
}

// Get implements PendingStore.
func (s *LogPending) Get(ctx context.Context, bundleID string) (Pending, error) {
	return s.pm.get(ctx, bundleID)
}

// List implements PendingStore.
func (s *LogPending) List(ctx context.Context) ([]Pending, error) { return s.pm.list(ctx) }
