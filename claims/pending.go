package claims

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// ErrNotPending: no bundle with that id waits for approval — it was
// never evaluated DEFER or ESCALATE, or it has been decided since — or
// the bundle given is not the one that waits (a later evaluation of it
// does).
var ErrNotPending = errors.New("claims: bundle is not pending")

// Pending is a bundle that waits for people: its last evaluation decided
// DEFER or ESCALATE. Bundle is that evaluation's bundle (its
// RequiredApprovals and the approvals given so far are in it); Context is
// the actor and clearance it was evaluated with.
type Pending struct {
	Bundle  ClaimBundle
	Context Context
}

// Awaiting lists the required approvers who have not decided yet.
func (p Pending) Awaiting() []string {
	return slices.DeleteFunc(slices.Clone(p.Bundle.RequiredApprovals), func(r string) bool {
		return slices.ContainsFunc(p.Bundle.AuditTrail.HumanApprovals, func(a Approval) bool { return a.Approver == r })
	})
}

// PendingStore keeps the bundles that wait for approval, by bundle id. A
// Session puts every bundle it evaluates DEFER or ESCALATE; an approval
// replaces it, with CompareAndSwap, by its new evaluation, or removes it,
// with CompareAndDelete, when that decides otherwise. The two are
// conditional so that Sessions sharing a store (in one process or several)
// decide a waiting bundle once: of two approvals read from the same
// pending bundle exactly one wins, and the other gets ErrNotPending.
// Implementations are safe for concurrent use; claims/pendingtest is their
// conformance suite. NewMemoryPending keeps them in memory, NewLogPending
// in a trace.Log (a file, say), claims/sqlpending in SQLite or PostgreSQL.
type PendingStore interface {
	// Put adds p, or replaces the bundle with p's id.
	Put(ctx context.Context, p Pending) error
	// Remove forgets a bundle; removing one that is not there is no error.
	Remove(ctx context.Context, bundleID string) error
	// CompareAndSwap replaces old by next (a bundle with the same id) if
	// old, compared by its record form (EncodePending), is what waits;
	// otherwise it changes nothing and returns an error wrapping
	// ErrNotPending.
	CompareAndSwap(ctx context.Context, old, next Pending) error
	// CompareAndDelete removes old if old, compared by its record form,
	// is what waits; otherwise it changes nothing and returns an error
	// wrapping ErrNotPending.
	CompareAndDelete(ctx context.Context, old Pending) error
	// Get returns a pending bundle, or an error wrapping ErrNotPending.
	Get(ctx context.Context, bundleID string) (Pending, error)
	// List returns every pending bundle, sorted by bundle id.
	List(ctx context.Context) ([]Pending, error)
}

// waits reports whether a decision leaves a bundle waiting for people.
func waits(d Decision) bool { return d == DecisionDefer || d == DecisionEscalate }

// EncodePending writes p in the record form (see Record), canonical JSON:
// the form the durable stores keep. DecodePending reads it back.
func EncodePending(p Pending) ([]byte, error) {
	return canon.Marshal(Record{Actor: p.Context.Actor, Clearance: p.Context.Clearance, Bundle: p.Bundle}.value())
}

// DecodePending reads what EncodePending wrote, as strictly as
// DecodeRecord; a record with an approval is not a Pending.
func DecodePending(b []byte) (Pending, error) {
	rec, err := DecodeRecord(b)
	if err != nil {
		return Pending{}, err
	}
	if rec.Approval != nil {
		return Pending{}, fmt.Errorf("%w: a pending bundle's record holds no approval", ErrMalformed)
	}
	return Pending{Bundle: rec.Bundle, Context: Context{Actor: rec.Actor, Clearance: rec.Clearance}}, nil
}

// sameBundle reports whether two bundles have the same record form.
func sameBundle(a, b ClaimBundle) bool {
	x, errX := canon.Marshal(bundleValue(a))
	y, errY := canon.Marshal(bundleValue(b))
	return errX == nil && errY == nil && bytes.Equal(x, y)
}

// pendingMap is the pending bundles held in memory, by id.
type pendingMap struct {
	mu sync.Mutex
	m  map[string]Pending
}

// put and remove are called with mu held.
func (pm *pendingMap) put(p Pending) {
	if pm.m == nil {
		pm.m = map[string]Pending{}
	}
	pm.m[p.Bundle.ID] = Pending{Bundle: p.Bundle.Clone(), Context: p.Context}
}

// holds returns nil if old, by its record form, is what waits under its
// id, or an error wrapping ErrNotPending; called with mu held.
func (pm *pendingMap) holds(old Pending) error {
	cur, ok := pm.m[old.Bundle.ID]
	if !ok {
		return fmt.Errorf("%w: %q", ErrNotPending, old.Bundle.ID)
	}
	x, errX := EncodePending(cur)
	y, errY := EncodePending(old)
	if errX != nil || errY != nil || !bytes.Equal(x, y) {
		return fmt.Errorf("%w: %q waits as another evaluation of it", ErrNotPending, old.Bundle.ID)
	}
	return nil
}

// sameID refuses a swap that would change the bundle's id.
func sameID(old, next Pending) error {
	if old.Bundle.ID != next.Bundle.ID {
		return fmt.Errorf("%w: a swap keeps the bundle id (%q, not %q)", ErrMalformed, old.Bundle.ID, next.Bundle.ID)
	}
	return nil
}

func (pm *pendingMap) get(ctx context.Context, bundleID string) (Pending, error) {
	if err := ctx.Err(); err != nil {
		return Pending{}, err
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	p, ok := pm.m[bundleID]
	if !ok {
		return Pending{}, fmt.Errorf("%w: %q", ErrNotPending, bundleID)
	}
	return Pending{Bundle: p.Bundle.Clone(), Context: p.Context}, nil
}

func (pm *pendingMap) list(ctx context.Context) ([]Pending, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pm.mu.Lock()
	defer pm.mu.Unlock()
	out := make([]Pending, 0, len(pm.m))
	for _, p := range pm.m {
		out = append(out, Pending{Bundle: p.Bundle.Clone(), Context: p.Context})
	}
	slices.SortFunc(out, func(a, b Pending) int { return cmp.Compare(a.Bundle.ID, b.Bundle.ID) })
	return out, nil
}

// MemoryPending is a PendingStore in memory: what it holds is gone with
// the process (RebuildPending brings it back from the Session's log).
type MemoryPending struct{ pm pendingMap }

// NewMemoryPending returns an empty MemoryPending.
func NewMemoryPending() *MemoryPending { return &MemoryPending{} }

// Put implements PendingStore.
func (s *MemoryPending) Put(ctx context.Context, p Pending) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	s.pm.put(p)
	return nil
}

// Remove implements PendingStore.
func (s *MemoryPending) Remove(ctx context.Context, bundleID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	delete(s.pm.m, bundleID)
	return nil
}

// CompareAndSwap implements PendingStore.
func (s *MemoryPending) CompareAndSwap(ctx context.Context, old, next Pending) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := sameID(old, next); err != nil {
		return err
	}
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	if err := s.pm.holds(old); err != nil {
		return err
	}
	s.pm.put(next)
	return nil
}

// CompareAndDelete implements PendingStore.
func (s *MemoryPending) CompareAndDelete(ctx context.Context, old Pending) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.pm.mu.Lock()
	defer s.pm.mu.Unlock()
	if err := s.pm.holds(old); err != nil {
		return err
	}
	delete(s.pm.m, old.Bundle.ID)
	return nil
}

// Get implements PendingStore.
func (s *MemoryPending) Get(ctx context.Context, bundleID string) (Pending, error) {
	return s.pm.get(ctx, bundleID)
}

// List implements PendingStore.
func (s *MemoryPending) List(ctx context.Context) ([]Pending, error) { return s.pm.list(ctx) }

// RebuildPending brings store in line with a Session's log alone: it
// replays every KindEvaluate and KindApprove entry, and for each bundle
// the log names, puts it if its last recorded evaluation waits (DEFER or
// ESCALATE) and removes it otherwise. Bundles the log never names are
// left alone (a store may serve several sessions). Run it after a crash
// that may have come between a log entry and the store's update, or to
// fill a new store. An entry that does not decode is an error.
func RebuildPending(ctx context.Context, log *trace.Log, store PendingStore) error {
	if log == nil || store == nil {
		return fmt.Errorf("%w: RebuildPending needs a log and a store", ErrMalformed)
	}
	waiting := map[string]Pending{} // the bundles whose last record waits
	var order []string              // every bundle the log names, once
	named := map[string]bool{}
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return pendingError("reading the log", err)
		}
		if e.Kind != KindEvaluate && e.Kind != KindApprove {
			continue
		}
		rec, err := DecodeRecord(e.Payload)
		if err != nil {
			return fmt.Errorf("%w (log entry %d)", err, e.Seq)
		}
		id := rec.Bundle.ID
		if !named[id] {
			named[id] = true
			order = append(order, id)
		}
		if waits(rec.Bundle.Decision) {
			waiting[id] = Pending{Bundle: rec.Bundle, Context: Context{Actor: rec.Actor, Clearance: rec.Clearance}}
		} else {
			delete(waiting, id)
		}
	}
	for _, id := range order {
		var err error
		if p, ok := waiting[id]; ok {
			err = store.Put(ctx, p)
		} else {
			err = store.Remove(ctx, id)
		}
		if err != nil {
			return pendingError("rebuilding the pending store", err)
		}
	}
	return nil
}

// pendingError wraps an error of a PendingStore with context, keeping
// the package prefix once.
func pendingError(context string, err error) error {
	return fmt.Errorf("claims: %s: %w", context, unprefixed{err})
}

// unprefixed is err with its message's "claims: " prefix dropped, for
// wrapping.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), "claims: ") }
func (u unprefixed) Unwrap() error { return u.err }
