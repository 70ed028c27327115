package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

// TestStoreStateMachine drives a SQL log with random appends (continuing,
// stale, skipping ahead, forged previous hash), reads from random
// positions and reopenings, and checks every answer against a
// deliberately naive model: a slice of the entries that should be there.
func TestStoreStateMachine(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		ctx := context.Background()
		_, logs := open(t, b, sqlstore.WithPageSize(3))
		rapid.Check(t, func(rt *rapid.T) {
			id := newID()
			s, err := logs.Create(ctx, id)
			if err != nil {
				rt.Fatal(err)
			}
			var model []trace.Entry
			tick := 0
			build := func(h trace.Head, n int, tag string) []trace.Entry {
				out := make([]trace.Entry, 0, n)
				for i := 0; i < n; i++ {
					tick++
					e, nh, err := trace.Next(h, "sqlstore.model", []byte(fmt.Sprintf(`{"tag":%q,"tick":%d}`, tag, tick)),
						time.Date(2026, 11, 22, 7, 0, tick, tick, time.UTC))
					if err != nil {
						rt.Fatal(err)
					}
					out = append(out, e)
					h = nh
				}
				return out
			}
			headAt := func(n int) trace.Head {
				if n == 0 {
					return trace.Head{}
				}
				return trace.Head{Size: uint64(n), Hash: model[n-1].Hash}
			}
			rejected := func(batch []trace.Entry, why string) {
				if err := s.Append(ctx, batch...); !errors.Is(err, trace.ErrConflict) {
					rt.Fatalf("%s: Append = %v, want ErrConflict", why, err)
				}
			}
			rt.Repeat(map[string]func(*rapid.T){
				"append": func(rt *rapid.T) {
					n := rapid.IntRange(1, 4).Draw(rt, "n")
					batch := build(headAt(len(model)), n, "good")
					if err := s.Append(ctx, batch...); err != nil {
						rt.Fatalf("continuing append: %v", err)
					}
					model = append(model, batch...)
				},
				"appendStale": func(rt *rapid.T) {
					if len(model) == 0 {
						rt.Skip("nothing to be stale against")
					}
					at := rapid.IntRange(0, len(model)-1).Draw(rt, "at")
					rejected(build(headAt(at), rapid.IntRange(1, 3).Draw(rt, "n"), "stale"), "stale head")
				},
				"appendGap": func(rt *rapid.T) {
					h := headAt(len(model))
					h.Size += uint64(rapid.IntRange(1, 3).Draw(rt, "gap"))
					rejected(build(h, 1, "gap"), "gap")
				},
				"appendForgedPrev": func(rt *rapid.T) {
					h := headAt(len(model))
					h.Hash[rapid.IntRange(0, 31).Draw(rt, "byte")] ^= 0x80
					rejected(build(h, 1, "forged"), "forged prev")
				},
				"reopen": func(rt *rapid.T) {
					var err error
					if s, err = logs.Open(ctx, id); err != nil {
						rt.Fatal(err)
					}
				},
				"read": func(rt *rapid.T) {
					from := rapid.IntRange(0, len(model)+2).Draw(rt, "from")
					i := from
					for e, err := range s.Entries(ctx, uint64(from)) {
						if err != nil {
							rt.Fatal(err)
						}
						if i >= len(model) {
							rt.Fatalf("read past the end: entry %d", e.Seq)
						}
						w := model[i]
						if e.Seq != w.Seq || e.Prev != w.Prev || e.Hash != w.Hash || e.Kind != w.Kind ||
							!bytes.Equal(e.Payload, w.Payload) || !e.Time.Equal(w.Time) {
							rt.Fatalf("entry %d differs from the model", i)
						}
						i++
					}
					if i < len(model) && from <= len(model) {
						rt.Fatalf("read from %d stopped at %d of %d", from, i, len(model))
					}
				},
				"": func(rt *rapid.T) {
					h, err := s.Head(ctx)
					if err != nil {
						rt.Fatal(err)
					}
					if h != headAt(len(model)) {
						rt.Fatalf("head %+v, model %+v", h, headAt(len(model)))
					}
				},
			})
			if _, err := trace.VerifyStoreAgainst(ctx, s, headAt(len(model))); err != nil {
				rt.Fatalf("final log does not verify: %v", err)
			}
		})
	})
}
