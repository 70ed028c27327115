package httpguard_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/httpguard"
	"github.com/verity-go/verity/internal/httpguard/guardtest"
)

// serve runs h under l on a loopback port until the test ends.
func serve(t *testing.T, h http.Handler, l httpguard.Limits) (string, *httpguard.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hs, gl := httpguard.New(ln, h, l)
	go func() { _ = hs.Serve(gl) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ln.Addr().String(), gl
}

// get makes one request on its own connection.
func get(addr, path string) (int, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// keepAlive makes one request on a raw connection and leaves it open
// (idle between requests).
func keepAlive(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return c
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	ne, ok := err.(net.Error)
	return !(ok && ne.Timeout())
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

// slow limits: long timeouts, so that only the cap's room-making can
// answer quickly.
func slow(maxConns int, wait time.Duration) httpguard.Limits {
	l := httpguard.Defaults()
	l.MaxConns, l.ConnWait = maxConns, wait
	return l
}

// TestListenerClosesIdleConnectionForRoom: with the cap full of
// connections idle between requests, a new one is let in at once, and
// the one idle longest is the one closed.
func TestListenerClosesIdleConnectionForRoom(t *testing.T) {
	addr, gl := serve(t, http.HandlerFunc(ok), slow(2, 5*time.Second))
	first := keepAlive(t, addr)
	time.Sleep(10 * time.Millisecond)
	second := keepAlive(t, addr)
	start := time.Now()
	code, err := get(addr, "/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.Less(t, time.Since(start), time.Second, "answered without waiting for a timeout")
	assert.True(t, closedWithin(first, time.Second), "the one idle longest is closed")
	assert.False(t, closedWithin(second, 50*time.Millisecond), "the other stays")
	_, evicted, refused := gl.Stats()
	assert.Equal(t, uint64(1), evicted)
	assert.Equal(t, uint64(0), refused)
}

// TestListenerClosesSilentConnectionAfterEvictAfter: a connection that
// has sent nothing is closed for room once it has been open EvictAfter,
// not before.
func TestListenerClosesSilentConnectionAfterEvictAfter(t *testing.T) {
	addr, _ := serve(t, http.HandlerFunc(ok), slow(1, 5*time.Second))
	opened := time.Now() // the silent connection is open at most since then
	silent, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer silent.Close()
	time.Sleep(20 * time.Millisecond) // let the server take it
	start := time.Now()
	code, err := get(addr, "/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	assert.GreaterOrEqual(t, time.Since(opened), httpguard.EvictAfter, "not closed before it was open EvictAfter")
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.True(t, closedWithin(silent, time.Second))
}

// TestListenerNeverClosesRequestInProgress: with the cap full of requests
// in progress, a new connection waits ConnWait and is closed unanswered,
// and the next one at once; the requests in progress complete; then
// there is room again.
func TestListenerNeverClosesRequestInProgress(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			started <- struct{}{}
			<-release
		}
		ok(w, r)
	})
	addr, gl := serve(t, h, slow(2, 200*time.Millisecond))
	done := make(chan error, 2)
	for range 2 {
		go func() {
			code, err := get(addr, "/block")
			if err == nil && code != 200 {
				err = fmt.Errorf("status %d", code)
			}
			done <- err
		}()
	}
	<-started
	<-started
	start := time.Now()
	_, err := get(addr, "/")
	require.Error(t, err, "no room: closed unanswered")
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond, "after waiting for room")
	start = time.Now()
	_, err = get(addr, "/")
	require.Error(t, err, "still no room")
	assert.Less(t, time.Since(start), 150*time.Millisecond, "full for ConnWait already: closed at once")
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, <-done)
	code, err := get(addr, "/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
	_, evicted, refused := gl.Stats()
	assert.Equal(t, uint64(0), evicted)
	assert.GreaterOrEqual(t, refused, uint64(1))
}

// TestListenerWaitsForRoom: a new connection that finds the cap full of
// requests in progress is let in when one ends within ConnWait.
func TestListenerWaitsForRoom(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			started <- struct{}{}
			<-release
		}
		ok(w, r)
	})
	addr, _ := serve(t, h, slow(1, 5*time.Second))
	go func() { _, _ = get(addr, "/block") }()
	<-started
	time.AfterFunc(100*time.Millisecond, func() { close(release) })
	code, err := get(addr, "/")
	require.NoError(t, err)
	assert.Equal(t, 200, code)
}

// TestBoundedServer runs the raw-TCP checks against a plain handler.
func TestBoundedServer(t *testing.T) {
	l := guardtest.Limits()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ok(w, r)
	})
	addr, gl := serve(t, h, l)
	guardtest.Run(t, guardtest.Target{
		Addr: addr, Limits: l, Get: "/", Post: "/",
		Normal: func(ctx context.Context, c *http.Client, base string) error {
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/", nil)
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		},
	})
	open, evicted, refused := gl.Stats()
	t.Logf("open %d, closed for room %d, refused %d", open, evicted, refused)
	assert.Positive(t, evicted)
}

// TestStreamOutlivesTimeouts: under Stream, a response may stay open past
// ReadTimeout and WriteTimeout, its context is not cancelled, and each
// event still arrives; a slow body is still cut at ReadTimeout.
func TestStreamOutlivesTimeouts(t *testing.T) {
	l := httpguard.Defaults()
	l.ReadTimeout, l.WriteTimeout = 300*time.Millisecond, 300*time.Millisecond
	h := httpguard.Stream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(250 * time.Millisecond):
			}
			fmt.Fprintf(w, "data: %d\n\n", i)
			_ = http.NewResponseController(w).Flush()
		}
	}), l)
	addr, _ := serve(t, h, l)

	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			start := time.Now()
			resp, err := http.DefaultClient.Do(must(http.NewRequest(method, "http://"+addr+"/", strings.NewReader("{}"))))
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			assert.Equal(t, 4, strings.Count(string(b), "data: "), "every event, over %v", time.Since(start))
			assert.Greater(t, time.Since(start), 3*l.WriteTimeout)
		})
	}
	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
		require.NoError(t, err)
		start := time.Now()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Less(t, time.Since(start), l.ReadTimeout+time.Second)
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestLimitsFlagsAndValidate(t *testing.T) {
	l := httpguard.Defaults()
	require.NoError(t, l.Validate())
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	l.AddFlags(fs)
	require.NoError(t, fs.Parse(guardtest.Args(guardtest.Limits())))
	assert.Equal(t, guardtest.Limits(), l)
	require.NoError(t, fs.Parse([]string{"-max-conns", "0", "-read-timeout", "-1s"}))
	err := l.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-max-conns must be positive")
	assert.Contains(t, err.Error(), "-read-timeout must be positive")
}
