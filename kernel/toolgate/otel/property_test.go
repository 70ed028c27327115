package otel_test

import (
	"fmt"
	"testing"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
)

// TestLabelsStayBoundedAndTotalsExact: whatever callers and tools call,
// metrics carry at most MaxCallers caller values and MaxTools tool
// values besides "_other", the first ones seen keep theirs, and the
// counts add up to every decision made.
func TestLabelsStayBoundedAndTotalsExact(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		maxCallers := rapid.IntRange(1, 4).Draw(rt, "maxCallers")
		maxTools := rapid.IntRange(1, 4).Draw(rt, "maxTools")
		r := newRig(t, gateotel.Options{MaxCallers: maxCallers, MaxTools: maxTools})
		calls := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) [2]int {
			return [2]int{rapid.IntRange(0, 7).Draw(rt, "caller"), rapid.IntRange(0, 7).Draw(rt, "tool")}
		}), 1, 40).Draw(rt, "calls")
		var firstCallers, firstTools []string
		seen := map[string]bool{}
		for _, c := range calls {
			caller, tool := fmt.Sprint("caller-", c[0]), fmt.Sprint("tool-", c[1])
			if !seen[caller] && len(firstCallers) < maxCallers {
				firstCallers = append(firstCallers, caller)
			}
			if !seen[tool] && len(firstTools) < maxTools {
				firstTools = append(firstTools, tool)
			}
			seen[caller], seen[tool] = true, true
			if _, err := r.gate.Before(ctx, toolgate.Call{Tool: tool, Caller: caller}); err != nil {
				rt.Fatal(err)
			}
		}
		var rm metricdata.ResourceMetrics
		if err := r.reader.Collect(ctx, &rm); err != nil {
			rt.Fatal(err)
		}
		var total int64
		callers, tools := map[string]bool{}, map[string]bool{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != gateotel.MetricCalls {
					continue
				}
				for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
					total += p.Value
					c, _ := p.Attributes.Value(gateotel.AttrCaller)
					tl, _ := p.Attributes.Value(gateotel.AttrToolName)
					callers[c.AsString()], tools[tl.AsString()] = true, true
				}
			}
		}
		if total != int64(len(calls)) {
			rt.Fatalf("counted %d decisions, made %d", total, len(calls))
		}
		for _, c := range firstCallers {
			if !callers[c] {
				rt.Fatalf("caller %s, among the first %d, lost its label", c, maxCallers)
			}
		}
		for _, tl := range firstTools {
			if !tools[tl] {
				rt.Fatalf("tool %s, among the first %d, lost its label", tl, maxTools)
			}
		}
		delete(callers, gateotel.OtherLabel)
		delete(tools, gateotel.OtherLabel)
		if len(callers) > maxCallers || len(tools) > maxTools {
			rt.Fatalf("%d caller and %d tool labels, at most %d and %d", len(callers), len(tools), maxCallers, maxTools)
		}
	})
}
