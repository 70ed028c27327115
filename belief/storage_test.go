package belief

import (
	"testing"
	"time"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/storetest"
)

// TestMemStoreConformance runs the trace.Store conformance suite against
// the store of a MemoryStorage session.
func TestMemStoreConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) trace.Store { return &memStore{} })
}

// TestMemStoreChunks reads a log that spans chunks of every size from
// every position.
func TestMemStoreChunks(t *testing.T) {
	ctx := t.Context()
	s := &memStore{}
	var h trace.Head
	const n = 3*memMaxChunk + 100
	for i := range n {
		e, next, err := trace.Next(h, "belief.test", []byte(`{}`), time.Date(2026, 1, 1, 0, 0, 0, i, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
		h = next
	}
	for _, from := range []uint64{0, 1, memFirstChunk - 1, memFirstChunk, memFirstChunk + 1, 100, memMaxChunk - 1, memMaxChunk, 2 * memMaxChunk, n - 1, n} {
		v := trace.NewVerifier(trace.Head{})
		if from > 0 {
			v = nil
		}
		want := from
		for e, err := range s.Entries(ctx, from) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Seq != want {
				t.Fatalf("from %d: seq %d, want %d", from, e.Seq, want)
			}
			if v != nil {
				if err := v.Add(e); err != nil {
					t.Fatal(err)
				}
			}
			want++
		}
		if want != n {
			t.Fatalf("from %d: read up to %d, want %d", from, want, n)
		}
		if v != nil && v.Head() != h {
			t.Fatalf("verified head %v, want %v", v.Head(), h)
		}
	}
	if got, _ := s.Head(ctx); got != h {
		t.Fatalf("head %v, want %v", got, h)
	}
}
