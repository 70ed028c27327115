package pendingtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/verity-go/verity/claims"
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
func Ack() func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
}

// Kill runs the test binary again as a helper process running only the
// test helper, with env added to its environment; waits for it to print
// "ready"; kills it with SIGKILL after the given time; and returns the
// lines it acknowledged (each split into fields). A line the kill cut
// short is not an acknowledgement.
func Kill(t *testing.T, helper string, env []string, after time.Duration) [][]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+helper+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper never got ready (%q, %v):\n%s", line, err, stderr.String())
	}
	time.Sleep(after)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Wait() == nil {
		t.Fatalf("the helper ended on its own:\n%s", stderr.String())
	}
	lines := strings.Split(string(rest), "\n")
	var acks [][]string
	for _, l := range lines[:len(lines)-1] {
		acks = append(acks, strings.Fields(l))
	}
	return acks
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
