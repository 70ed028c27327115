package sqlbudget_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// BenchmarkGateCallSharedLabels is a gate's call (Before and After, on a
// memory log) with its callers' flow labels shared through the database
// (toolgate.WithSharedLabels): each decision reads the caller's labels
// from it. "read" is a call whose rule attaches nothing (one read per
// call); "labelling" one whose rule attaches a label (a read and a
// write); "unshared" the same labelling call without the store, for
// comparison.
func BenchmarkGateCallSharedLabels(b *testing.B) {
	sqltest.ForEach(b, func(b *testing.B, be sqltest.Backend) {
		_, bs := budgets(b, be, be.NewDSN(b))
		cfg := toolgate.Policy{Budget: 1_000_000_000 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
			{Name: "read", Match: "read_file", Cost: kernel.Unit / 100},
			{Name: "fetch", Match: "fetch", Cost: kernel.Unit / 100, Labels: []string{"untrusted"}, LabelTTL: time.Hour},
			{Name: "send", Match: "send_mail", Cost: kernel.Unit / 100, Flow: []toolgate.FlowRule{{After: []string{"untrusted"}}}},
		}}
		comp, err := cfg.Compile()
		require.NoError(b, err)
		for _, bc := range []struct {
			name   string
			tool   string
			shared *sqlbudget.Store
		}{{"read", "read_file", bs}, {"labelling", "fetch", bs}, {"unshared", "fetch", nil}} {
			b.Run(bc.name, func(b *testing.B) {
				var opts []toolgate.Option
				if bc.shared != nil {
					opts = append(opts, toolgate.WithSharedLabels(bc.shared))
				}
				g, err := toolgate.New(ctx, trace.NewMemoryLog(), comp, opts...)
				require.NoError(b, err)
				b.ReportAllocs()
				for b.Loop() {
					d, err := g.Before(ctx, toolgate.Call{Tool: bc.tool, Caller: "bench"})
					if err != nil || d.Verdict != toolgate.Allow {
						b.Fatal(err, d.Explanation)
					}
					if _, err := g.After(ctx, d.Call, toolgate.Result{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	})
}
