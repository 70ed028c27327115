package belief

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/verity-go/verity/trace"
)

func benchHyps(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = "hypothesis/" + strconv.Itoa(i)
	}
	return hs
}

var sizes = []int{100, 10_000, 100_000}

// BenchmarkSurvivorsHash is the cost of hashing a full survivors list
// once: the yardstick for BenchmarkEliminate.
func BenchmarkSurvivorsHash(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			sp := newSpace(benchHyps(n))
			set := newFullSet(n)
			b.SetBytes(int64(len(sp.enc)))
			b.ReportAllocs()
			for b.Loop() {
				survivorsHash(sp, set, "0190f3c4-6a1e-7c3b-9d2e-5f6a7b8c9d0e", trace.Hash{1})
			}
		})
	}
}

// BenchmarkEliminate is one applied ELIMINATE through the Session shell:
// the transition, the audit event and its append to the session's trace
// log (memory store). Each op eliminates one more hypothesis; a session is
// replaced (outside the timer) once a tenth of it is gone, so survivors
// stay within 90–100% of n. x_hash is ns/op divided by the cost of one
// survivors hash of n ids (the median of up to 101 timed hashes,
// the figure BenchmarkSurvivorsHash reports); the goal is ≤ 2.
func BenchmarkEliminate(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			ctx := context.Background()
			hyps := benchHyps(n)
			srv, err := NewServer(ctx, NewMemoryStorage())
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			sp := newSpace(hyps)
			set := newFullSet(n)
			hashNs := medianHashNs(sp, set)

			declare := func() *Session {
				s, _, err := srv.Declare(ctx, DeclareRequest{Hypotheses: hyps})
				if err != nil {
					b.Fatal(err)
				}
				return s
			}
			sess := declare()
			i := 0
			limit := max(n/10, 1)
			b.ReportAllocs()
			for b.Loop() {
				if i == limit {
					b.StopTimer()
					sess, i = declare(), 0
					b.StartTimer()
				}
				r, _, err := sess.Eliminate(ctx, EliminateRequest{SourceID: "bench", ObservationID: strconv.Itoa(i), Eliminated: []string{hyps[i]}})
				if err != nil || len(r.Applied) != 1 {
					b.Fatalf("eliminate: %v %v", r, err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/hashNs, "x_hash")
		})
	}
}

// replayLog builds a session of 100 hypotheses with `events` events: one
// declaration and ELIMINATEs with fresh observation ids, the first 99 of
// them applied.
func replayLog(b *testing.B, events int) []AuditEntry {
	hyps := benchHyps(100)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, e, err := Declare("bench", DeclareRequest{Hypotheses: hyps}, Stamp{EventID: "e0", Time: at})
	if err != nil {
		b.Fatal(err)
	}
	log := []AuditEntry{*e}
	for i := 1; i < events; i++ {
		var ev *AuditEntry
		s, _, ev, err = s.Eliminate(EliminateRequest{SourceID: "bench", ObservationID: strconv.Itoa(i), Eliminated: []string{hyps[i%99]}},
			Stamp{EventID: "e" + strconv.Itoa(i), Time: at.Add(time.Duration(i) * time.Millisecond)})
		if err != nil {
			b.Fatal(err)
		}
		log = append(log, *ev)
	}
	return log
}

// BenchmarkReplay replays a 100,000-event audit log (verification and
// re-execution of every event); events/s is the figure.
func BenchmarkReplay(b *testing.B) {
	const events = 100_000
	log := replayLog(b, events)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Replay(log); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkReplayTrace is the restart path: a Server opening a session
// whose store holds a 100,000-event log verifies the trace chain, restores
// the state from the latest checkpoint (checkpoints=1000; none for
// checkpoints=0) and replays the events after it, each decoded from its
// trace entry. events/s counts every event of the log.
func BenchmarkReplayTrace(b *testing.B) {
	const events = 100_000
	ctx := context.Background()
	log := replayLog(b, events)
	for _, every := range []uint64{0, DefaultCheckpointEvery} {
		b.Run(fmt.Sprintf("checkpoints=%d", every), func(b *testing.B) {
			storage := NewMemoryStorage()
			store, err := storage.Create(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			var (
				st State
				m  mark
				h  trace.Head
			)
			add := func(kind string, payload []byte, at time.Time) {
				e, next, err := trace.Next(h, kind, payload, at)
				if err == nil {
					err = store.Append(ctx, e)
				}
				if err != nil {
					b.Fatal(err)
				}
				h = next
			}
			for i := range log {
				if st, err = st.Apply(log[i]); err != nil {
					b.Fatal(err)
				}
				add(log[i].Verb.Kind(), log[i].raw, log[i].Time)
				if every > 0 && st.Len()%every == 0 {
					cp, err := st.checkpoint(m)
					if err != nil {
						b.Fatal(err)
					}
					add(KindCheckpoint, cp, log[i].Time)
					m = mark{events: st.Len(), obs: st.p.obs}
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				srv, err := NewServer(ctx, storage)
				if err != nil {
					b.Fatal(err)
				}
				s, err := srv.Session(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if got, err := s.State(ctx); err != nil || got.Len() != events {
					b.Fatalf("restored %d events: %v", got.Len(), err)
				}
				srv.Close()
			}
			b.ReportMetric(float64(events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// medianHashNs times hashing the full survivors set, up to 101 times or
// 300 ms, and returns the median in nanoseconds.
func medianHashNs(sp *space, set []uint64) float64 {
	var samples []time.Duration
	deadline := time.Now().Add(300 * time.Millisecond)
	for len(samples) < 101 && (len(samples) < 5 || time.Now().Before(deadline)) {
		start := time.Now()
		survivorsHash(sp, set, "0190f3c4-6a1e-7c3b-9d2e-5f6a7b8c9d0e", trace.Hash{1})
		samples = append(samples, time.Since(start))
	}
	slices.Sort(samples)
	return float64(samples[len(samples)/2].Nanoseconds())
}
