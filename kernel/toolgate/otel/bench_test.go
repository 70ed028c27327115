package otel_test

import (
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
	vtrace "github.com/verity-go/verity/trace"
)

// BenchmarkObservedGateCall is one allowed call (Before and After on a
// memory log) with the Observer recording into the OpenTelemetry SDK: a
// span (to a discarding exporter, sampled) and the metrics (a manual
// reader). Compare with toolgate's BenchmarkGateCall for the observer's
// share.
func BenchmarkObservedGateCall(b *testing.B) {
	for _, name := range []string{"metrics", "metrics+spans"} {
		b.Run(name, func(b *testing.B) {
			o := gateotel.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))}
			if name == "metrics+spans" {
				o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
			} else {
				o.TracerProvider = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
			}
			obs, err := gateotel.New(o)
			if err != nil {
				b.Fatal(err)
			}
			log, _ := vtrace.NewLog(vtrace.NewMemory())
			g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Cost(1 << 50), MinCost: 1,
				Tools: []toolgate.Rule{{Match: "read_*", Cost: 1}}}), toolgate.WithObserver(obs))
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
		})
	}
}
