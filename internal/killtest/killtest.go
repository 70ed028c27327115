// Package killtest runs a test helper in a child process and kills it with
// SIGKILL at a chosen moment: the harness of every "kill -9 during
// concurrent writes" test. The helper (the test binary run again with
// -test.run naming one test) prints "ready" when it starts writing and one
// line per write it has seen acknowledged (Ack); the parent kills it, then
// reopens the store and checks that every acknowledged write is there.
package killtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Kill runs the test binary again as a helper process running only the
// test helper, with env added to its environment; waits for it to print
// "ready"; kills it with SIGKILL after the given time; and returns the
// lines it acknowledged (each split into fields), those before "ready"
// included. A line the kill cut short is not an acknowledgement.
func Kill(t testing.TB, helper string, env []string, after time.Duration) [][]string {
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
	var acks [][]string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("helper never got ready (%q, %v):\n%s", line, err, stderr.String())
		}
		if line == "ready\n" {
			break
		}
		acks = append(acks, strings.Fields(line))
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
	// The last piece is empty, or a line the kill cut short.
	lines := strings.Split(string(rest), "\n")
	for _, l := range lines[:len(lines)-1] {
		acks = append(acks, strings.Fields(l))
	}
	return acks
}

// Ack returns the helper's acknowledgement function: it writes each line
// to standard output at once, one line at a time however many goroutines
// call it.
func Ack() func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
}
