package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestAgentLoop runs the demonstration and checks each of its claims.
func TestAgentLoop(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{
		"committed scale-out",
		`rejected  drain-all        invariant: kernel: invariant "min-replicas" violated`,
		"rejected  full-rebuild     budget: kernel: budget exceeded",
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
	if err := run(context.Background(), &again); err != nil {
		t.Fatal(err)
	}
	if again.String() != s {
		t.Errorf("two runs differ:\n%s\n---\n%s", s, again.String())
	}
}
