package toolgate_test

import (
	"testing"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// BenchmarkGateCall is the gate's overhead per call: Before and After of
// one allowed call on a memory log (two trace entries).
func BenchmarkGateCall(b *testing.B) {
	log, _ := trace.NewLog(trace.NewMemory())
	g, err := toolgate.New(ctx, log, toolgate.Config{Budget: kernel.Cost(1 << 50), MinCost: 1,
		Rules: []toolgate.Rule{{Match: "read_*", Cost: 1}}})
	if err != nil {
		b.Fatal(err)
	}
	args := []byte(`{"path":"/srv/data/report.csv","limit":100}`)
	out := []byte(`{"rows":[["a","b"],["c","d"]],"truncated":false}`)
	b.ReportAllocs()
	for b.Loop() {
		d, err := g.Before(ctx, toolgate.Call{Tool: "read_file", Arguments: args, Caller: "agent"})
		if err != nil || d.Verdict != toolgate.Allow {
			b.Fatal(err, d.Explanation)
		}
		if _, err := g.After(ctx, d.Call, toolgate.Result{Output: out}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolCall1ms is the same call around a tool that takes 1 ms:
// compare with BenchmarkGateCall for the gate's share.
func BenchmarkToolCall1ms(b *testing.B) {
	for _, gated := range []bool{false, true} {
		name := map[bool]string{false: "direct", true: "gated"}[gated]
		b.Run(name, func(b *testing.B) {
			log, _ := trace.NewLog(trace.NewMemory())
			g, _ := toolgate.New(ctx, log, toolgate.Config{Budget: kernel.Cost(1 << 50), MinCost: 1,
				Rules: []toolgate.Rule{{Match: "*", Cost: 1}}})
			for b.Loop() {
				if !gated {
					time.Sleep(time.Millisecond)
					continue
				}
				d, _ := g.Before(ctx, toolgate.Call{Tool: "slow", Arguments: []byte(`{}`)})
				time.Sleep(time.Millisecond)
				if _, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
