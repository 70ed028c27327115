package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// TestEinoAgent runs the program with each answer and checks what it
// says happened: the calls that pass, the delete that runs once when
// approved and never when denied, the budget refusal the model reads,
// and the log that verifies and replays.
func TestEinoAgent(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         []string
		deletes      int
	}{
		{"approved", "y\n", []string{
			"model reads call-4: deleted /var/crash/core.1234",
			`model reads call-5: tool "restart_service" (rule #1, kernel): action "restart_service" rejected: budget: cost 2, remaining 0`,
			"budget: spent 5 of 5 in 4 calls",
			"replay rebuilt the budget: spent 5 in 4 calls",
		}, 1},
		{"denied", "n\n", []string{
			`model reads call-4: tool "delete_file" (rule #2, approval): DELETE denied by human: keep it for the post-mortem`,
			`model reads call-5: tool "restart_service" (rule #1, kernel): action "restart_service" rejected: budget: cost 2, remaining 1`,
			"budget: spent 4 of 5 in 3 calls",
			"replay rebuilt the budget: spent 4 in 3 calls",
		}, 0},
		{"no answer", "", []string{
			"denied by human: keep it for the post-mortem",
			"budget: spent 4 of 5 in 3 calls",
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agent.trace")
			var out bytes.Buffer
			if err := run(context.Background(), &out, strings.NewReader(tc.answer), path); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			s := out.String()
			for _, want := range append([]string{
				"model reads call-1: checkout: out of disk space",
				"model reads call-2: payments: all requests OK",
				"model reads call-3: checkout restarted",
				"run stopped: 1 call(s) wait for a human",
				`Allow the DELETE tool call "delete_file" with arguments {"path":"/var/crash/core.1234"}?`,
				"entries verified",
			}, tc.want...) {
				if !strings.Contains(s, want) {
					t.Errorf("output lacks %q\n%s", want, s)
				}
			}
			if n := strings.Count(s, "deleted /var/crash"); n != tc.deletes {
				t.Errorf("the delete ran %d times, want %d\n%s", n, tc.deletes, s)
			}

			// The log on disk records the same: one result per call that ran.
			store, err := trace.OpenFile(path, trace.FileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			log, err := trace.NewLog(store)
			if err != nil {
				t.Fatal(err)
			}
			defer log.Close()
			ran := map[string]int{}
			for e, err := range log.Entries(context.Background(), 0) {
				if err != nil {
					t.Fatal(err)
				}
				if e.Kind == gatelog.KindResult {
					d, err := gatelog.Decode(e)
					if err != nil {
						t.Fatal(err)
					}
					ran[d.(gatelog.Result).Tool]++
				}
			}
			if ran["read_log"] != 2 || ran["restart_service"] != 1 || ran["delete_file"] != tc.deletes {
				t.Errorf("recorded results %v", ran)
			}
		})
	}
}
