package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-go/verity/trace"
)

// TestSeedTour runs the demonstration and checks each of its claims.
func TestSeedTour(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, ""); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		"committed scale-out",
		`rejected  drain-all        invariant "min-replicas" violated; suggestion: scale out before removing replicas` + "\n",
		"rejected  full-rebuild     budget exceeded: cost 9, remaining 3.5\n",
		"rolled back enable-canary",
		"refused evidence: speculative:",
		"grounded evidence on c-root-cause: 0 item(s)",
		"without evidence: REFUSE at the evidence gate",
		"with evidence:    ESCALATE, waiting for [sre-lead]",
		"after approval:   PUBLISH",
		"log verified: 15 entries",
		"equal to the live session",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q\n%s", want, s)
		}
	}
	// The run is deterministic: the same log, to the hash, every time.
	var again bytes.Buffer
	if err := run(context.Background(), &again, ""); err != nil {
		t.Fatal(err)
	}
	if again.String() != s {
		t.Errorf("two runs differ:\n%s\n---\n%s", s, again.String())
	}
}

// TestSeedTourKeepsItsLog: with -log the log is written to the file
// named, kept, and verifies to the head the run printed; an existing file
// is refused and left alone.
func TestSeedTourKeepsItsLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.trace")
	var out bytes.Buffer
	if err := run(context.Background(), &out, path); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "log kept in "+path) {
		t.Errorf("output does not name the kept log:\n%s", out.String())
	}
	f, err := trace.OpenFileReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	head, err := f.Head(context.Background())
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := "log verified: 15 entries, head " + head.Hash.String()[:16]; head.Size != 15 || !strings.Contains(out.String(), want) {
		t.Errorf("kept log has head %d %s; the run printed\n%s", head.Size, head.Hash, out.String())
	}
	before, _ := os.ReadFile(path)
	if err := run(context.Background(), &bytes.Buffer{}, path); err == nil || !strings.Contains(err.Error(), "new log") {
		t.Errorf("a second run on the same file: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a refused run changed the existing file")
	}
}
