package kernel_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// horizonRun drives a session with a horizon and a reference session that
// keeps everything through the same operations, in lockstep.
type horizonRun struct {
	t         *rapid.T
	h         int
	hold      bool
	bounded   *kernel.Session
	reference *kernel.Session
	ids       []string        // executions, oldest first
	held      map[string]bool // executions the bounded session holds
	reserved  map[string]bool // open reservations
}

// beyond reports whether execution i is older than the horizon.
func (r *horizonRun) beyond(i int) bool { return len(r.ids)-i > r.h }

// both runs op on the bounded session, and on the reference unless the
// bounded one refused it as beyond its horizon, which it may do only when
// mayForget says so; otherwise both must give the same result.
func both[T any](r *horizonRun, what string, mayForget bool, op func(*kernel.Session) (T, error), same func(a, b T) bool) (T, error) {
	got, err := op(r.bounded)
	if errors.Is(err, kernel.ErrBeyondHorizon) {
		if !mayForget {
			r.t.Fatalf("%s: refused as beyond the horizon %d, but it is within: %v", what, r.h, err)
		}
		return got, err
	}
	want, werr := op(r.reference)
	if (err == nil) != (werr == nil) || (err != nil && sentinel(err) != sentinel(werr)) {
		r.t.Fatalf("%s: horizon %d gave %v, the reference %v", what, r.h, err, werr)
	}
	if err == nil && !same(got, want) {
		r.t.Fatalf("%s: horizon %d gave %+v, the reference %+v", what, r.h, got, want)
	}
	return got, err
}

// sentinel is the kernel sentinel err wraps, for comparing two errors.
func sentinel(err error) error {
	for _, s := range []error{kernel.ErrFingerprintMismatch, kernel.ErrAlreadyRolledBack, kernel.ErrRefundTooLarge,
		kernel.ErrNotReserved, kernel.ErrReservationOpen, kernel.ErrOverrun, kernel.ErrUnknownExecution, kernel.ErrRejected} {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

func (r *horizonRun) check() {
	b, ref := r.bounded.Meter(), r.reference.Meter()
	if r.bounded.State().Fingerprint() != r.reference.State().Fingerprint() ||
		b.Budget().Gross() != ref.Budget().Gross() || b.Budget().Net() != ref.Budget().Net() ||
		b.Steps() != ref.Steps() || fmt.Sprint(b.Reservations()) != fmt.Sprint(ref.Reservations()) {
		r.t.Fatalf("horizon %d: the sessions differ: %v %v / %v %v", r.h, b.Budget(), b.Reservations(), ref.Budget(), ref.Reservations())
	}
	if n := len(r.bounded.History()); n > r.h {
		r.t.Fatalf("horizon %d: %d Records kept", r.h, n)
	}
}

// TestHorizonNeverWrong: a session with a horizon does exactly what one
// without does for every execution within it (Rollback, Refund, Settle),
// and refuses the others with ErrBeyondHorizon, never with another
// result; open reservations and held executions are never forgotten; and
// its log replays with the same horizon.
func TestHorizonNeverWrong(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := mustKernel(t, kernel.Config{Budget: units(1000), MinActionCost: 1})
		initial := mustState(t, map[string]any{"n": 0})
		r := &horizonRun{t: t, h: rapid.IntRange(0, 6).Draw(t, "horizon"), hold: rapid.Bool().Draw(t, "hold"),
			held: map[string]bool{}, reserved: map[string]bool{}}
		var n int
		ids := func() string { n++; return fmt.Sprintf("x%d", n) }
		opts := []kernel.Option{kernel.WithHorizon(r.h), kernel.WithIDs(ids)}
		if r.hold {
			opts = append(opts, kernel.WithHeldExecutions())
		}
		log := trace.NewMemoryLog()
		var err error
		r.bounded, err = kernel.NewSession(ctx, log, k, initial, opts...)
		require.NoError(t, err)
		var m int
		refIDs := func() string { m++; return fmt.Sprintf("x%d", m) }
		r.reference, err = kernel.NewSession(ctx, trace.NewMemoryLog(), k, initial, kernel.WithHorizon(1<<20), kernel.WithIDs(refIDs))
		require.NoError(t, err)
		sameRec := func(a, b kernel.Record) bool {
			return a.ExecID == b.ExecID && a.After == b.After && a.Budget == b.Budget && a.Steps == b.Steps
		}
		pick := func() int { return rapid.IntRange(0, len(r.ids)-1).Draw(t, "execution") }

		for range rapid.IntRange(1, 120).Draw(t, "ops") {
			op := "execute"
			if len(r.ids) > 0 {
				op = rapid.SampledFrom([]string{"execute", "reserve", "rollback", "rollback last", "refund", "settle", "release"}).Draw(t, "op")
			}
			switch op {
			case "execute", "reserve":
				a := kernel.Action{ID: "inc", Cost: units(rapid.Int64Range(1, 3).Draw(t, "cost")),
					Effects: []kernel.Effect{kernel.Increment("n", value.Int(rapid.Int64Range(1, 9).Draw(t, "by")))}}
				rec, err := both(r, op, false, func(s *kernel.Session) (kernel.Record, error) {
					if op == "reserve" {
						return s.Reserve(ctx, a)
					}
					return s.Execute(ctx, a)
				}, sameRec)
				if err == nil {
					r.ids = append(r.ids, rec.ExecID)
					r.held[rec.ExecID] = r.hold
					r.reserved[rec.ExecID] = op == "reserve"
				}
			case "rollback", "rollback last":
				i := len(r.ids) - 1
				if op == "rollback" {
					i = pick()
				}
				id := r.ids[i]
				_, err := both(r, op, r.beyond(i), func(s *kernel.Session) (kernel.RollbackRecord, error) { return s.Rollback(ctx, id) },
					func(a, b kernel.RollbackRecord) bool { return a.Refund == b.Refund && a.After == b.After })
				if err == nil {
					r.reserved[id] = false
				} else if r.beyond(i) && !errors.Is(err, kernel.ErrBeyondHorizon) {
					t.Fatalf("rollback of %s beyond the horizon: %v", id, err)
				}
			case "refund":
				i := pick()
				id := r.ids[i]
				amount := kernel.Cost(rapid.Int64Range(0, int64(units(2))).Draw(t, "amount"))
				kept := !r.beyond(i) || r.held[id] || r.reserved[id]
				_, err := both(r, op, !kept, func(s *kernel.Session) (kernel.RefundRecord, error) { return s.Refund(ctx, id, amount, "test") },
					func(a, b kernel.RefundRecord) bool { return a.Budget == b.Budget })
				if !kept && !errors.Is(err, kernel.ErrBeyondHorizon) {
					t.Fatalf("refund of %s beyond the horizon: %v", id, err)
				}
			case "settle":
				i := pick()
				id := r.ids[i]
				actual := kernel.Cost(rapid.Int64Range(0, int64(units(4))).Draw(t, "actual"))
				kept := !r.beyond(i) || r.held[id] || r.reserved[id]
				_, err := both(r, op, !kept, func(s *kernel.Session) (kernel.SettleRecord, error) { return s.Settle(ctx, id, actual) },
					func(a, b kernel.SettleRecord) bool { return a.Budget == b.Budget && a.Unpaid == b.Unpaid })
				if err == nil || errors.Is(err, kernel.ErrOverrun) {
					r.reserved[id] = false
				}
			case "release":
				id := r.ids[pick()]
				err := r.bounded.Release(id)
				if r.held[id] != (err == nil) {
					t.Fatalf("release of %s (held %v): %v", id, r.held[id], err)
				}
				r.held[id] = false
			}
			r.check()
		}
		replayed, err := kernel.Replay(ctx, log, k, r.bounded.ID(), kernel.WithHorizon(r.h))
		require.NoError(t, err)
		if replayed.State().Fingerprint() != r.bounded.State().Fingerprint() || replayed.Meter().Budget().Net() != r.bounded.Meter().Budget().Net() ||
			fmt.Sprint(replayed.Meter().Reservations()) != fmt.Sprint(r.bounded.Meter().Reservations()) {
			t.Fatalf("replay with horizon %d differs", r.h)
		}
	})
}

// TestHorizonForgetsWhatItMay: a long session keeps at most its horizon
// of Records, and forgets the ledger entries beyond it, except open
// reservations, which it settles at any age.
func TestHorizonForgetsWhatItMay(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: units(10000), MinActionCost: 1})
	sess, err := kernel.NewSession(ctx, fixedClockLog(t), k, mustState(t, nil), kernel.WithHorizon(4))
	require.NoError(t, err)
	inc := kernel.Action{ID: "count", Cost: 1, Effects: []kernel.Effect{kernel.Count("n", value.Int(1), value.Int(0))}}
	res, err := sess.Reserve(ctx, kernel.Action{ID: "call", Cost: units(1)})
	require.NoError(t, err)
	first, err := sess.Execute(ctx, inc)
	require.NoError(t, err)
	for range 100 {
		_, err := sess.Execute(ctx, inc)
		require.NoError(t, err)
	}
	assert.Len(t, sess.History(), 4)
	_, _, ok := sess.Meter().Budget().Charged(first.ExecID)
	assert.False(t, ok, "a forgotten execution's ledger entry is dropped")
	_, err = sess.Refund(ctx, first.ExecID, 1, "late")
	assert.ErrorIs(t, err, kernel.ErrBeyondHorizon)
	_, err = sess.Rollback(ctx, first.ExecID)
	assert.ErrorIs(t, err, kernel.ErrBeyondHorizon)

	s, err := sess.Settle(ctx, res.ExecID, units(1)/2)
	require.NoError(t, err, "an open reservation is never forgotten")
	assert.Equal(t, units(1)/2, s.Refund)
	_, err = sess.Refund(ctx, res.ExecID, 1, "late")
	assert.ErrorIs(t, err, kernel.ErrBeyondHorizon, "a settled reservation beyond the horizon is forgotten")
	assert.Equal(t, units(1)/2+101, sess.Meter().Budget().Net())
}

func TestNegativeHorizonRefused(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: units(1), MinActionCost: 1})
	_, err := kernel.NewSession(ctx, fixedClockLog(t), k, mustState(t, nil), kernel.WithHorizon(-1))
	assert.ErrorIs(t, err, kernel.ErrInvalidConfig)
}

// A long-lived session keeps its last few executions: within its horizon
// Rollback and Refund work as ever, beyond it they are refused with
// ErrBeyondHorizon; a reservation left open is kept until it is settled.
func ExampleWithHorizon() {
	k, _ := kernel.New(kernel.Config{Budget: 100 * kernel.Unit, MinActionCost: kernel.Unit})
	initial, _ := kernel.NewState(map[string]any{"n": 0})
	sess, _ := kernel.NewSession(ctx, trace.NewMemoryLog(), k, initial, kernel.WithHorizon(2))

	inc := kernel.Action{ID: "inc", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Increment("n", value.Int(1))}}
	call, _ := sess.Reserve(ctx, kernel.Action{ID: "call", Cost: 5 * kernel.Unit})
	first, _ := sess.Execute(ctx, inc)
	sess.Execute(ctx, inc)
	last, _ := sess.Execute(ctx, inc)

	_, err := sess.Refund(ctx, first.ExecID, kernel.Unit, "too old")
	fmt.Println(errors.Is(err, kernel.ErrBeyondHorizon))
	rr, _ := sess.Rollback(ctx, last.ExecID)
	fmt.Println("rolled back, refunded", rr.Refund)
	s, _ := sess.Settle(ctx, call.ExecID, 2*kernel.Unit)
	fmt.Println("settled, refunded", s.Refund, "-", sess.Meter())
	// Output:
	// true
	// rolled back, refunded 1
	// settled, refunded 3 - spent 4 of 100 (gross 8, refunded 4), 4 steps, 0 emergency steps
}

// TestForgetDropsOnlyWhatItIsGiven: Kernel.Forget of any subset of a
// Meter's executions (a few: path copies; many: a rebuild) drops exactly
// their ledger entries, keeps every other as it was and the totals and
// steps unchanged, and refuses an open reservation or an unknown id
// without changing anything.
func TestForgetDropsOnlyWhatItIsGiven(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := mustKernel(t, kernel.Config{Budget: units(1000), MinActionCost: 1})
		m, s := k.Start(), mustState(t, nil)
		n := rapid.IntRange(2, 200).Draw(t, "executions")
		var ids []string
		for i := range n {
			id := fmt.Sprint("e", i)
			a := kernel.Action{ID: "a", Cost: kernel.Cost(rapid.Int64Range(1, 5).Draw(t, "cost"))}
			var err error
			reserved := i == n-1 && rapid.Bool().Draw(t, "last reserved")
			if reserved {
				s, m, _, err = k.Reserve(m, s, k.Evaluate(m, s, a), id)
			} else {
				s, m, _, err = k.Execute(m, s, a, id)
			}
			require.NoError(t, err)
			if i%3 == 0 && !reserved {
				m, _, err = k.Refund(m, id, 1, "some")
				require.NoError(t, err)
			}
			ids = append(ids, id)
		}
		forget := rapid.SliceOfNDistinct(rapid.SampledFrom(ids[:n-1]), 0, n-1, func(s string) string { return s }).Draw(t, "forget")
		next, err := k.Forget(m, forget...)
		require.NoError(t, err)
		assert.Equal(t, m.String(), next.String())
		for _, id := range ids {
			c0, r0, ok0 := m.Budget().Charged(id)
			c1, r1, ok1 := next.Budget().Charged(id)
			if slices.Contains(forget, id) {
				assert.False(t, ok1, "%s forgotten", id)
				continue
			}
			assert.True(t, ok0 && ok1 && c0 == c1 && r0 == r1, "%s kept as it was", id)
		}
		if len(m.Reservations()) > 0 {
			again, err := k.Forget(m, ids[n-1])
			assert.ErrorIs(t, err, kernel.ErrReservationOpen)
			assert.Equal(t, m, again)
		}
		_, err = k.Forget(m, "never")
		assert.ErrorIs(t, err, kernel.ErrUnknownExecution)
	})
}
