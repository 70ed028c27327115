// Package guardtest checks, over raw TCP, that an HTTP server bounded by
// httpguard lets no idle or slow client starve a normal one. Each of
// Verity's servers runs Run against itself, started with Limits (a small
// connection cap, short timeouts) passed as its flags (Args).
//
// Run opens, all at once: silent connections and connections left idle
// after one request (together more than the cap), connections sending
// their headers at one byte per Tick, and connections sending a body at
// one byte per Tick (fewer than the cap: they are requests in progress,
// which nothing may close for room). While they run, a normal request is
// made every Tick/4 on a new connection; each must be answered within
// Prompt, which is shorter than every timeout, so that it is the cap's
// room-making, not a timeout, that answers it. Then every attacking
// connection must have been closed by the server within its timeout
// (ReadHeaderTimeout, IdleTimeout or ReadTimeout) plus Slack, and a
// header over MaxHeaderBytes must be answered 431.
package guardtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/verity-go/verity/internal/httpguard"
)

// Limits are the test's: a cap of 16 (and of 64 per client, above it:
// Run's clients all come from one address), timeouts of 6 s — twice the
// longest a normal request may take, so that a machine loaded by other
// tests (under -race) still tells a prompt answer from a starved one.
func Limits() httpguard.Limits {
	return httpguard.Limits{
		ReadHeaderTimeout: 6 * time.Second,
		ReadTimeout:       6 * time.Second,
		WriteTimeout:      12 * time.Second,
		IdleTimeout:       6 * time.Second,
		MaxHeaderBytes:    8 << 10,
		MaxConns:          16,
		MaxConnsPerClient: 64,
		ConnWait:          6 * time.Second,
	}
}

// Args are l as the command-line flags httpguard.Limits.AddFlags defines.
func Args(l httpguard.Limits) []string {
	return []string{
		"-read-header-timeout", l.ReadHeaderTimeout.String(),
		"-read-timeout", l.ReadTimeout.String(),
		"-write-timeout", l.WriteTimeout.String(),
		"-idle-timeout", l.IdleTimeout.String(),
		"-max-header-bytes", strconv.Itoa(l.MaxHeaderBytes),
		"-max-conns", strconv.Itoa(l.MaxConns),
		"-max-conns-per-client", strconv.Itoa(l.MaxConnsPerClient),
		"-conn-wait", l.ConnWait.String(),
	}
}

// Target is a running server and what the checks send it.
type Target struct {
	Addr   string           // host:port
	Limits httpguard.Limits // the server's
	// Get is a path answered to a plain GET, for the connections left
	// idle after one request.
	Get string
	// Post is a path whose handler reads a request body, sent with
	// PostHeader (a Content-Type, an Accept… as the handler needs to
	// read it); Content-Length is added.
	Post       string
	PostHeader http.Header
	// Normal makes one normal request to base ("http://host:port") with
	// client and returns an error unless it was answered as it should be.
	Normal func(ctx context.Context, client *http.Client, base string) error

	Idle   int           // connections opened idle (default 40)
	Prompt time.Duration // the longest a normal request may take (default 3 s)
	Slack  time.Duration // allowed past a timeout (default 2 s)
	Tick   time.Duration // one byte per Tick for the slow clients (default 1 s)
}

// Run runs the checks against tg.
func Run(t *testing.T, tg Target) {
	t.Helper()
	if tg.Idle == 0 {
		tg.Idle = 40
	}
	if tg.Prompt == 0 {
		tg.Prompt = 3 * time.Second
	}
	if tg.Slack == 0 {
		tg.Slack = 2 * time.Second
	}
	if tg.Tick == 0 {
		tg.Tick = time.Second
	}
	l := tg.Limits
	if tg.Prompt >= min(l.ReadHeaderTimeout, l.ReadTimeout, l.IdleTimeout) {
		t.Fatalf("guardtest: Prompt %v must be shorter than every timeout", tg.Prompt)
	}
	if tg.Idle <= l.MaxConns {
		t.Fatalf("guardtest: Idle %d must exceed MaxConns %d", tg.Idle, l.MaxConns)
	}

	var wg sync.WaitGroup
	type attack struct {
		kind    string
		started time.Time
		limit   time.Duration // the timeout that must end it
		ended   time.Time     // when the server closed it
		err     error
	}
	var mu sync.Mutex
	var attacks []*attack
	launch := func(kind string, limit time.Duration, f func(c net.Conn) error) {
		a := &attack{kind: kind, limit: limit}
		mu.Lock()
		attacks = append(attacks, a)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", tg.Addr, 5*time.Second)
			if err != nil {
				a.err = err
				return
			}
			defer c.Close()
			// Nothing here waits longer than every timeout and the slack
			// together: a connection still open then is a failure.
			_ = c.SetDeadline(time.Now().Add(l.ReadHeaderTimeout + l.ReadTimeout + l.IdleTimeout + l.ConnWait + 3*tg.Slack))
			a.started = time.Now()
			a.err = f(c)
			a.ended = time.Now()
		}()
	}

	// Silent connections: never a byte. The server waits for the first
	// request's headers for ReadHeaderTimeout.
	for range tg.Idle / 2 {
		launch("silent", l.ReadHeaderTimeout, func(c net.Conn) error { return untilClosed(c) })
	}
	// Connections idle after one request: IdleTimeout.
	get := "GET " + tg.Get + " HTTP/1.1\r\nHost: " + tg.Addr + "\r\n\r\n"
	for range tg.Idle - tg.Idle/2 {
		launch("idle after a request", 0, func(c net.Conn) error {
			if _, err := io.WriteString(c, get); err != nil {
				return err
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return fmt.Errorf("the request before idling: %w", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return untilClosed(br)
		})
	}
	// Headers at one byte per tick: ReadHeaderTimeout.
	slowHeader := "GET " + tg.Get + " HTTP/1.1\r\nHost: " + tg.Addr + "\r\nX-Slow: " + strings.Repeat("a", 1000) + "\r\n\r\n"
	for range l.MaxConns / 4 {
		launch("slow header", l.ReadHeaderTimeout, func(c net.Conn) error { return dribble(c, slowHeader, tg.Tick) })
	}
	// A body at one byte per tick, in requests fewer than the cap:
	// ReadTimeout from the start of the request.
	var post strings.Builder
	const bodyLen = 1000
	fmt.Fprintf(&post, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", tg.Post, tg.Addr, bodyLen)
	for k, vs := range tg.PostHeader {
		for _, v := range vs {
			fmt.Fprintf(&post, "%s: %s\r\n", k, v)
		}
	}
	post.WriteString("\r\n")
	head := post.String()
	for range l.MaxConns / 4 {
		launch("slow body", l.ReadTimeout, func(c net.Conn) error {
			if _, err := io.WriteString(c, head); err != nil {
				return err
			}
			return dribble(c, "{"+strings.Repeat(" ", bodyLen-1), tg.Tick)
		})
	}

	// Normal requests, each on a new connection, while they run.
	attacking := make(chan struct{})
	go func() { wg.Wait(); close(attacking) }()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	base := "http://" + tg.Addr
	var slowest time.Duration
	normals := 0
	deadline := time.Now().Add(2*max(l.ReadHeaderTimeout, l.ReadTimeout, l.IdleTimeout) + 2*tg.Slack)
loop:
	for time.Now().Before(deadline) {
		select {
		case <-attacking:
			break loop
		case <-time.After(tg.Tick / 4):
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		err := tg.Normal(ctx, client, base)
		took := time.Since(start)
		cancel()
		normals++
		slowest = max(slowest, took)
		if err != nil {
			t.Errorf("a normal request while idle and slow clients run: %v", err)
		} else if took > tg.Prompt {
			t.Errorf("a normal request took %v while idle and slow clients run (want under %v)", took, tg.Prompt)
		}
	}
	wg.Wait()
	t.Logf("%d normal requests answered, the slowest in %v", normals, slowest)

	counts := map[string]int{}
	for _, a := range attacks {
		counts[a.kind]++
		if a.err != nil {
			t.Errorf("%s connection: %v", a.kind, a.err)
			continue
		}
		held := a.ended.Sub(a.started)
		limit := a.limit
		if limit == 0 { // the request, then IdleTimeout
			limit = l.ReadHeaderTimeout + l.IdleTimeout
		}
		// A connection may also have waited up to ConnWait to be let in.
		if held > limit+l.ConnWait+tg.Slack {
			t.Errorf("%s connection held %v, past its timeout %v", a.kind, held, limit)
		}
	}
	t.Logf("attacking connections, all closed by the server in time: %v", counts)

	t.Run("header over MaxHeaderBytes", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", tg.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		req := "GET " + tg.Get + " HTTP/1.1\r\nHost: " + tg.Addr + "\r\nX-Big: " + strings.Repeat("b", 2*l.MaxHeaderBytes+4096) + "\r\n\r\n"
		go func() { _, _ = io.WriteString(c, req) }()
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the answer to a big header: %v", err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a header of %d bytes: status %d, want 431", len(req), resp.StatusCode)
		}
	})
}

// untilClosed reads (and drops) what r sends until the server closes
// the connection.
func untilClosed(r io.Reader) error {
	_, err := io.Copy(io.Discard, r)
	if err == nil || isReset(err) {
		return nil
	}
	return fmt.Errorf("the server did not close it: %w", err)
}

// dribble writes s one byte per tick until the server closes the
// connection (what it answers first is read and dropped).
func dribble(c net.Conn, s string, tick time.Duration) error {
	closed := make(chan error, 1)
	go func() { closed <- untilClosed(c) }()
	t := time.NewTicker(tick)
	defer t.Stop()
	for i := 0; i < len(s); i++ {
		if _, err := c.Write([]byte{s[i]}); err != nil {
			break // closed under the write; the reader says how
		}
		select {
		case err := <-closed:
			return err
		case <-t.C:
		}
	}
	return <-closed
}

// isReset reports a connection the server reset rather than closed.
func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}

// OneClient opens n slow-body connections (the body of a POST to
// tg.Post at one byte per tg.Tick) from 127.0.0.1, enough to fill the
// whole cap, and while they run makes a normal request every 100 ms,
// for d, from another client address, 127.0.0.2 (Linux routes the
// whole of 127.0.0.0/8 to loopback); each must be answered within
// tg.Prompt. Of the slow connections, at most
// tg.Limits.MaxConnsPerClient may still be open a second after they
// started: the others were closed at once. tg.Addr must be on
// 127.0.0.1 or a wildcard address. It returns the slowest normal
// request's time.
func OneClient(t *testing.T, tg Target, n int, d time.Duration) time.Duration {
	t.Helper()
	if tg.Prompt == 0 {
		tg.Prompt = 3 * time.Second
	}
	if tg.Tick == 0 {
		tg.Tick = time.Second
	}
	var post strings.Builder
	const bodyLen = 1000
	fmt.Fprintf(&post, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", tg.Post, tg.Addr, bodyLen)
	for k, vs := range tg.PostHeader {
		for _, v := range vs {
			fmt.Fprintf(&post, "%s: %s\r\n", k, v)
		}
	}
	post.WriteString("\r\n")
	head := post.String()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var open sync.WaitGroup // the slow connections the server has not closed
	var openCount int64
	var mu sync.Mutex
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", tg.Addr, 5*time.Second)
			if err != nil {
				return // the kernel's backlog may refuse some: fine
			}
			defer c.Close()
			mu.Lock()
			openCount++
			mu.Unlock()
			open.Add(1)
			closed := make(chan struct{})
			go func() {
				_, _ = io.Copy(io.Discard, c)
				mu.Lock()
				openCount--
				mu.Unlock()
				close(closed)
				open.Done()
			}()
			if _, err := io.WriteString(c, head); err != nil {
				return
			}
			tick := time.NewTicker(tg.Tick)
			defer tick.Stop()
			for i := 0; i < bodyLen-1; i++ {
				select {
				case <-stop:
					return
				case <-closed:
					return
				case <-tick.C:
				}
				if _, err := c.Write([]byte{' '}); err != nil {
					return
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		open.Wait()
	}()
	time.Sleep(time.Second)
	mu.Lock()
	still := openCount
	mu.Unlock()
	if max := int64(tg.Limits.MaxConnsPerClient); still > max {
		t.Errorf("%d slow connections from one client still open, over its cap %d", still, max)
	}

	other := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: other.DialContext}, Timeout: 30 * time.Second}
	base := "http://" + tg.Addr
	var slowest time.Duration
	var took []time.Duration
	normals := 0
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		err := tg.Normal(ctx, client, base)
		this := time.Since(start)
		cancel()
		normals++
		took = append(took, this)
		slowest = max(slowest, this)
		if err != nil {
			t.Errorf("another client's request while one client holds %d slow connections: %v", n, err)
		} else if this > tg.Prompt {
			t.Errorf("another client's request took %v while one client holds %d slow connections (want under %v)", this, n, tg.Prompt)
		}
	}
	slices.Sort(took)
	t.Logf("one client opened %d slow-body connections, %d held after 1s; %d requests from another: median %v, slowest %v",
		n, still, normals, took[len(took)/2], slowest)
	return slowest
}
