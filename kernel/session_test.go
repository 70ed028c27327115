package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// fakeShared is an in-memory SharedBudget that can be told to fail, and
// fails on a cancelled context.
type fakeShared struct {
	mu          sync.Mutex
	balance     int64
	charged     map[string]int64
	refunded    map[string]int64
	failCharge  bool
	failRefund  bool
	charges     int
	refundCalls int
}

func newFakeShared(balance int64) *fakeShared {
	return &fakeShared{balance: balance, charged: map[string]int64{}, refunded: map[string]int64{}}
}

var errSharedDown = errors.New("shared budget unavailable")

func (f *fakeShared) Charge(ctx context.Context, id string, cost int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.charges++
	if f.failCharge {
		return errSharedDown
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if cost > f.balance {
		return fmt.Errorf("%w: shared balance %d, cost %d", kernel.CheckBudget, f.balance, cost)
	}
	if _, dup := f.charged[id]; dup {
		return fmt.Errorf("duplicate charge %q", id)
	}
	f.balance -= cost
	f.charged[id] = cost
	return nil
}

func (f *fakeShared) Refund(ctx context.Context, id string, amount int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refundCalls++
	if f.failRefund {
		return errSharedDown
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if amount > f.charged[id]-f.refunded[id] {
		return fmt.Errorf("refund %d exceeds charge of %q", amount, id)
	}
	f.refunded[id] += amount
	f.balance += amount
	return nil
}

func (f *fakeShared) Balance() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.balance
}

// flakyStore is a trace.Store whose appends fail while fail is set.
type flakyStore struct {
	*trace.Memory
	fail atomic.Bool
}

var errDisk = errors.New("disk full")

func (s *flakyStore) Append(ctx context.Context, entries ...trace.Entry) error {
	if s.fail.Load() {
		return errDisk
	}
	return s.Memory.Append(ctx, entries...)
}

func (s *flakyStore) Entries(ctx context.Context, from uint64) iter.Seq2[trace.Entry, error] {
	return s.Memory.Entries(ctx, from)
}

func sessionKernel(t *testing.T) *kernel.Kernel {
	return mustKernel(t, kernel.Config{
		Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit,
		Invariants:       []kernel.Invariant{nonNegative("x")},
		EmergencyActions: []string{"hover"},
	})
}

var incX = kernel.Action{ID: "inc", Name: "increment x", Cost: 2 * kernel.Unit, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}}

func TestSessionSharedBudget(t *testing.T) {
	k := sessionKernel(t)
	store := &flakyStore{Memory: trace.NewMemory()}
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	shared := newFakeShared(int64(3 * kernel.Unit))
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, map[string]any{"x": 0}), kernel.WithSharedBudget(shared))
	require.NoError(t, err)

	// 1. Local checks pass, shared charge succeeds.
	rec, err := sess.Execute(ctx, incX)
	require.NoError(t, err)
	assert.Equal(t, int64(kernel.Unit), shared.Balance())

	// 2. The shared budget refuses: rejected, nothing changes, recorded.
	s0, ks0, head0 := sess.State(), sess.Meter(), log.Head()
	_, err = sess.Execute(ctx, incX)
	require.ErrorIs(t, err, kernel.ErrRejected)
	require.ErrorIs(t, err, kernel.CheckBudget)
	var rej *kernel.RejectedError
	require.ErrorAs(t, err, &rej)
	assert.Equal(t, kernel.CheckSharedBudget, rej.Verdict.Failures()[0].Check)
	assert.Equal(t, s0, sess.State())
	assert.Equal(t, ks0, sess.Meter())
	assert.Equal(t, head0.Size+1, log.Head().Size)
	last := lastEntry(t, log)
	assert.Equal(t, kernel.KindReject, last.Kind)
	assert.Contains(t, string(last.Payload), `"check":"shared_budget"`)

	// 3. The shared budget is down: rejected too, but the zero-cost
	// emergency action does not consult it (T8).
	shared.failCharge = true
	_, err = sess.Execute(ctx, kernel.Action{ID: "inc", Cost: kernel.Unit})
	require.ErrorIs(t, err, errSharedDown)
	calls := shared.charges
	_, err = sess.Execute(ctx, kernel.Action{ID: "hover"})
	require.NoError(t, err)
	assert.Equal(t, calls, shared.charges)
	shared.failCharge = false
	s0, ks0 = sess.State(), sess.Meter()

	// 4. Recording fails after a successful charge: compensated by Refund.
	store.fail.Store(true)
	_, err = sess.Execute(ctx, kernel.Action{ID: "inc", Cost: kernel.Unit})
	require.ErrorIs(t, err, errDisk)
	assert.Equal(t, int64(kernel.Unit), shared.Balance(), "the charge was refunded")
	assert.Equal(t, s0, sess.State())
	assert.Equal(t, ks0, sess.Meter())
	// ... and a failing compensation is reported too.
	shared.failRefund = true
	_, err = sess.Execute(ctx, kernel.Action{ID: "inc", Cost: kernel.Unit})
	require.ErrorIs(t, err, errDisk)
	require.ErrorIs(t, err, errSharedDown)
	shared.failRefund = false
	store.fail.Store(false)
	shared.balance = int64(kernel.Unit) // forget the charge the failed refund left behind

	// 5. Rollback refunds through the shared budget.
	_, err = sess.Rollback(ctx, rec.ExecID)
	require.NoError(t, err)
	assert.Equal(t, int64(3*kernel.Unit), shared.Balance())
	assert.Equal(t, kernel.Cost(0), sess.Meter().Budget().Net())

	// 6. A recording failure during rollback changes nothing.
	rec2, err := sess.Execute(ctx, incX)
	require.NoError(t, err)
	store.fail.Store(true)
	_, err = sess.Rollback(ctx, rec2.ExecID)
	require.ErrorIs(t, err, errDisk)
	assert.Equal(t, int64(kernel.Unit), shared.Balance())
	store.fail.Store(false)
	_, err = sess.Rollback(ctx, rec2.ExecID)
	require.NoError(t, err)

	_, err = log.Verify(ctx)
	require.NoError(t, err)
}

func lastEntry(t *testing.T, log *trace.Log) trace.Entry {
	var last trace.Entry
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		last = e
	}
	return last
}

// TestSessionConcurrentNeverOverspends: many goroutines race on one
// session (run with -race). Exactly floor(B0/cost) executions commit, the
// budget is never exceeded, the trace never forks and replays to the same
// state.
func TestSessionConcurrentNeverOverspends(t *testing.T) {
	k := sessionKernel(t)
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, map[string]any{"x": 0}))
	require.NoError(t, err)
	var ok, rejected atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 10 {
				if _, err := sess.Execute(ctx, incX); err == nil {
					ok.Add(1)
				} else {
					rejected.Add(1)
				}
				if b := sess.Meter().Budget(); b.Net() > b.Limit() {
					t.Errorf("overspent: %s", b.Net())
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(5), ok.Load())
	x, _ := sess.State().Get("x")
	assert.True(t, x.Equal(value.Int(5)))
	head, err := log.Verify(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1+160), head.Size)
	re, err := kernel.Replay(ctx, log, k, sess.ID())
	require.NoError(t, err)
	assert.True(t, re.State().Equal(sess.State()))
	assert.Equal(t, sess.Meter().Budget().Net(), re.Meter().Budget().Net())
}

// TestSharedBudgetAcrossSessions: two sessions (as two processes would)
// share one budget smaller than each local budget; together they never
// spend more than it.
func TestSharedBudgetAcrossSessions(t *testing.T) {
	k := sessionKernel(t)
	shared := newFakeShared(int64(6 * kernel.Unit))
	var sessions []*kernel.Session
	for range 2 {
		s, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, mustState(t, map[string]any{"x": 0}), kernel.WithSharedBudget(shared))
		require.NoError(t, err)
		sessions = append(sessions, s)
	}
	var ok atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 5 {
				if _, err := sessions[i%2].Execute(ctx, incX); err == nil {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int64(3), ok.Load())
	assert.Equal(t, int64(0), shared.Balance())
	total := sessions[0].Meter().Budget().Net() + sessions[1].Meter().Budget().Net()
	assert.Equal(t, 6*kernel.Unit, total)
}

func TestReplayDetectsMismatch(t *testing.T) {
	k := sessionKernel(t)
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, map[string]any{"x": 0}))
	require.NoError(t, err)
	_, err = sess.Execute(ctx, incX)
	require.NoError(t, err)

	// A kernel with another configuration cannot replay the log.
	other := mustKernel(t, kernel.Config{Budget: 11 * kernel.Unit, MinActionCost: kernel.Unit, Invariants: []kernel.Invariant{nonNegative("x")}, EmergencyActions: []string{"hover"}})
	_, err = kernel.Replay(ctx, log, other, sess.ID())
	require.ErrorIs(t, err, kernel.ErrReplay)
	// An unknown session id is an error.
	_, err = kernel.Replay(ctx, log, k, "nope")
	require.ErrorIs(t, err, kernel.ErrReplay)
	// A replayed session continues the same log and counter.
	re, err := kernel.Replay(ctx, log, k, "")
	require.NoError(t, err)
	rec, err := re.Execute(ctx, incX)
	require.NoError(t, err)
	assert.NotEqual(t, sess.History()[0].ExecID, rec.ExecID, "a replayed session never reuses an execution id")
	re2, err := kernel.Replay(ctx, log, k, sess.ID())
	require.NoError(t, err)
	assert.True(t, re2.State().Equal(re.State()))

	// A tampered log does not replay.
	var entries []trace.Entry
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		entries = append(entries, e)
	}
	m := trace.NewMemory()
	entries[1].Payload = []byte(strings.Replace(string(entries[1].Payload), `"inc"`, `"ind"`, 1))
	require.NoError(t, m.Append(ctx, entries...))
	tl, err := trace.NewLog(m)
	require.NoError(t, err)
	_, err = kernel.Replay(ctx, tl, k, "")
	require.ErrorIs(t, err, kernel.ErrReplay)
}

// TestSessionRecordsAreNotAliased: mutating a returned Record cannot
// change what the session rolls back with.
func TestSessionRecordsAreNotAliased(t *testing.T) {
	k := sessionKernel(t)
	sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, mustState(t, map[string]any{"x": 0}))
	require.NoError(t, err)
	rec, err := sess.Execute(ctx, incX)
	require.NoError(t, err)
	rec.Inverse[0] = kernel.Set("x", value.Int(99))
	rec.Action.Effects[0] = kernel.Delete("x")
	h := sess.History()
	h[0].Inverse[0] = kernel.Set("x", value.Int(98))
	_, err = sess.Rollback(ctx, rec.ExecID)
	require.NoError(t, err)
	x, _ := sess.State().Get("x")
	assert.True(t, x.Equal(value.Int(0)))
	assert.Equal(t, kernel.OpIncrement, sess.History()[0].Action.Effects[0].Op)
}

// TestSessionCopiesShareNothing: the Record Execute returns, the copy
// the session keeps (History, Rollback) and the caller's action share no
// slice, and a later action does not change an earlier Record: changing
// any of them changes none of the others.
func TestSessionCopiesShareNothing(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit,
		Invariants: []kernel.Invariant{nonNegative("x")}})
	s0 := mustState(t, map[string]any{"x": 0, "y": 0})
	sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, s0)
	require.NoError(t, err)
	a := kernel.Action{ID: "a", Cost: kernel.Unit, Tags: []string{"t1", "t2"}, Input: []byte(`{"q":1}`),
		Effects: []kernel.Effect{kernel.Increment("x", value.Int(1)), kernel.Set("y", value.Int(7))}}
	want := sess.Evaluate(a).Next()
	rec, err := sess.Execute(ctx, a)
	require.NoError(t, err)
	kept := sess.History()[0]
	require.Equal(t, kept, rec)

	a.Effects[0], a.Tags[0], a.Input[0] = kernel.Delete("x"), "caller", '['
	b := kernel.Action{ID: "b", Cost: kernel.Unit, Tags: []string{"u"},
		Effects: []kernel.Effect{kernel.Set("x", value.Int(5)), kernel.Delete("y")}}
	recB, err := sess.Execute(ctx, b)
	require.NoError(t, err)
	assert.Equal(t, kept, rec, "the caller's action and a later action leave the Record as it was")
	assert.Equal(t, kept, sess.History()[0])

	rec.Action.Effects[1], rec.Inverse[0], rec.Action.Tags[1], rec.Action.Input[1] = kernel.Delete("y"), kernel.Delete("x"), "mine", '?'
	assert.Equal(t, kept, sess.History()[0], "the session's copy does not change with the caller's Record")

	_, err = sess.Rollback(ctx, recB.ExecID)
	require.NoError(t, err)
	assert.True(t, sess.State().Equal(want))
	_, err = sess.Rollback(ctx, kept.ExecID)
	require.NoError(t, err)
	assert.True(t, sess.State().Equal(s0))
}

// TestRejectionOutlivesTheNextAction: the Verdict a rejection returns
// is its own; the session's next actions do not change its checks.
func TestRejectionOutlivesTheNextAction(t *testing.T) {
	sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), sessionKernel(t), mustState(t, map[string]any{"x": 0}))
	require.NoError(t, err)
	bad := kernel.Action{ID: "dec", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Decrement("x", value.Int(1))}}
	_, err = sess.Execute(ctx, bad)
	var rej *kernel.RejectedError
	require.ErrorAs(t, err, &rej)
	before := rej.Verdict.Checks()
	require.NotEmpty(t, rej.Verdict.Failures())
	for range 3 {
		_, err := sess.Execute(ctx, incX)
		require.NoError(t, err)
	}
	assert.Equal(t, before, rej.Verdict.Checks())
	assert.False(t, rej.Verdict.Allowed())
}

// cancellingStore is a trace.Store whose appends cancel the context they
// were given and fail with its error, as a store watching ctx would when
// the caller gives up mid-append.
type cancellingStore struct {
	*trace.Memory
	cancel context.CancelFunc
}

func (s *cancellingStore) Append(ctx context.Context, entries ...trace.Entry) error {
	if s.cancel == nil {
		return s.Memory.Append(ctx, entries...)
	}
	s.cancel()
	return ctx.Err()
}

// TestSessionCompensatesAfterCancellation: when the append of an
// execution fails because its context was cancelled, the compensating
// refund of the shared charge still runs, so the shared budget is left as
// it was.
func TestSessionCompensatesAfterCancellation(t *testing.T) {
	store := &cancellingStore{Memory: trace.NewMemory()}
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	shared := newFakeShared(int64(5 * kernel.Unit))
	sess, err := kernel.NewSession(ctx, log, sessionKernel(t), mustState(t, map[string]any{"x": 0}), kernel.WithSharedBudget(shared))
	require.NoError(t, err)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	store.cancel = cancel
	_, err = sess.Execute(cctx, incX)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, shared.charges)
	assert.Equal(t, int64(5*kernel.Unit), shared.Balance(), "the shared charge was refunded")
}

// TestSessionRefusesOverrunIDs: an execution id ending in "/overrun",
// whose shared charge another execution's overrun could collide with, is
// refused before anything is charged or recorded.
func TestSessionRefusesOverrunIDs(t *testing.T) {
	var ids []string
	log := fixedClockLog(t)
	shared := newFakeShared(int64(10 * kernel.Unit))
	sess, err := kernel.NewSession(ctx, log, sessionKernel(t), mustState(t, map[string]any{"x": 0}),
		kernel.WithSharedBudget(shared), kernel.WithIDs(func() string { id := ids[0]; ids = ids[1:]; return id }))
	require.NoError(t, err)
	head, m := log.Head(), sess.Meter()
	for _, reserve := range []bool{false, true} {
		ids = []string{"a/overrun"}
		commit := sess.Execute
		if reserve {
			commit = sess.Reserve
		}
		_, err = commit(ctx, incX)
		require.ErrorIs(t, err, kernel.ErrInvalidConfig)
		assert.ErrorContains(t, err, `"/overrun"`)
		assert.Equal(t, head, log.Head())
		assert.Equal(t, m, sess.Meter())
		assert.Zero(t, shared.charges)
	}
}
