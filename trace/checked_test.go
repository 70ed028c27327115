package trace

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestLogChecksWhatStoresCheck: a Log hands its stores entries without
// their field checks (appendChecked, appendDeferred with checked), so
// whatever Log.Append accepts must be what ValidFields accepts — for any
// kind, payload and time, valid or not — and a File must read it back.
func TestLogChecksWhatStoresCheck(t *testing.T) {
	kinds := rapid.OneOf(rapid.SampledFrom([]string{"a", "kernel.execute", "x.y-z_1", "", ".a", "a.", "a..b", "A", "a b", "é"}),
		rapid.StringMatching(`[a-z0-9_.\-]{0,130}`), rapid.String())
	payloads := rapid.OneOf(rapid.SampledFrom([]string{`{}`, `{"b":1,"a":2}`, `1e400`, `"\ud800"`, `{"a":1,"a":2}`, ``, ` `, `[1,]`, "\"\xff\"", `9007199254740993`, `1.0`}),
		rapid.StringMatching(`[\[\]{}":,0-9a-z.e\-\\ ]{0,40}`))
	times := rapid.OneOf(rapid.Just(time.Time{}), rapid.Just(time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)),
		rapid.Just(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)), rapid.Just(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)),
		rapid.Custom(func(t *rapid.T) time.Time { return time.Unix(rapid.Int64().Draw(t, "unix"), 0) }))
	dir := t.TempDir()
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		n++
		path := filepath.Join(dir, "log"+time.Now().Format("150405.000000000")+string(rune('a'+n%26)))
		f, err := OpenFile(path, FileOptions{})
		if err != nil {
			rt.Fatal(err)
		}
		defer f.Close()
		stores := []Store{NewMemory(), f}
		for _, s := range stores {
			l, err := NewLog(s)
			if err != nil {
				rt.Fatal(err)
			}
			kind, payload, at := kinds.Draw(rt, "kind"), payloads.Draw(rt, "payload"), times.Draw(rt, "time")
			e, err := l.Append(ctx, kind, []byte(payload), At(at))
			if err != nil {
				continue
			}
			if err := ValidFields(e); err != nil {
				rt.Fatalf("Log accepted %q %q %v, which ValidFields refuses: %v", kind, payload, at, err)
			}
		}
		if err := f.Close(); err != nil {
			rt.Fatal(err)
		}
		g, err := OpenFile(path, FileOptions{})
		if err != nil {
			rt.Fatalf("the file a Log wrote does not open: %v", err)
		}
		g.Close()
	})
}

// interceptingStore embeds a Memory to watch its appends, as a caller's
// test double or metrics wrapper would.
type interceptingStore struct {
	*Memory
	appends int
}

func (s *interceptingStore) Append(ctx context.Context, entries ...Entry) error {
	s.appends++
	return s.Memory.Append(ctx, entries...)
}

// TestWrappedStoreAppendIsUsed: a store that embeds Memory or File and
// overrides Append gets every append through its own Append.
func TestWrappedStoreAppendIsUsed(t *testing.T) {
	s := &interceptingStore{Memory: NewMemory()}
	l, err := NewLog(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), "a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if s.appends != 1 {
		t.Fatalf("the wrapper's Append ran %d times", s.appends)
	}
	f, err := OpenFile(filepath.Join(t.TempDir(), "log"), FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fw := &interceptingFile{File: f}
	l, err = NewLog(fw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), "a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if fw.appends != 1 {
		t.Fatalf("the File wrapper's Append ran %d times", fw.appends)
	}
}

type interceptingFile struct {
	*File
	appends int
}

func (s *interceptingFile) Append(ctx context.Context, entries ...Entry) error {
	s.appends++
	return s.File.Append(ctx, entries...)
}
