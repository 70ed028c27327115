package otel

import (
	"context"
	"fmt"
	"sync"
	"time"

	otelapi "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	vtrace "github.com/verity-go/verity/trace"
)

// ScopeName is the instrumentation scope of the tracer and meter the
// Observer uses.
const ScopeName = "github.com/verity-go/verity/kernel/toolgate/otel"

// OperationExecuteTool is gen_ai.operation.name of a tool call's span,
// and SpanNamePrefix starts its name ("execute_tool read_file"), as
// OpenTelemetry's GenAI semantic conventions name a tool execution.
const (
	OperationExecuteTool = "execute_tool"
	SpanNamePrefix       = OperationExecuteTool + " "
)

// The attributes of spans and metrics. The gen_ai.* and error.type keys
// are the GenAI semantic conventions'; the verity.* keys are the gate's,
// the same the ADK adapter (kernel/toolgate/adk) sets on ADK's own
// execute_tool span. Costs are in thousandths of a unit (kernel.Cost) on
// spans, in units on metrics.
const (
	AttrOperationName = attribute.Key("gen_ai.operation.name")
	AttrToolName      = attribute.Key("gen_ai.tool.name")
	AttrToolCallID    = attribute.Key("gen_ai.tool.call.id")
	// AttrErrorType is "refused" (the gate refused the call), "tool_error"
	// (the tool failed) or "gate_error" (the gate could not decide or
	// record).
	AttrErrorType = attribute.Key("error.type")

	// AttrVerdict is "allow", "refuse", "ask_approval", or "error" when
	// Before could not decide.
	AttrVerdict = attribute.Key("verity.toolgate.verdict")
	// AttrCaller is the caller key the call is charged to (its budget's).
	AttrCaller = attribute.Key("verity.toolgate.caller")
	// AttrPrincipal is the key of the principal the call was made for
	// (toolgate.Principal.Key), when the host authenticated one.
	AttrPrincipal = attribute.Key("verity.toolgate.principal")
	// AttrRule is the rule that decided (toolgate.RuleRef.String),
	// AttrCondition the part of it that did.
	AttrRule      = attribute.Key("verity.toolgate.rule")
	AttrCondition = attribute.Key("verity.toolgate.condition")
	// AttrCost is what Before charged an allowed call (the upper bound
	// of a reserved one), AttrRemaining the caller's remaining budget
	// after the decision or outcome.
	AttrCost      = attribute.Key("verity.toolgate.cost")
	AttrRemaining = attribute.Key("verity.toolgate.remaining")
	AttrExecID    = attribute.Key("verity.toolgate.exec_id")
	// AttrSeq is the trace entry that recorded the decision, AttrResultSeq
	// the one that recorded the outcome.
	AttrSeq       = attribute.Key("verity.trace.seq")
	AttrResultSeq = attribute.Key("verity.toolgate.result_seq")
	// AttrApprovalID names the approval an allowed call used, or the
	// request a call waits on.
	AttrApprovalID  = attribute.Key("verity.toolgate.approval_id")
	AttrExplanation = attribute.Key("verity.toolgate.explanation")
	// AttrCharged is what the call cost in the end, AttrUnpaid what a
	// measured cost above the budget left unpaid.
	AttrCharged = attribute.Key("verity.toolgate.charged")
	AttrUnpaid  = attribute.Key("verity.toolgate.unpaid")
)

// The metrics an Observer records (as the OpenTelemetry Prometheus
// exporter names them: dots become underscores, counters end in _total,
// histograms in seconds in _seconds).
const (
	// MetricCalls counts decisions by verdict, tool and caller
	// (verity_toolgate_calls_total).
	MetricCalls = "verity.toolgate.calls"
	// MetricSpend adds up what calls were charged in the end, in units,
	// by tool and caller (verity_toolgate_spend_total).
	MetricSpend = "verity.toolgate.spend"
	// MetricRemaining is each caller's remaining budget, in units, as of
	// its last decision or outcome (verity_toolgate_budget_remaining).
	MetricRemaining = "verity.toolgate.budget.remaining"
	// MetricDecisionDuration is how long Before took, its log appends
	// included, by verdict (verity_toolgate_decision_duration_seconds).
	MetricDecisionDuration = "verity.toolgate.decision.duration"
	// MetricToolDuration is the GenAI conventions' tool execution
	// duration: from the allow to After, by tool and error.type
	// (gen_ai_execute_tool_duration_seconds).
	MetricToolDuration = "gen_ai.execute_tool.duration"
	// MetricApprovalsWaiting is how many approval requests wait for a
	// human (ObserveGate; verity_toolgate_approvals_waiting).
	MetricApprovalsWaiting = "verity.toolgate.approvals.waiting"
	// MetricLiveCallers is how many callers the gate holds a session for
	// (ObserveGate; verity_toolgate_callers_live).
	MetricLiveCallers = "verity.toolgate.callers.live"
	// MetricSyncDuration is how long each fsync of the log took
	// (ObserveSync; verity_trace_sync_duration_seconds).
	MetricSyncDuration = "verity.trace.sync.duration"
)

// DurationBuckets are the bounds, in seconds, of the duration histograms:
// from 50µs (a decision on a memory log) to a minute (a tool that waits).
var DurationBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

// DefaultMaxLabels is how many distinct callers, and how many distinct
// tools, label metrics unless Options say otherwise.
const DefaultMaxLabels = 100

// OtherLabel is the caller or tool label of metrics for every value past
// the first Options.MaxCallers callers or Options.MaxTools tools.
const OtherLabel = "_other"

// Options configure an Observer.
type Options struct {
	// TracerProvider and MeterProvider default to OpenTelemetry's global
	// ones (otel.GetTracerProvider, otel.GetMeterProvider).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// AnnotateSpan sets the call's attributes on the span already in its
	// context instead of recording a span of its own: for a framework
	// that opens its own execute_tool span around the call (ADK does).
	AnnotateSpan bool
	// MaxCallers and MaxTools bound how many distinct callers and tools
	// label metrics (default DefaultMaxLabels each): the first ones seen
	// are kept, every later one is OtherLabel, so that a million callers,
	// or a client inventing tool names, cannot grow the series without
	// bound. Spans and log lines always carry the real values. Negative:
	// no caller (tool) label value at all but OtherLabel.
	MaxCallers, MaxTools int
}

// Observer records a gate's decisions and outcomes as OpenTelemetry
// spans and metrics: give it to toolgate.WithObserver. It is safe for
// concurrent use.
type Observer struct {
	tracer         trace.Tracer
	annotate       bool
	callers, tools *labels
	calls          metric.Int64Counter
	spend          metric.Float64Counter
	remaining      metric.Float64Gauge
	decision       metric.Float64Histogram
	tool           metric.Float64Histogram
	sync           metric.Float64Histogram
	waiting, live  metric.Int64ObservableGauge
	meter          metric.Meter
	sets           sync.Map // setKey → *measureOpts
}

var _ toolgate.Observer = (*Observer)(nil)

// New returns an Observer recording with o's providers.
func New(o Options) (*Observer, error) {
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = otelapi.GetTracerProvider()
	}
	if mp == nil {
		mp = otelapi.GetMeterProvider()
	}
	m := mp.Meter(ScopeName)
	ob := &Observer{tracer: tp.Tracer(ScopeName), annotate: o.AnnotateSpan, meter: m,
		callers: newLabels(o.MaxCallers), tools: newLabels(o.MaxTools)}
	var err error
	seconds := []metric.Float64HistogramOption{metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(DurationBuckets...)}
	if ob.calls, err = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls the gate decided, by verdict, tool and caller.")); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	if ob.spend, err = m.Float64Counter(MetricSpend, metric.WithUnit("{unit}"),
		metric.WithDescription("Budget units the gate charged for calls, after settlement and refunds, by tool and caller.")); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	if ob.remaining, err = m.Float64Gauge(MetricRemaining, metric.WithUnit("{unit}"),
		metric.WithDescription("Each caller's remaining budget as of its last decision or outcome.")); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	if ob.decision, err = m.Float64Histogram(MetricDecisionDuration, append(seconds,
		metric.WithDescription("How long the gate took to decide a call, its log appends included, by verdict."))...); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	if ob.tool, err = m.Float64Histogram(MetricToolDuration, append(seconds,
		metric.WithDescription("How long allowed tool calls ran, from the gate's allow to its report of the result."))...); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	if ob.sync, err = m.Float64Histogram(MetricSyncDuration, append(seconds,
		metric.WithDescription("How long each fsync of the trace log took."))...); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	if ob.waiting, err = m.Int64ObservableGauge(MetricApprovalsWaiting, metric.WithUnit("{request}"),
		metric.WithDescription("Approval requests waiting for a human.")); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	if ob.live, err = m.Int64ObservableGauge(MetricLiveCallers, metric.WithUnit("{caller}"),
		metric.WithDescription("Callers the gate holds a kernel session for.")); err != nil {
		return nil, fmt.Errorf("toolgate/otel: %w", err)
	}
	return ob, nil
}

// ObserveGate has the Observer report g's approvals waiting and live
// callers each time its metrics are collected, until the returned
// registration is unregistered.
func (o *Observer) ObserveGate(g *toolgate.Gate) (metric.Registration, error) {
	return o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		obs.ObserveInt64(o.waiting, int64(g.Waiting()))
		live, _ := g.LiveCallers()
		obs.ObserveInt64(o.live, int64(live))
		return nil
	}, o.waiting, o.live)
}

// ObserveSync records one fsync of the trace log: give it to
// trace.FileOptions.OnSync. A failed fsync is recorded with error.type
// "fsync_error".
func (o *Observer) ObserveSync(s vtrace.SyncStat) {
	if s.Err != nil {
		o.sync.Record(context.Background(), s.Duration.Seconds(), metric.WithAttributes(AttrErrorType.String("fsync_error")))
		return
	}
	o.sync.Record(context.Background(), s.Duration.Seconds())
}

// units is c in whole units.
func units(c kernel.Cost) float64 { return float64(c) / float64(kernel.Unit) }

// verdict is the decision's verdict as an attribute value.
func verdict(e toolgate.DecisionEvent) string {
	if e.Err != nil {
		return "error"
	}
	return e.Decision.Verdict.String()
}

// ObserveDecision records e: a count by verdict, tool and caller, how
// long the decision took, the caller's remaining budget; the span of a
// call that did not run (refused, waiting for a human, or not decided),
// or, with AnnotateSpan, the decision's attributes on the context's span.
// The span of an allowed call is recorded with its outcome.
func (o *Observer) ObserveDecision(ctx context.Context, e toolgate.DecisionEvent) {
	v := verdict(e)
	tool, caller := o.tools.label(e.Call.Tool), o.callers.label(e.Call.Caller)
	o.calls.Add(ctx, 1, o.opts(setKey{MetricCalls, v, tool, caller}, func() []attribute.KeyValue {
		return []attribute.KeyValue{AttrVerdict.String(v), AttrToolName.String(tool), AttrCaller.String(caller)}
	}).add...)
	o.decision.Record(ctx, e.Duration.Seconds(), o.opts(setKey{MetricDecisionDuration, v, "", ""}, func() []attribute.KeyValue {
		return []attribute.KeyValue{AttrVerdict.String(v)}
	}).record...)
	if e.Metered {
		o.remaining.Record(ctx, units(e.Budget.Remaining()), o.callerOpts(caller).record...)
	}

	var span trace.Span
	switch {
	case o.annotate:
		span = trace.SpanFromContext(ctx)
		if !span.IsRecording() {
			return
		}
	case e.Err == nil && e.Decision.Verdict == toolgate.Allow:
		return // recorded with the outcome
	default:
		_, span = o.start(ctx, e.Call.Tool, e.Start)
		defer span.End(trace.WithTimestamp(e.Start.Add(e.Duration)))
	}
	span.SetAttributes(callAttrs(e.Call)...)
	span.SetAttributes(decisionAttrs(e.Decision, v)...)
	if e.Metered {
		span.SetAttributes(AttrRemaining.Int64(int64(e.Budget.Remaining())))
	}
	switch {
	case e.Err != nil:
		span.SetAttributes(AttrErrorType.String("gate_error"))
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	case e.Decision.Verdict == toolgate.Refuse:
		span.SetAttributes(AttrErrorType.String("refused"))
		span.SetStatus(codes.Error, e.Decision.Explanation)
	}
}

// ObserveOutcome records e: what the call was charged, how long the tool
// ran, the caller's remaining budget, and the call's execute_tool span
// from Before to the end of After (or, with AnnotateSpan, the outcome's
// attributes on the context's span).
func (o *Observer) ObserveOutcome(ctx context.Context, e toolgate.OutcomeEvent) {
	tool, caller := o.tools.label(e.Call.Tool), o.callers.label(e.Call.Caller)
	recorded := e.Err == nil || e.Outcome.Seq != 0
	if recorded {
		o.spend.Add(ctx, units(e.Outcome.Charged), o.opts(setKey{MetricSpend, "", tool, caller}, func() []attribute.KeyValue {
			return []attribute.KeyValue{AttrToolName.String(tool), AttrCaller.String(caller)}
		}).add...)
	}
	if !e.Allowed.IsZero() {
		failed := ""
		if e.Failed {
			failed = "tool_error"
		}
		o.tool.Record(ctx, e.Reported.Sub(e.Allowed).Seconds(), o.opts(setKey{MetricToolDuration, failed, tool, ""}, func() []attribute.KeyValue {
			if failed != "" {
				return []attribute.KeyValue{AttrToolName.String(tool), AttrErrorType.String(failed)}
			}
			return []attribute.KeyValue{AttrToolName.String(tool)}
		}).record...)
	}
	if e.Metered {
		o.remaining.Record(ctx, units(e.Budget.Remaining()), o.callerOpts(caller).record...)
	}

	var span trace.Span
	if o.annotate {
		span = trace.SpanFromContext(ctx)
		if !span.IsRecording() {
			return
		}
	} else {
		start := e.Decided
		if start.IsZero() {
			start = e.Reported
		}
		_, span = o.start(ctx, e.Call.Tool, start)
		defer span.End(trace.WithTimestamp(e.Reported.Add(e.Duration)))
		span.SetAttributes(callAttrs(e.Call)...)
		if e.Decision.Verdict == toolgate.Allow {
			span.SetAttributes(decisionAttrs(e.Decision, "allow")...)
			span.AddEvent("verity.toolgate.allowed", trace.WithTimestamp(e.Allowed))
		}
	}
	if recorded {
		span.SetAttributes(AttrResultSeq.Int64(int64(e.Outcome.Seq)), AttrCharged.Int64(int64(e.Outcome.Charged)))
		if e.Outcome.Unpaid != 0 {
			span.SetAttributes(AttrUnpaid.Int64(int64(e.Outcome.Unpaid)))
		}
	}
	if e.Metered {
		span.SetAttributes(AttrRemaining.Int64(int64(e.Budget.Remaining())))
	}
	switch {
	case e.Err != nil:
		span.SetAttributes(AttrErrorType.String("gate_error"))
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	case e.Failed:
		span.SetAttributes(AttrErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "the tool failed")
	}
}

// start starts a call's execute_tool span at t.
func (o *Observer) start(ctx context.Context, tool string, t time.Time) (context.Context, trace.Span) {
	return o.tracer.Start(ctx, SpanNamePrefix+tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(t),
		trace.WithAttributes(AttrOperationName.String(OperationExecuteTool), AttrToolName.String(tool)))
}

func callAttrs(c toolgate.Call) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrToolName.String(c.Tool), AttrToolCallID.String(c.ID), AttrCaller.String(c.Caller)}
	if key := c.Principal.Key(); key != "" {
		attrs = append(attrs, AttrPrincipal.String(key))
	}
	return attrs
}

func decisionAttrs(d toolgate.Decision, verdict string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrVerdict.String(verdict)}
	if verdict == "error" {
		return attrs
	}
	attrs = append(attrs, AttrSeq.Int64(int64(d.Seq)))
	if d.Rule.Found {
		attrs = append(attrs, AttrRule.String(d.Rule.String()))
	}
	if d.Condition != "" {
		attrs = append(attrs, AttrCondition.String(d.Condition))
	}
	if d.Verdict == toolgate.Allow {
		attrs = append(attrs, AttrCost.Int64(int64(d.Cost)), AttrExecID.String(d.ExecID))
	}
	switch {
	case d.ApprovalID != "":
		attrs = append(attrs, AttrApprovalID.String(d.ApprovalID))
	case d.Approval != nil:
		attrs = append(attrs, AttrApprovalID.String(d.Approval.ID))
	}
	if d.Explanation != "" {
		attrs = append(attrs, AttrExplanation.String(d.Explanation))
	}
	return attrs
}

// setKey names one metric's combination of label values: a bounded
// number of them, since the caller and tool values are capped.
type setKey struct{ metric, a, tool, caller string }

// measureOpts are the options of a measurement with one set of labels.
type measureOpts struct {
	add    []metric.AddOption
	record []metric.RecordOption
}

// opts returns the options of the labels k names (attrs makes them),
// made once and kept, so that a measurement allocates no attribute set.
func (o *Observer) opts(k setKey, attrs func() []attribute.KeyValue) *measureOpts {
	if v, ok := o.sets.Load(k); ok {
		return v.(*measureOpts)
	}
	opt := metric.WithAttributeSet(attribute.NewSet(attrs()...))
	v, _ := o.sets.LoadOrStore(k, &measureOpts{add: []metric.AddOption{opt}, record: []metric.RecordOption{opt}})
	return v.(*measureOpts)
}

func (o *Observer) callerOpts(caller string) *measureOpts {
	return o.opts(setKey{MetricRemaining, "", "", caller}, func() []attribute.KeyValue {
		return []attribute.KeyValue{AttrCaller.String(caller)}
	})
}

// labels bounds the values of one metric label: the first max seen are
// themselves, every later one is OtherLabel.
type labels struct {
	mu    sync.Mutex
	limit int
	seen  map[string]struct{}
}

func newLabels(limit int) *labels {
	if limit == 0 {
		limit = DefaultMaxLabels
	}
	return &labels{limit: limit, seen: map[string]struct{}{}}
}

func (l *labels) label(v string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[v]; ok {
		return v
	}
	if len(l.seen) >= l.limit {
		return OtherLabel
	}
	l.seen[v] = struct{}{}
	return v
}
