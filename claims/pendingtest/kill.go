package pendingtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/killtest"
	"github.com/verity-go/verity/trace"
)

// Workers is how many goroutines of Workload evaluate and approve at once.
const Workers = 4

// Workload evaluates bundles that escalate and approves some of them, from
// Workers goroutines, until the process is killed, calling ack after each
// acknowledged call:
//
//	P <bundle id>   evaluated; it waits
//	X <bundle id>   about to be approved
//	D <bundle id>   approved: it no longer waits
//
// Bundle ids start with prefix, so that each process's are new.
func Workload(ctx context.Context, s *claims.Session, prefix string, ack func(format string, args ...any)) error {
	var wg sync.WaitGroup
	errs := make([]error, Workers)
	for g := range Workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				ev, err := s.Evaluate(ctx, Bundle(fmt.Sprintf("%s-%d-%d", prefix, g, i)), Context)
				if err != nil {
					errs[g] = err
					return
				}
				ack("P %s", ev.Bundle.ID)
				if i%2 == 1 {
					continue
				}
				ack("X %s", ev.Bundle.ID)
				if _, err := s.Approve(ctx, ev.Bundle, Context, "dba", claims.ApprovalApproved, "checked"); err != nil {
					errs[g] = err
					return
				}
				ack("D %s", ev.Bundle.ID)
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

// CheckAcks checks store, reopened after the kill, against what Workload
// acknowledged: every bundle acknowledged as waiting and not handed to
// Approve waits, and every bundle acknowledged as approved does not.
func CheckAcks(t *testing.T, acks [][]string, store claims.PendingStore) {
	t.Helper()
	ctx := context.Background()
	handed := map[string]bool{}
	for _, a := range acks {
		if a[0] == "X" {
			handed[a[1]] = true
		}
	}
	for _, a := range acks {
		_, err := store.Get(ctx, a[1])
		switch {
		case a[0] == "P" && !handed[a[1]] && err != nil:
			t.Fatalf("acknowledged pending bundle %s: %v", a[1], err)
		case a[0] == "D" && !errors.Is(err, claims.ErrNotPending):
			t.Fatalf("acknowledged approved bundle %s still waits (%v)", a[1], err)
		}
	}
}

// CheckRebuild checks that RebuildPending over the Session's log brings
// store to exactly what a new store rebuilt from that log alone holds,
// and returns how many bundles wait.
func CheckRebuild(t *testing.T, log *trace.Log, store claims.PendingStore) int {
	t.Helper()
	ctx := context.Background()
	if err := claims.RebuildPending(ctx, log, store); err != nil {
		t.Fatal(err)
	}
	fresh := claims.NewMemoryPending()
	if err := claims.RebuildPending(ctx, log, fresh); err != nil {
		t.Fatal(err)
	}
	want, err := fresh.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list(t, store, want...)
	return len(want)
}
