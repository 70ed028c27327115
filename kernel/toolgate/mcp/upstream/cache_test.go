package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// modelEntry is the naive model's cached token.
type modelEntry struct {
	key   cacheKey
	value string
	fresh time.Time
}

// TestCacheNeverServesAnExpiredTokenOrAnothers: whatever the sequence of
// requests, clock steps, lifetimes, failed fetches and dropped tokens,
// the cache returns for a caller and audience only a token fetched for
// that caller and audience, never one past its expiry, holds at most its
// bound, and fetches exactly when a naive model — a list, most recently
// used first — says the token is missing or stale.
func TestCacheNeverServesAnExpiredTokenOrAnothers(t *testing.T) {
	callers := []string{"", "tok-alice", "tok-bob", "tok-carol"}
	audiences := []string{"a\x00", "b\x00r"}
	rapid.Check(t, func(rt *rapid.T) {
		now := time.Unix(1_800_000_000, 0)
		max := rapid.IntRange(1, 4).Draw(rt, "max")
		c := newTokenCache(max, func() time.Time { return now })
		var model []modelEntry // most recently used first
		expiry := map[string]time.Time{}
		for_ := map[string]cacheKey{}
		n := 0
		rt.Repeat(map[string]func(*rapid.T){
			"advance": func(rt *rapid.T) {
				now = now.Add(time.Duration(rapid.Int64Range(0, int64(15*time.Minute)).Draw(rt, "step")))
			},
			"get": func(rt *rapid.T) {
				caller := rapid.SampledFrom(callers).Draw(rt, "caller")
				aud := rapid.SampledFrom(audiences).Draw(rt, "audience")
				life := rapid.SampledFrom([]time.Duration{0, time.Second, 10 * time.Second, time.Minute, time.Hour}).Draw(rt, "life")
				fail := rapid.IntRange(0, 9).Draw(rt, "fail") == 0
				key := keyOf(caller, aud)
				fetched := false
				v, err := c.get(context.Background(), key, func(context.Context) (token, error) {
					fetched = true
					if fail {
						return token{}, errors.New("refused")
					}
					n++
					v := fmt.Sprintf("%s|%s|%d", caller, aud, n)
					expiry[v], for_[v] = now.Add(life), key
					return token{value: v, life: life}, nil
				})

				// The model: a fresh entry is a hit, anything else a fetch.
				i := slices.IndexFunc(model, func(e modelEntry) bool { return e.key == key })
				if i >= 0 && now.Before(model[i].fresh) {
					if fetched || err != nil || v != model[i].value {
						rt.Fatalf("fresh %q held: got %q, fetched %v, err %v", model[i].value, v, fetched, err)
					}
					e := model[i]
					model = append([]modelEntry{e}, slices.Delete(model, i, i+1)...)
				} else {
					if !fetched {
						rt.Fatalf("no fetch for a missing or stale token: got %q", v)
					}
					if i >= 0 {
						model = slices.Delete(model, i, i+1)
					}
					model = append([]modelEntry{{key: key}}, model...)
					if len(model) > max {
						model = model[:max]
					}
					fresh := freshUntil(now, life)
					if fail || !now.Before(fresh) { // not cached
						model = model[1:]
					} else {
						model[0].value, model[0].fresh = v, fresh
					}
				}

				if fail && fetched {
					if err == nil {
						rt.Fatalf("a failed fetch returned %q", v)
					}
					return
				}
				if err != nil {
					rt.Fatalf("get: %v", err)
				}
				if for_[v] != key || !strings.HasPrefix(v, caller+"|"+aud+"|") {
					rt.Fatalf("token %q served for caller %q audience %q", v, caller, aud)
				}
				if !fetched && !now.Before(expiry[v]) {
					rt.Fatalf("token %q served at %v, expired at %v", v, now, expiry[v])
				}
			},
			"drop": func(rt *rapid.T) {
				if len(model) == 0 {
					return
				}
				e := rapid.SampledFrom(model).Draw(rt, "entry")
				c.drop(e.key, e.value)
				model = slices.DeleteFunc(model, func(m modelEntry) bool { return m.key == e.key })
			},
			"": func(rt *rapid.T) {
				if got := c.len(); got != len(model) || got > max {
					rt.Fatalf("%d entries held, model %d, bound %d", got, len(model), max)
				}
			},
		})
	})
}

// TestCacheWaiterStopsWithItsContext: a request waiting for another's
// fetch returns when its own context ends; the fetch goes on and serves
// the next request.
func TestCacheWaiterStopsWithItsContext(t *testing.T) {
	c := newTokenCache(4, time.Now)
	key := keyOf("tok", "aud")
	release := make(chan struct{})
	started := make(chan struct{})
	done := make(chan string)
	go func() {
		v, _ := c.get(context.Background(), key, func(context.Context) (token, error) {
			close(started)
			<-release
			return token{value: "v1", life: time.Hour}, nil
		})
		done <- v
	}()
	<-started
	cctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.get(cctx, key, func(context.Context) (token, error) { t.Error("a second fetch"); return token{}, nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("waiter: %v", err)
	}
	close(release)
	if v := <-done; v != "v1" {
		t.Fatalf("fetcher got %q", v)
	}
	v, err := c.get(context.Background(), key, func(context.Context) (token, error) { t.Error("a second fetch"); return token{}, nil })
	if err != nil || v != "v1" {
		t.Fatalf("after: %q %v", v, err)
	}
}
