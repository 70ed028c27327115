// Package otel records a toolgate.Gate's decisions and outcomes as
// OpenTelemetry traces and metrics, whichever adapter drives the gate —
// the MCP proxy and middleware (kernel/toolgate/mcp), ADK
// (kernel/toolgate/adk), eino (kernel/toolgate/eino) or plain Go — since
// it observes the gate itself (toolgate.WithObserver). It is a module of
// its own so that the root module keeps its few dependencies.
//
//	obs, err := otel.New(otel.Options{}) // the global providers
//	g, err := toolgate.New(ctx, log, comp, toolgate.WithObserver(obs)) // comp: Policy.Compile
//	reg, err := obs.ObserveGate(g) // approvals waiting, live callers
//
// # Spans
//
// Each call is one span named as OpenTelemetry's GenAI semantic
// conventions name a tool execution — "execute_tool " and the tool's
// name, kind INTERNAL, gen_ai.operation.name "execute_tool",
// gen_ai.tool.name, gen_ai.tool.call.id (the call's id) — carrying the
// gate's verity.* attributes: the verdict, the caller and principal, the
// rule and condition that decided, the trace entry (verity.trace.seq),
// what Before charged and what the call cost in the end, the remaining
// budget, the execution id, the approval. A refused call's span has
// error.type "refused" and the explanation as its status; a failed tool's
// "tool_error"; a gate that could not decide or record "gate_error".
//
// A call that did not run (refused, waiting for a human) is its span at
// once. An allowed call's span runs from Before to the end of After and
// is recorded when After reports (an event marks the allow): the gate
// keeps no span open between them, so nothing leaks for a call whose
// result never comes, and the tool's own spans are its siblings, not its
// children. A framework that opens its own execute_tool span around the
// call (ADK) sets Options.AnnotateSpan: the attributes go on that span
// instead.
//
// A span continues the trace in its context: a host that puts the
// agent's span context there (the MCP proxy does, from the traceparent of
// a request's _meta) makes the gate's spans children of the agent's, and
// toolgate.Call.Trace names the same trace on the call's log entries.
// SpanFile writes finished spans as JSON lines, for a host without a
// tracing backend (verity-mcp -trace-spans).
//
// # Metrics
//
// verity.toolgate.calls counts decisions by verdict, tool and caller;
// verity.toolgate.spend adds up what calls cost in the end, in units, by
// tool and caller; verity.toolgate.budget.remaining is each caller's
// remaining budget; verity.toolgate.decision.duration how long deciding
// took (the log's fsyncs included), by verdict; gen_ai.execute_tool.duration
// how long allowed tools ran (the GenAI conventions' metric), by tool;
// with ObserveGate, verity.toolgate.approvals.waiting and
// verity.toolgate.callers.live; with ObserveSync (a trace.File's sync
// hook), verity.trace.sync.duration. Durations are in seconds, in the
// buckets DurationBuckets.
//
// Callers and tools are unbounded — a million authenticated callers, or
// a client inventing tool names the gate refuses — and every label value
// is a series a metrics backend keeps. The first Options.MaxCallers
// callers and Options.MaxTools tools (DefaultMaxLabels each) label the
// metrics; every later one is counted under OtherLabel ("_other"), so
// the totals stay exact and the series bounded. (The remaining budget of
// "_other" is whichever of its callers was seen last.) Spans carry the
// real values.
//
// The Prometheus exporter of OpenTelemetry (go.opentelemetry.io/otel/exporters/prometheus)
// serves these as verity_toolgate_calls_total, verity_toolgate_spend_total,
// verity_toolgate_budget_remaining, verity_toolgate_decision_duration_seconds,
// gen_ai_execute_tool_duration_seconds, verity_toolgate_approvals_waiting,
// verity_toolgate_callers_live and verity_trace_sync_duration_seconds;
// verity-mcp -metrics does so.
package otel
