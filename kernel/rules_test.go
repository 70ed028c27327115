package kernel_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// TestEffectRules: one row per effect rule and per rejection reason.
func TestEffectRules(t *testing.T) {
	base := mustState(t, map[string]any{
		"i": 5, "f": 1.5, "s": "str", "l": []any{1, 1, "a"}, "n": nil,
		"big": int64(math.MaxInt64), "small": int64(math.MinInt64), "hugef": 1e308,
	})
	i, f, str, nul := value.Int, value.Float, value.String, value.Null()
	tests := []struct {
		name    string
		effects []kernel.Effect
		key     string
		want    value.Value
		absent  bool
		err     error
	}{
		{"set creates", []kernel.Effect{kernel.Set("new", i(1))}, "new", i(1), false, nil},
		{"set null is present", []kernel.Effect{kernel.Set("new", nul)}, "new", nul, false, nil},
		{"int increment stays int", []kernel.Effect{kernel.Increment("i", i(2))}, "i", i(7), false, nil},
		{"increments apply in sequence", []kernel.Effect{kernel.Increment("i", i(1)), kernel.Increment("i", i(1))}, "i", i(7), false, nil},
		{"set then delete deletes", []kernel.Effect{kernel.Set("i", i(9)), kernel.Delete("i")}, "i", value.Value{}, true, nil},
		{"delete then set sets", []kernel.Effect{kernel.Delete("i"), kernel.Set("i", str("x"))}, "i", str("x"), false, nil},
		{"delete absent is a no-op", []kernel.Effect{kernel.Delete("nope")}, "nope", value.Value{}, true, nil},
		{"decrement", []kernel.Effect{kernel.Decrement("i", i(10))}, "i", i(-5), false, nil},
		{"multiply int", []kernel.Effect{kernel.Multiply("i", i(-3))}, "i", i(-15), false, nil},
		{"float + int operand", []kernel.Effect{kernel.Increment("f", i(1))}, "f", f(2.5), false, nil},
		{"float + float", []kernel.Effect{kernel.Increment("f", f(0.5))}, "f", f(2), false, nil},
		{"float result stays float when integral", []kernel.Effect{kernel.Multiply("f", f(2))}, "f", f(3), false, nil},
		{"append keeps duplicates", []kernel.Effect{kernel.Append("l", i(1))}, "l", value.List(i(1), i(1), str("a"), i(1)), false, nil},
		{"remove removes the first equal item", []kernel.Effect{kernel.Remove("l", i(1))}, "l", value.List(i(1), str("a")), false, nil},
		{"remove is strict about types", []kernel.Effect{kernel.Remove("l", f(1))}, "", value.Value{}, false, kernel.ErrNotInList},
		{"int + float is a type mismatch", []kernel.Effect{kernel.Increment("i", f(1))}, "", value.Value{}, false, kernel.ErrTypeMismatch},
		{"increment a string", []kernel.Effect{kernel.Increment("s", i(1))}, "", value.Value{}, false, kernel.ErrTypeMismatch},
		{"increment null", []kernel.Effect{kernel.Increment("n", i(1))}, "", value.Value{}, false, kernel.ErrTypeMismatch},
		{"increment absent", []kernel.Effect{kernel.Increment("nope", i(1))}, "", value.Value{}, false, kernel.ErrMissingVariable},
		{"int overflow", []kernel.Effect{kernel.Increment("big", i(1))}, "", value.Value{}, false, kernel.ErrOverflow},
		{"int underflow", []kernel.Effect{kernel.Decrement("small", i(1))}, "", value.Value{}, false, kernel.ErrOverflow},
		{"multiply overflow", []kernel.Effect{kernel.Multiply("small", i(-1))}, "", value.Value{}, false, kernel.ErrOverflow},
		{"float overflow to Inf", []kernel.Effect{kernel.Multiply("hugef", f(10))}, "", value.Value{}, false, kernel.ErrOverflow},
		{"float with inexact int operand", []kernel.Effect{kernel.Increment("f", i(1<<53+1))}, "", value.Value{}, false, kernel.ErrTypeMismatch},
		{"append to a non-list", []kernel.Effect{kernel.Append("s", i(1))}, "", value.Value{}, false, kernel.ErrTypeMismatch},
		{"remove from a non-list", []kernel.Effect{kernel.Remove("i", i(1))}, "", value.Value{}, false, kernel.ErrTypeMismatch},
		{"append to absent", []kernel.Effect{kernel.Append("nope", i(1))}, "", value.Value{}, false, kernel.ErrMissingVariable},
		{"remove missing item", []kernel.Effect{kernel.Remove("l", str("zz"))}, "", value.Value{}, false, kernel.ErrNotInList},
		{"later effect fails: whole sequence fails", []kernel.Effect{kernel.Set("i", str("x")), kernel.Increment("i", i(1))}, "", value.Value{}, false, kernel.ErrTypeMismatch},
		{"unknown op", []kernel.Effect{{Op: 0, Key: "i"}}, "", value.Value{}, false, kernel.CheckWellFormed},
		{"non-numeric operand", []kernel.Effect{kernel.Increment("i", str("1"))}, "", value.Value{}, false, kernel.CheckWellFormed},
		{"NaN operand", []kernel.Effect{kernel.Set("x", f(math.NaN()))}, "", value.Value{}, false, value.ErrInvalidValue},
		{"delete with operand", []kernel.Effect{{Op: kernel.OpDelete, Key: "i", Value: i(1)}}, "", value.Value{}, false, kernel.CheckWellFormed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kernel.ApplyEffects(base, tt.effects)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				assert.Equal(t, base, got, "a failed application returns the input state")
				if errors.Is(tt.err, kernel.ErrTypeMismatch) || errors.Is(tt.err, kernel.ErrOverflow) {
					var ee *kernel.EffectError
					require.ErrorAs(t, err, &ee)
					assert.ErrorIs(t, err, kernel.CheckEffects)
				}
				return
			}
			require.NoError(t, err)
			v, ok := got.Get(tt.key)
			assert.Equal(t, !tt.absent, ok)
			if !tt.absent {
				assert.True(t, v.Equal(tt.want), "got %s want %s", v, tt.want)
				assert.Equal(t, tt.want.Kind(), v.Kind())
			}
			back, err := kernel.ApplyEffects(got, mustInverse(t, base, tt.effects))
			require.NoError(t, err)
			assert.True(t, back.Equal(base), "inverse restores the state")
		})
	}
}

func mustInverse(t *testing.T, s kernel.State, effects []kernel.Effect) []kernel.Effect {
	inv, err := kernel.InverseEffects(s, effects)
	require.NoError(t, err)
	return inv
}

// TestEvaluateChecks: one row per check and rejection reason, asserting
// the check order and the sentinel.
func TestEvaluateChecks(t *testing.T) {
	panicky := kernel.Invariant{Name: "panics", Check: func(s kernel.State) bool {
		if _, boom := s.Get("boom"); boom {
			panic("boom")
		}
		return true
	}}
	monitor := kernel.Invariant{Name: "x small", Enforcement: kernel.EnforcementMonitoring, Check: func(s kernel.State) bool {
		i, _ := s.Int("x")
		return i < 10
	}}
	pre := kernel.Precondition{Name: "not dangerous", Check: func(_ kernel.State, a kernel.Action) bool { return a.Category != "dangerous" }}
	prePanics := kernel.Precondition{Name: "tag check", Check: func(_ kernel.State, a kernel.Action) bool { return a.Tags[0] != "" }}
	k := mustKernel(t, kernel.Config{
		Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit,
		Invariants:       []kernel.Invariant{nonNegative("x"), panicky, monitor},
		Preconditions:    []kernel.Precondition{pre, prePanics},
		EmergencyActions: []string{"hover"},
	})
	s := mustState(t, map[string]any{"x": 5})
	ks := k.Start()
	ok := kernel.Action{ID: "ok", Cost: kernel.Unit, Tags: []string{"t"}}
	with := func(f func(*kernel.Action)) kernel.Action { a := ok; a.Tags = []string{"t"}; f(&a); return a }
	order := []kernel.CheckName{kernel.CheckWellFormed, kernel.CheckMinCost, kernel.CheckBudget, kernel.CheckStepLimit, kernel.CheckEffects,
		kernel.CheckInvariant, kernel.CheckInvariant, kernel.CheckInvariant, kernel.CheckPrecondition, kernel.CheckPrecondition}
	tests := []struct {
		name   string
		action kernel.Action
		ks     kernel.Meter
		err    error // nil: allowed
		failed kernel.CheckName
		warned bool
	}{
		{"allowed", ok, ks, nil, "", false},
		{"well_formed: empty id", with(func(a *kernel.Action) { a.ID = "" }), ks, kernel.CheckWellFormed, kernel.CheckWellFormed, false},
		{"well_formed: negative cost", with(func(a *kernel.Action) { a.Cost = -1 }), ks, kernel.ErrInvalidCost, kernel.CheckWellFormed, false},
		{"well_formed: name not UTF-8", with(func(a *kernel.Action) { a.Name = "\xff" }), ks, kernel.CheckWellFormed, kernel.CheckWellFormed, false},
		{"well_formed: foreign meter", ok, mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: 1}).Start(), kernel.ErrStaleVerdict, kernel.CheckWellFormed, false},
		{"min_cost", with(func(a *kernel.Action) { a.Cost = kernel.Unit - 1 }), ks, kernel.CheckMinCost, kernel.CheckMinCost, false},
		{"budget", with(func(a *kernel.Action) { a.Cost = 11 * kernel.Unit }), ks, kernel.CheckBudget, kernel.CheckBudget, false},
		{"step_limit", ok, exhaust(t, k, s, 10), kernel.CheckStepLimit, kernel.CheckStepLimit, false},
		{"effects", with(func(a *kernel.Action) { a.Effects = []kernel.Effect{kernel.Append("x", value.Int(1))} }), ks, kernel.ErrTypeMismatch, kernel.CheckEffects, false},
		{"invariant: blocking", with(func(a *kernel.Action) { a.Effects = []kernel.Effect{kernel.Decrement("x", value.Int(6))} }), ks, kernel.CheckInvariant, kernel.CheckInvariant, false},
		{"invariant: panicking predicate is a violation", with(func(a *kernel.Action) { a.Effects = []kernel.Effect{kernel.Set("boom", value.Null())} }), ks, kernel.CheckInvariant, kernel.CheckInvariant, false},
		{"invariant: monitoring only warns", with(func(a *kernel.Action) { a.Effects = []kernel.Effect{kernel.Set("x", value.Int(50))} }), ks, nil, "", true},
		{"precondition", with(func(a *kernel.Action) { a.Category = "dangerous" }), ks, kernel.CheckPrecondition, kernel.CheckPrecondition, false},
		{"precondition: panicking predicate fails", with(func(a *kernel.Action) { a.Tags = nil }), ks, kernel.CheckPrecondition, kernel.CheckPrecondition, false},
		{"emergency bypasses min cost and step limit", kernel.Action{ID: "hover", Tags: []string{"t"}}, exhaust(t, k, s, 10), nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := k.Evaluate(tt.ks, s, tt.action)
			names := make([]kernel.CheckName, len(v.Checks()))
			for i, c := range v.Checks() {
				names[i] = c.Check
			}
			assert.Equal(t, order, names, "one result per check, in the documented order")
			assert.Equal(t, tt.err == nil, v.Allowed())
			assert.Equal(t, tt.warned, len(v.Warnings()) > 0)
			s1, ks1, _, err := k.Execute(tt.ks, s, tt.action, "id-"+tt.name)
			if tt.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, kernel.ErrRejected)
			require.ErrorIs(t, err, tt.err)
			assert.Equal(t, s, s1)
			assert.Equal(t, tt.ks, ks1)
			found := false
			for _, f := range v.Failures() {
				found = found || f.Check == tt.failed
				assert.NotEmpty(t, f.Reason)
			}
			assert.True(t, found, "failed check %s reported", tt.failed)
		})
	}
}

// exhaust runs n cheap actions so that the step counter reaches the limit.
func exhaust(t *testing.T, k *kernel.Kernel, s kernel.State, n int) kernel.Meter {
	ks := k.Start()
	a := kernel.Action{ID: "tick", Cost: kernel.Unit, Tags: []string{"t"}}
	for i := range n {
		var err error
		if s, ks, _, err = k.Execute(ks, s, a, "tick"+itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	return ks
}

// TestNondeterministicPredicateCannotSplitAnAction: a predicate that
// alternates between true and false either rejects the whole action or
// commits it whole; there is no post-commit re-check.
func TestNondeterministicPredicateCannotSplitAnAction(t *testing.T) {
	flip := false
	k := mustKernel(t, kernel.Config{Budget: 100 * kernel.Unit, MinActionCost: 1, Invariants: []kernel.Invariant{{
		Name: "flaky", Check: func(kernel.State) bool { flip = !flip; return flip },
	}}})
	ks, s := k.Start(), mustState(t, map[string]any{"x": 0})
	a := kernel.Action{ID: "inc", Cost: 1, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}}
	for i := range 10 {
		s1, ks1, _, err := k.Execute(ks, s, a, itoa(i))
		x, _ := s1.Get("x")
		xi, _ := x.AsInt()
		if err != nil {
			assert.Equal(t, s, s1)
			assert.Equal(t, ks, ks1)
			continue
		}
		assert.Equal(t, int64(ks1.Steps()), xi, "state and budget moved together")
		assert.Equal(t, kernel.Cost(ks1.Steps()), ks1.Budget().Gross())
		s, ks = s1, ks1
	}
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  kernel.Config
	}{
		{"zero min cost", kernel.Config{Budget: 1}},
		{"negative budget", kernel.Config{Budget: -1, MinActionCost: 1}},
		{"unnamed invariant", kernel.Config{Budget: 1, MinActionCost: 1, Invariants: []kernel.Invariant{{Check: func(kernel.State) bool { return true }}}}},
		{"nil predicate", kernel.Config{Budget: 1, MinActionCost: 1, Invariants: []kernel.Invariant{{Name: "x"}}}},
		{"duplicate invariant", kernel.Config{Budget: 1, MinActionCost: 1, Invariants: []kernel.Invariant{nonNegative("x"), nonNegative("x")}}},
		{"unknown enforcement", kernel.Config{Budget: 1, MinActionCost: 1, Invariants: []kernel.Invariant{{Name: "x", Check: func(kernel.State) bool { return true }, Enforcement: 7}}}},
		{"precondition without predicate", kernel.Config{Budget: 1, MinActionCost: 1, Preconditions: []kernel.Precondition{{Name: "p"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := kernel.New(tt.cfg)
			require.ErrorIs(t, err, kernel.ErrInvalidConfig)
		})
	}
}

// TestBudgetRules: Charge, Refund and the ledger.
func TestBudgetRules(t *testing.T) {
	b, err := kernel.NewBudget(10)
	require.NoError(t, err)
	_, err = kernel.NewBudget(-1)
	require.ErrorIs(t, err, kernel.ErrInvalidCost)

	b1, err := b.Charge("a", 6)
	require.NoError(t, err)
	assert.Equal(t, kernel.Cost(0), b.Net(), "Charge returns a new value")
	assert.Equal(t, kernel.Cost(6), b1.Net())
	assert.True(t, b1.CanAfford(4))
	assert.False(t, b1.CanAfford(5))
	assert.False(t, b1.CanAfford(-1))

	_, err = b1.Charge("b", 5)
	require.ErrorIs(t, err, kernel.CheckBudget)
	_, err = b1.Charge("a", 1)
	require.ErrorIs(t, err, kernel.ErrDuplicateExecution)
	_, err = b1.Charge("c", -1)
	require.ErrorIs(t, err, kernel.ErrInvalidCost)

	b2, err := b1.Refund("a", 4)
	require.NoError(t, err)
	assert.Equal(t, kernel.Cost(6), b2.Gross(), "T4: refunds do not touch gross")
	assert.Equal(t, kernel.Cost(2), b2.Net())
	_, err = b2.Refund("a", 3)
	require.ErrorIs(t, err, kernel.ErrRefundTooLarge, "never more than was charged")
	_, err = b2.Refund("zz", 1)
	require.ErrorIs(t, err, kernel.ErrUnknownExecution)
	_, err = b2.Refund("a", -1)
	require.ErrorIs(t, err, kernel.ErrInvalidCost)
	charged, refunded, ok := b2.Charged("a")
	assert.True(t, ok)
	assert.Equal(t, kernel.Cost(6), charged)
	assert.Equal(t, kernel.Cost(4), refunded)

	big, err := kernel.NewBudget(kernel.Cost(math.MaxInt64))
	require.NoError(t, err)
	big, err = big.Charge("x", kernel.Cost(math.MaxInt64))
	require.NoError(t, err)
	big, err = big.Refund("x", kernel.Cost(math.MaxInt64))
	require.NoError(t, err)
	_, err = big.Charge("y", 1)
	require.ErrorIs(t, err, kernel.ErrOverflow, "gross spend cannot wrap")
}

func TestParseCost(t *testing.T) {
	good := map[string]kernel.Cost{
		"0": 0, "1": 1000, "1.5": 1500, "0.001": 1, "2e-3": 2, "1.5000": 1500, "12E2": 1_200_000,
		"9223372036854775.807": math.MaxInt64, "0.0000e5": 0, "100e-5": 1,
	}
	for in, want := range good {
		got, err := kernel.ParseCost(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		back, err := kernel.ParseCost(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, back, "String round-trips")
	}
	for _, in := range []string{"0.0005", "0.0001", "-1", "-0", "NaN", "Inf", "+1", "", "1.", ".5", "01", "1e", "1e99", "9223372036854775.808", "1/3", "0x10", "1e-1000000000", " 1"} {
		_, err := kernel.ParseCost(in)
		require.ErrorIs(t, err, kernel.ErrInvalidCost, "%q", in)
	}
}

// TestStrictValues: int 1, float 1.0 and string "1" differ; null differs
// from absent; -0.0 differs from 0.0; the JSON form keeps all of it.
func TestStrictValues(t *testing.T) {
	vals := []value.Value{value.Int(1), value.Float(1), value.String("1"), value.Null(), value.Float(0), value.Float(math.Copysign(0, -1)), value.Int(0), value.Bool(true)}
	for i, a := range vals {
		for j, b := range vals {
			assert.Equal(t, i == j, a.Equal(b), "%s vs %s", a, b)
		}
		s1 := mustState(t, map[string]any{"k": a})
		s2 := mustState(t, map[string]any{"k": vals[(i+1)%len(vals)]})
		assert.NotEqual(t, s1.Fingerprint(), s2.Fingerprint())
		back, err := value.Decode([]byte(a.String()))
		require.NoError(t, err)
		assert.True(t, back.Equal(a), "%s round-trips", a)
	}
	withNull := mustState(t, map[string]any{"k": nil})
	empty := kernel.State{}
	assert.False(t, withNull.Equal(empty))
	assert.NotEqual(t, withNull.Fingerprint(), empty.Fingerprint())
	_, has := withNull.Get("k")
	assert.True(t, has, "a variable holding null is present")
	_, has = empty.Get("k")
	assert.False(t, has)
}

// TestNoAliasing: values copy what they are built from and what they hand
// out.
func TestNoAliasing(t *testing.T) {
	items := []value.Value{value.Int(1)}
	l := value.List(items...)
	items[0] = value.Int(2)
	got, _ := l.Index(0)
	assert.True(t, got.Equal(value.Int(1)))
	out := l.Items()
	out[0] = value.Int(3)
	got, _ = l.Index(0)
	assert.True(t, got.Equal(value.Int(1)))

	m := map[string]any{"l": []any{int64(1)}}
	s := mustState(t, m)
	m["l"].([]any)[0] = int64(9)
	v, _ := s.Get("l")
	first, _ := v.Index(0)
	assert.True(t, first.Equal(value.Int(1)))
	gm := s.Map()
	gm["l"].([]any)[0] = int64(7)
	v, _ = s.Get("l")
	first, _ = v.Index(0)
	assert.True(t, first.Equal(value.Int(1)))

	a := kernel.Action{ID: "a", Cost: 1, Effects: []kernel.Effect{kernel.Set("x", value.Int(1))}, Tags: []string{"t"}}
	k := mustKernel(t, kernel.Config{Budget: 10, MinActionCost: 1})
	_, _, rec, err := k.Execute(k.Start(), kernel.State{}, a, "e")
	require.NoError(t, err)
	a.Effects[0] = kernel.Delete("x")
	a.Tags[0] = "changed"
	assert.Equal(t, kernel.OpSet, rec.Action.Effects[0].Op)
	assert.Equal(t, "t", rec.Action.Tags[0])
}

// TestJSONRoundTrip: typed JSON of values, states and actions round-trips
// exactly and is canonical.
func TestJSONRoundTrip(t *testing.T) {
	s := mustState(t, map[string]any{
		"int": 1, "float": 1.0, "negzero": math.Copysign(0, -1), "big": int64(math.MaxInt64), "frac": 0.25, "e": 1e300,
		"str": "1", "null": nil, "list": []any{1, 1.0, "1", nil}, "obj": map[string]any{"$int": "not an int"},
		"\uE000": true, "😀": false,
	})
	b, err := s.MarshalJSON()
	require.NoError(t, err)
	back, err := kernel.DecodeState(b)
	require.NoError(t, err)
	assert.True(t, back.Equal(s), "state round-trips: %s", b)
	assert.Equal(t, s.Fingerprint(), back.Fingerprint())
	// UTF-16 key order: U+1F600 (surrogates D83D…) sorts before U+E000.
	assert.Less(t, indexOf(b, "😀"), indexOf(b, "\uE000"))

	a := kernel.Action{ID: "a", Name: "n", Description: "d", Cost: 1500, Category: "c", Reversible: true,
		Precondition: "p", Postcondition: "q", Tags: []string{"x"},
		Effects: []kernel.Effect{kernel.Set("k", value.Float(2)), kernel.Delete("z"), kernel.Append("l", value.Int(1<<60))}}
	ab, err := a.MarshalJSON()
	require.NoError(t, err)
	a2, err := kernel.DecodeAction(ab)
	require.NoError(t, err)
	assert.Equal(t, a, a2)

	for _, bad := range []string{
		`{"id":"a","cost":0.0005}`, `{"id":"a","cost":-1}`, `{"id":"a","cost":"NaN"}`, `{"id":"a","cost":true}`,
		`{"id":"a","bogus":1}`, `{"id":"a","id":"b"}`, `{"id":"a","effects":[{"op":"explode","key":"x"}]}`,
		`{"id":"a","effects":[{"op":"increment","key":"x","value":"1"}]}`, `{"id":""}`, `[]`, `{"id":"a","effects":[{"op":"set","key":"x"}]}`,
		`{"id":"a","effects":[{"op":"set","key":"x","value":9007199254740993}]}`, `{"id":"a","tags":[1]}`,
	} {
		_, err := kernel.DecodeAction([]byte(bad))
		require.Error(t, err, bad)
	}
	for _, bad := range []string{`{"$int":"01"}`, `{"$int":1}`, `{"$float":"Inf"}`, `{"$float":"0x1p3"}`, `{"$object":1}`, `1e400`} {
		_, err := value.Decode([]byte(bad))
		require.ErrorIs(t, err, kernel.ErrDecode, bad)
	}
}

func indexOf(b []byte, s string) int {
	for i := range b {
		if string(b[i:min(len(b), i+len(s))]) == s {
			return i
		}
	}
	return -1
}

// TestCommitRefusesForgedOrStaleVerdicts: a Verdict cannot be edited, so
// what remains to forge is where it is used: Commit refuses the zero
// Verdict, a Verdict made for another state, for an earlier Meter or by
// another kernel (ErrStaleVerdict), and commits a rejecting Verdict never;
// each refusal changes nothing.
func TestCommitRefusesForgedOrStaleVerdicts(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: 1, Invariants: []kernel.Invariant{nonNegative("x")}})
	s := mustState(t, map[string]any{"x": 1})
	m := k.Start()
	refused := func(t *testing.T, k *kernel.Kernel, m kernel.Meter, s kernel.State, v kernel.Verdict, want error) {
		t.Helper()
		s1, m1, rec, err := k.Commit(m, s, v, "e")
		require.ErrorIs(t, err, want)
		assert.Equal(t, s, s1)
		assert.Equal(t, m, m1)
		assert.Empty(t, rec.ExecID)
	}

	bad := kernel.Action{ID: "bad", Cost: 1, Effects: []kernel.Effect{kernel.Set("x", value.Int(-5))}}
	rejected := k.Evaluate(m, s, bad)
	require.False(t, rejected.Allowed())
	refused(t, k, m, s, rejected, kernel.ErrRejected)
	checks := rejected.Checks()
	for i := range checks {
		checks[i].Status = kernel.StatusPassed
	}
	assert.False(t, rejected.Allowed(), "Checks returns a copy")
	assert.NotEmpty(t, rejected.Failures())

	refused(t, k, m, s, kernel.Verdict{}, kernel.ErrStaleVerdict)
	assert.False(t, kernel.Verdict{}.Allowed(), "the zero Verdict allows nothing")

	good := kernel.Action{ID: "good", Cost: 1, Effects: []kernel.Effect{kernel.Increment("x", value.Int(1))}}
	v := k.Evaluate(m, s, good)
	require.True(t, v.Allowed())
	refused(t, k, m, mustState(t, map[string]any{"x": 100}), v, kernel.ErrStaleVerdict)
	_, m2, _, err := k.Execute(m, s, good, "first")
	require.NoError(t, err)
	refused(t, k, m2, s, v, kernel.ErrStaleVerdict) // an earlier Meter's Verdict
	k2 := mustKernel(t, kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: 1})
	refused(t, k2, m, s, v, kernel.ErrStaleVerdict)
	refused(t, k2, k2.Start(), s, k.Evaluate(m, s, good), kernel.ErrStaleVerdict)

	s3, _, rec, err := k.Commit(m, s, v, "e")
	require.NoError(t, err)
	got, _ := s3.Get("x")
	assert.True(t, got.Equal(value.Int(2)))
	assert.Equal(t, "good", rec.Action.ID)
}

// TestDiagnosticsNeverPanic: printing values that cannot enter a State
// and recording predicates with hostile names or panic values works.
func TestDiagnosticsNeverPanic(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		v := value.Float(f)
		assert.NotEmpty(t, v.String())
		_, err := v.MarshalJSON()
		require.ErrorIs(t, err, value.ErrInvalidValue)
		_, err = value.Decode([]byte(v.String()))
		require.Error(t, err)
		_, err = kernel.State{}.With("x", v)
		require.ErrorIs(t, err, value.ErrInvalidValue)
	}
	k := mustKernel(t, kernel.Config{Budget: 10, MinActionCost: 1, Invariants: []kernel.Invariant{{
		Name: "bad\xffname", Check: func(kernel.State) bool { panic("\xfe") },
	}}})
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, kernel.State{})
	require.NoError(t, err)
	_, err = sess.Execute(ctx, kernel.Action{ID: "a", Cost: 1})
	require.ErrorIs(t, err, kernel.CheckInvariant)
	require.NotErrorIs(t, err, trace.ErrMalformed, "the rejection was recorded")
	_, err = log.Verify(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), log.Head().Size)
}
