package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-go/verity/trace"
)

func TestTraceDemo(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, ""); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"appended #3", "chain verified", "tampered", "detected: entry 1"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestTraceDemoKeepsTheIntactLog: with -log the log the demonstration
// wrote is kept and verifies; only a copy was tampered with.
func TestTraceDemoKeepsTheIntactLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.trace")
	var out bytes.Buffer
	if err := run(&out, path); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tampered: byte", "detected: entry 1", "the intact log is kept in " + path} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	f, err := trace.OpenFileReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if h, err := f.Head(context.Background()); err != nil || h.Size != 4 {
		t.Errorf("kept log: %d entries, %v", h.Size, err)
	}
	if err := run(&bytes.Buffer{}, path); err == nil || !strings.Contains(err.Error(), "new log") {
		t.Errorf("a second run on the kept log: %v", err)
	}
}
