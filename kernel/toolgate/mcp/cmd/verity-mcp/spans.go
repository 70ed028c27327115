package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/verity-go/verity/kernel/toolgate"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
)

// spansConfig is -trace-spans: the gate's OpenTelemetry spans
// (kernel/toolgate/otel), one JSON line each (gateotel.SpanFile), in the
// trace of the agent's traceparent when its request's _meta carried one
// (MCP 2026-07-28): the span's trace_id is the log entries' trace, so
// the file, the log and the agent's and the server's traces join.
type spansConfig struct {
	path string

	obs *gateotel.Observer // once started
}

// addSpansFlags registers -trace-spans on fs.
func addSpansFlags(fs *flag.FlagSet, s *spansConfig) {
	fs.StringVar(&s.path, "trace-spans", "", "append the gate's OpenTelemetry spans to this file, one JSON line each, in the agent's trace when its request carries a traceparent")
}

// start opens the file (created 0600 when missing, appended to) and the
// tracer provider writing to it; stop flushes and closes them.
func (s *spansConfig) start() (stop func(context.Context) error, err error) {
	if s.path == "" {
		return func(context.Context) error { return nil }, nil
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("-trace-spans: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(gateotel.NewSpanFile(f)))
	s.obs, err = gateotel.New(gateotel.Options{TracerProvider: tp})
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("-trace-spans: %w", err)
	}
	return func(ctx context.Context) error {
		err := tp.Shutdown(context.WithoutCancel(ctx)) // flushes what is batched
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("-trace-spans: %w", err)
		}
		return nil
	}, nil
}

// gateOptions is the spans' observer, when -trace-spans is given.
func (s *spansConfig) gateOptions() []toolgate.Option {
	if s.obs == nil {
		return nil
	}
	return []toolgate.Option{toolgate.WithObserver(s.obs)}
}
