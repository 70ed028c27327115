package trace

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestEntryTimesNeverGoBackwards: whatever a log's clock says (it steps
// back at random) and whatever times At asks for, entry times never
// decrease within the log — across a reopen of its file, and with two
// Logs writing one store (each re-reads the other's last time on a
// conflict); an entry whose time was not earlier keeps it exactly.
func TestEntryTimesNeverGoBackwards(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(rt *rapid.T) {
		path := filepath.Join(t.TempDir(), "log")
		store, err := OpenFile(path, FileOptions{Sync: SyncManual})
		if err != nil {
			rt.Fatal(err)
		}
		var mu sync.Mutex
		now := base
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}
		log, err := NewLog(store, WithClock(clock))
		if err != nil {
			rt.Fatal(err)
		}
		mem := NewMemory()
		logA, _ := NewLog(mem, WithClock(clock))
		logB, _ := NewLog(mem, WithClock(clock))
		var last time.Time
		for i := range rapid.IntRange(1, 40).Draw(rt, "appends") {
			mu.Lock()
			now = now.Add(time.Duration(rapid.Int64Range(-5000, 5000).Draw(rt, "step")) * time.Millisecond)
			mu.Unlock()
			var opts []AppendOption
			want := clock()
			if rapid.Bool().Draw(rt, "at") {
				want = base.Add(time.Duration(rapid.Int64Range(-10, 10).Draw(rt, "at_s")) * time.Second)
				opts = append(opts, At(want))
			}
			if rapid.IntRange(0, 9).Draw(rt, "reopen") == 0 {
				if err := log.Close(); err != nil {
					rt.Fatal(err)
				}
				if store, err = OpenFile(path, FileOptions{Sync: SyncManual}); err != nil {
					rt.Fatal(err)
				}
				if log, err = NewLog(store, WithClock(clock)); err != nil {
					rt.Fatal(err)
				}
			}
			e, err := log.Append(ctx, "t", []byte(`{}`), opts...)
			if err != nil {
				rt.Fatal(err)
			}
			switch {
			case e.Time.Before(last):
				rt.Fatalf("entry %d at %v, before the one before it at %v", i, e.Time, last)
			case !want.Before(last) && !e.Time.Equal(want):
				rt.Fatalf("entry %d at %v, asked for %v (the last was %v)", i, e.Time, want, last)
			}
			last = e.Time
			// Two writers of one store.
			w := logA
			if rapid.Bool().Draw(rt, "writer") {
				w = logB
			}
			if _, err := w.Append(ctx, "t", []byte(`{}`), opts...); err != nil {
				rt.Fatal(err)
			}
		}
		_ = log.Close()
		var prev time.Time
		for e, err := range mem.Entries(ctx, 0) {
			if err != nil {
				rt.Fatal(err)
			}
			if e.Time.Before(prev) {
				rt.Fatalf("shared store: entry %d at %v, before %v", e.Seq, e.Time, prev)
			}
			prev = e.Time
		}
	})
}
