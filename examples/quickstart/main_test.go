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
	path := filepath.Join(t.TempDir(), "agent.trace")
	var out bytes.Buffer
	if err := start(&out, path); err != nil {
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
		"log kept in " + path,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q\n%s", want, s)
		}
	}

	store, err := trace.OpenFile(path, trace.FileOptions{})
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
	if err := start(&bytes.Buffer{}, path); err == nil || !strings.Contains(err.Error(), "new log") {
		t.Errorf("a second run on the kept log: %v", err)
	}
	out.Reset()
	if err := start(&out, ""); err != nil || !strings.Contains(out.String(), "trace: 8 entries verified") || strings.Contains(out.String(), "log kept") {
		t.Errorf("without -log: %v\n%s", err, out.String())
	}
}
