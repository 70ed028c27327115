package otel_test

// What the Observer records, checked against the OpenTelemetry SDK's
// in-memory exporter and manual metric reader:
//
//   - an allowed, a refused, an asked-then-approved and a failed call are
//     each one execute_tool span with the GenAI and verity attributes:
//     TestSpansOfAllowRefuseAndApproval;
//   - metrics count exactly what ran: TestMetricsCountTheTraffic;
//   - callers and tools beyond the caps are counted under "_other", the
//     totals exact: TestLabelsAreCapped, TestLabelsStayBoundedAndTotalsExact
//     (rapid);
//   - with AnnotateSpan the context's span carries the attributes and no
//     span is made: TestAnnotateSpanUsesTheContextsSpan;
//   - approvals waiting and live callers are read from the gate at
//     collection: TestObserveGate.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
	vtrace "github.com/verity-go/verity/trace"
)

var ctx = context.Background()

// rig is a gate observed into an in-memory span exporter and a manual
// metric reader.
type rig struct {
	gate   *toolgate.Gate
	obs    *gateotel.Observer
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
}

func newRig(t *testing.T, o gateotel.Options) *rig {
	r := &rig{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(r.spans))
	o.TracerProvider = r.tp
	o.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	var err error
	r.obs, err = gateotel.New(o)
	require.NoError(t, err)
	log, err := vtrace.NewLog(vtrace.NewMemory())
	require.NoError(t, err)
	r.gate, err = toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: 3 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "read_*", Cost: kernel.Unit / 10, Name: "reads"},
		{Match: "search", Cost: kernel.Unit, Reserve: true},
		{Match: "delete_*", Cost: kernel.Unit, Tier: claims.TierDelete},
	}}), toolgate.WithObserver(r.obs))
	require.NoError(t, err)
	return r
}

func (r *rig) before(t *testing.T, c toolgate.Call) toolgate.Decision {
	d, err := r.gate.Before(ctx, c)
	require.NoError(t, err)
	return d
}

func (r *rig) after(t *testing.T, d toolgate.Decision, res toolgate.Result) toolgate.Outcome {
	require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	out, err := r.gate.After(ctx, d.Call, res)
	require.NoError(t, err)
	return out
}

func attrs(kvs []attribute.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

var alice = toolgate.Principal{Issuer: "https://idp.example", Subject: "alice"}

func TestSpansOfAllowRefuseAndApproval(t *testing.T) {
	r := newRig(t, gateotel.Options{})
	key := alice.Key()

	read := r.before(t, toolgate.Call{Tool: "read_file", ID: "c1", Principal: alice, Arguments: []byte(`{"path":"a"}`)})
	r.after(t, read, toolgate.Result{Output: []byte(`"ok"`)})
	refused := r.before(t, toolgate.Call{Tool: "format_disk", ID: "c2", Principal: alice})
	require.Equal(t, toolgate.Refuse, refused.Verdict)
	asked := r.before(t, toolgate.Call{Tool: "delete_file", ID: "c3", Principal: alice, Arguments: []byte(`{"path":"a"}`)})
	require.Equal(t, toolgate.AskApproval, asked.Verdict)
	ok, err := r.gate.Approve(ctx, asked.Approval.ID, toolgate.DefaultApprover, "checked")
	require.NoError(t, err)
	require.True(t, ok)
	del := r.before(t, asked.Call)
	r.after(t, del, toolgate.Result{Err: errors.New("permission denied")})

	spans := r.spans.GetSpans()
	require.Len(t, spans, 4)
	for _, s := range spans {
		assert.Equal(t, trace.SpanKindInternal, s.SpanKind)
		assert.Equal(t, gateotel.ScopeName, s.InstrumentationScope.Name)
		assert.False(t, s.EndTime.Before(s.StartTime))
	}

	s := spans[0]
	assert.Equal(t, "execute_tool read_file", s.Name)
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file", "gen_ai.tool.call.id": "c1",
		"verity.toolgate.caller": key, "verity.toolgate.principal": key,
		"verity.toolgate.verdict": "allow", "verity.trace.seq": int64(read.Seq), "verity.toolgate.rule": `rule #0 "reads"`,
		"verity.toolgate.condition": "match", "verity.toolgate.cost": int64(100), "verity.toolgate.exec_id": read.ExecID,
		"verity.toolgate.result_seq": int64(read.Seq + 1), "verity.toolgate.charged": int64(100), "verity.toolgate.remaining": int64(2900),
	}, attrs(s.Attributes))
	assert.Equal(t, codes.Unset, s.Status.Code)
	require.Len(t, s.Events, 1)
	assert.Equal(t, "verity.toolgate.allowed", s.Events[0].Name)
	assert.False(t, s.Events[0].Time.Before(s.StartTime))
	assert.False(t, s.EndTime.Before(s.Events[0].Time))

	s = spans[1]
	assert.Equal(t, "execute_tool format_disk", s.Name)
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "format_disk", "gen_ai.tool.call.id": "c2",
		"verity.toolgate.caller": key, "verity.toolgate.principal": key,
		"verity.toolgate.verdict": "refuse", "verity.trace.seq": int64(refused.Seq), "verity.toolgate.condition": "unknown_tool",
		"verity.toolgate.explanation": `tool "format_disk" is not in the gate's catalogue`,
		"verity.toolgate.remaining":   int64(2900), "error.type": "refused",
	}, attrs(s.Attributes))
	assert.Equal(t, codes.Error, s.Status.Code)
	assert.Equal(t, refused.Explanation, s.Status.Description)

	s = spans[2]
	assert.Equal(t, "execute_tool delete_file", s.Name)
	assert.Equal(t, map[string]any{
		"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "delete_file", "gen_ai.tool.call.id": "c3",
		"verity.toolgate.caller": key, "verity.toolgate.principal": key,
		"verity.toolgate.verdict": "ask_approval", "verity.trace.seq": int64(asked.Seq), "verity.toolgate.rule": "rule #2",
		"verity.toolgate.condition": "tier", "verity.toolgate.approval_id": asked.Approval.ID,
		"verity.toolgate.explanation": asked.Explanation, "verity.toolgate.remaining": int64(2900),
	}, attrs(s.Attributes))
	assert.Equal(t, codes.Unset, s.Status.Code, "waiting for a human is no error")

	s = spans[3]
	assert.Equal(t, "execute_tool delete_file", s.Name)
	a := attrs(s.Attributes)
	assert.Equal(t, "allow", a["verity.toolgate.verdict"])
	assert.Equal(t, asked.Approval.ID, a["verity.toolgate.approval_id"], "the approval the call used")
	assert.Equal(t, "c3", a["gen_ai.tool.call.id"])
	assert.Equal(t, int64(1000), a["verity.toolgate.charged"])
	assert.Equal(t, int64(1900), a["verity.toolgate.remaining"])
	assert.Equal(t, "tool_error", a["error.type"])
	assert.Equal(t, codes.Error, s.Status.Code)
}

// collect returns the metrics by name.
func collect(t *testing.T, r *rig) map[string]metricdata.Aggregation {
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(ctx, &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// label renders a data point's attributes as k=v,… in key order.
func label(set attribute.Set) string {
	var parts []string
	for _, kv := range set.ToSlice() {
		parts = append(parts, fmt.Sprintf("%s=%s", kv.Key, kv.Value.String()))
	}
	sort.Strings(parts)
	return fmt.Sprint(parts)
}

func sums[N int64 | float64](agg metricdata.Aggregation) map[string]N {
	out := map[string]N{}
	switch d := agg.(type) {
	case metricdata.Sum[N]:
		for _, p := range d.DataPoints {
			out[label(p.Attributes)] = p.Value
		}
	case metricdata.Gauge[N]:
		for _, p := range d.DataPoints {
			out[label(p.Attributes)] = p.Value
		}
	}
	return out
}

func counts(agg metricdata.Aggregation) map[string]uint64 {
	out := map[string]uint64{}
	if h, ok := agg.(metricdata.Histogram[float64]); ok {
		for _, p := range h.DataPoints {
			out[label(p.Attributes)] = p.Count
		}
	}
	return out
}

func TestMetricsCountTheTraffic(t *testing.T) {
	r := newRig(t, gateotel.Options{})
	for i := range 3 {
		d := r.before(t, toolgate.Call{Tool: "read_file", Caller: "a", ID: fmt.Sprint("r", i)})
		r.after(t, d, toolgate.Result{})
	}
	d := r.before(t, toolgate.Call{Tool: "search", Caller: "a"})
	r.after(t, d, toolgate.Result{Actual: kernel.Unit / 4, Measured: true})
	d = r.before(t, toolgate.Call{Tool: "search", Caller: "b"})
	r.after(t, d, toolgate.Result{Err: errors.New("down")})
	r.before(t, toolgate.Call{Tool: "rm", Caller: "b"})
	r.before(t, toolgate.Call{Tool: "delete_file", Caller: "b", Arguments: []byte(`{}`)})
	for range 3 { // b has 2 left: two searches run, the third is refused
		d = r.before(t, toolgate.Call{Tool: "search", Caller: "b"})
		if d.Verdict == toolgate.Allow {
			r.after(t, d, toolgate.Result{})
		}
	}
	m := collect(t, r)

	assert.Equal(t, map[string]int64{
		"[gen_ai.tool.name=read_file verity.toolgate.caller=a verity.toolgate.verdict=allow]":          3,
		"[gen_ai.tool.name=search verity.toolgate.caller=a verity.toolgate.verdict=allow]":             1,
		"[gen_ai.tool.name=search verity.toolgate.caller=b verity.toolgate.verdict=allow]":             3,
		"[gen_ai.tool.name=search verity.toolgate.caller=b verity.toolgate.verdict=refuse]":            1,
		"[gen_ai.tool.name=rm verity.toolgate.caller=b verity.toolgate.verdict=refuse]":                1,
		"[gen_ai.tool.name=delete_file verity.toolgate.caller=b verity.toolgate.verdict=ask_approval]": 1,
	}, sums[int64](m[gateotel.MetricCalls]))
	spend := sums[float64](m[gateotel.MetricSpend])
	assert.InDelta(t, 0.3+0.25, spend["[gen_ai.tool.name=read_file verity.toolgate.caller=a]"]+spend["[gen_ai.tool.name=search verity.toolgate.caller=a]"], 1e-9)
	assert.InDelta(t, 0.25, spend["[gen_ai.tool.name=search verity.toolgate.caller=a]"], 1e-9, "settled at what was measured")
	assert.InDelta(t, 3, spend["[gen_ai.tool.name=search verity.toolgate.caller=b]"], 1e-9, "a failure without refund is charged")
	assert.Equal(t, map[string]float64{
		"[verity.toolgate.caller=a]": 3 - 0.3 - 0.25,
		"[verity.toolgate.caller=b]": 0,
	}, sums[float64](m[gateotel.MetricRemaining]))
	assert.Equal(t, map[string]uint64{
		"[verity.toolgate.verdict=allow]":        7,
		"[verity.toolgate.verdict=refuse]":       2,
		"[verity.toolgate.verdict=ask_approval]": 1,
	}, counts(m[gateotel.MetricDecisionDuration]))
	assert.Equal(t, map[string]uint64{
		"[gen_ai.tool.name=read_file]":                    3,
		"[gen_ai.tool.name=search]":                       3,
		"[error.type=tool_error gen_ai.tool.name=search]": 1,
	}, counts(m[gateotel.MetricToolDuration]))
	h := m[gateotel.MetricToolDuration].(metricdata.Histogram[float64])
	assert.Equal(t, gateotel.DurationBuckets, h.DataPoints[0].Bounds)
}

func TestLabelsAreCapped(t *testing.T) {
	r := newRig(t, gateotel.Options{MaxCallers: 2, MaxTools: 1})
	for i := range 5 {
		r.before(t, toolgate.Call{Tool: fmt.Sprint("tool_", i), Caller: fmt.Sprint("caller-", i)})
	}
	// A caller seen before the cap keeps its label.
	r.before(t, toolgate.Call{Tool: "tool_0", Caller: "caller-1"})
	m := collect(t, r)
	assert.Equal(t, map[string]int64{
		"[gen_ai.tool.name=tool_0 verity.toolgate.caller=caller-0 verity.toolgate.verdict=refuse]": 1,
		"[gen_ai.tool.name=_other verity.toolgate.caller=caller-1 verity.toolgate.verdict=refuse]": 1,
		"[gen_ai.tool.name=tool_0 verity.toolgate.caller=caller-1 verity.toolgate.verdict=refuse]": 1,
		"[gen_ai.tool.name=_other verity.toolgate.caller=_other verity.toolgate.verdict=refuse]":   3,
	}, sums[int64](m[gateotel.MetricCalls]))
	spans := r.spans.GetSpans()
	require.Len(t, spans, 6)
	assert.Equal(t, "execute_tool tool_4", spans[4].Name, "spans keep the real names")
	assert.Equal(t, "caller-4", attrs(spans[4].Attributes)["verity.toolgate.caller"])

	r = newRig(t, gateotel.Options{MaxCallers: -1})
	r.before(t, toolgate.Call{Tool: "rm", Caller: "x"})
	assert.Equal(t, map[string]int64{
		"[gen_ai.tool.name=rm verity.toolgate.caller=_other verity.toolgate.verdict=refuse]": 1,
	}, sums[int64](collect(t, r)[gateotel.MetricCalls]))
}

func TestAnnotateSpanUsesTheContextsSpan(t *testing.T) {
	r := newRig(t, gateotel.Options{AnnotateSpan: true})
	sctx, span := r.tp.Tracer("framework").Start(ctx, "execute_tool read_file")
	d, err := r.gate.Before(sctx, toolgate.Call{Tool: "read_file", ID: "c1", Caller: "a"})
	require.NoError(t, err)
	_, err = r.gate.After(sctx, d.Call, toolgate.Result{})
	require.NoError(t, err)
	span.End()
	// Without a span in the context, nothing is recorded.
	_, err = r.gate.Before(ctx, toolgate.Call{Tool: "rm", Caller: "a"})
	require.NoError(t, err)

	spans := r.spans.GetSpans()
	require.Len(t, spans, 1, "the framework's span only")
	a := attrs(spans[0].Attributes)
	assert.Equal(t, "allow", a["verity.toolgate.verdict"])
	assert.Equal(t, "c1", a["gen_ai.tool.call.id"])
	assert.Equal(t, d.ExecID, a["verity.toolgate.exec_id"])
	assert.Equal(t, int64(100), a["verity.toolgate.charged"])
	assert.Equal(t, int64(2900), a["verity.toolgate.remaining"])
	assert.Equal(t, int64(d.Seq+1), a["verity.toolgate.result_seq"])
	assert.Equal(t, int64(1), sums[int64](collect(t, r)[gateotel.MetricCalls])["[gen_ai.tool.name=read_file verity.toolgate.caller=a verity.toolgate.verdict=allow]"], "metrics still recorded")
}

func TestObserveGate(t *testing.T) {
	r := newRig(t, gateotel.Options{})
	reg, err := r.obs.ObserveGate(r.gate)
	require.NoError(t, err)
	r.before(t, toolgate.Call{Tool: "delete_file", Caller: "a", Arguments: []byte(`{"path":"1"}`)})
	r.before(t, toolgate.Call{Tool: "delete_file", Caller: "b", Arguments: []byte(`{"path":"2"}`)})
	r.obs.ObserveSync(vtrace.SyncStat{Duration: 3 * time.Millisecond, Records: 2})
	r.obs.ObserveSync(vtrace.SyncStat{Duration: time.Millisecond, Err: errors.New("EIO")})
	m := collect(t, r)
	assert.Equal(t, map[string]int64{"[]": 2}, sums[int64](m[gateotel.MetricApprovalsWaiting]))
	assert.Equal(t, map[string]int64{"[]": 2}, sums[int64](m[gateotel.MetricLiveCallers]))
	assert.Equal(t, map[string]uint64{"[]": 1, "[error.type=fsync_error]": 1}, counts(m[gateotel.MetricSyncDuration]))
	for _, p := range m[gateotel.MetricSyncDuration].(metricdata.Histogram[float64]).DataPoints {
		if p.Attributes.Len() == 0 {
			assert.InDelta(t, 0.003, p.Sum, 1e-9)
		}
	}

	require.NoError(t, reg.Unregister())
	m = collect(t, r)
	assert.Empty(t, sums[int64](m[gateotel.MetricApprovalsWaiting]), "unregistered: no longer read")
}

// mustCompile compiles a policy the test builds in Go, which is valid:
// a violation is the test's own mistake, and stops it loudly.
func mustCompile(p toolgate.Policy) *toolgate.Compiled {
	comp, err := p.Compile()
	if err != nil {
		panic(err)
	}
	return comp
}
