package otel_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
	vtrace "github.com/verity-go/verity/trace"
)

// A gate observed into OpenTelemetry: each call is one execute_tool span
// (here kept in memory; a host exports them over OTLP).
func Example() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	obs, err := gateotel.New(gateotel.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))})
	if err != nil {
		panic(err)
	}
	log, _ := vtrace.NewLog(vtrace.NewMemory())
	comp, _ := toolgate.Policy{Budget: 3 * kernel.Unit, MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{{Match: "read_*", Cost: kernel.Unit / 10}}}.Compile()
	g, _ := toolgate.New(ctx, log, comp, toolgate.WithObserver(obs))

	d, _ := g.Before(ctx, toolgate.Call{Tool: "read_file", ID: "call-1", Caller: "agent-1"})
	_, _ = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"buy milk"`)})
	_, _ = g.Before(ctx, toolgate.Call{Tool: "rm", ID: "call-2", Caller: "agent-1"})

	for _, s := range spans.GetSpans() {
		a := attrs(s.Attributes)
		fmt.Println(s.Name, a["gen_ai.tool.call.id"], a["verity.toolgate.verdict"], a["verity.toolgate.remaining"], s.Status.Code)
	}
	// Output:
	// execute_tool read_file call-1 allow 2900 Unset
	// execute_tool rm call-2 refuse 2900 Error
}
