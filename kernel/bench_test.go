package kernel_test

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

func benchState(b *testing.B, n int) kernel.State {
	m := make(map[string]any, n)
	for i := range n {
		m["var"+strconv.Itoa(i)] = int64(i)
	}
	return mustState(b, m)
}

// cpuTime returns the CPU time (user + system) the process has used. The
// benchmarks report it per operation as "cpu-ns/op" next to the wall-clock
// ns/op, because on a shared machine wall-clock time also counts time
// spent waiting for a core.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs body b.N times (b.Loop) and reports CPU time per operation.
func loop(b *testing.B, body func()) {
	b.ReportAllocs()
	start := cpuTime()
	n := 0
	for b.Loop() {
		body()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
	}
}

// benchAction is a typical action: two effects on two variables.
var benchAction = kernel.Action{
	ID:          "transfer",
	Name:        "transfer",
	Description: "move one unit from var1 to var2",
	Effects:     []kernel.Effect{kernel.Decrement("var1", value.Int(1)), kernel.Increment("var2", value.Int(1))},
	Cost:        1,
	Category:    "ledger",
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
			sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), k, s)
			if err != nil {
				b.Fatal(err)
			}
			a := benchAction
			loop(b, func() {
				if _, err := sess.Execute(ctx, a); err != nil {
					b.Fatal(err)
				}
			})
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
			ids := make([]string, 0, 1<<16)
			i := 0
			loop(b, func() {
				if i == len(ids) {
					ids = append(ids, strconv.Itoa(i))
				}
				var err error
				s, ks, _, err = k.Execute(ks, s, benchAction, ids[i])
				if err != nil {
					b.Fatal(err)
				}
				i++
			})
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
			loop(b, func() {
				if v := k.Evaluate(ks, s, benchAction); !v.Allowed() {
					b.Fatal(v.Err())
				}
			})
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
			loop(b, func() {
				if _, _, _, err := k.Rollback(ks1, s1, rec); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkBuildState builds a 10,000-variable State from a Go map.
func BenchmarkBuildState(b *testing.B) {
	m := make(map[string]any, 10_000)
	for i := range 10_000 {
		m["var"+strconv.Itoa(i)] = int64(i)
	}
	loop(b, func() {
		if _, err := kernel.NewState(m); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkVerify100k verifies the trace of a 100,000-action session.
func BenchmarkVerify100k(b *testing.B) {
	k := benchKernel(b)
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, benchState(b, 12))
	if err != nil {
		b.Fatal(err)
	}
	for range 100_000 {
		if _, err := sess.Execute(ctx, benchAction); err != nil {
			b.Fatal(err)
		}
	}
	loop(b, func() {
		h, err := log.Verify(ctx)
		if err != nil || h.Size != 100_001 {
			b.Fatal(err, h.Size)
		}
	})
}

// BenchmarkTraceShare splits the Session figure: the trace's part is one
// Append of a kernel.execute payload of the real size into a
// memory log, measured here alone.
func BenchmarkTraceShare(b *testing.B) {
	k := benchKernel(b)
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, benchState(b, 12))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sess.Execute(ctx, benchAction); err != nil {
		b.Fatal(err)
	}
	var payload []byte
	for e, err := range log.Entries(ctx, 1) {
		if err != nil {
			b.Fatal(err)
		}
		payload = e.Payload
	}
	b.ReportMetric(float64(len(payload)), "payload-bytes")
	target := trace.NewMemoryLog()
	loop(b, func() {
		if _, err := target.Append(ctx, kernel.KindExecute, payload); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkReserveSettle is a call whose cost is known only afterwards:
// Session.Reserve then Session.Settle below the reservation (two entries).
func BenchmarkReserveSettle(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("vars=%d", n), func(b *testing.B) {
			sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), benchKernel(b), benchState(b, n+2))
			if err != nil {
				b.Fatal(err)
			}
			a := benchAction
			a.Cost = 2
			loop(b, func() {
				rec, err := sess.Reserve(ctx, a)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := sess.Settle(ctx, rec.ExecID, 1); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkSessionExecuteInput is BenchmarkSessionExecute with a 1 KiB
// JSON input recorded in full.
func BenchmarkSessionExecuteInput(b *testing.B) {
	input := []byte(`{"query":"` + string(make([]byte, 0, 1024)))
	for len(input) < 1022 {
		input = append(input, 'x')
	}
	input = append(input, `"}`...)
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("vars=%d", n), func(b *testing.B) {
			sess, err := kernel.NewSession(ctx, trace.NewMemoryLog(), benchKernel(b), benchState(b, n+2))
			if err != nil {
				b.Fatal(err)
			}
			a := benchAction
			a.Input = input
			loop(b, func() {
				if _, err := sess.Execute(ctx, a); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
