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
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/internal/httpguard"
)

// DefaultSessionTimeout is how long a streamable HTTP session may go
// without a request before it is closed (-session-timeout).
const DefaultSessionTimeout = 10 * time.Minute

// DefaultMaxSessions is how many streamable HTTP sessions may be live at
// once (-max-sessions): a session holds about 5 KiB while idle and more
// with calls in progress, so 1,024 keep them to a few MiB, and a client
// initializing sessions without end makes the oldest idle ones go rather
// than the proxy grow.
const DefaultMaxSessions = 1024

// httpConfig is the -http server's bounds.
type httpConfig struct {
	limits         httpguard.Limits
	sessionTimeout time.Duration
	maxSessions    int
	maxBody        int64
}

// addHTTPFlags registers the -http server's bounds on fs.
func addHTTPFlags(fs *flag.FlagSet, h *httpConfig) {
	h.limits = httpguard.Defaults()
	h.limits.AddFlags(fs)
	fs.DurationVar(&h.sessionTimeout, "session-timeout", DefaultSessionTimeout,
		"HTTP: a session without a request for this long is closed (its client must initialize anew)")
	fs.IntVar(&h.maxSessions, "max-sessions", DefaultMaxSessions,
		"HTTP: sessions live at once; a new one closes the session idle longest (its client must initialize anew), or is refused 503 when every one has a request in progress")
	fs.Int64Var(&h.maxBody, "max-body", sdk.DefaultMaxRequestBodyBytes, "HTTP: largest request body in bytes")
}

// check refuses a bound that is not positive: none can be switched off.
func (h httpConfig) check() error {
	err := h.limits.Validate()
	if h.sessionTimeout <= 0 {
		err = errors.Join(err, fmt.Errorf("-session-timeout must be positive, not %v", h.sessionTimeout))
	}
	if h.maxSessions <= 0 {
		err = errors.Join(err, fmt.Errorf("-max-sessions must be positive, not %d", h.maxSessions))
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
//   - at most -max-sessions sessions are live at once (sessionCap): an
//     initialize beyond them closes the session whose last request ended
//     longest ago among those with no POST in progress, or, when every
//     session has one, is answered 503;
//   - with -jwks, every request but the protected-resource metadata's
//     needs a bearer token (protect, auth.go);
//   - request bodies are at most -max-body bytes:
//     sdk.StreamableHTTPOptions.MaxRequestBodyBytes, answered 413;
//   - both eras are served (eras.go): a request of 2026-07-28 goes to the
//     SDK's stateless handler (no session: nothing to cap or time out,
//     its handler's context ends with its POST), any other to the
//     stateful one behind the session cap, each once its headers agree
//     with its body (front: eraFront, which the bearer check precedes).
//
// stop closes the sessions first (their open streams would hold
// Shutdown), then shuts the server down.
func serveHTTP(addr string, srv *sdk.Server, h httpConfig, protect func(http.Handler) (http.Handler, error), logger *slog.Logger, front *eraFront) (stop func(context.Context) error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-http: %w", err)
	}
	getServer := func(*http.Request) *sdk.Server { return srv }
	handler := sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
		SessionTimeout:      h.sessionTimeout,
		MaxRequestBodyBytes: h.maxBody,
	})
	capped := newSessionCap(handler, srv, h.maxSessions, logger)
	front.stateful, front.maxBody = capped, h.maxBody
	front.stateless = sdk.NewStreamableHTTPHandler(getServer, &sdk.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          h.maxBody,
		PropagateRequestCancellation: true,
	})
	guarded, err := protect(front)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("-http: %w", err)
	}
	hs, gl := httpguard.New(ln, httpguard.Stream(guarded, h.limits), h.limits)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(gl) }()
	logger.Info("listening", "http", ln.Addr().String(), "session_timeout", h.sessionTimeout, "max_sessions", h.maxSessions,
		"max_conns", h.limits.MaxConns, "max_conns_per_client", h.limits.MaxConnsPerClient)
	return func(ctx context.Context) error {
		live, evicted, refused := capped.stats()
		logger.Info("HTTP sessions", "live", live, "closed_for_room", evicted, "refused", refused)
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

// sessionCap keeps at most max streamable HTTP sessions live. The SDK's
// handler creates a session for every initialize and keeps it until its
// client deletes it or it is idle for -session-timeout; without a cap a
// client initializing sessions without end grows the proxy as fast as it
// can send (50,000 initialize in 10 s took it from 20 MB to 799 MB).
//
// It sees every request before the SDK does: it counts the sessions it
// saw created (the Mcp-Session-Id of an initialize's answer) and, per
// session, the POSTs in progress and when the last request ended. An
// initialize (a POST without a session id) that would go past max makes
// room first: it closes the session idle longest — no POST in progress,
// its last request ended longest ago (an open GET stream does not keep a
// session: it only listens) — through the SDK (ServerSession.Close, which
// removes it from the handler, as its timeout does), in the background,
// for closing waits for the session's calls (one whose client went away
// may still be held for an approval); its client is then
// answered 404 and initializes anew, as the MCP transport says a client
// must. When every session has a POST in progress, the initialize is
// answered 503 with Retry-After. Sessions the SDK closed by itself
// (timeout, DELETE, a failed initialize) are forgotten when the count is
// next checked against the server's own list.
type sessionCap struct {
	next   http.Handler
	srv    *sdk.Server
	max    int
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	live    map[string]*sessionUse // by session id
	pending int                    // initializes in progress, each holding a place

	evicted, refused atomic.Uint64
}

// sessionUse is what sessionCap knows of one live session.
type sessionUse struct {
	posts int       // POSTs in progress
	last  time.Time // when its last request started or ended
}

const sessionHeader = "Mcp-Session-Id"

func newSessionCap(next http.Handler, srv *sdk.Server, max int, logger *slog.Logger) *sessionCap {
	return &sessionCap{next: next, srv: srv, max: max, logger: logger, now: time.Now, live: map[string]*sessionUse{}}
}

func (c *sessionCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id := r.Header.Get(sessionHeader); id != "" {
		c.serveIn(id, w, r)
		return
	}
	if r.Method != http.MethodPost {
		c.next.ServeHTTP(w, r)
		return
	}
	if !c.reserve() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "too many sessions, each with a request in progress: try again", http.StatusServiceUnavailable)
		return
	}
	a := &admitting{ResponseWriter: w, c: c}
	c.next.ServeHTTP(a, r)
	a.admit()
}

// admitting counts the session an initialize creates as soon as its
// response names it, before the first byte reaches the client: the
// client's next request (its first call) must find the session counted,
// or the session would look idle while that call runs.
type admitting struct {
	http.ResponseWriter
	c    *sessionCap
	done bool
}

// admit turns the initialize's place into its session, once.
func (a *admitting) admit() {
	if a.done {
		return
	}
	a.done = true
	id := a.ResponseWriter.Header().Get(sessionHeader)
	c := a.c
	c.mu.Lock()
	c.pending--
	if id != "" {
		c.live[id] = &sessionUse{last: c.now()}
	}
	c.mu.Unlock()
}

func (a *admitting) WriteHeader(code int) {
	a.admit()
	a.ResponseWriter.WriteHeader(code)
}

func (a *admitting) Write(b []byte) (int, error) {
	a.admit()
	return a.ResponseWriter.Write(b)
}

// Flush keeps a streamed (SSE) answer streaming.
func (a *admitting) Flush() {
	a.admit()
	if f, ok := a.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (a *admitting) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// serveIn serves a request of session id, counting a POST in progress.
func (c *sessionCap) serveIn(id string, w http.ResponseWriter, r *http.Request) {
	post := r.Method == http.MethodPost
	c.mu.Lock()
	u := c.live[id]
	if u != nil {
		u.last = c.now()
		if post {
			u.posts++
		}
	}
	c.mu.Unlock()
	if u != nil && post {
		defer func() {
			c.mu.Lock()
			u.posts--
			u.last = c.now()
			c.mu.Unlock()
		}()
	}
	c.next.ServeHTTP(w, r)
}

// reserve holds a place for a new session, closing the session idle
// longest when there is none; false when every session has a POST in
// progress.
func (c *sessionCap) reserve() bool {
	c.mu.Lock()
	if len(c.live)+c.pending >= c.max {
		c.forgetClosed()
	}
	var victim string
	if len(c.live)+c.pending >= c.max {
		var oldest *sessionUse
		for id, u := range c.live {
			if u.posts == 0 && (oldest == nil || u.last.Before(oldest.last)) {
				victim, oldest = id, u
			}
		}
		if oldest == nil {
			c.mu.Unlock()
			c.refused.Add(1)
			return false
		}
		delete(c.live, victim)
	}
	c.pending++
	c.mu.Unlock()
	if victim != "" {
		// Closing a session waits for its calls (one whose client went
		// away may still run, held for an approval): the new session
		// does not wait for that.
		go c.close(victim)
		if n := c.evicted.Add(1); n == 1 || n%1024 == 0 {
			c.logger.Warn("HTTP sessions at -max-sessions: closing the one idle longest to make room (its client must initialize anew)",
				"max_sessions", c.max, "closed_so_far", n)
		}
	}
	return true
}

// forgetClosed drops the sessions the SDK no longer has. c.mu is held.
func (c *sessionCap) forgetClosed() {
	has := make(map[string]bool, len(c.live))
	for ss := range c.srv.Sessions() {
		if id := ss.ID(); id != "" {
			has[id] = true
		}
	}
	for id := range c.live {
		if !has[id] {
			delete(c.live, id)
		}
	}
}

// close closes session id through the SDK, which forgets it as it does
// on a timeout.
func (c *sessionCap) close(id string) {
	for ss := range c.srv.Sessions() {
		if ss.ID() == id {
			_ = ss.Close()
			return
		}
	}
}

// stats reports the sessions live, closed for room and refused.
func (c *sessionCap) stats() (live int, evicted, refused uint64) {
	c.mu.Lock()
	live = len(c.live)
	c.mu.Unlock()
	return live, c.evicted.Load(), c.refused.Load()
}
