package main

import (
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// TestRefusedAnswerSummary: a refused answer's entry reads as one line
// naming who answered, the request and why it was refused.
func TestRefusedAnswerSummary(t *testing.T) {
	e := trace.Entry{Kind: gatelog.KindRefuseAnswer, Payload: []byte(`{"session":"toolgate:s","caller":"s","approval":"r1","call_id":"dd",` +
		`"tool":"delete_file","approver":"idp|alice","decision":"APPROVED","reason":"self_approval","explanation":"not hers to approve"}`)}
	line := summarize(e)
	for _, want := range []string{"refused answer APPROVED", `"idp|alice"`, "r1", "self_approval", "not hers to approve"} {
		if !strings.Contains(line, want) {
			t.Errorf("summary %q lacks %q", line, want)
		}
	}
}
