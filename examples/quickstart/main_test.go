package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-go/verity/trace"
)

// TestQuickstart runs the program, checks what it says happened, and
// verifies the log it leaves behind.
func TestQuickstart(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(&out, dir); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		`kernel: ran scale-down: {"paused":false,"replicas":2,"version":"v1"}, spent 1 of 2`,
		`kernel: action "scale-down" rejected; invariant "at least 2 replicas" violated`,
		"kernel: ran deploy:",
		`kernel: action "scale-up" rejected; budget exceeded`,
		`kernel: ran pause: {"paused":true,"replicas":2,"version":"v2"}, spent 2 of 2`,
		"claims: ESCALATE, waiting for [alice]",
		"claims: PUBLISH after alice approved",
		"guard: grounded, accepted",
		"guard: refused: speculative:",
		"at /notes/lane",
		"trace: 8 entries verified",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q\n%s", want, s)
		}
	}

	store, err := trace.OpenFile(filepath.Join(dir, "agent.trace"), trace.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log, err := trace.NewLog(store)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	head, err := log.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := "head " + head.Hash.String(); head.Size != 8 || !strings.Contains(s, want) {
		t.Errorf("log has %d entries, head %s; the program printed\n%s", head.Size, head.Hash, s)
	}
}
