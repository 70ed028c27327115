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
// connections open at once (the package documentation describes how it
// makes room). Its methods are safe for concurrent use.
type Listener struct {
	net.Listener
	max  int
	wait time.Duration

	now func() time.Time // time.Now; tests set a clock

	mu   sync.Mutex
	open map[*conn]struct{}
	// fullSince is when a new connection first found no room since one
	// was last let in (zero: one was let in since).
	fullSince time.Time
	freed     chan struct{} // a slot was released (capacity 1, never blocks)

	evicted, refused atomic.Uint64
}

// NewListener wraps inner so that at most max connections are open at
// once; when full, a new connection waits up to wait for room (making it
// when it can) and is closed otherwise. max and wait must be positive.
func NewListener(inner net.Listener, max int, wait time.Duration) *Listener {
	return &Listener{Listener: inner, max: max, wait: wait, now: time.Now,
		open: make(map[*conn]struct{}), freed: make(chan struct{}, 1)}
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
	l     *Listener
	once  sync.Once
	state state     // guarded by l.mu
	since time.Time // when state was entered; guarded by l.mu
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
	deadline := l.now().Add(l.wait)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := l.now()
		c, victim, next := l.step(nc, now)
		if c != nil {
			return c
		}
		if victim != nil {
			l.evicted.Add(1)
			_ = victim.Conn.Close()
			continue
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

// step is one attempt of admit at now: nc's new slot if there is room;
// else the connection to close for room, its slot already released so
// that the next attempt finds it; else when the next one may be closed
// (zero if none will be).
func (l *Listener) step(nc net.Conn, now time.Time) (admitted, victim *conn, next time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.open) < l.max {
		c := &conn{Conn: nc, l: l, since: now}
		l.open[c] = struct{}{}
		l.fullSince = time.Time{}
		return c, nil, time.Time{}
	}
	victim, next = l.victim(now)
	if victim != nil {
		delete(l.open, victim)
		victim.once.Do(func() {}) // its Close now only closes
	}
	return nil, victim, next
}

// victim returns the connection to close for room at now, if any: the
// one idle longest between requests, else the one reading its first
// request's headers for longest if that is over EvictAfter. Otherwise it
// returns when the oldest such one will be over EvictAfter (zero if there
// is none). l.mu is held.
func (l *Listener) victim(now time.Time) (victim *conn, next time.Time) {
	var idle, first *conn
	for c := range l.open {
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
	delete(l.open, c)
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
