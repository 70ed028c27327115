package toolgate

import (
	"context"
	"fmt"
	"time"
)

// The gate keeps a kernel session for each caller it has seen lately, and
// lets idle ones go: memory stays flat however many callers come and go.
// A caller let go resumes from the log (kernel.Replay) when it returns,
// its spend counted as recorded, so eviction never resets a budget.

// defaultCallerLimit is the most live caller sessions a Gate keeps without
// WithCallerLimit.
const defaultCallerLimit = 4096

// defaultIdleCallers is how long a caller may stay idle before its session
// is let go, without WithIdleCallers.
const defaultIdleCallers = 15 * time.Minute

// WithCallerLimit sets how many live caller sessions the gate keeps
// (default 4096; at least 1). When a new caller would
// exceed it, the least recently used idle callers are let go first. A
// caller with a call in flight or open (allowed, its result not yet
// reported), an approval request waiting for a human, or an approval or
// denial not yet used is never let go, so the limit may be exceeded
// while that many callers are busy.
func WithCallerLimit(n int) Option { return func(o *options) { o.callerLimit = n } }

// WithIdleCallers sets how long a caller may go without a call before its
// session is let go (default 15 minutes; at least one
// nanosecond), measured with the gate's clock. The same callers as under
// WithCallerLimit are kept whatever their idle time.
func WithIdleCallers(d time.Duration) Option { return func(o *options) { o.idleCallers = d } }

// callers holds the live callers in order of last use (a doubly linked
// list, most recent first). Its fields are guarded by Gate.mu.
type callers struct {
	limit      int
	idle       time.Duration
	head, tail *caller
	evicted    uint64
}

// lru is a caller's place in the gate's list, and what says it is in use.
// Its fields are guarded by Gate.mu.
type lru struct {
	key        string
	prev, next *caller
	busy       int       // Before, After, Approve, Deny or Meter using it
	used       time.Time // when it was last released
}

func (l *callers) unlink(c *caller) {
	if c.prev != nil {
		c.prev.next = c.next
	} else if l.head == c {
		l.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else if l.tail == c {
		l.tail = c.prev
	}
	c.prev, c.next = nil, nil
}

func (l *callers) pushFront(c *caller) {
	c.next = l.head
	if l.head != nil {
		l.head.prev = c
	}
	l.head = c
	if l.tail == nil {
		l.tail = c
	}
}

// acquire returns the live caller key, marked busy, or nil. g.mu is held.
func (g *Gate) acquireLocked(key string) *caller {
	c, ok := g.callers[key]
	if !ok {
		return nil
	}
	c.busy++
	g.live.unlink(c)
	g.live.pushFront(c)
	return c
}

// acquire returns the live caller key, marked busy, or nil: release it.
func (g *Gate) acquire(key string) *caller {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.acquireLocked(key)
}

// release marks c no longer used by one of its users.
func (g *Gate) release(c *caller) {
	if c == nil {
		return
	}
	now := g.clock()
	g.mu.Lock()
	c.busy--
	c.used = now
	g.evictLocked(now)
	g.mu.Unlock()
}

// evictLocked lets go of idle callers: the least recently used while the
// live callers exceed the limit, and any idle beyond the idle time. It
// looks at a bounded number of callers from the least recently used end,
// so that a call never pays for a long walk. g.mu is held.
func (g *Gate) evictLocked(now time.Time) {
	const maxLook = 16
	c := g.live.tail
	for look := 0; c != nil && look < maxLook; look++ {
		prev := c.prev
		over := len(g.callers) > g.live.limit
		if !over && now.Sub(c.used) <= g.live.idle {
			return // the rest were used more recently still
		}
		g.live.unlink(c)
		if g.idle(c) {
			delete(g.callers, c.key)
			g.resumed[g.kernelSession(c.key)] = true // its session is on the log
			g.live.evicted++
		} else {
			// Kept (in use, or holding what a human or a call will still
			// need): to the front, so that callers kept that way never pile
			// up where the walk starts and stop the others being let go.
			// What changes that is a use, which moves it to the front too.
			g.live.pushFront(c)
		}
		c = prev
	}
}

// idle reports whether c can be let go without losing anything: nobody
// uses it, its session started, and it has no open call, waiting request,
// or approval or denial not yet used. g.mu is held; while nobody uses c
// nobody holds c.mu either (every user is counted in busy first), so
// TryLock fails only in a race it is right to lose.
func (g *Gate) idle(c *caller) bool {
	if c.busy > 0 || c.sess == nil {
		return false
	}
	if !c.mu.TryLock() {
		return false
	}
	defer c.mu.Unlock()
	return !c.holds()
}

// LiveCallers returns the number of callers whose sessions the gate holds
// and the number it has let go so far (WithCallerLimit, WithIdleCallers).
func (g *Gate) LiveCallers() (live int, evicted uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.callers), g.live.evicted
}

// checkCallerOptions refuses limits the gate cannot run.
func (o options) checkCallers() error {
	if o.callerLimit < 1 {
		return fmt.Errorf("%w: caller limit %d, at least 1", ErrInvalidConfig, o.callerLimit)
	}
	if o.idleCallers <= 0 {
		return fmt.Errorf("%w: idle caller time %s, must be positive", ErrInvalidConfig, o.idleCallers)
	}
	return nil
}

// resumeForMeter returns caller key for Meter: the live one, or one let go
// resumed from the log; nil when the gate has never seen it.
func (g *Gate) resumeForMeter(key string) *caller {
	g.mu.Lock()
	c := g.acquireLocked(key)
	known := g.resumed[g.kernelSession(key)]
	g.mu.Unlock()
	if c != nil || !known {
		return c
	}
	c, err := g.caller(context.Background(), key)
	if err != nil {
		return nil
	}
	return c
}
