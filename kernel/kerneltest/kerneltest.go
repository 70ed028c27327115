package kerneltest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// Int generates integers biased towards the edges (0, ±1, the int64
// limits, the JSON-safe limits) so overflow paths are exercised.
func Int() *rapid.Generator[int64] {
	return rapid.OneOf(
		rapid.Int64Range(-100, 100),
		rapid.SampledFrom([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, 1<<53 - 1, -(1<<53 - 1), 1 << 53, math.MaxInt64 / 2}),
		rapid.Int64(),
	)
}

// Float generates finite floats, including -0, integral floats (which must
// stay floats) and large magnitudes.
func Float() *rapid.Generator[float64] {
	return rapid.OneOf(
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, -1, 0.5, 1.5, 1e21, 1e300, -1e300, 5e-324, math.MaxFloat64, 1 << 53}),
		rapid.Float64Range(-1e6, 1e6),
		rapid.Float64().Filter(func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }),
	)
}

// Scalar generates null, bool, int, float and string values.
func Scalar() *rapid.Generator[value.Value] {
	return rapid.OneOf(
		rapid.Just(value.Null()),
		rapid.Map(rapid.Bool(), value.Bool),
		rapid.Map(Int(), value.Int),
		rapid.Map(Float(), value.Float),
		rapid.Map(rapid.OneOf(rapid.SampledFrom([]string{"", "1", "a", "é", "😀", "\u2028", "\x00"}), rapid.String()), value.String),
	)
}

// Value generates any JSON value nested at most depth levels.
func Value(depth int) *rapid.Generator[value.Value] {
	return rapid.Custom(func(t *rapid.T) value.Value { return drawValue(t, depth) })
}

func drawValue(t *rapid.T, depth int) value.Value {
	kind := rapid.IntRange(0, 2).Draw(t, "shape")
	if depth <= 0 || kind == 0 {
		return Scalar().Draw(t, "scalar")
	}
	n := rapid.IntRange(0, 4).Draw(t, "len")
	if kind == 1 {
		items := make([]value.Value, n)
		for i := range items {
			items[i] = drawValue(t, depth-1)
		}
		return value.List(items...)
	}
	fields := map[string]value.Value{}
	for range n {
		k := rapid.OneOf(rapid.SampledFrom([]string{"a", "b", "$int", "$float", "$object", "\uE000", "😀"}), rapid.String()).Draw(t, "field")
		fields[k] = drawValue(t, depth-1)
	}
	return value.Object(fields)
}

// Keys generates a small set of variable names, so that generated effects
// often meet the same variables.
func Keys() *rapid.Generator[[]string] {
	return rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"x", "y", "z", "count", "items", "flag", "é", "😀", "\uE000", ""}), 1, 6, rapid.ID)
}

// State generates states over keys: each key is absent or holds a value
// (numbers and lists are likely, so effects usually fit).
func State(keys []string) *rapid.Generator[kernel.State] {
	return rapid.Custom(func(t *rapid.T) kernel.State {
		s := kernel.State{}
		for _, k := range keys {
			if !rapid.Bool().Draw(t, "present "+k) {
				continue
			}
			var v value.Value
			switch rapid.IntRange(0, 3).Draw(t, "shape "+k) {
			case 0:
				v = value.Int(Int().Draw(t, "int "+k))
			case 1:
				v = value.Float(Float().Draw(t, "float "+k))
			case 2:
				v = value.List(rapid.SliceOfN(Scalar(), 0, 4).Draw(t, "list "+k)...)
			default:
				v = Value(2).Draw(t, "value "+k)
			}
			next, err := s.With(k, v)
			if err != nil {
				t.Fatalf("generated an invalid value: %v", err)
			}
			s = next
		}
		return s
	})
}

// Effect generates effects on keys: every operation, with operands of the
// right shape most of the time and of the wrong shape sometimes.
func Effect(keys []string) *rapid.Generator[kernel.Effect] {
	return rapid.Custom(func(t *rapid.T) kernel.Effect {
		key := rapid.SampledFrom(keys).Draw(t, "key")
		op := kernel.Op(rapid.IntRange(int(kernel.OpSet), int(kernel.OpCount)).Draw(t, "op"))
		num := rapid.OneOf(rapid.Map(rapid.Int64Range(-5, 5), value.Int), rapid.Map(Int(), value.Int), rapid.Map(Float(), value.Float))
		switch op {
		case kernel.OpDelete:
			return kernel.Delete(key)
		case kernel.OpIncrement, kernel.OpDecrement, kernel.OpMultiply:
			return kernel.Effect{Op: op, Key: key, Value: num.Draw(t, "operand")}
		case kernel.OpCount:
			return kernel.Count(key, num.Draw(t, "operand"), num.Draw(t, "initial"))
		case kernel.OpAppend, kernel.OpRemove:
			return kernel.Effect{Op: op, Key: key, Value: rapid.OneOf(rapid.Map(rapid.Int64Range(0, 2), value.Int), Scalar()).Draw(t, "item")}
		default:
			return kernel.Set(key, rapid.OneOf(num, Value(2)).Draw(t, "value"))
		}
	})
}

// Effects generates sequences of up to max effects on keys that mostly
// fit s: each effect is chosen for the value its variable holds at that
// point of the sequence (arithmetic on numbers, append and remove of an
// existing item on lists, set and delete anywhere), with an occasional
// arbitrary Effect that may not fit. Use it where Effect alone would make
// most sequences fail early.
func Effects(s kernel.State, keys []string, max int) *rapid.Generator[[]kernel.Effect] {
	return rapid.Custom(func(t *rapid.T) []kernel.Effect {
		n := rapid.IntRange(0, max).Draw(t, "n")
		out := make([]kernel.Effect, 0, n)
		cur := s
		for range n {
			e := fitting(t, cur, keys)
			out = append(out, e)
			next, err := kernel.ApplyEffects(cur, []kernel.Effect{e})
			if err != nil {
				break
			}
			cur = next
		}
		return out
	})
}

func fitting(t *rapid.T, s kernel.State, keys []string) kernel.Effect {
	key := rapid.SampledFrom(keys).Draw(t, "key")
	if rapid.IntRange(0, 9).Draw(t, "arbitrary?") == 0 {
		return Effect(keys).Draw(t, "arbitrary")
	}
	v, ok := s.Get(key)
	choice := rapid.IntRange(0, 9).Draw(t, "choice")
	switch {
	case choice == 0:
		return kernel.Delete(key)
	case choice == 2 && (!ok || v.Kind() == value.KindInt):
		return kernel.Count(key, value.Int(rapid.Int64Range(-3, 3).Draw(t, "n")), value.Int(rapid.Int64Range(-3, 3).Draw(t, "from")))
	case choice == 1 || !ok:
		return kernel.Set(key, rapid.OneOf(Scalar(), Value(2)).Draw(t, "value"))
	}
	arith := []kernel.Op{kernel.OpIncrement, kernel.OpDecrement, kernel.OpMultiply}
	switch v.Kind() {
	case value.KindInt:
		return kernel.Effect{Op: rapid.SampledFrom(arith).Draw(t, "op"), Key: key, Value: value.Int(rapid.Int64Range(-3, 3).Draw(t, "n"))}
	case value.KindFloat:
		operand := rapid.OneOf(rapid.Map(rapid.Int64Range(-3, 3), value.Int), rapid.Map(rapid.Float64Range(-2, 2), value.Float)).Draw(t, "operand")
		return kernel.Effect{Op: rapid.SampledFrom(arith).Draw(t, "op"), Key: key, Value: operand}
	case value.KindList:
		if v.Len() > 0 && rapid.Bool().Draw(t, "remove?") {
			return kernel.Remove(key, rapid.SampledFrom(v.Items()).Draw(t, "item"))
		}
		return kernel.Append(key, rapid.OneOf(rapid.Map(rapid.Int64Range(0, 2), value.Int), Scalar()).Draw(t, "item"))
	default:
		return kernel.Set(key, Scalar().Draw(t, "value"))
	}
}

// Cost generates costs from 0 to max thousandths, biased to small ones.
func Cost(max kernel.Cost) *rapid.Generator[kernel.Cost] {
	return rapid.OneOf(
		rapid.Map(rapid.Int64Range(0, int64(min(max, 5*kernel.Unit))), func(i int64) kernel.Cost { return kernel.Cost(i) }),
		rapid.Map(rapid.Int64Range(0, int64(max)), func(i int64) kernel.Cost { return kernel.Cost(i) }),
	)
}

// Action generates well-formed actions with ids from ids, up to four
// effects on keys and costs up to maxCost.
func Action(ids, keys []string, maxCost kernel.Cost) *rapid.Generator[kernel.Action] {
	return rapid.Custom(func(t *rapid.T) kernel.Action {
		id := rapid.SampledFrom(ids).Draw(t, "id")
		return kernel.Action{
			ID:          id,
			Name:        id,
			Description: "generated action " + id,
			Effects:     rapid.SliceOfN(Effect(keys), 0, 4).Draw(t, "effects"),
			Cost:        Cost(maxCost).Draw(t, "cost"),
			Category:    rapid.SampledFrom([]string{"", "io", "compute"}).Draw(t, "category"),
			Reversible:  rapid.Bool().Draw(t, "reversible"),
			Tags:        rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "é"}), 0, 2).Draw(t, "tags"),
		}
	})
}

// Setup is what CheckTheorems exercises.
type Setup struct {
	Kernel  *kernel.Kernel
	Initial kernel.State                    // must satisfy the kernel's blocking invariants
	Actions *rapid.Generator[kernel.Action] // the catalogue (any mix of valid, invalid, emergency)
	// Emergency is a zero-cost, effect-free action registered as an
	// emergency action, if the kernel has one (T8 is checked with it).
	Emergency *kernel.Action
	Steps     int // actions per run (default 40)
}

// CheckTheorems runs a random sequence of executions and rollbacks
// through a Session recording into an in-memory trace and fails t if any
// of T1–T8 is broken:
//
//   - T1: net spend ≤ B0 after every step;
//   - T2: non-emergency steps ≤ floor(B0/ε), and ε > 0;
//   - T3: every blocking invariant holds in every state reached (the
//     initial state is checked first; predicates must be deterministic);
//   - T4: gross spend never decreases;
//   - T5: a rejected action changes neither state nor budget nor steps,
//     and a committed one changes them exactly as its Verdict said;
//   - T6: the trace verifies, and a tampered copy does not;
//   - T7: rolling back the last execution restores the prior state
//     exactly, refunds its cost once and keeps the step counter;
//   - T8: the Emergency action (if given) is allowed at every step;
//
// with some actions reserved (Session.Reserve) and then settled at random
// actual costs, and refunds of random past executions: T1 and T4 hold
// through them, a settlement or refund changes only the budget and never
// refunds more than was charged, and an overrun is reported; and finally
// that replaying the trace rebuilds the same state, budget and open
// reservations.
func CheckTheorems(t *rapid.T, s Setup) {
	k := s.Kernel
	ctx := context.Background()
	if k.MinActionCost() <= 0 {
		t.Fatalf("T2: minimum action cost %s is not positive", k.MinActionCost())
	}
	for _, inv := range k.Invariants() {
		if ok, err := inv.Holds(s.Initial); !ok && inv.Enforcement == kernel.EnforcementBlocking {
			t.Fatalf("T3 precondition: the initial state violates %q: %v", inv.Name, err)
		}
	}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, s.Initial, kernel.WithClock(tick))
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	steps := s.Steps
	if steps == 0 {
		steps = 40
	}
	for i := range steps {
		beforeState, beforeKS := sess.State(), sess.Meter()
		if s.Emergency != nil {
			if v := sess.Evaluate(*s.Emergency); !v.Allowed() {
				t.Fatalf("T8: emergency action %q refused at step %d: %v", s.Emergency.ID, i, v.Err())
			}
		}
		history := sess.History()
		if len(history) > 0 && rapid.IntRange(0, 4).Draw(t, "rollback?") == 0 {
			last := history[len(history)-1]
			charged, refunded, _ := beforeKS.Budget().Charged(last.ExecID)
			rr, err := sess.Rollback(ctx, last.ExecID)
			after, afterKS := sess.State(), sess.Meter()
			if err != nil {
				// Only an execution that is not the latest state, or was
				// already rolled back, may be refused.
				if !after.Equal(beforeState) || afterKS.Budget().Net() != beforeKS.Budget().Net() {
					t.Fatalf("T5: a refused rollback changed something: %v", err)
				}
				continue
			}
			if after.Fingerprint() != last.Before || afterKS.Budget().Net() != beforeKS.Budget().Net()-rr.Refund {
				t.Fatalf("T7: rollback of %s did not restore the prior state and budget", last.ExecID)
			}
			// The refund is what the execution was charged and not yet
			// refunded (by a settlement or a Refund).
			if rr.Refund != charged-refunded {
				t.Fatalf("T7: rollback of %s refunded %s, it was charged %s and refunded %s", last.ExecID, rr.Refund, charged, refunded)
			}
			if afterKS.Steps() != beforeKS.Steps() {
				t.Fatalf("T7/T2: rollback changed the step counter %d → %d", beforeKS.Steps(), afterKS.Steps())
			}
			if _, err := sess.Rollback(ctx, last.ExecID); err == nil {
				t.Fatalf("T7: execution %s rolled back twice", last.ExecID)
			}
			checkStep(t, k, beforeKS, sess)
			continue
		}
		if len(history) > 0 && rapid.IntRange(0, 4).Draw(t, "settle or refund?") == 0 {
			checkSettleOrRefund(t, k, sess, history[rapid.IntRange(0, len(history)-1).Draw(t, "execution")])
			continue
		}
		a := s.Actions.Draw(t, fmt.Sprintf("action %d", i))
		verdict := k.Evaluate(beforeKS, beforeState, a)
		execute := sess.Execute
		if rapid.IntRange(0, 3).Draw(t, "reserve?") == 0 {
			execute = sess.Reserve
		}
		rec, err := execute(ctx, a)
		after, afterKS := sess.State(), sess.Meter()
		if err != nil {
			if verdict.Allowed() {
				t.Fatalf("T5: Evaluate allowed %q but Execute failed: %v", a.ID, err)
			}
			if !after.Equal(beforeState) || afterKS.Budget() != beforeKS.Budget() || afterKS.Steps() != beforeKS.Steps() {
				t.Fatalf("T5: rejected action %q changed the session", a.ID)
			}
			continue
		}
		if !verdict.Allowed() {
			t.Fatalf("T5: Evaluate rejected %q but Execute committed it", a.ID)
		}
		if !after.Equal(verdict.Next()) || rec.After != after.Fingerprint() || rec.Before != beforeState.Fingerprint() {
			t.Fatalf("T5: committed state differs from the simulated one")
		}
		if afterKS.Budget().Gross() != beforeKS.Budget().Gross()+a.Cost {
			t.Fatalf("T5: charged %s, action costs %s", afterKS.Budget().Gross()-beforeKS.Budget().Gross(), a.Cost)
		}
		if restored, err := kernel.ApplyEffects(after, rec.Inverse); err != nil || !restored.Equal(beforeState) {
			t.Fatalf("T7: algebraic inverse does not restore the state: %v", err)
		}
		if restored, err := kernel.ApplyEffects(after, kernel.DiffInverse(beforeState, after)); err != nil || !restored.Equal(beforeState) {
			t.Fatalf("T7: state-diff inverse does not restore the state: %v", err)
		}
		checkStep(t, k, beforeKS, sess)
	}
	head, err := log.Verify(ctx)
	if err != nil {
		t.Fatalf("T6: the trace does not verify: %v", err)
	}
	entries := make([]trace.Entry, 0, head.Size)
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			t.Fatalf("T6: %v", err)
		}
		entries = append(entries, e)
	}
	if len(entries) > 1 {
		i := rapid.IntRange(0, len(entries)-1).Draw(t, "tamper")
		tampered := append([]trace.Entry(nil), entries...)
		p := append([]byte(nil), tampered[i].Payload...)
		p[len(p)/2] ^= 1
		tampered[i].Payload = p
		if _, err := trace.Verify(tampered); err == nil {
			t.Fatalf("T6: a tampered entry %d verified", i)
		}
	}
	replayed, err := kernel.Replay(ctx, log, k, sess.ID())
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	if !replayed.State().Equal(sess.State()) || replayed.Meter().Budget().Net() != sess.Meter().Budget().Net() ||
		replayed.Meter().Budget().Gross() != sess.Meter().Budget().Gross() || replayed.Meter().Steps() != sess.Meter().Steps() ||
		len(replayed.Meter().Reservations()) != len(sess.Meter().Reservations()) {
		t.Fatalf("replay: rebuilt session differs from the live one")
	}
}

// checkSettleOrRefund settles rec if it is an open reservation, else
// refunds part of it, and checks what changed.
func checkSettleOrRefund(t *rapid.T, k *kernel.Kernel, sess *kernel.Session, rec kernel.Record) {
	ctx := context.Background()
	before, state := sess.Meter(), sess.State()
	charged, refunded, _ := before.Budget().Charged(rec.ExecID)
	amount := Cost(2*max(charged, 1)).Draw(t, "amount")
	var err error
	if slices.ContainsFunc(before.Reservations(), func(r kernel.Reservation) bool { return r.ExecID == rec.ExecID }) {
		var r kernel.SettleRecord
		r, err = sess.Settle(ctx, rec.ExecID, amount)
		if (amount > charged) != errors.Is(err, kernel.ErrOverrun) || r.Refund > charged || r.Overrun+r.Unpaid != max(amount-charged, 0) {
			t.Fatalf("settlement of %s reserved %s at %s: %+v, %v", rec.ExecID, charged, amount, r, err)
		}
	} else {
		_, err = sess.Refund(ctx, rec.ExecID, amount, "refund")
		if (err == nil) != (amount <= charged-refunded && !before.Budget().RolledBack(rec.ExecID)) {
			t.Fatalf("refund of %s at %s (charged %s, refunded %s): %v", rec.ExecID, amount, charged, refunded, err)
		}
	}
	if c, r, _ := sess.Meter().Budget().Charged(rec.ExecID); r > c {
		t.Fatalf("T4: %s refunded %s of %s", rec.ExecID, r, c)
	}
	if !sess.State().Equal(state) || sess.Meter().Steps() != before.Steps() {
		t.Fatalf("a settlement or refund changed the state or the steps")
	}
	checkStep(t, k, before, sess)
}

func checkStep(t *rapid.T, k *kernel.Kernel, before kernel.Meter, sess *kernel.Session) {
	ks, st := sess.Meter(), sess.State()
	b := ks.Budget()
	if b.Net() > b.Limit() || b.Net() < 0 {
		t.Fatalf("T1: net spend %s outside [0, %s]", b.Net(), b.Limit())
	}
	if ks.Steps() > k.MaxSteps() {
		t.Fatalf("T2: %d steps exceed floor(B0/ε) = %d", ks.Steps(), k.MaxSteps())
	}
	if b.Gross() < before.Budget().Gross() {
		t.Fatalf("T4: gross spend decreased %s → %s", before.Budget().Gross(), b.Gross())
	}
	for _, inv := range k.Invariants() {
		if inv.Enforcement != kernel.EnforcementBlocking {
			continue
		}
		if ok, err := inv.Holds(st); !ok {
			t.Fatalf("T3: blocking invariant %q violated in a reached state: %v", inv.Name, err)
		}
	}
}
