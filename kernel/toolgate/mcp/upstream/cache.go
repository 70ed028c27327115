package upstream

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultCacheSize bounds the exchanged tokens an upstream's client
// keeps (Options.CacheSize): the least recently used goes first.
const DefaultCacheSize = 1024

// fetchTimeout bounds a fetch, which runs without its requester's
// cancellation (others may wait for it).
const fetchTimeout = 30 * time.Second

// maxMargin is how long before its expiry a cached token is refreshed at
// most; a token that lives less than twice as long is refreshed at half
// its life.
const maxMargin = 30 * time.Second

// cacheKey is what a cached token is for: the SHA-256 of the caller's
// token (zero for the gateway's own) and the audience. The caller's
// token itself is never kept as a key.
type cacheKey struct {
	caller   [sha256.Size]byte
	audience string
}

func keyOf(callerToken, audience string) cacheKey {
	k := cacheKey{audience: audience}
	if callerToken != "" {
		k.caller = sha256.Sum256([]byte(callerToken))
	}
	return k
}

// entry is one token, fetched or being fetched.
type entry struct {
	key   cacheKey
	ready chan struct{} // closed once value/err are set
	value string
	err   error
	fresh time.Time     // the token is served until then (zero: never again)
	elem  *list.Element // in the LRU list while the entry is in the map
}

// tokenCache holds tokens until shortly before they expire, at most max
// of them, with one fetch in flight per key: concurrent requests for a
// key wait for the one fetch and share its token or its error. An error
// is not cached: the next request fetches again.
type tokenCache struct {
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[cacheKey]*entry
	lru     list.List // of *entry, most recently used first
}

func newTokenCache(max int, now func() time.Time) *tokenCache {
	return &tokenCache{max: max, now: now, entries: map[cacheKey]*entry{}}
}

// freshUntil is when a token obtained at got with life stops being
// served: before it expires by min(maxMargin, life/2). A token without a
// lifetime is never served from the cache.
func freshUntil(got time.Time, life time.Duration) time.Time {
	if life <= 0 {
		return time.Time{}
	}
	return got.Add(life - min(maxMargin, life/2))
}

// get returns key's token: the cached one while it is fresh, else the
// one fetch fetches (started by this request or by one before it). The
// fetch runs without ctx's cancellation — others may be waiting for it —
// for at most fetchTimeout, and this request stops waiting when ctx
// ends.
func (c *tokenCache) get(ctx context.Context, key cacheKey, fetch func(context.Context) (token, error)) (string, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		select {
		case <-e.ready:
			if e.err == nil && c.now().Before(e.fresh) {
				c.lru.MoveToFront(e.elem)
				c.mu.Unlock()
				return e.value, nil
			}
			c.remove(e) // stale: fetch again
			ok = false
		default: // in flight: wait for it
		}
	}
	if ok {
		c.mu.Unlock()
		select {
		case <-e.ready:
			return e.value, e.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	e = &entry{key: key, ready: make(chan struct{})}
	e.elem = c.lru.PushFront(e)
	c.entries[key] = e
	for c.lru.Len() > c.max {
		c.remove(c.lru.Back().Value.(*entry))
	}
	c.mu.Unlock()

	got := c.now()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	t, err := fetch(fctx)
	cancel()
	c.mu.Lock()
	e.value, e.err = t.value, err
	if err == nil {
		e.fresh = freshUntil(got, t.life)
	}
	if (err != nil || !got.Before(e.fresh)) && c.entries[key] == e {
		c.remove(e)
	}
	close(e.ready)
	c.mu.Unlock()
	return e.value, e.err
}

// drop forgets key's token if it is value (an upstream refused it), so
// that the next request fetches a new one.
func (c *tokenCache) drop(key cacheKey, value string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		select {
		case <-e.ready:
			if e.value == value {
				c.remove(e)
			}
		default:
		}
	}
}

// len is the number of entries held.
func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *tokenCache) remove(e *entry) {
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	c.lru.Remove(e.elem)
}
