package otel_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
	vtrace "github.com/verity-go/verity/trace"
)

// TestSpanFileContinuesTheAgentsTrace: a call made in a remote span (an
// agent's traceparent) is one line of the span file in that trace, its
// parent the agent's span, with the gate's attributes — the trace entry
// among them, which joins the line to the log.
func TestSpanFileContinuesTheAgentsTrace(t *testing.T) {
	var out bytes.Buffer
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(gateotel.NewSpanFile(&out)))
	obs, err := gateotel.New(gateotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	log, err := vtrace.NewLog(vtrace.NewMemory())
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: kernel.Unit, MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{{Match: "read_file", Cost: kernel.Unit / 10}}}), toolgate.WithObserver(obs))
	require.NoError(t, err)

	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	cctx := trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.FlagsSampled, Remote: true}))
	d, err := g.Before(cctx, toolgate.Call{Tool: "read_file", Arguments: []byte(`{}`), Trace: tid.String()})
	require.NoError(t, err)
	_, err = g.After(cctx, d.Call, toolgate.Result{Output: []byte("ok")})
	require.NoError(t, err)
	d2, err := g.Before(cctx, toolgate.Call{Tool: "format_disk", Arguments: []byte(`{}`)})
	require.NoError(t, err)

	sc := bufio.NewScanner(&out)
	var lines []gateotel.SpanLine
	for sc.Scan() {
		var l gateotel.SpanLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), sc.Text())
		lines = append(lines, l)
	}
	require.Len(t, lines, 2)
	for _, l := range lines {
		assert.Equal(t, tid.String(), l.TraceID)
		assert.Equal(t, sid.String(), l.ParentSpanID)
		assert.True(t, l.ParentRemote)
		assert.Len(t, l.SpanID, 16)
	}
	assert.Equal(t, "execute_tool read_file", lines[0].Name, "recorded with its outcome")
	assert.Equal(t, "allow", lines[0].Attributes["verity.toolgate.verdict"])
	assert.Equal(t, float64(d.Seq), lines[0].Attributes["verity.trace.seq"])
	assert.Equal(t, "execute_tool format_disk", lines[1].Name, "the refusal is its span at once")
	assert.Equal(t, "Error", lines[1].Status)
	assert.Equal(t, float64(d2.Seq), lines[1].Attributes["verity.trace.seq"])
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestSpanFileReportsWhatItCannotWrite: a write error is returned; a
// float that JSON cannot hold is written as text.
func TestSpanFileReportsWhatItCannotWrite(t *testing.T) {
	var out bytes.Buffer
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(gateotel.NewSpanFile(&out)))
	_, span := tp.Tracer("t").Start(context.Background(), "s")
	span.SetAttributes(attribute.Float64("nan", math.NaN()))
	span.End()
	var l gateotel.SpanLine
	require.NoError(t, json.Unmarshal(out.Bytes(), &l), out.String())
	assert.Equal(t, "NaN", l.Attributes["nan"])

	f := gateotel.NewSpanFile(failingWriter{})
	rec := &recorded{}
	tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	_, span = tp.Tracer("t").Start(context.Background(), "s")
	span.End()
	assert.ErrorContains(t, f.ExportSpans(context.Background(), rec.spans), "disk full")
}

// recorded keeps the spans that end.
type recorded struct{ spans []sdktrace.ReadOnlySpan }

func (r *recorded) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (r *recorded) OnEnd(s sdktrace.ReadOnlySpan)                   { r.spans = append(r.spans, s) }
func (r *recorded) Shutdown(context.Context) error                  { return nil }
func (r *recorded) ForceFlush(context.Context) error                { return nil }
