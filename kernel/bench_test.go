package kernel_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

func benchState(b *testing.B, n int) kernel.State {
	m := make(map[string]any, n)
	for i := range n {
		m["var"+strconv.Itoa(i)] = int64(i)
	}
	return mustState(b, m)
}

// benchAction is a typical action: two effects on two variables.
var benchAction = kernel.Action{
	ID:          "transfer",
	Name:        "transfer",
	Description: "move one unit from var1 to var2",
	Effects:     []kernel.Effect{kernel.Decrement("var1", kernel.Int(1)), kernel.Increment("var2", kernel.Int(1))},
	Cost:        1,
	Category:    "ledger",
	Risk:        kernel.RiskLow,
	Reversible:  true,
	Tags:        []string{"bench"},
}

func benchKernel(b *testing.B) *kernel.Kernel {
	return mustKernel(b, kernel.Config{
		Budget:        kernel.Cost(1 << 60),
		MinActionCost: 1,
		Invariants:    []kernel.Invariant{nonNegative("var0")},
	})
}

// BenchmarkSessionExecute measures the atomic path with trace recording
// into a memory store: evaluate, commit, build the payload, append.
func BenchmarkSessionExecute(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000} {
		b.Run(fmt.Sprintf("vars=%d", n), func(b *testing.B) {
			k := benchKernel(b)
			s := benchState(b, n+2)
			sess, err := kernel.NewSession(ctx, k, s, trace.NewMemoryLog())
			if err != nil {
				b.Fatal(err)
			}
			a := benchAction
			b.ReportAllocs()
			for b.Loop() {
				if _, err := sess.Execute(ctx, a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExecutePure is the pure core's Execute alone (no trace).
func BenchmarkExecutePure(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("vars=%d", n), func(b *testing.B) {
			k := benchKernel(b)
			s := benchState(b, n+2)
			ks := k.Start()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				var err error
				s, ks, _, err = k.Execute(ks, s, benchAction, strconv.Itoa(i))
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEvaluate is Evaluate alone (simulation and checks).
func BenchmarkEvaluate(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("vars=%d", n), func(b *testing.B) {
			k := benchKernel(b)
			s := benchState(b, n+2)
			ks := k.Start()
			b.ReportAllocs()
			for b.Loop() {
				if v := k.Evaluate(ks, s, benchAction); !v.Allowed {
					b.Fatal(v.Err())
				}
			}
		})
	}
}

// BenchmarkRollback is Session.Rollback after an Execute (the pair is
// timed; see BenchmarkSessionExecute for the Execute share).
func BenchmarkRollback(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("vars=%d", n), func(b *testing.B) {
			k := benchKernel(b)
			s := benchState(b, n+2)
			ks := k.Start()
			s1, ks1, rec, err := k.Execute(ks, s, benchAction, "x")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := k.Rollback(ks1, s1, rec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBuildState builds a 10,000-variable State from a Go map.
func BenchmarkBuildState(b *testing.B) {
	m := make(map[string]any, 10_000)
	for i := range 10_000 {
		m["var"+strconv.Itoa(i)] = int64(i)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := kernel.NewState(m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify100k verifies the trace of a 100,000-action session.
func BenchmarkVerify100k(b *testing.B) {
	k := benchKernel(b)
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, k, benchState(b, 12), log)
	if err != nil {
		b.Fatal(err)
	}
	for range 100_000 {
		if _, err := sess.Execute(ctx, benchAction); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		h, err := log.Verify(ctx)
		if err != nil || h.Size != 100_001 {
			b.Fatal(err, h.Size)
		}
	}
}
