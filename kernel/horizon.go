package kernel

import (
	"fmt"
	"slices"

	"github.com/verity-go/verity/internal/hamt"
)

// defaultHorizon is the horizon of a Session without WithHorizon: the
// number of its most recent executions it keeps for Rollback and Refund.
const defaultHorizon = 1024

// WithHorizon sets the session's horizon: how many of its most recent
// executions (committed, rolled back or not) it keeps — their Records for
// Rollback and History, their ledger entries for Refund (default
// 1024; 0 keeps none). Within the horizon, Rollback and Refund
// work exactly as without one. An execution older than the horizon is
// forgotten, so that a session's memory stays flat over a long life:
// Rollback, Refund and Settle of it fail with ErrBeyondHorizon, never
// with a wrong result. Two kinds of executions are never forgotten while
// they can still change: an open reservation (it stays until Settle, at
// any age) and, under WithHeldExecutions, an execution not yet released.
//
// Since Rollback undoes only the latest execution not rolled back,
// the horizon is also the most executions a session can roll back in a
// row. The budget's totals (gross, refunded, net) and the step counters
// are never forgotten; the check that an execution id is not charged
// twice (ErrDuplicateExecution) reaches back as far as the horizon,
// which is why ids must never repeat (WithIDs).
//
// Replay keeps the horizon it is given: replay a session with at least
// the horizon it was recorded with, or a recorded rollback of an
// execution the replay has forgotten fails (ErrBeyondHorizon). A
// recorded refund of an execution the replay has forgotten (one that was
// held, or refunded by a session with a longer horizon) is checked
// against the budget's totals only.
func WithHorizon(n int) Option {
	return func(c *sessionConfig) { c.horizon = n }
}

// WithHeldExecutions makes every execution the session commits held until
// Release: it stays refundable (and its ledger entry kept) at any age,
// even beyond the horizon. A host that refunds an execution some time
// after it ran — a tool gate settling a call when the tool returns —
// holds executions and releases each one once it is done with it.
func WithHeldExecutions() Option {
	return func(c *sessionConfig) { c.hold = true }
}

// Release ends the hold on execution execID (WithHeldExecutions): from now
// on it is forgotten as soon as it is beyond the horizon, or at once if it
// already is (unless it is an open reservation, kept until settled). It
// fails with ErrUnknownExecution for an execution that is not held.
// Release records nothing: it changes what the session keeps, not what
// it did.
func (s *Session) Release(execID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.held[execID]; !ok {
		return fmt.Errorf("%w: %q is not held", ErrUnknownExecution, execID)
	}
	delete(s.held, execID)
	s.forgetIfBeyond(execID)
	return nil
}

// Forget drops the ledger entries of executions execIDs from m:
// afterwards Rollback, Refund and Settle of them fail with
// ErrUnknownExecution and Budget.Charged does not know them. The totals
// (gross, refunded, net) and the step counters are unchanged, so T1, T2
// and T4 hold as before. An open reservation cannot be forgotten
// (ErrReservationOpen), nor an execution m does not know
// (ErrUnknownExecution); on error m is returned unchanged. A Session
// forgets the executions beyond its horizon (WithHorizon), several at a
// time.
func (k *Kernel) Forget(m Meter, execIDs ...string) (Meter, error) {
	if m.tag != k.tag {
		return m, fmt.Errorf("%w: the meter was started by another kernel (use Kernel.Start)", ErrStaleVerdict)
	}
	for _, id := range execIDs {
		if m.open.find(id) >= 0 {
			return m, fmt.Errorf("%w: %q: settle it", ErrReservationOpen, id)
		}
		if _, ok := m.budget.ledger.get(keyHash(id), id); !ok {
			return m, fmt.Errorf("%w: %q", ErrUnknownExecution, id)
		}
	}
	b := m.budget
	ledger, n := b.ledger.del(execIDs)
	next := m
	next.budget = Budget{limit: b.limit, gross: b.gross, refunded: b.refunded, ledger: ledger, entries: b.entries - n}
	return next, nil
}

// refundForgotten is a refund of amount of an execution whose ledger
// entry is forgotten, checked against the totals only: Replay uses it for
// a recorded refund of an execution beyond its horizon.
func (b Budget) refundForgotten(amount Cost) (Budget, error) {
	if amount < 0 {
		return b, fmt.Errorf("%w: negative refund %s", ErrInvalidCost, amount)
	}
	if amount > b.gross-b.refunded {
		return b, fmt.Errorf("%w: refund %s, net spend %s", ErrRefundTooLarge, amount, b.Net())
	}
	return Budget{limit: b.limit, gross: b.gross, refunded: b.refunded + amount, ledger: b.ledger, entries: b.entries}, nil
}

// del returns the ledger without keys, and how many it held: the map
// without them (one batch, so that a node is copied once), and the tail
// copied without them when it holds any (the tail is shared with other
// versions, so it is never written in place).
func (l ledger) del(keys []string) (ledger, int) {
	if len(keys) > 8 && 2*len(keys) >= l.m.Len()+l.n {
		return l.rebuild(keys)
	}
	n := 0
	b := l.m.Builder()
	for _, key := range keys {
		if _, ok := b.Delete(key); ok {
			n++
		}
	}
	m := b.Map()
	drop := func(it *ledgerItem) bool { return slices.Contains(keys, it.key) }
	in := 0
	for i := range l.n {
		if drop(&l.tail.items[i]) {
			in++
		}
	}
	if in == 0 {
		return ledger{m: m, tail: l.tail, n: l.n}, n
	}
	// A key in the tail may also be in the map (an older version of its
	// entry): count it once.
	seen := map[string]bool{}
	nt := newTail(l.n)
	k := 0
	for i := range l.n {
		it := &l.tail.items[i]
		if !drop(it) {
			nt.items[k] = *it
			k++
		} else if _, inMap := l.m.Get(it.key); !inMap && !seen[it.key] {
			seen[it.key] = true
			n++
		}
	}
	nt.used.Store(int32(k))
	return ledger{m: m, tail: nt, n: k}, n
}

// rebuild is del for many keys: a new map of the entries that stay, each
// node allocated once, and no tail — cheaper than a path copy per key
// when the keys are a good part of the ledger.
func (l ledger) rebuild(keys []string) (ledger, int) {
	drop := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		drop[k] = struct{}{}
	}
	var b hamt.Builder[string, ledgerEntry, hamt.Seeded[string]]
	b.Grow(max(l.m.Len()+l.n-len(keys), 0))
	n := 0
	for k, v := range l.m.All() {
		if _, ok := drop[k]; ok {
			n++
			continue
		}
		b.Set(k, v)
	}
	counted := map[string]bool{} // a key may be in the tail several times
	for _, it := range l.tail.itemsTo(l.n) {
		if _, ok := drop[it.key]; ok {
			if _, inMap := l.m.Get(it.key); !inMap && !counted[it.key] {
				counted[it.key] = true
				n++
			}
			continue
		}
		b.Set(it.key, it.val)
	}
	return ledger{m: b.Map()}, n
}

// window holds a session's most recent Records, at most limit, in a ring:
// adding one to a full window pushes out the oldest.
type window struct {
	recs  []Record
	start int // index of the oldest once the window is full
	limit int
}

// add appends r and returns the Record it pushed out, if any.
func (w *window) add(r Record) (Record, bool) {
	if w.limit <= 0 {
		return r, true
	}
	if len(w.recs) < w.limit {
		w.recs = append(w.recs, r)
		return Record{}, false
	}
	out := w.recs[w.start]
	w.recs[w.start] = r
	w.start++
	if w.start == w.limit {
		w.start = 0
	}
	return out, true
}

// at returns the i-th Record, oldest first.
func (w *window) at(i int) *Record {
	j := w.start + i
	if j >= len(w.recs) {
		j -= len(w.recs)
	}
	return &w.recs[j]
}

// find returns the Record of execID, searching from the newest (rollbacks
// are of recent executions).
func (w *window) find(execID string) *Record {
	for i := len(w.recs) - 1; i >= 0; i-- {
		if r := w.at(i); r.ExecID == execID {
			return r
		}
	}
	return nil
}

func (w *window) all() []Record {
	out := make([]Record, len(w.recs))
	for i := range out {
		out[i] = w.at(i).clone()
	}
	return out
}

// remember adds rec, committed or replayed, to the window; the execution
// it pushes out is forgotten, unless held or an open reservation (kept
// until released or settled). held says the session holds rec.
func (s *Session) remember(rec Record, held bool) {
	if held {
		if s.held == nil {
			s.held = map[string]struct{}{}
		}
		s.held[rec.ExecID] = struct{}{}
	}
	out, ok := s.window.add(rec)
	if !ok {
		return
	}
	id := out.ExecID
	if _, h := s.held[id]; h || s.meter.open.find(id) >= 0 {
		if s.kept == nil {
			s.kept = map[string]struct{}{}
		}
		s.kept[id] = struct{}{}
		return
	}
	s.forget(id)
}

// forgetIfBeyond forgets execID if it is beyond the horizon and kept only
// for a hold or a reservation that has now ended.
func (s *Session) forgetIfBeyond(execID string) {
	if _, ok := s.kept[execID]; !ok {
		return
	}
	if _, h := s.held[execID]; h || s.meter.open.find(execID) >= 0 {
		return
	}
	delete(s.kept, execID)
	s.forget(execID)
}

// forgetBatch is the fewest executions a session forgets at once (four
// times its horizon when that is more): their ledger entries leave in one
// batch (Kernel.Forget), most of the ledger, which is then rebuilt
// without them — cheaper than a path copy per execution. So a session
// holds at most five horizons' worth of ledger entries, plus its open
// reservations and held executions.
const forgetBatch = 32

// forget forgets execID: at once for Rollback (its Record is gone) and
// for Refund and Settle (they look in s.dropping first), and from the
// ledger with the next batch.
func (s *Session) forget(execID string) {
	if s.dropping == nil {
		s.dropping = map[string]struct{}{}
	}
	s.dropping[execID] = struct{}{}
	s.forgotten++
	if len(s.dropping) >= max(forgetBatch, 4*s.window.limit) {
		s.drop()
	}
}

// drop removes the ledger entries of the executions waiting in s.dropping.
func (s *Session) drop() {
	ids := make([]string, 0, len(s.dropping))
	for id := range s.dropping {
		// Only an id that repeats one charged before (WithIDs promises it
		// does not) can be missing from the ledger: nothing to forget then.
		if _, _, ok := s.meter.budget.Charged(id); ok {
			ids = append(ids, id)
		}
	}
	if m, err := s.k.Forget(s.meter, ids...); err == nil {
		s.meter = m
	}
	clear(s.dropping)
}

// dropped reports whether execID is forgotten and its ledger entry not
// yet dropped.
func (s *Session) dropped(execID string) bool {
	_, ok := s.dropping[execID]
	return ok
}

// beyond words the error for execID, whose Record or ledger entry the
// session does not have: ErrBeyondHorizon when it is kept beyond the
// horizon (held or reserved: no Record) or when the session has forgotten
// executions (execID may be one of them; err is wrapped too), else err.
func (s *Session) beyond(execID string, err error) error {
	if s.dropped(execID) {
		return fmt.Errorf("%w: %q is older than the last %d executions", ErrBeyondHorizon, execID, s.window.limit)
	}
	if _, ok := s.kept[execID]; ok {
		return fmt.Errorf("%w: %q is older than the last %d executions", ErrBeyondHorizon, execID, s.window.limit)
	}
	if s.forgotten == 0 {
		return err
	}
	return fmt.Errorf("%w: %q is not among the last %d executions, the open reservations or the held executions the session keeps: %w",
		ErrBeyondHorizon, execID, s.window.limit, err)
}
