package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/internal/httpguard"
)

// DefaultSessionTimeout is how long a streamable HTTP session may go
// without a request before it is closed (-session-timeout).
const DefaultSessionTimeout = 10 * time.Minute

// httpConfig is the -http server's bounds.
type httpConfig struct {
	limits         httpguard.Limits
	sessionTimeout time.Duration
	maxBody        int64
}

// addHTTPFlags registers the -http server's bounds on fs.
func addHTTPFlags(fs *flag.FlagSet, h *httpConfig) {
	h.limits = httpguard.Defaults()
	h.limits.AddFlags(fs)
	fs.DurationVar(&h.sessionTimeout, "session-timeout", DefaultSessionTimeout,
		"HTTP: a session without a request for this long is closed (its client must initialize anew)")
	fs.Int64Var(&h.maxBody, "max-body", sdk.DefaultMaxRequestBodyBytes, "HTTP: largest request body in bytes")
}

// check refuses a bound that is not positive: none can be switched off.
func (h httpConfig) check() error {
	err := h.limits.Validate()
	if h.sessionTimeout <= 0 {
		err = errors.Join(err, fmt.Errorf("-session-timeout must be positive, not %v", h.sessionTimeout))
	}
	if h.maxBody <= 0 {
		err = errors.Join(err, fmt.Errorf("-max-body must be positive, not %d", h.maxBody))
	}
	return err
}

// serveHTTP serves srv over streamable HTTP at addr until stop is
// called, bounded so that no idle or slow client starves another:
//
//   - the server's timeouts, header limit and connection cap are
//     httpguard's (internal/httpguard);
//   - every route is wrapped in httpguard.Stream, because every MCP
//     response may be a stream that stays open: the GET stream for as
//     long as the session lives, and a POST's answer for as long as its
//     call runs (a DELETE call waits for its human's approval). Each
//     request's body is read under -read-timeout, and each write must
//     reach the client within -write-timeout;
//   - a session with no request for -session-timeout is closed, with what
//     it holds: sdk.StreamableHTTPOptions.SessionTimeout (go-sdk v1.8.0,
//     mcp/streamable.go: "When sessions receive no new HTTP requests from
//     the client for this duration, they are automatically closed."). Its
//     timer is paused while a POST is in progress (sessionInfo.startPOST,
//     endPOST) but not by an open GET stream, so a client that only
//     listens must ping (MCP's ping) to keep its session; closing the
//     session ends its streams;
//   - with -jwks, every request but the protected-resource metadata's
//     needs a bearer token (protect, auth.go);
//   - request bodies are at most -max-body bytes:
//     sdk.StreamableHTTPOptions.MaxRequestBodyBytes, answered 413.
//
// stop closes the sessions first (their open streams would hold
// Shutdown), then shuts the server down.
func serveHTTP(addr string, srv *sdk.Server, h httpConfig, protect func(http.Handler) (http.Handler, error), logger *slog.Logger) (stop func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-http: %w", err)
	}
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		SessionTimeout:      h.sessionTimeout,
		MaxRequestBodyBytes: h.maxBody,
	})
	guarded, err := protect(handler)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("-http: %w", err)
	}
	hs, gl := httpguard.New(ln, httpguard.Stream(guarded, h.limits), h.limits)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(gl) }()
	logger.Info("listening", "http", ln.Addr().String(), "session_timeout", h.sessionTimeout, "max_conns", h.limits.MaxConns)
	return func(ctx context.Context) error {
		for _, ss := range slices.Collect(srv.Sessions()) {
			_ = ss.Close()
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		if herr := <-done; herr != nil && !errors.Is(herr, http.ErrServerClosed) {
			return fmt.Errorf("-http: %w", herr)
		}
		return nil
	}, nil
}
