package kernel_test

import (
	"math"
	"math/big"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/kerneltest"
	"github.com/verity-go/verity/kernel/value"
)

// stateWith draws a state in which key is absent or holds an int, a
// float, a string or another value, plus some other variables.
func stateWith(t *rapid.T, key string) kernel.State {
	vars := map[string]any{}
	switch rapid.IntRange(0, 4).Draw(t, "kind") {
	case 1:
		vars[key] = rapid.Int64Range(-10, 10).Draw(t, "int")
	case 2:
		vars[key] = rapid.Float64Range(-10, 10).Draw(t, "float")
	case 3:
		vars[key] = rapid.SampledFrom([]string{"", "a", "ab", "read", "write", "é"}).Draw(t, "string")
	case 4:
		v := kerneltest.Value(1).Draw(t, "value")
		vars[key] = v.Go()
	}
	for i := range rapid.IntRange(0, 3).Draw(t, "others") {
		vars["calls/"+string(rune('a'+i))] = rapid.Int64Range(-2, 6).Draw(t, "count")
	}
	s, err := kernel.NewState(vars)
	if err != nil {
		t.Skip(err)
	}
	return s
}

// TestReadyMadeInvariantsMeanWhatTheySay: each ready-made invariant holds
// exactly when its definition, written out naively here, does, and explains
// a violation in words that name the variable.
func TestReadyMadeInvariantsMeanWhatTheySay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := stateWith(t, "x")
		n := rapid.Int64Range(-1, 6).Draw(t, "n")
		v, present := s.Get("x")
		i, isInt := v.AsInt()
		f, isFloat := v.AsFloat()
		text, isText := v.AsString()

		check := func(inv kernel.Invariant, want bool) {
			got, err := inv.Holds(s)
			if got != want {
				t.Fatalf("%s (%s) on %s: holds %v, want %v", inv.Name, inv.Description, s, got, want)
			}
			if !got && !strings.Contains(err.Error(), inv.Explain(s)) {
				t.Fatalf("%s: the error %q does not carry the explanation %q", inv.Name, err, inv.Explain(s))
			}
		}
		check(kernel.AtMost("at-most", "x", n), (!present && n >= 0) || (isInt && i <= n))

		each := true
		for k, c := range s.All() {
			if strings.HasPrefix(k, "calls/") {
				ci, ok := c.AsInt()
				each = each && ok && ci <= n
			}
		}
		check(kernel.AtMostEach("each", "calls/", n), each)

		lo, hi := float64(rapid.IntRange(-5, 5).Draw(t, "lo")), float64(rapid.IntRange(-5, 5).Draw(t, "hi"))
		within := (isInt && lo <= float64(i) && float64(i) <= hi) || (isFloat && lo <= f && f <= hi)
		check(kernel.Within("within", "x", lo, hi), within)

		allowed := []value.Value{value.String("read"), value.Int(1), value.Float(2)}
		in := present && (v.Equal(allowed[0]) || v.Equal(allowed[1]) || v.Equal(allowed[2]))
		check(kernel.OneOf("one-of", "x", allowed...), in)

		check(kernel.Matches("matches", "x", regexp.MustCompile(`^[a-z]+$`)), isText && text != "" && strings.Trim(text, "abcdefghijklmnopqrstuvwxyz") == "")
	})
}

// TestReadyMadeInvariantsExplain: the wording of each explanation.
func TestReadyMadeInvariantsExplain(t *testing.T) {
	s := mustState(t, map[string]any{"deletes": 4, "calls/search": 7, "calls/read": 1, "temp": 1.5, "mode": "admin", "path": "/etc"})
	for _, c := range []struct {
		inv  kernel.Invariant
		want string
	}{
		{kernel.AtMost("at-most-3-deletes", "deletes", 3), "deletes would be 4, at most 3"},
		{kernel.AtMostEach("at-most-5-per-tool", "calls/", 5), "calls/search would be 7, at most 5"},
		{kernel.Within("temperature", "temp", 0, 1), "temp would be 1.5, outside [0, 1]"},
		{kernel.Within("absent", "nothing", 0, 1), "nothing would be absent, outside [0, 1]"},
		{kernel.OneOf("mode", "mode", value.String("read"), value.String("write")), `mode would be "admin", not one of {"read", "write"}`},
		{kernel.Matches("path", "path", regexp.MustCompile(`^/tmp/`)), `path would be "/etc", not matching ^/tmp/`},
	} {
		ok, _ := c.inv.Holds(s)
		require.False(t, ok, c.inv.Name)
		assert.Equal(t, c.want, c.inv.Explain(s))
	}
	_, err := kernel.New(kernel.Config{Budget: 1, MinActionCost: 1, Invariants: []kernel.Invariant{kernel.Matches("nil pattern", "x", nil)}})
	assert.ErrorIs(t, err, kernel.ErrInvalidConfig)
}

// TestCountNeedsNoDeclaration: Count creates an absent counter from its
// initial value, adds to a present one by the arithmetic rule, and its
// inverse makes a created counter absent again (T7).
func TestCountNeedsNoDeclaration(t *testing.T) {
	s := mustState(t, map[string]any{"calls/read": 2, "f": 1.5, "s": "x"})
	next, err := kernel.ApplyEffects(s, []kernel.Effect{
		kernel.Count("calls/search", value.Int(1), value.Int(0)),
		kernel.Count("calls/search", value.Int(1), value.Int(0)),
		kernel.Count("calls/read", value.Int(1), value.Int(0)),
		kernel.Count("quota", value.Int(-1), value.Int(10)),
		kernel.Count("f", value.Int(1), value.Int(0)),
	})
	require.NoError(t, err)
	for k, want := range map[string]value.Value{"calls/search": value.Int(2), "calls/read": value.Int(3), "quota": value.Int(9), "f": value.Float(2.5)} {
		got, _ := next.Get(k)
		assert.True(t, got.Equal(want), "%s = %s, want %s", k, got, want)
	}
	_, err = kernel.ApplyEffects(s, []kernel.Effect{kernel.Count("s", value.Int(1), value.Int(0))})
	assert.ErrorIs(t, err, kernel.ErrTypeMismatch)
	_, err = kernel.ApplyEffects(s, []kernel.Effect{kernel.Count("x", value.Int(1), value.Null())})
	assert.ErrorIs(t, err, kernel.CheckWellFormed)
	_, err = kernel.ApplyEffects(s, []kernel.Effect{{Op: kernel.OpIncrement, Key: "f", Value: value.Int(1), Initial: value.Int(0)}})
	assert.ErrorIs(t, err, kernel.CheckWellFormed)

	rapid.Check(t, func(t *rapid.T) {
		s := stateWith(t, "c")
		e := kernel.Count("c", value.Int(rapid.Int64Range(-3, 3).Draw(t, "by")), value.Int(rapid.Int64Range(-3, 3).Draw(t, "from")))
		next, err := kernel.ApplyEffects(s, []kernel.Effect{e})
		if err != nil {
			return
		}
		inv, err := kernel.InverseEffects(s, []kernel.Effect{e})
		if err != nil {
			t.Fatal(err)
		}
		back, err := kernel.ApplyEffects(next, inv)
		if err != nil || !back.Equal(s) || back.Fingerprint() != s.Fingerprint() {
			t.Fatalf("count %s on %s: inverse %v gives %s (%v)", e, s, inv, back, err)
		}
		if _, had := s.Get("c"); !had {
			if _, has := back.Get("c"); has {
				t.Fatalf("a created counter survived its rollback")
			}
		}
		b, _ := e.MarshalJSON()
		a, err := kernel.DecodeAction([]byte(`{"id":"a","effects":[` + string(b) + `]}`))
		if err != nil || len(a.Effects) != 1 || a.Effects[0].String() != e.String() {
			t.Fatalf("count %s does not read back from %s: %v", e, b, err)
		}
	})
}

// TestInvariantTimeLimit: a predicate past its limit is a failed check,
// the kernel's limit applies unless the invariant overrides it, and a
// negative override lifts it; zero is no limit.
func TestInvariantTimeLimit(t *testing.T) {
	var running atomic.Int32
	release := make(chan struct{})
	defer close(release)
	stuck := kernel.Invariant{Name: "stuck", Check: func(kernel.State) bool {
		running.Add(1)
		<-release
		return true
	}, Suggestion: "ask a human"}
	slowOK := kernel.Invariant{Name: "slow", Check: func(kernel.State) bool { time.Sleep(20 * time.Millisecond); return true }, Timeout: -1}
	k := mustKernel(t, kernel.Config{Budget: units(10), MinActionCost: 1, InvariantTimeout: 5 * time.Millisecond, Invariants: []kernel.Invariant{stuck, slowOK}})
	s := mustState(t, map[string]any{})
	start := time.Now()
	v := k.Evaluate(k.Start(), s, kernel.Action{ID: "a", Cost: 1})
	require.False(t, v.Allowed())
	assert.Less(t, time.Since(start), 2*time.Second)
	f := v.Failures()
	require.Len(t, f, 1)
	assert.Equal(t, "stuck", f[0].Name)
	assert.ErrorIs(t, f[0].Err, kernel.CheckInvariant)
	assert.Equal(t, `action "a" rejected: invariant stuck: predicate ran past its time limit 5ms (ask a human)`, v.Explain())

	stuck.Timeout = 1 * time.Millisecond
	k = mustKernel(t, kernel.Config{Budget: units(10), MinActionCost: 1, Invariants: []kernel.Invariant{stuck}})
	v = k.Evaluate(k.Start(), s, kernel.Action{ID: "a", Cost: 1})
	assert.Contains(t, v.Explain(), "time limit 1ms")

	_, err := kernel.New(kernel.Config{Budget: 1, MinActionCost: 1, InvariantTimeout: -1})
	assert.ErrorIs(t, err, kernel.ErrInvalidConfig)
}

// TestWithinComparesIntsExactly: an int lies within [lo, hi] exactly when
// it does as a real number, however large it is (2^53+1 is not within
// [0, 2^53], though it rounds to 2^53 as a float64), and never when a
// bound is NaN.
func TestWithinComparesIntsExactly(t *testing.T) {
	ok, _ := kernel.Within("w", "x", 0, 1<<53).Holds(mustState(t, map[string]any{"x": value.Int(1<<53 + 1)}))
	require.False(t, ok, "2^53+1 is not within [0, 2^53]")

	near := func(label string) *rapid.Generator[int64] {
		return rapid.Custom(func(t *rapid.T) int64 {
			base := rapid.SampledFrom([]int64{0, 1 << 53, -1 << 53, math.MaxInt64, math.MinInt64, 1 << 62}).Draw(t, label+"/base")
			return base + rapid.Int64Range(-3, 3).Draw(t, label+"/offset")
		})
	}
	bound := func(t *rapid.T, label string) float64 {
		switch rapid.IntRange(0, 3).Draw(t, label+"/kind") {
		case 0:
			return float64(near(label).Draw(t, label+"/int"))
		case 1:
			return float64(near(label).Draw(t, label+"/int")) + rapid.SampledFrom([]float64{-0.5, 0.25, 0.5}).Draw(t, label+"/fraction")
		case 2:
			return rapid.SampledFrom([]float64{math.Inf(1), math.Inf(-1), math.NaN(), 0x1p63, -0x1p63}).Draw(t, label+"/special")
		}
		return rapid.Float64().Draw(t, label+"/any")
	}
	rapid.Check(t, func(t *rapid.T) {
		x := near("x").Draw(t, "x")
		lo, hi := bound(t, "lo"), bound(t, "hi")
		want := !math.IsNaN(lo) && !math.IsNaN(hi)
		if want {
			bx := new(big.Float).SetInt64(x)
			want = big.NewFloat(lo).Cmp(bx) <= 0 && bx.Cmp(big.NewFloat(hi)) <= 0
		}
		got, _ := kernel.Within("w", "x", lo, hi).Holds(mustState(t, map[string]any{"x": value.Int(x)}))
		if got != want {
			t.Fatalf("Within [%v, %v] of %d: %v, want %v", lo, hi, x, got, want)
		}
	})
}
