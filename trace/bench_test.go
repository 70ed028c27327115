package trace

import (
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// payload200 is a 200-byte canonical JSON payload.
var payload200 = func() []byte {
	p := `{"action":"scale-out","cost":1500,"id":"0193a1b2-7c4d-7e8f-9a0b-1c2d3e4f5a6b","note":"`
	p += strings.Repeat("x", 200-len(p)-2) + `"}`
	return []byte(p)
}()

func benchEntries(b *testing.B, n int) []Entry {
	var h Head
	es := make([]Entry, n)
	for i := range es {
		e, nh, err := Next(h, "bench.entry", payload200, t0.Add(time.Duration(i)))
		if err != nil {
			b.Fatal(err)
		}
		es[i], h = e, nh
	}
	return es
}

func preimageLen() int { return len(appendPreimage(nil, 0, Genesis, "bench.entry", t0, payload200)) }

// BenchmarkVerify measures chain verification per entry (200-byte
// payloads); compare its MB/s with BenchmarkSHA256Raw over the same bytes.
func BenchmarkVerify(b *testing.B) {
	es := benchEntries(b, 10000)
	b.SetBytes(int64(preimageLen()))
	b.ReportAllocs()
	var v Verifier
	i := 0
	for b.Loop() {
		if i == len(es) {
			v, i = Verifier{}, 0
		}
		if err := v.Add(es[i]); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkSHA256Raw hashes the same preimage bytes with nothing else.
func BenchmarkSHA256Raw(b *testing.B) {
	pre := appendPreimage(nil, 0, Genesis, "bench.entry", t0, payload200)
	b.SetBytes(int64(len(pre)))
	b.ReportAllocs()
	for b.Loop() {
		_ = sha256.Sum256(pre)
	}
}

func BenchmarkMemoryAppend(b *testing.B) {
	l := NewMemoryLog()
	ctx := context.Background()
	b.SetBytes(int64(len(payload200)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(ctx, "bench.entry", payload200); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

func BenchmarkFileAppendSyncEvery(b *testing.B) { benchFileAppend(b, SyncEveryAppend) }

// BenchmarkFileAppendNoSync is a File's own cost per append without the
// fsync (SyncManual): encoding the record, the write, the bookkeeping.
func BenchmarkFileAppendNoSync(b *testing.B) { benchFileAppend(b, SyncManual) }

// benchFileAppend appends payload200 from one goroutine to a File opened
// with the given sync policy.
func benchFileAppend(b *testing.B, sync SyncPolicy) {
	s, err := OpenFile(filepath.Join(b.TempDir(), "log"), FileOptions{Sync: sync})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	l, _ := NewLog(s)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Append(ctx, "bench.entry", payload200); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkFileAppendGroup64 has 64 concurrent appenders sharing fsyncs in
// batches of up to 64.
func BenchmarkFileAppendGroup64(b *testing.B) {
	s, err := OpenFile(filepath.Join(b.TempDir(), "log"), FileOptions{Sync: SyncGroup, GroupMaxBatch: 64, GroupMaxDelay: 2 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	l, _ := NewLog(s)
	ctx := context.Background()
	b.ReportAllocs()
	const writers = 64
	start := time.Now()
	var wg sync.WaitGroup
	per := b.N/writers + 1
	b.ResetTimer()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				if _, err := l.Append(ctx, "bench.entry", payload200); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*writers)/time.Since(start).Seconds(), "entries/s")
}

func BenchmarkFileOpen10k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "log")
	s, err := OpenFile(path, FileOptions{Sync: SyncManual})
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Append(context.Background(), benchEntries(b, 10000)...); err != nil {
		b.Fatal(err)
	}
	s.Close()
	b.ReportAllocs()
	for b.Loop() {
		s, err := OpenFile(path, FileOptions{Sync: SyncManual})
		if err != nil {
			b.Fatal(fmt.Errorf("open: %w", err))
		}
		s.Close()
	}
}

// BenchmarkVerifyStoreFile10k streams 10,000 records of an open File
// through VerifyStore: read, decode (which checks the fields) and verify
// the chain.
func BenchmarkVerifyStoreFile10k(b *testing.B) {
	s, err := OpenFile(filepath.Join(b.TempDir(), "log"), FileOptions{Sync: SyncManual})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Append(ctx, benchEntries(b, 10000)...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := VerifyStore(ctx, s); err != nil {
			b.Fatal(err)
		}
	}
}
