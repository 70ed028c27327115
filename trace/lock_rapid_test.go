package trace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"
)

// TestAtMostOneWriterPerFile is a state machine over one log file, checked
// against a naive model (is a writer open, how many entries were
// appended): a writer opens exactly when no other is open, RepairFile is
// refused exactly while one is, readers open at any time, never block a
// writer, and always read every entry appended so far.
func TestAtMostOneWriterPerFile(t *testing.T) {
	ctx := context.Background()
	rapid.Check(t, func(t *rapid.T) {
		dir, err := os.MkdirTemp("", "onewriter")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "a.trace")
		var (
			writer  *Log // the model: at most one
			readers []*File
			n       uint64 // entries appended
		)
		defer func() {
			if writer != nil {
				writer.Close()
			}
			for _, r := range readers {
				r.Close()
			}
		}()
		t.Repeat(map[string]func(*rapid.T){
			"open writer": func(t *rapid.T) {
				f, err := OpenFile(path, FileOptions{Sync: SyncManual})
				if writer != nil {
					if err == nil {
						f.Close()
						t.Fatal("a second writer opened the log")
					}
					if !isLocked(err) {
						t.Fatalf("second writer: %v, want ErrLocked", err)
					}
					return
				}
				if err != nil {
					t.Fatalf("the only writer: %v", err)
				}
				if writer, err = NewLog(f); err != nil {
					t.Fatal(err)
				}
			},
			"append": func(t *rapid.T) {
				if writer == nil {
					t.Skip("no writer")
				}
				if _, err := writer.Append(ctx, "test.step", []byte(`{"i":1}`)); err != nil {
					t.Fatal(err)
				}
				n++
			},
			"close writer": func(t *rapid.T) {
				if writer == nil {
					t.Skip("no writer")
				}
				if err := writer.Close(); err != nil {
					t.Fatal(err)
				}
				writer = nil
			},
			"open reader": func(t *rapid.T) {
				if _, err := os.Stat(path); err != nil {
					t.Skip("no log yet")
				}
				r, err := OpenFileReadOnly(path)
				if err != nil {
					t.Fatalf("a reader: %v", err)
				}
				h, err := VerifyStore(ctx, r)
				if err != nil || h.Size != n {
					t.Fatalf("a reader sees %d entries (%v), want %d", h.Size, err, n)
				}
				readers = append(readers, r)
			},
			"close reader": func(t *rapid.T) {
				if len(readers) == 0 {
					t.Skip("no reader")
				}
				i := rapid.IntRange(0, len(readers)-1).Draw(t, "reader")
				if err := readers[i].Close(); err != nil {
					t.Fatal(err)
				}
				readers = append(readers[:i], readers[i+1:]...)
			},
			"repair": func(t *rapid.T) {
				if _, err := os.Stat(path); err != nil {
					t.Skip("no log yet")
				}
				res, err := RepairFile(path)
				if writer != nil {
					if !isLocked(err) {
						t.Fatalf("repair while a writer holds the log: %v, want ErrLocked", err)
					}
					return
				}
				if err != nil || res.Entries != n || res.CutBytes != 0 {
					t.Fatalf("repair: %+v, %v; want %d entries kept, nothing cut", res, err, n)
				}
			},
		})
	})
}

// isLocked reports whether err is the one-writer refusal.
func isLocked(err error) bool {
	var le *LockedError
	return errors.As(err, &le) && errors.Is(err, ErrLocked)
}
