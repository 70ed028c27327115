package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-go/verity/trace"
)

// TestAdkAgent runs the program with each answer to the delete and checks
// its claims: the listing runs, the delete waits for the human and runs
// once when confirmed and never when rejected, one of the two parallel
// reports is refused for the budget and the model reads why, and the log
// verifies and replays.
func TestAdkAgent(t *testing.T) {
	for _, tc := range []struct {
		name, approve, stdin string
		deleted              bool
	}{
		{"yes", "yes", "", true},
		{"no", "no", "", false},
		{"ask-y", "ask", "y\n", true},
		{"ask-eof", "ask", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logPath := filepath.Join(t.TempDir(), "agent.log")
			var out bytes.Buffer
			err := run(context.Background(), &out, strings.NewReader(tc.stdin), []string{"-approve", tc.approve, "-log", logPath})
			s := out.String()
			if err != nil {
				t.Fatalf("%v\n%s", err, s)
			}
			want := []string{
				`  list_files → {"files":["/var/log/app.log.1","/var/log/syslog"]}`,
				`  list_files → {"files":["/tmp/build-cache.tar"]}`,
				"  delete_file waits for a human",
				`adk asks: Allow the DELETE tool call "delete_file" with arguments {"path":"/var/log/app.log.1"}?`,
				`  send_report refused: tool "send_report" (rule #2, kernel): action "send_report" rejected: budget: cost 3, remaining `,
				`model: Done: `,
				"chain verified",
				"equal to the live gate",
			}
			if tc.deleted {
				want = append(want, "human: yes", `  delete_file → {"deleted":"/var/log/app.log.1"}`,
					"host: deleted [/var/log/app.log.1]", "spent 3.7 of 5 in 4 calls", "claims.approve×1")
			} else {
				want = append(want, "human: no", `  delete_file refused: tool "delete_file" (rule #1, approval): DELETE denied by human`,
					"host: deleted []", "spent 3.2 of 5 in 3 calls", "toolgate.refuse×1")
			}
			for _, w := range want {
				if !strings.Contains(s, w) {
					t.Errorf("output lacks %q\n%s", w, s)
				}
			}
			if n := strings.Count(s, "send_report refused"); n != 1 {
				t.Errorf("%d reports refused, want 1\n%s", n, s)
			}
			if !strings.Contains(s, "send_report was refused (tool \"send_report\" (rule #2, kernel): action \"send_report\" rejected: budget") {
				t.Errorf("the model did not read the refusal\n%s", s)
			}

			// The file the program left verifies on its own.
			f, err := trace.OpenFileReadOnly(logPath)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := trace.VerifyStore(context.Background(), f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBadFlag(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, strings.NewReader(""), []string{"-approve", "maybe"}); err == nil {
		t.Fatal("an unknown -approve value was accepted")
	}
}
