package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/killtest"
)

// Workers is how many goroutines of Workload eliminate at once.
const Workers = 4

// KillOptions are the Server options of a Workload process and of the
// Server CheckAcks starts after it: a small cache and frequent
// checkpoints, so that a kill finds sessions being opened, closed and
// checkpointed.
var KillOptions = []belief.Option{belief.WithCacheSize(2), belief.WithCheckpointEvery(5)}

// Workload declares two sessions in srv, then runs ELIMINATEs from Workers
// goroutines over those and every session st already held, until the
// process is killed, calling ack after each acknowledged call:
//
//	D <session id>             declared
//	E <session id> <event id>  an ELIMINATE recorded as that event
//
// Observation ids carry the process id, so each process's are new.
func Workload(ctx context.Context, srv *belief.Server, st belief.Storage, ack func(format string, args ...any)) error {
	ids, err := st.List(ctx)
	if err != nil {
		return err
	}
	for range 2 {
		s, _, err := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: hypotheses(64)})
		if err != nil {
			return err
		}
		ack("D %s", s.ID())
		ids = append(ids, s.ID())
	}
	ack("ready")
	pid := os.Getpid()
	var wg sync.WaitGroup
	errs := make([]error, Workers)
	for g := range Workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(pid), uint64(g)))
			for i := 0; ; i++ {
				id := ids[rng.IntN(len(ids))]
				s, err := srv.Session(ctx, id)
				if errors.Is(err, belief.ErrSessionNotFound) {
					continue // a declaration an earlier kill cut short
				}
				if err != nil {
					errs[g] = err
					return
				}
				r, _, err := s.Eliminate(ctx, belief.EliminateRequest{SourceID: "kill", ObservationID: fmt.Sprintf("%d-%d-%d", pid, g, i),
					Eliminated: []string{fmt.Sprintf("h%02d", rng.IntN(64))}})
				if errors.Is(err, belief.ErrSessionTerminated) {
					continue
				}
				if err != nil {
					errs[g] = err
					return
				}
				ack("E %s %s", id, r.AuditEventID)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Ack returns an ack function for Workload that writes each line to
// standard output at once.
func Ack() func(format string, args ...any) { return killtest.Ack() }

// Kill runs the test binary again as a helper process running only the
// test helper, with env added to its environment, kills it with SIGKILL
// after the given time from its "ready", and returns the lines it
// acknowledged, each split into fields (see internal/killtest).
func Kill(t *testing.T, helper string, env []string, after time.Duration) [][]string {
	t.Helper()
	return killtest.Kill(t, helper, env, after)
}

// CheckAcks restarts: a Server over st (KillOptions) opens every session
// st lists. Every session acknowledged as declared opens, every
// acknowledged event is in its session's log, and every session's log
// verifies in full (Session.Verify: the trace chain, every event replayed,
// every checkpoint compared) and replays (belief.Replay of its events) to
// its snapshot. A session whose declaration was never acknowledged may be
// empty (SESSION_NOT_FOUND). It returns the number of acknowledged events
// checked.
func CheckAcks(t *testing.T, st belief.Storage, acks [][]string) int {
	t.Helper()
	ctx := context.Background()
	srv := server(t, st, KillOptions...)
	declared, events := map[string]bool{}, map[string][]string{}
	for _, a := range acks {
		switch {
		case len(a) == 2 && a[0] == "D":
			declared[a[1]] = true
		case len(a) == 3 && a[0] == "E":
			events[a[1]] = append(events[a[1]], a[2])
		default:
			t.Fatalf("unexpected acknowledgement %q", a)
		}
	}
	ids, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, id := range ids {
		sess, err := srv.Session(ctx, id)
		if errors.Is(err, belief.ErrSessionNotFound) && !declared[id] && len(events[id]) == 0 {
			continue
		}
		if err != nil {
			t.Fatalf("session %s after the kill: %v", id, err)
		}
		if _, err := sess.Verify(ctx); err != nil {
			t.Fatalf("session %s after the kill: %v", id, err)
		}
		evs, err := sess.Events(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, e := range evs {
			have[e.EventID] = true
		}
		for _, ev := range events[id] {
			if !have[ev] {
				t.Fatalf("session %s lost acknowledged event %s", id, ev)
			}
			checked++
		}
		replayed, err := belief.Replay(evs)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := sess.Snapshot(ctx)
		require.NoError(t, err)
		require.Equal(t, snap, replayed.Snapshot(), "session %s: its events replay to what it serves", id)
		delete(declared, id)
	}
	for id := range declared {
		t.Fatalf("session %s acknowledged as declared is not listed", id)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	return checked
}
