package storagetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/trace"
)

// Fill stores sessions sessions of events audit events each (a
// DECLARE_SESSION over 128 hypotheses, then ELIMINATEs of one hypothesis
// each) in st and returns their ids. The events are built by the pure core
// and each session's log is appended to its store in one batch, which is
// much faster than a Server writing them one by one; a Server reads them
// as if it had. It is the fixture of BenchmarkStart.
func Fill(ctx context.Context, st belief.Storage, sessions, events int) ([]string, error) {
	if events < 1 || events > 128 {
		return nil, fmt.Errorf("storagetest: Fill: %d events per session, want 1 to 128", events)
	}
	hyps := make([]string, 128)
	for i := range hyps {
		hyps[i] = fmt.Sprintf("h%03d", i)
	}
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	ids := make([]string, sessions)
	batch := make([]trace.Entry, 0, events)
	for i := range ids {
		id := fmt.Sprintf("s%06d", i)
		ids[i] = id
		stamp := func(j int) belief.Stamp {
			return belief.Stamp{EventID: fmt.Sprintf("%s-e%03d", id, j), Time: at.Add(time.Duration(i*events+j) * time.Millisecond)}
		}
		s, ev, err := belief.Declare(id, belief.DeclareRequest{Hypotheses: hyps}, stamp(0))
		if err != nil {
			return nil, err
		}
		batch = batch[:0]
		var h trace.Head
		for j := 0; ; j++ {
			raw, err := ev.Canonical()
			if err != nil {
				return nil, err
			}
			var e trace.Entry
			if e, h, err = trace.Next(h, ev.Verb.Kind(), raw, ev.Time); err != nil {
				return nil, err
			}
			batch = append(batch, e)
			if j+1 == events {
				break
			}
			req := belief.EliminateRequest{SourceID: "fill", ObservationID: fmt.Sprint(j), Eliminated: []string{hyps[j]}}
			if s, _, ev, err = s.Eliminate(req, stamp(j+1)); err != nil {
				return nil, err
			}
		}
		store, err := st.Create(ctx, id)
		if err != nil {
			return nil, err
		}
		err = store.Append(ctx, batch...)
		if cerr := store.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("storagetest: Fill: session %s: %w", id, err)
		}
	}
	return ids, nil
}

// BenchmarkStart measures a Server over st, which holds the sessions ids
// (see Fill): per iteration it starts a Server (NewServer), then answers
// a first request, QUERY_BELIEF on one session (Session and Snapshot),
// then closes the Server. It reports the mean start-up time (start-ms)
// and first-request latency (first-ms) besides ns/op, which is both plus
// Close.
func BenchmarkStart(b *testing.B, st belief.Storage, ids []string, opts ...belief.Option) {
	ctx := context.Background()
	var start, first time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		srv, err := belief.NewServer(ctx, st, opts...)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		id := ids[(n*7919)%len(ids)]
		sess, err := srv.Session(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		snap, err := sess.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if snap.SessionID != id {
			b.Fatalf("snapshot of %q, want %q", snap.SessionID, id)
		}
		if err := srv.Close(); err != nil {
			b.Fatal(err)
		}
		start += t1.Sub(t0)
		first += t2.Sub(t1)
		n++
	}
	b.ReportMetric(float64(start.Microseconds())/1000/float64(n), "start-ms")
	b.ReportMetric(float64(first.Microseconds())/1000/float64(n), "first-ms")
}
