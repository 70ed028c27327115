package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

func benchLog(b *testing.B, logs *sqlstore.Logs) *trace.Log {
	b.Helper()
	s, err := logs.Create(context.Background(), newID())
	if err != nil {
		b.Fatal(err)
	}
	lg, err := trace.NewLog(s)
	if err != nil {
		b.Fatal(err)
	}
	return lg
}

var benchPageSize = 256 // the default

var benchPayload = []byte(`{"action":"deploy","cost":"1.5","session":"0192f2c4-7b1e-7c3a-9a51-2f6d0c1e9b42","step":42}`)

// BenchmarkAppend measures durable appends through trace.Log: one entry
// per transaction, with the driver's default durability (SQLite in WAL
// mode with synchronous=FULL; PostgreSQL with fsync on). "single" is one
// writer on one log; "4writers" is four goroutines, each with its own log,
// appending at once (an op is 16 appends by each of the four).
func BenchmarkAppend(b *testing.B) {
	sqltest.ForEach(b, func(b *testing.B, be sqltest.Backend) {
		ctx := context.Background()
		b.Run("single", func(b *testing.B) {
			_, logs := open(b, be)
			lg := benchLog(b, logs)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := lg.Append(ctx, "bench.append", benchPayload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		})
		b.Run("4writers", func(b *testing.B) {
			const writers, each = 4, 16
			_, logs := open(b, be)
			lgs := make([]*trace.Log, writers)
			for i := range lgs {
				lgs[i] = benchLog(b, logs)
			}
			b.ReportAllocs()
			for b.Loop() {
				var wg sync.WaitGroup
				for _, lg := range lgs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for j := 0; j < each; j++ {
							if _, err := lg.Append(ctx, "bench.append", benchPayload); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.N*writers*each)/b.Elapsed().Seconds(), "appends/s")
		})
	})
}

// BenchmarkVerify100k reads a 100,000-entry log back from the database,
// a page at a time, and verifies its chain (an op is the whole log).
func BenchmarkVerify100k(b *testing.B) {
	const n = 100_000
	sqltest.ForEach(b, func(b *testing.B, be sqltest.Backend) {
		ctx := context.Background()
		_, logs := open(b, be, sqlstore.WithPageSize(benchPageSize))
		s, err := logs.Create(ctx, newID())
		if err != nil {
			b.Fatal(err)
		}
		var (
			h     trace.Head
			batch []trace.Entry
			bytes int64
		)
		t0 := time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)
		for i := 0; i < n; i++ {
			e, nh, err := trace.Next(h, "bench.verify", fmt.Appendf(nil, `{"i":%d,"note":"a typical small payload"}`, i), t0.Add(time.Duration(i)*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			bytes += int64(len(e.Payload))
			batch = append(batch, e)
			h = nh
			if len(batch) == 2000 || i == n-1 {
				if err := s.Append(ctx, batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		b.SetBytes(bytes)
		b.ReportAllocs()
		for b.Loop() {
			got, err := trace.VerifyStore(ctx, s)
			if err != nil || got != h {
				b.Fatalf("verify: %v, head %+v want %+v", err, got, h)
			}
		}
		b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "entries/s")
	})
}
