package otel

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// SpanFile is a span exporter (sdktrace.SpanExporter) that writes each
// finished span as one line of JSON — its W3C trace and span ids, its
// parent's (with parent_remote when the parent came from another
// process: an agent's traceparent), name, kind, start and end
// (RFC 3339, nanoseconds), status and attributes — for a host without a
// tracing backend, or to feed one: a line joins the agent's trace (its
// trace_id) and the gate's log (the verity.trace.seq attribute, and the
// entries' trace member). Lines of one ExportSpans are written together;
// a write error is returned, and the exporter keeps no span.
type SpanFile struct {
	mu sync.Mutex
	w  io.Writer
}

var _ sdktrace.SpanExporter = (*SpanFile)(nil)

// NewSpanFile returns a SpanFile writing to w.
func NewSpanFile(w io.Writer) *SpanFile { return &SpanFile{w: w} }

// SpanLine is one line of a SpanFile.
type SpanLine struct {
	TraceID      string         `json:"trace_id"`
	SpanID       string         `json:"span_id"`
	ParentSpanID string         `json:"parent_span_id,omitempty"`
	ParentRemote bool           `json:"parent_remote,omitempty"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	Start        string         `json:"start"`
	End          string         `json:"end"`
	Status       string         `json:"status,omitempty"`
	Description  string         `json:"status_description,omitempty"`
	Attributes   map[string]any `json:"attributes,omitempty"`
}

// ExportSpans writes spans, one line each.
func (f *SpanFile) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	var buf []byte
	for _, s := range spans {
		l := SpanLine{TraceID: s.SpanContext().TraceID().String(), SpanID: s.SpanContext().SpanID().String(),
			Name: s.Name(), Kind: s.SpanKind().String(),
			Start: s.StartTime().UTC().Format(time.RFC3339Nano), End: s.EndTime().UTC().Format(time.RFC3339Nano)}
		if p := s.Parent(); p.IsValid() {
			l.ParentSpanID, l.ParentRemote = p.SpanID().String(), p.IsRemote()
		}
		if st := s.Status(); st.Code != 0 {
			l.Status, l.Description = st.Code.String(), st.Description
		}
		if attrs := s.Attributes(); len(attrs) > 0 {
			l.Attributes = make(map[string]any, len(attrs))
			for _, a := range attrs {
				l.Attributes[string(a.Key)] = attrValue(a.Value)
			}
		}
		b, err := json.Marshal(l)
		if err != nil {
			return fmt.Errorf("toolgate/otel: span %s: %w", l.SpanID, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.w.Write(buf); err != nil {
		return fmt.Errorf("toolgate/otel: writing spans: %w", err)
	}
	return nil
}

// Shutdown does nothing: the writer is the caller's to close.
func (f *SpanFile) Shutdown(context.Context) error { return nil }

func attrValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOL:
		return v.AsBool()
	case attribute.INT64:
		return v.AsInt64()
	case attribute.FLOAT64:
		if f := v.AsFloat64(); !math.IsNaN(f) && !math.IsInf(f, 0) {
			return f
		}
		return v.String() // JSON has no NaN or infinity
	case attribute.STRING:
		return v.AsString()
	}
	return v.String()
}
