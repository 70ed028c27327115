package httpguard

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// EvictAfter is how long a connection may have been sending its first
// request's headers before a new connection may take its place when the
// cap is reached. A connection idle between two requests may be taken at
// once.
const EvictAfter = 250 * time.Millisecond

// Listener is a net.Listener that keeps at most a fixed number of
// connections open at once, and at most a smaller number from any one
// client address (the package documentation describes how it makes
// room). Its methods are safe for concurrent use.
type Listener struct {
	net.Listener
	max       int
	perClient int
	wait      time.Duration

	now func() time.Time // time.Now; tests set a clock

	mu      sync.Mutex
	open    map[*conn]struct{}
	clients map[string]int // open connections by client address
	// fullSince is when a new connection first found no room since one
	// was last let in (zero: one was let in since).
	fullSince time.Time
	freed     chan struct{} // a slot was released (capacity 1, never blocks)

	evicted, refused atomic.Uint64
}

// NewListener wraps inner so that at most max connections are open at
// once; when full, a new connection waits up to wait for room (making it
// when it can) and is closed otherwise. No client address is capped
// below max (PerClient sets that). max and wait must be positive.
func NewListener(inner net.Listener, max int, wait time.Duration) *Listener {
	return &Listener{Listener: inner, max: max, perClient: max, wait: wait, now: time.Now,
		open: make(map[*conn]struct{}), clients: make(map[string]int), freed: make(chan struct{}, 1)}
}

// PerClient caps the connections open at once from one client address
// at n (positive); call it before Accept. A client at its cap has a
// new connection take the place of one of its own that holds a slot
// without using it, as the cap as a whole does; when none can, the new
// connection is closed at once, unanswered, without waiting and without
// holding up anyone else's.
func (l *Listener) PerClient(n int) *Listener {
	l.perClient = n
	return l
}

// clientKey is the address a connection is counted under: its remote
// IP (a TCP address), else its remote address as a string.
func clientKey(nc net.Conn) string {
	a := nc.RemoteAddr()
	if a == nil {
		return ""
	}
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	if host, _, err := net.SplitHostPort(a.String()); err == nil {
		return host
	}
	return a.String()
}

// connection states as the Listener tracks them.
type state uint8

const (
	busy    state = iota // unknown, in a request, or hijacked: never evicted
	fresh                // reading the first request's headers
	waiting              // idle between requests
)

// conn is one admitted connection; its slot is released when it closes.
type conn struct {
	net.Conn
	l      *Listener
	client string // clientKey
	once   sync.Once
	state  state     // guarded by l.mu
	since  time.Time // when state was entered; guarded by l.mu
}

func (c *conn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c) })
	return err
}

// Accept returns the next connection that finds room. A connection that
// finds none within the wait is closed and the next one is accepted.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.admit(nc); c != nil {
			return c, nil
		}
	}
}

// admit gives nc a slot, making room or waiting for one; it returns nil
// (nc closed) when none is found within l.wait.
func (l *Listener) admit(nc net.Conn) *conn {
	client := clientKey(nc)
	deadline := l.now().Add(l.wait)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := l.now()
		c, victim, next, over := l.step(nc, client, now)
		if c != nil {
			return c
		}
		if victim != nil {
			l.evicted.Add(1)
			_ = victim.Conn.Close()
			continue
		}
		if over {
			l.refused.Add(1)
			_ = nc.Close()
			return nil
		}
		// Connections queued behind this one in the kernel have waited
		// as long: once the cap has been full for the wait, they are
		// closed at once, until one is let in again.
		l.mu.Lock()
		if l.fullSince.IsZero() {
			l.fullSince = now
		}
		if d := l.fullSince.Add(l.wait); d.Before(deadline) {
			deadline = d
		}
		l.mu.Unlock()
		if !now.Before(deadline) {
			l.refused.Add(1)
			_ = nc.Close()
			return nil
		}
		d := deadline.Sub(now)
		if !next.IsZero() && next.Sub(now) < d {
			d = next.Sub(now)
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-l.freed:
		case <-timer.C:
		}
	}
}

// step is one attempt of admit at now for nc from client: nc's new slot
// if there is room; else the connection to close for room, its slot
// already released so that the next attempt finds it; else, when client
// is at its own cap with none of its own to close now, over; else when
// the next one may be closed (zero if none will be).
func (l *Listener) step(nc net.Conn, client string, now time.Time) (admitted, victim *conn, next time.Time, over bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients[client] >= l.perClient {
		// Never wait here: a client at its cap must not hold up the
		// connections of others queued behind its own.
		victim, _ = l.victim(now, func(c *conn) bool { return c.client == client })
		if victim == nil {
			return nil, nil, time.Time{}, true
		}
		l.drop(victim)
		return nil, victim, time.Time{}, false
	}
	if len(l.open) < l.max {
		c := &conn{Conn: nc, l: l, client: client, since: now}
		l.open[c] = struct{}{}
		l.clients[client]++
		l.fullSince = time.Time{}
		return c, nil, time.Time{}, false
	}
	victim, next = l.victim(now, nil)
	if victim != nil {
		l.drop(victim)
	}
	return nil, victim, next, false
}

// drop releases c's slot for a new connection; its Close then only
// closes. l.mu is held.
func (l *Listener) drop(c *conn) {
	l.forget(c)
	c.once.Do(func() {})
}

// forget removes c from the open connections and its client's count.
// l.mu is held.
func (l *Listener) forget(c *conn) {
	if _, ok := l.open[c]; !ok {
		return
	}
	delete(l.open, c)
	if l.clients[c.client]--; l.clients[c.client] <= 0 {
		delete(l.clients, c.client)
	}
}

// victim returns the connection to close for room at now among those
// of which (all when which is nil), if any: the one idle longest
// between requests, else the one reading its first request's headers
// for longest if that is over EvictAfter. Otherwise it returns when the
// oldest such one will be over EvictAfter (zero if there is none). l.mu
// is held.
func (l *Listener) victim(now time.Time, which func(*conn) bool) (victim *conn, next time.Time) {
	var idle, first *conn
	for c := range l.open {
		if which != nil && !which(c) {
			continue
		}
		switch c.state {
		case waiting:
			if idle == nil || c.since.Before(idle.since) {
				idle = c
			}
		case fresh:
			if first == nil || c.since.Before(first.since) {
				first = c
			}
		}
	}
	switch {
	case idle != nil:
		return idle, time.Time{}
	case first == nil:
		return nil, time.Time{}
	case now.Sub(first.since) > EvictAfter:
		return first, time.Time{}
	default:
		return nil, first.since.Add(EvictAfter + time.Millisecond)
	}
}

// release frees c's slot and wakes a waiting Accept.
func (l *Listener) release(c *conn) {
	l.mu.Lock()
	l.forget(c)
	l.mu.Unlock()
	select {
	case l.freed <- struct{}{}:
	default:
	}
}

// ConnState records a connection's state for the choice of which to close
// for room; install it as the http.Server's ConnState (New does).
// Connections that are not this Listener's are ignored.
func (l *Listener) ConnState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*conn)
	if !ok || c.l != l {
		return
	}
	var st state
	switch s {
	case http.StateNew:
		st = fresh
	case http.StateIdle:
		st = waiting
	default:
		st = busy
	}
	now := l.now()
	l.mu.Lock()
	c.state, c.since = st, now
	l.mu.Unlock()
}

// Stats reports the connections open now, those closed to make room and
// those closed for finding none, since the Listener was made.
func (l *Listener) Stats() (open int, evicted, refused uint64) {
	l.mu.Lock()
	open = len(l.open)
	l.mu.Unlock()
	return open, l.evicted.Load(), l.refused.Load()
}
