package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-go/verity/trace"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, ""); err != nil {
		t.Fatal(err)
	}
	want := `budget 5 units, minimum cost 0.5, at most 10 steps
to ana: sent, spent 1.25
to bo: sent, spent 2.5
to cy: sent, spent 3.75
to di: action "send_email" rejected: invariant at most 3 e-mails: violated (summarise instead of sending another e-mail)
think: rejected, budget exceeded
safe_hover: executed (emergency action, budget left 1.25)
rollback of the last e-mail: refund 1.25, state {"outbox":["ana","bo"],"sent":2}, spent 2.5, steps still 3
second rollback: refused, the state is no longer the one that e-mail produced
search: reserved 1, receipt entry 8, 1 call open
search: settled at 0.25, refund 0.75, spent 2.75
trace: 10 entries, verified
replayed state {"calls/search":1,"outbox":["ana","bo"],"sent":2} equal: true
`
	if out.String() != want {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestKeepsItsLog: with -log the run is the same, and its log is kept in
// the file, whole and verified; an existing file is refused.
func TestKeepsItsLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kernel.trace")
	var out bytes.Buffer
	if err := run(context.Background(), &out, path); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "equal: true\nlog kept in "+path+"\n") {
		t.Errorf("output:\n%s", out.String())
	}
	f, err := trace.OpenFileReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head, err := f.Head(context.Background())
	if err != nil || head.Size != 10 {
		t.Errorf("kept log: %d entries, %v", head.Size, err)
	}
	if err := run(context.Background(), &bytes.Buffer{}, path); err == nil || !strings.Contains(err.Error(), "new log") {
		t.Errorf("a second run on the kept log: %v", err)
	}
}
