package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionCapClosesOnlyIdleSessions: with room for one session, a
// session whose call is in progress is never the one closed — a new
// initialize is answered 503 while it runs — and once the call has
// ended, the next initialize closes that now idle session (404 on its
// next request) and takes its place.
func TestSessionCapClosesOnlyIdleSessions(t *testing.T) {
	srv, h, started, release := waitingServer()
	capped := newSessionCap(h, srv, 1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(capped)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	busy, called := callWait(ctx, t, hs.URL)
	defer busy.Close()
	<-started

	client := &http.Client{Timeout: 30 * time.Second}
	code, id, err := mcpPost(ctx, client, hs.URL, "", initializeBody)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, code, "the only session has a call in progress")
	assert.Empty(t, id)

	close(release)
	require.NoError(t, <-called)
	// The client may read the call's answer before the handler that
	// streamed it has returned: the POST is in progress until then.
	assert.Eventually(t, func() bool { return capped.postsInProgress() == 0 }, 10*time.Second, time.Millisecond)
	code, id, err = mcpPost(ctx, client, hs.URL, "", initializeBody)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "the idle session made room")
	require.NotEmpty(t, id)
	assert.Eventually(t, func() bool { return busy.Ping(ctx, nil) != nil }, 10*time.Second, 10*time.Millisecond, "the idle session was closed")
	code, _, err = mcpPost(ctx, client, hs.URL, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, "the new session is served")
	live, evicted, refused := capped.stats()
	assert.Equal(t, []any{1, uint64(1), uint64(1)}, []any{live, evicted, refused})
}

// TestSessionCapCountsASessionFromItsFirstByte: a client may read its
// initialize's answer, and go on with its next requests, before the
// handler that answered has returned. The session is counted from the
// first byte of that answer: its place as an initialize in progress is
// given back then, and its call is counted as in progress, so that with
// room for one session the client's own requests are served and a new
// initialize is refused while the call runs. (It used to be counted only
// once the handler returned: meanwhile the client's requests met a cap
// still held by its own initialize — its handshake was answered 503 —
// and a call made in between was not counted, so its session could be
// taken for idle and closed under it.)
func TestSessionCapCountsASessionFromItsFirstByte(t *testing.T) {
	srv, h, started, release := waitingServer()
	// The first initialize's handler flushes its answer, then returns
	// only once the client's call has started.
	returned := make(chan struct{})
	var first atomic.Bool
	first.Store(true)
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Header.Get(sessionHeader) == "" && first.CompareAndSwap(true, false) {
			w.(http.Flusher).Flush()
			select {
			case <-started:
			case <-time.After(10 * time.Second): // the call never came: the test fails below
			}
			close(returned)
		}
	})
	capped := newSessionCap(slow, srv, 1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(capped)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	busy, called := callWait(ctx, t, hs.URL)
	defer busy.Close()
	select {
	case <-returned:
	case <-time.After(20 * time.Second):
		t.Fatal("the first initialize's handler never returned")
	}

	client := &http.Client{Timeout: 30 * time.Second}
	code, _, err := mcpPost(ctx, client, hs.URL, "", initializeBody)
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, code, "the only session has a call in progress")
	close(release)
	select {
	case err := <-called:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end once released")
	}
}

// waitingServer is an MCP server over streamable HTTP with one tool,
// "wait", which signals started when a call begins and returns once
// release is closed (or its call is cancelled).
func waitingServer() (srv *sdk.Server, h http.Handler, started chan struct{}, release chan struct{}) {
	srv = sdk.NewServer(&sdk.Implementation{Name: "capped", Version: "v1"}, nil)
	release = make(chan struct{})
	started = make(chan struct{}, 1)
	type in struct{}
	sdk.AddTool(srv, &sdk.Tool{Name: "wait"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ in) (*sdk.CallToolResult, any, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &sdk.CallToolResult{}, nil, nil
	})
	h = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{SessionTimeout: time.Hour})
	return srv, h, started, release
}

// callWait connects a client to the server at url and calls its "wait"
// tool in the background; called receives the call's error once it ends.
// The caller closes busy (before the server: its stream holds the server
// open).
func callWait(ctx context.Context, t *testing.T, url string) (busy *sdk.ClientSession, called <-chan error) {
	t.Helper()
	busy, err := sdk.NewClient(&sdk.Implementation{Name: "busy", Version: "v1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url}, nil)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := busy.CallTool(ctx, &sdk.CallToolParams{Name: "wait", Arguments: map[string]any{}})
		done <- err
	}()
	return busy, done
}

// postsInProgress counts the POSTs of live sessions still being served.
func (c *sessionCap) postsInProgress() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, u := range c.live {
		n += u.posts
	}
	return n
}
