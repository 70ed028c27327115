package httpguard

import (
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// fakeConn is a connection that only records being closed.
type fakeConn struct {
	net.Conn
	closed int
}

func (f *fakeConn) Close() error { f.closed++; return nil }

// modelConn is the naive model's view of one admitted connection.
type modelConn struct {
	c      *conn
	fc     *fakeConn
	client string
	state  state
	since  time.Time
	open   bool
}

// TestConnCapHoldsAndOnlyIdleConnectionsMakeRoom is a state machine over
// the Listener's admission (step, as Accept runs it), the server's state
// reports (ConnState), closes and the passing of time, against a naive
// model (a list): never more than max open, nor more than perClient from
// one client; a new connection is let in when there is room; when full,
// the connection closed for it is the one idle longest between
// requests, else the one reading its first request's headers for
// longest once past EvictAfter, and never one in a request or of unknown
// state; otherwise it finds no room; a client at its own cap has the
// same choice made among its own connections only, and is turned away at
// once (over) when none of them can be closed now; a connection closed
// twice frees one slot.
func TestConnCapHoldsAndOnlyIdleConnectionsMakeRoom(t *testing.T) {
	rapid.Check(t, connCapMachine)
}

// FuzzConnCap runs the same state machine on the fuzzer's bytes.
func FuzzConnCap(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	f.Fuzz(rapid.MakeFuzz(connCapMachine))
}

func connCapMachine(t *rapid.T) {
	{
		max := rapid.IntRange(1, 5).Draw(t, "max")
		perClient := rapid.IntRange(1, max+1).Draw(t, "perClient")
		now := time.Unix(1e9, 0)
		l := NewListener(nil, max, time.Second).PerClient(perClient)
		l.now = func() time.Time { return now }
		var all []*modelConn

		openConns := func() []*modelConn {
			var out []*modelConn
			for _, m := range all {
				if m.open {
					out = append(out, m)
				}
			}
			return out
		}
		openOf := func(client string) int {
			n := 0
			for _, m := range openConns() {
				if m.client == client {
					n++
				}
			}
			return n
		}
		// expected returns the model's choice of connections to close for
		// room among those of client ("": all) — all tied for oldest in
		// the category that wins — or nil.
		expected := func(client string) []*modelConn {
			oldest := func(keep func(*modelConn) bool) []*modelConn {
				var best []*modelConn
				for _, m := range openConns() {
					switch {
					case client != "" && m.client != client:
					case !keep(m):
					case len(best) == 0 || m.since.Before(best[0].since):
						best = []*modelConn{m}
					case m.since.Equal(best[0].since):
						best = append(best, m)
					}
				}
				return best
			}
			if idle := oldest(func(m *modelConn) bool { return m.state == waiting }); len(idle) > 0 {
				return idle
			}
			return oldest(func(m *modelConn) bool { return m.state == fresh && now.Sub(m.since) > EvictAfter })
		}

		t.Repeat(map[string]func(*rapid.T){
			"connect": func(t *rapid.T) {
				fc := &fakeConn{}
				client := rapid.SampledFrom([]string{"10.0.0.1", "10.0.0.2", "::1"}).Draw(t, "client")
				mine := openOf(client) >= perClient
				full := len(openConns()) >= max
				want := expected("")
				if mine {
					want = expected(client)
				}
				c, victim, _, over := l.step(fc, client, now)
				switch {
				case mine && len(want) == 0:
					if c != nil || victim != nil || !over {
						t.Fatalf("a client at its cap %d with nothing of its own to close now, yet admitted %v closed %v, not turned away",
							perClient, c != nil, victim != nil)
					}
					return
				case over:
					t.Fatal("turned away, yet the client is under its cap or has a connection to close")
				case !mine && !full:
					if c == nil || victim != nil {
						t.Fatalf("room for %d, yet not admitted", max)
					}
				case len(want) == 0:
					if c != nil || victim != nil {
						t.Fatalf("full of connections that cannot be closed, yet admitted %v closed %v", c != nil, victim != nil)
					}
					return
				default:
					if c != nil || victim == nil {
						t.Fatal("full with a connection to close, yet none chosen")
					}
					i := slices.IndexFunc(want, func(m *modelConn) bool { return m.c == victim })
					if i < 0 {
						t.Fatalf("closed a connection in state %d, not the one waiting longest", victim.state)
					}
					want[i].open = false
					_ = victim.Conn.Close()
					c, victim, _, _ = l.step(fc, client, now)
					if c == nil || victim != nil {
						t.Fatal("room made, yet not admitted")
					}
				}
				all = append(all, &modelConn{c: c, fc: fc, client: client, state: busy, since: now, open: true})
			},
			"state": func(t *rapid.T) {
				if len(all) == 0 {
					return // nothing to act on yet
				}
				m := rapid.SampledFrom(all).Draw(t, "conn")
				s := rapid.SampledFrom([]http.ConnState{http.StateNew, http.StateActive, http.StateIdle, http.StateHijacked}).Draw(t, "state")
				l.ConnState(m.c, s)
				m.state = map[http.ConnState]state{http.StateNew: fresh, http.StateIdle: waiting}[s]
				m.since = now
			},
			"close": func(t *rapid.T) {
				if len(all) == 0 {
					return // nothing to act on yet
				}
				m := rapid.SampledFrom(all).Draw(t, "conn")
				_ = m.c.Close()
				m.open = false
			},
			"tick": func(t *rapid.T) {
				now = now.Add(time.Duration(rapid.Int64Range(0, int64(2*EvictAfter)).Draw(t, "d")))
			},
			"": func(t *rapid.T) {
				open, _, _ := l.Stats()
				if want := len(openConns()); open != want {
					t.Fatalf("%d connections hold a slot, want %d", open, want)
				}
				if open > max {
					t.Fatalf("%d open, over the cap %d", open, max)
				}
				for _, m := range openConns() {
					if n := openOf(m.client); n > perClient {
						t.Fatalf("%d open from %s, over its cap %d", n, m.client, perClient)
					}
				}
				for _, m := range all {
					if m.open && m.fc.closed > 0 {
						t.Fatal("a connection the model holds open was closed")
					}
				}
			},
		})
	}
}

// BenchmarkAdmit is the Listener's cost per connection: a slot taken
// and released, with the cap full of connections in requests (the
// scan for one to close finds none) or of idle ones (one is closed for
// room each time).
func BenchmarkAdmit(b *testing.B) {
	for _, idle := range []bool{false, true} {
		name := map[bool]string{false: "room", true: "full-of-idle"}[idle]
		b.Run(name, func(b *testing.B) {
			const max = DefaultMaxConns
			l := NewListener(nil, max, time.Second)
			fill := max - 1
			if idle {
				fill = max
			}
			for range fill {
				c, _, _, _ := l.step(&fakeConn{}, "", time.Now())
				if idle {
					l.ConnState(c, http.StateIdle)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				c, victim, _, _ := l.step(&fakeConn{}, "", time.Now())
				if victim != nil {
					_ = victim.Close()
					c, _, _, _ = l.step(&fakeConn{}, "", time.Now())
				}
				l.ConnState(c, http.StateNew)
				if idle {
					l.ConnState(c, http.StateIdle)
				} else {
					_ = c.Close()
				}
			}
		})
	}
}
