package toolgate_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// memoryGate is a gate on a file log in dir, as a long-lived host runs
// one (without an fsync per append, which changes no memory).
func memoryGate(tb testing.TB, dir string) (*toolgate.Gate, *trace.Log) {
	tb.Helper()
	f, err := trace.OpenFile(filepath.Join(dir, "gate.log"), trace.FileOptions{Sync: trace.SyncManual})
	if err != nil {
		tb.Fatal(err)
	}
	log, err := trace.NewLog(f)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { log.Close() })
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1,
		Tools: []toolgate.Rule{{Match: "read_*", Cost: 1}, {Match: "search", Cost: 5, Reserve: true}}}))
	if err != nil {
		tb.Fatal(err)
	}
	return g, log
}

// gatedCalls makes n calls (Before and After) from callers callers in
// turn, starting at call from: reads, and every fourth a reserved search
// settled below its reservation.
func gatedCalls(tb testing.TB, g *toolgate.Gate, from, n, callers int) {
	args := []byte(`{"path":"/srv/data/report.csv","limit":100}`)
	out := []byte(`{"rows":[["a","b"],["c","d"]],"truncated":false}`)
	names := make([]string, callers)
	for i := range names {
		names[i] = fmt.Sprintf("agent-%04d", i)
	}
	for i := from; i < from+n; i++ {
		c := toolgate.Call{Tool: "read_file", Arguments: args, Caller: names[i%callers]}
		r := toolgate.Result{Output: out}
		if i%4 == 3 {
			c.Tool, r.Actual, r.Measured = "search", 3, true
		}
		d, err := g.Before(ctx, c)
		if err != nil || d.Verdict != toolgate.Allow {
			tb.Fatal(err, d.Explanation)
		}
		if _, err := g.After(ctx, d.Call, r); err != nil {
			tb.Fatal(err)
		}
	}
}

// heap returns the live heap after a full collection.
func heap() (alloc, inuse uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc, m.HeapInuse
}

const mib = 1 << 20

// BenchmarkGateMemory1M runs 1,000,000 gated calls (Before and After)
// from 1,000 callers on a file log, and reports the heap still live at
// the end over the heap at the start (retained-MiB; the target is at
// most 64), including the file store's index of the log. Run it with
// -benchtime=1x: one iteration is the million calls.
func BenchmarkGateMemory1M(b *testing.B) {
	const calls, callers = 1_000_000, 1_000
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		startAlloc, startInuse := heap()
		g, _ := memoryGate(b, dir)
		b.StartTimer()
		gatedCalls(b, g, 0, calls, callers)
		b.StopTimer()
		endAlloc, endInuse := heap()
		b.ReportMetric(float64(int64(endAlloc-startAlloc))/mib, "retained-MiB")
		b.ReportMetric(float64(int64(endInuse-startInuse))/mib, "retained-inuse-MiB")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/calls, "ns/call")
		runtime.KeepAlive(g)
		b.StartTimer()
	}
}

// TestGateMemoryFlat: the heap a gate retains does not grow with the
// number of calls — what 10,000 more calls from the same 200 callers add
// is a small part of what the first 10,000 left (the callers' sessions
// and the log's index, 8 bytes an entry). A gate that kept a record per
// call (about 1.7 KB) would double it.
func TestGateMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 calls")
	}
	const half, callers = 10_000, 200
	start, _ := heap()
	g, _ := memoryGate(t, t.TempDir())
	gatedCalls(t, g, 0, half, callers)
	first, _ := heap()
	gatedCalls(t, g, half, half, callers)
	second, _ := heap()
	runtime.KeepAlive(g)
	grew, kept := int64(second)-int64(first), int64(first)-int64(start)
	t.Logf("retained after %d calls: %.2f MiB; the next %d added %.2f MiB", half, float64(kept)/mib, half, float64(grew)/mib)
	if grew > kept/4+mib {
		t.Fatalf("the heap grows with the calls: %d calls retained %d bytes, %d more added %d", half, kept, half, grew)
	}
}
