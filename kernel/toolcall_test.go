package kernel_test

// Tests of what a tool call needs: its input on the record, reserve and
// settle, refunds, and Replay of all three.

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

func callAction(tool string, cost kernel.Cost) kernel.Action {
	return kernel.Action{ID: tool, Cost: cost, Effects: []kernel.Effect{kernel.Count("calls/"+tool, value.Int(1), value.Int(0))}}
}

// TestReserveSettleOverrun: settling below the reservation refunds the
// difference; above it, the excess is charged up to what remains, the
// rest is unpaid, the settlement is committed and recorded, and the host
// gets ErrOverrun.
func TestReserveSettleOverrun(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: units(10), MinActionCost: 1})
	log := fixedClockLog(t)
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, nil))
	require.NoError(t, err)

	a, err := sess.Reserve(ctx, callAction("search", units(4)))
	require.NoError(t, err)
	assert.True(t, a.Reserved)
	b, err := sess.Reserve(ctx, callAction("fetch", units(5)))
	require.NoError(t, err)
	assert.Equal(t, []kernel.Reservation{{ExecID: a.ExecID, ActionID: "search", Amount: units(4)}, {ExecID: b.ExecID, ActionID: "fetch", Amount: units(5)}}, sess.Meter().Reservations())
	assert.Equal(t, units(9), sess.Meter().Budget().Net(), "open reservations are charged")

	// Below: refund the difference.
	r, err := sess.Settle(ctx, a.ExecID, units(1))
	require.NoError(t, err)
	assert.Equal(t, kernel.SettleRecord{ExecID: a.ExecID, Reserved: units(4), Actual: units(1), Refund: units(3),
		Budget: kernel.BudgetSnapshot{Limit: units(10), Gross: units(9), Refunded: units(3)}, Time: r.Time, Seq: r.Seq, Hash: r.Hash}, r)
	_, err = sess.Settle(ctx, a.ExecID, units(1))
	assert.ErrorIs(t, err, kernel.ErrNotReserved)

	// Above: 5 reserved, 9 actual; 4 remain, all of them are charged and
	// nothing is left unpaid.
	r, err = sess.Settle(ctx, b.ExecID, units(9))
	require.ErrorIs(t, err, kernel.ErrOverrun)
	assert.Equal(t, `kernel: actual cost exceeds the reservation: "`+b.ExecID+`" reserved 5, cost 9: 4 charged beyond the reservation, 0 unpaid (not in the budget)`, err.Error())
	assert.Equal(t, units(4), r.Overrun)
	assert.Equal(t, units(0), r.Unpaid)
	assert.Equal(t, units(10), sess.Meter().Budget().Net())
	assert.Empty(t, sess.Meter().Reservations())

	// Above, with the budget exhausted: 1 refunded, then 1 reserved and 8
	// actual: nothing remains after the reservation, so 7 are unpaid.
	_, err = sess.Refund(ctx, a.ExecID, units(1), "the search failed")
	require.NoError(t, err)
	c, err := sess.Reserve(ctx, callAction("search", units(1)))
	require.NoError(t, err)
	r, err = sess.Settle(ctx, c.ExecID, units(8))
	require.ErrorIs(t, err, kernel.ErrOverrun)
	assert.Equal(t, units(0), r.Overrun)
	assert.Equal(t, units(7), r.Unpaid)
	b2 := sess.Meter().Budget()
	assert.LessOrEqual(t, b2.Net(), b2.Limit(), "T1")
	got, _ := sess.State().Int("calls/search")
	assert.Equal(t, int64(2), got, "settle and refund leave the state")

	// Errors, with room in the budget again.
	_, err = sess.Refund(ctx, b.ExecID, units(3), "partly failed")
	require.NoError(t, err)
	_, err = sess.Settle(ctx, "nope", 1)
	assert.ErrorIs(t, err, kernel.ErrUnknownExecution)
	d, err := sess.Reserve(ctx, callAction("x", 1))
	require.NoError(t, err)
	_, err = sess.Refund(ctx, d.ExecID, 1, "")
	assert.ErrorIs(t, err, kernel.ErrReservationOpen)
	_, err = sess.Settle(ctx, d.ExecID, -1)
	assert.ErrorIs(t, err, kernel.ErrInvalidCost)
	_, err = sess.Refund(ctx, a.ExecID, units(3), "")
	assert.ErrorIs(t, err, kernel.ErrRefundTooLarge, "charged 1 after settling, 1 refunded since")
	_, err = sess.Refund(ctx, a.ExecID, 1, "\xff")
	assert.ErrorIs(t, err, value.ErrInvalidValue)
	e, err := sess.Execute(ctx, callAction("y", 1))
	require.NoError(t, err)
	_, err = sess.Settle(ctx, e.ExecID, 1)
	assert.ErrorIs(t, err, kernel.ErrNotReserved)

	// A rollback of an open reservation closes it.
	_, err = sess.Rollback(ctx, e.ExecID)
	require.NoError(t, err)
	_, err = sess.Refund(ctx, e.ExecID, 0, "")
	assert.ErrorIs(t, err, kernel.ErrAlreadyRolledBack)
	_, err = sess.Rollback(ctx, d.ExecID)
	require.NoError(t, err)
	assert.Empty(t, sess.Meter().Reservations())

	replayed, err := kernel.Replay(ctx, log, k, sess.ID())
	require.NoError(t, err)
	assert.Equal(t, sess.Meter().String(), replayed.Meter().String())
}

// TestRecordNamesItsTraceEntry: an execution's, a reservation's, a
// settlement's, a refund's and a rollback's Seq and Hash are those of the
// trace entry that records them, and DecodeEntry gives them back.
func TestRecordNamesItsTraceEntry(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: units(10), MinActionCost: 1})
	log := fixedClockLog(t)
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, nil))
	require.NoError(t, err)
	ex, err := sess.Execute(ctx, callAction("a", 2))
	require.NoError(t, err)
	res, err := sess.Reserve(ctx, callAction("b", 2))
	require.NoError(t, err)
	set, err := sess.Settle(ctx, res.ExecID, 1)
	require.NoError(t, err)
	ref, err := sess.Refund(ctx, ex.ExecID, 1, "failed")
	require.NoError(t, err)
	rb, err := sess.Rollback(ctx, res.ExecID)
	require.NoError(t, err)
	want := []struct {
		seq  uint64
		hash trace.Hash
	}{{ex.Seq, ex.Hash}, {res.Seq, res.Hash}, {set.Seq, set.Hash}, {ref.Seq, ref.Hash}, {rb.Seq, rb.Hash}}
	i := 0
	for e, err := range log.Entries(ctx, 1) {
		require.NoError(t, err)
		require.Equal(t, want[i].seq, e.Seq)
		require.Equal(t, want[i].hash, e.Hash)
		x, err := kernel.DecodeEntry(e)
		require.NoError(t, err)
		switch x := x.(type) {
		case kernel.ExecuteEntry:
			assert.Equal(t, ex.Hash, x.Hash)
		case kernel.ReserveEntry:
			assert.True(t, x.Reserved)
			assert.Equal(t, res.Hash, x.Hash)
		case kernel.SettleEntry:
			assert.Equal(t, set, x.SettleRecord)
		case kernel.RefundEntry:
			assert.Equal(t, ref, x.RefundRecord)
		case kernel.RollbackEntry:
			assert.Equal(t, rb.Hash, x.Hash)
		}
		i++
	}
	assert.Equal(t, 5, i)
}

// inputGen draws call inputs: JSON that canonical JSON accepts or refuses
// (integers beyond 2^53, duplicate keys, whitespace), and bytes that are
// not JSON or not UTF-8.
func inputGen() *rapid.Generator[[]byte] {
	return rapid.OneOf(
		rapid.SampledFrom([][]byte{
			[]byte(`{"n":1152921504606846976}`), []byte(`{"a":1,"a":2}`), []byte(`{ "q" : "x" }`),
			[]byte(`{"big":123456789012345678901234567890}`), []byte("\xff\xfe"), []byte(`{"s":"\ud800"}`), []byte(`[1,2,3]`),
		}),
		rapid.SliceOfN(rapid.Byte(), 1, 300),
		rapid.Map(rapid.String(), func(s string) []byte { return []byte(s) }),
	)
}

// TestInputRecordedLosslessly: a call's input — any bytes, including what
// canonical JSON refuses — is recorded with the execution (or rejection),
// reads back byte for byte, and its recorded digest verifies; beyond the
// input limit only its digest and size are kept.
func TestInputRecordedLosslessly(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: units(1), MinActionCost: 1})
	rapid.Check(t, func(t *rapid.T) {
		in := inputGen().Draw(t, "input")
		limit := rapid.IntRange(0, 400).Draw(t, "limit")
		cost := kernel.Cost(rapid.SampledFrom([]int64{1, int64(units(2))}).Draw(t, "cost")) // units(2): rejected
		log := trace.NewMemoryLog()
		sess, err := kernel.NewSession(ctx, log, k, mustState(t, nil), kernel.WithInputLimit(limit))
		if err != nil {
			t.Fatal(err)
		}
		a := callAction("tool", cost)
		a.Input = in
		rec, err := sess.Execute(ctx, a)
		if cost == 1 && (err != nil || (len(in) > 0 && rec.InputDigest != sha256.Sum256(in)) || rec.InputSize != len(in) || string(rec.Action.Input) != string(in)) {
			t.Fatalf("execute: %v", err)
		}
		var e trace.Entry
		for le, err := range log.Entries(ctx, 1) {
			if err != nil {
				t.Fatal(err)
			}
			e = le
		}
		x, err := kernel.DecodeEntry(e)
		if err != nil {
			t.Fatalf("%s: %v", e.Payload, err)
		}
		var got []byte
		var digest trace.Hash
		var size int
		switch x := x.(type) {
		case kernel.ExecuteEntry:
			got, digest, size = x.Action.Input, x.InputDigest, x.InputSize
		case kernel.RejectEntry:
			got, digest, size = x.Action.Input, x.InputDigest, x.InputSize
		}
		want := sha256.Sum256(in)
		if len(in) == 0 {
			want = trace.Hash{} // no input
		}
		if digest != want || size != len(in) {
			t.Fatalf("recorded digest/size %s/%d, input has %x/%d", digest, size, sha256.Sum256(in), len(in))
		}
		if len(in) <= limit && string(got) != string(in) {
			t.Fatalf("recorded %q, input %q", got, in)
		}
		if len(in) > limit && got != nil {
			t.Fatalf("kept %d bytes beyond the limit %d", len(got), limit)
		}
		if _, err := kernel.Replay(ctx, log, k, sess.ID()); err != nil {
			t.Fatal(err)
		}
	})
}

// ledgerModel is the naive model of what each execution was charged and
// refunded.
type ledgerModel struct {
	limit, gross, refunded kernel.Cost
	charged, back          map[string]kernel.Cost
	open                   map[string]bool
	rolledBack             map[string]bool
}

func newLedgerModel(limit kernel.Cost) *ledgerModel {
	return &ledgerModel{limit: limit, charged: map[string]kernel.Cost{}, back: map[string]kernel.Cost{}, open: map[string]bool{}, rolledBack: map[string]bool{}}
}

func (m *ledgerModel) net() kernel.Cost { return m.gross - m.refunded }

// TestSettleAndRefundNeverRefundMoreThanCharged: against a naive model of
// the ledger, through random reserve, execute, settle, refund and rollback
// on the pure core, every execution's refunds stay within its charges,
// net ≤ B0 (T1), gross never decreases (T4), and every transition the
// model refuses the kernel refuses.
func TestSettleAndRefundNeverRefundMoreThanCharged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := units(rapid.Int64Range(0, 10).Draw(t, "limit"))
		k := mustKernel(t, kernel.Config{Budget: limit, MinActionCost: 1})
		m, s := k.Start(), mustState(t, nil)
		model := newLedgerModel(limit)
		var ids []string
		var last *kernel.Record
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			gross := m.Budget().Gross()
			cost := kernel.Cost(rapid.Int64Range(0, int64(units(4))).Draw(t, "cost"))
			switch op := rapid.IntRange(0, 4).Draw(t, "op"); {
			case op <= 1: // reserve or execute
				id := fmt.Sprint(i)
				a := callAction("t", max(cost, 1))
				var rec kernel.Record
				var err error
				if op == 0 {
					s, m, rec, err = k.Reserve(m, s, k.Evaluate(m, s, a), id)
				} else {
					s, m, rec, err = k.Execute(m, s, a, id)
				}
				fits := a.Cost <= model.limit-model.net()
				if (err == nil) != fits {
					t.Fatalf("charge %s with %s remaining: %v", a.Cost, model.limit-model.net(), err)
				}
				if err == nil {
					model.gross += a.Cost
					model.charged[id] = a.Cost
					model.open[id] = op == 0
					ids = append(ids, id)
					last = &rec
				}
			case op == 2 && len(ids) > 0: // settle
				id := rapid.SampledFrom(ids).Draw(t, "id")
				next, r, err := k.Settle(m, id, cost)
				if (err == nil) != model.open[id] {
					t.Fatalf("settle %s (open %v): %v", id, model.open[id], err)
				}
				if err == nil {
					m = next
					model.open[id] = false
					if cost <= model.charged[id] {
						model.back[id] += model.charged[id] - cost
						model.refunded += model.charged[id] - cost
					} else {
						extra := min(cost-model.charged[id], max(model.limit-model.net(), 0))
						model.charged[id] += extra
						model.gross += extra
						if r.Overrun != extra || r.Unpaid != cost-r.Reserved-extra || r.Err() == nil {
							t.Fatalf("overrun %+v, model charges %s", r, extra)
						}
					}
				}
			case op == 3 && len(ids) > 0: // refund
				id := rapid.SampledFrom(ids).Draw(t, "id")
				next, _, err := k.Refund(m, id, cost, "failed")
				ok := !model.open[id] && !model.rolledBack[id] && cost <= model.charged[id]-model.back[id]
				if (err == nil) != ok {
					t.Fatalf("refund %s of %s (charged %s, refunded %s, open %v): %v", cost, id, model.charged[id], model.back[id], model.open[id], err)
				}
				if err == nil {
					m = next
					model.back[id] += cost
					model.refunded += cost
				}
			case op == 4 && last != nil: // rollback of the last execution
				next, nm, rr, err := k.Rollback(m, s, *last)
				if err == nil {
					id := last.ExecID
					if rr.Refund != model.charged[id]-model.back[id] {
						t.Fatalf("rollback refunded %s, model says %s", rr.Refund, model.charged[id]-model.back[id])
					}
					s, m = next, nm
					model.refunded += rr.Refund
					model.back[id] = model.charged[id]
					model.open[id], model.rolledBack[id] = false, true
				}
				last = nil
			}
			b := m.Budget()
			if b.Gross() != model.gross || b.Refunded() != model.refunded {
				t.Fatalf("budget %s, model gross %s refunded %s", m, model.gross, model.refunded)
			}
			if b.Net() > b.Limit() || b.Gross() < gross {
				t.Fatalf("T1/T4 broken: %s", m)
			}
			for _, id := range ids {
				c, r, _ := b.Charged(id)
				if r > c || c != model.charged[id] || r != model.back[id] {
					t.Fatalf("%s charged %s refunded %s; model %s %s", id, c, r, model.charged[id], model.back[id])
				}
			}
			open := 0
			for _, o := range model.open {
				if o {
					open++
				}
			}
			if len(m.Reservations()) != open {
				t.Fatalf("%d open reservations, model %d", len(m.Reservations()), open)
			}
		}
	})
}

// TestReplayRebuildsReservationsSettlementsAndRefunds: Replay of a log of
// random reservations, executions, settlements, refunds and rollbacks
// rebuilds the same open reservations, ledger, budget and state.
func TestReplayRebuildsReservationsSettlementsAndRefunds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := mustKernel(t, kernel.Config{Budget: units(rapid.Int64Range(1, 10).Draw(t, "limit")), MinActionCost: 1})
		log := trace.NewMemoryLog()
		sess, err := kernel.NewSession(ctx, log, k, mustState(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			cost := kernel.Cost(rapid.Int64Range(1, int64(units(3))).Draw(t, "cost"))
			tool := rapid.SampledFrom([]string{"a", "b"}).Draw(t, "tool")
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0:
				if rec, err := sess.Reserve(ctx, callAction(tool, cost)); err == nil {
					ids = append(ids, rec.ExecID)
				}
			case 1:
				if rec, err := sess.Execute(ctx, callAction(tool, cost)); err == nil {
					ids = append(ids, rec.ExecID)
				}
			case 2:
				if len(ids) > 0 {
					_, _ = sess.Settle(ctx, rapid.SampledFrom(ids).Draw(t, "id"), cost)
				}
			case 3:
				if len(ids) > 0 {
					_, _ = sess.Refund(ctx, rapid.SampledFrom(ids).Draw(t, "id"), cost/2, "failed")
				}
			case 4:
				if len(ids) > 0 {
					_, _ = sess.Rollback(ctx, ids[len(ids)-1])
				}
			}
		}
		replayed, err := kernel.Replay(ctx, log, k, sess.ID())
		if err != nil {
			t.Fatal(err)
		}
		if !replayed.State().Equal(sess.State()) || replayed.Meter().String() != sess.Meter().String() {
			t.Fatalf("replayed %s, live %s", replayed.Meter(), sess.Meter())
		}
		assert.Equal(t, sess.Meter().Reservations(), replayed.Meter().Reservations())
		for _, id := range ids {
			c1, r1, _ := sess.Meter().Budget().Charged(id)
			c2, r2, _ := replayed.Meter().Budget().Charged(id)
			if c1 != c2 || r1 != r2 {
				t.Fatalf("%s: live %s/%s, replayed %s/%s", id, c1, r1, c2, r2)
			}
		}
	})
}

// TestT1ConcurrentReserveSettleRefund: many goroutines interleave
// reservations, executions, settlements, refunds and rollbacks on one
// Session (with a SharedBudget); net spend never exceeds B0 at any
// instant an observer sees, and a naive model fed the log's entries in
// order ends with the session's budget, ledger and open reservations.
func TestT1ConcurrentReserveSettleRefund(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := units(rapid.Int64Range(1, 20).Draw(t, "limit"))
		k := mustKernel(t, kernel.Config{Budget: limit, MinActionCost: 1})
		log := trace.NewMemoryLog()
		shared := newFakeShared(1 << 62)
		sess, err := kernel.NewSession(ctx, log, k, mustState(t, nil), kernel.WithSharedBudget(shared))
		if err != nil {
			t.Fatal(err)
		}
		workers := rapid.IntRange(2, 6).Draw(t, "workers")
		plans := make([][]int64, workers)
		for w := range plans {
			plans[w] = rapid.SliceOfN(rapid.Int64Range(0, 3*int64(kernel.Unit)), 1, 12).Draw(t, fmt.Sprint("plan", w))
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		var violation error
		var observer sync.WaitGroup
		observer.Add(1)
		go func() {
			defer observer.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if b := sess.Meter().Budget(); b.Net() > b.Limit() {
					violation = fmt.Errorf("T1: net %s > %s", b.Net(), b.Limit())
				}
			}
		}()
		for w, plan := range plans {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, c := range plan {
					cost := kernel.Cost(c) + 1
					rec, err := sess.Reserve(ctx, callAction(fmt.Sprint("tool", w), cost))
					if err != nil {
						continue
					}
					switch i % 4 {
					case 0:
						_, _ = sess.Settle(ctx, rec.ExecID, cost/2)
						_, _ = sess.Refund(ctx, rec.ExecID, cost/4, "failed")
					case 1:
						_, _ = sess.Settle(ctx, rec.ExecID, cost*2) // overrun
					case 2:
						_, _ = sess.Rollback(ctx, rec.ExecID) // refused unless still the last
						_, _ = sess.Execute(ctx, callAction("fixed", 1))
					}
					// case 3: left open
				}
			}()
		}
		wg.Wait()
		close(stop)
		observer.Wait()
		if violation != nil {
			t.Fatal(violation)
		}
		model := newLedgerModel(limit)
		for e, err := range log.Entries(ctx, 1) {
			if err != nil {
				t.Fatal(err)
			}
			x, err := kernel.DecodeEntry(e)
			if err != nil {
				t.Fatal(err)
			}
			switch x := x.(type) {
			case kernel.ExecuteEntry:
				model.gross += x.Action.Cost
				model.charged[x.ExecID] = x.Action.Cost
			case kernel.ReserveEntry:
				model.gross += x.Action.Cost
				model.charged[x.ExecID] = x.Action.Cost
				model.open[x.ExecID] = true
			case kernel.SettleEntry:
				if !model.open[x.ExecID] || x.Reserved != model.charged[x.ExecID] || x.Refund+x.Overrun > max(x.Actual, x.Reserved) {
					t.Fatalf("settlement %+v does not fit the model", x.SettleRecord)
				}
				model.open[x.ExecID] = false
				model.gross += x.Overrun
				model.charged[x.ExecID] += x.Overrun
				model.refunded += x.Refund
				model.back[x.ExecID] += x.Refund
			case kernel.RefundEntry:
				model.refunded += x.Amount
				model.back[x.ExecID] += x.Amount
			case kernel.RollbackEntry:
				model.refunded += x.Refund
				model.back[x.ExecID] += x.Refund
				model.open[x.ExecID] = false
			}
			if model.net() > model.limit {
				t.Fatalf("T1: entry %d leaves net %s > %s", e.Seq, model.net(), model.limit)
			}
			for id, c := range model.charged {
				if model.back[id] > c {
					t.Fatalf("%s refunded %s of %s", id, model.back[id], c)
				}
			}
		}
		b := sess.Meter().Budget()
		if b.Gross() != model.gross || b.Refunded() != model.refunded {
			t.Fatalf("session %s, model gross %s refunded %s", sess.Meter(), model.gross, model.refunded)
		}
		open := 0
		for _, o := range model.open {
			if o {
				open++
			}
		}
		if len(sess.Meter().Reservations()) != open {
			t.Fatalf("%d open, model %d", len(sess.Meter().Reservations()), open)
		}
		// The shared budget saw the same net spend.
		if spent := int64(1<<62) - shared.Balance(); spent != int64(b.Net()) {
			t.Fatalf("shared budget spent %d, session net %s", spent, b.Net())
		}
	})
}
