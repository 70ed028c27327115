package toolgate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// FuzzDecodeEntry: DecodeEntry never panics, and what it accepts encodes
// back to an entry it decodes to the same value.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(toolgate.KindRefuse, []byte(`{"session":"toolgate:","caller":"","call_id":"1","tool":"x","reason":"unknown_tool","explanation":"e","arguments_sha256":"00","arguments_size":0}`))
	f.Add(toolgate.KindResult, []byte(`{"session":"toolgate:a","caller":"a","call_id":"1","exec_id":"e","tool":"x","ok":true,"output_sha256":"00","output_size":2,"output_text":"ok","charged":100}`))
	f.Add(toolgate.KindResult, []byte(`{"session":"s","session":"s"}`))
	f.Add(toolgate.KindRefuseAnswer, []byte(`{"session":"toolgate:a","caller":"a","approval":"r1","call_id":"dd","tool":"delete_file","arguments_sha256":"00","approver":"human","decision":"APPROVED","reason":"other_call","explanation":"e"}`))
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		v, err := toolgate.DecodeEntry(trace.Entry{Kind: kind, Payload: payload})
		if err != nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", payload, err)
		}
		again, err := toolgate.DecodeEntry(trace.Entry{Kind: kind, Payload: b})
		if err != nil {
			t.Fatalf("re-encoding %q gave %q, refused: %v", payload, b, err)
		}
		if again != v {
			t.Fatalf("decoded %+v, re-decoded %+v", v, again)
		}
	})
}

// FuzzBefore: whatever a model sends — any tool name, any argument bytes,
// any caller and call id — Before decides without panicking, a decision
// is Allow, Refuse or AskApproval, and its explanation is one line.
func FuzzBefore(f *testing.F) {
	f.Add("read_file", []byte(`{"path":"/tmp"}`), "", "")
	f.Add("delete_file", []byte("\xff\x00"), "alice", "1")
	f.Add("", []byte(nil), "\x00", "overrun/overrun")
	g, err := toolgate.New(ctx, newLog(f), testConfig())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tool string, args []byte, caller, id string) {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Arguments: args, Caller: caller, ID: id})
		if err != nil {
			return
		}
		if strings.ContainsAny(d.Explanation, "\n\r") {
			t.Fatalf("explanation on more than one line: %q", d.Explanation)
		}
		switch d.Verdict {
		case toolgate.Allow:
			if _, err := g.After(ctx, d.Call, toolgate.Result{Output: args, Actual: kernel.Unit, Measured: true}); err != nil {
				t.Fatalf("After: %v", err)
			}
		case toolgate.Refuse, toolgate.AskApproval:
		default:
			t.Fatalf("verdict %v", d.Verdict)
		}
	})
}
