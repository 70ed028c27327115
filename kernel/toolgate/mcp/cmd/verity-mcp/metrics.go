package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/verity-go/verity/internal/httpguard"
	"github.com/verity-go/verity/kernel/toolgate"
	gateotel "github.com/verity-go/verity/kernel/toolgate/otel"
	"github.com/verity-go/verity/trace"
)

// MetricsPath is where -metrics serves the Prometheus text exposition.
const MetricsPath = "/metrics"

// observeConfig is what the proxy tells about its calls: the decision log
// lines and, with -metrics, the Prometheus metrics.
type observeConfig struct {
	metrics         string // -metrics ADDR
	insecureMetrics bool   // -insecure-metrics
	decisionLog     bool   // -decision-log
	maxCallers      int    // -metrics-max-callers
	maxTools        int    // -metrics-max-tools

	obs *gateotel.Observer // with -metrics, once started
}

// addObserveFlags registers -metrics and its companions on fs.
func addObserveFlags(fs *flag.FlagSet, o *observeConfig) {
	fs.StringVar(&o.metrics, "metrics", "", "serve Prometheus metrics at http://ADDR"+MetricsPath+" (host:port, loopback only unless -insecure-metrics)")
	fs.BoolVar(&o.insecureMetrics, "insecure-metrics", false, "allow -metrics on a non-loopback address: anyone who reaches it reads the callers, tools and spend")
	fs.BoolVar(&o.decisionLog, "decision-log", true, "log one line per decision and per result (msg=\"toolgate decision\", \"toolgate result\")")
	fs.IntVar(&o.maxCallers, "metrics-max-callers", gateotel.DefaultMaxLabels, "metrics: distinct callers labelled, every later one counted as \""+gateotel.OtherLabel+"\"")
	fs.IntVar(&o.maxTools, "metrics-max-tools", gateotel.DefaultMaxLabels, "metrics: distinct tools labelled, every later one counted as \""+gateotel.OtherLabel+"\"")
}

// check refuses a -metrics address that is not loopback (without
// -insecure-metrics) and caps that are not positive.
func (o observeConfig) check() error {
	var err error
	switch {
	case o.insecureMetrics && o.metrics == "":
		err = errors.New("-insecure-metrics needs -metrics")
	case o.metrics != "" && !o.insecureMetrics && !loopback(o.metrics):
		err = fmt.Errorf("-metrics %s is not a loopback address: give -insecure-metrics to serve anyone who reaches it", o.metrics)
	}
	if o.maxCallers <= 0 {
		err = errors.Join(err, fmt.Errorf("-metrics-max-callers must be positive, not %d", o.maxCallers))
	}
	if o.maxTools <= 0 {
		err = errors.Join(err, fmt.Errorf("-metrics-max-tools must be positive, not %d", o.maxTools))
	}
	return err
}

// start serves -metrics, when given, until stop is called: the
// OpenTelemetry Observer's instruments (kernel/toolgate/otel) through the
// OpenTelemetry Prometheus exporter, on a registry of the proxy's own,
// behind httpguard's bounds (the -http limits' defaults).
func (o *observeConfig) start(logger *slog.Logger) (stop func(context.Context) error, err error) {
	if o.metrics == "" {
		return func(context.Context) error { return nil }, nil
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	o.obs, err = gateotel.New(gateotel.Options{MeterProvider: mp, MaxCallers: o.maxCallers, MaxTools: o.maxTools})
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	ln, err := net.Listen("tcp", o.metrics)
	if err != nil {
		return nil, fmt.Errorf("-metrics: %w", err)
	}
	if !loopback(o.metrics) {
		logger.Warn("-insecure-metrics: anyone who reaches -metrics reads the callers, tools and spend", "metrics", o.metrics)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+MetricsPath, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}))
	limits := httpguard.Defaults()
	hs, gl := httpguard.New(ln, mux, limits)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(gl) }()
	logger.Info("metrics", "http", ln.Addr().String(), "path", MetricsPath)
	return func(ctx context.Context) error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		err := mp.Shutdown(sctx)
		if herr := <-done; herr != nil && !errors.Is(herr, http.ErrServerClosed) {
			return fmt.Errorf("-metrics: %w", herr)
		}
		if err != nil {
			return fmt.Errorf("-metrics: %w", err)
		}
		return nil
	}, nil
}

// gateOptions are the gate's observers: the decision log lines and the
// metrics.
func (o *observeConfig) gateOptions(logger *slog.Logger) []toolgate.Option {
	var opts []toolgate.Option
	if o.decisionLog {
		opts = append(opts, toolgate.WithObserver(toolgate.LogObserver(logger)))
	}
	if o.obs != nil {
		opts = append(opts, toolgate.WithObserver(o.obs))
	}
	return opts
}

// fileOptions adds the fsync latency hook to the log's options.
func (o *observeConfig) fileOptions(fo trace.FileOptions) trace.FileOptions {
	if o.obs != nil {
		fo.OnSync = o.obs.ObserveSync
	}
	return fo
}

// watch has the metrics read g's approvals waiting and live callers.
func (o *observeConfig) watch(g *toolgate.Gate) error {
	if o.obs == nil {
		return nil
	}
	if _, err := o.obs.ObserveGate(g); err != nil {
		return fmt.Errorf("-metrics: %w", err)
	}
	return nil
}
