package toolgate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// FuzzDecodeEntry: DecodeEntry never panics, for every kind the gate
// writes, and what it accepts encodes back to an entry it decodes to the
// same value.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(gatelog.KindRefuse, []byte(`{"session":"toolgate:","caller":"","call_id":"1","tool":"x","reason":"unknown_tool","explanation":"e","arguments_sha256":"00","arguments_size":0}`))
	f.Add(gatelog.KindResult, []byte(`{"session":"toolgate:a","caller":"a","call_id":"1","exec_id":"e","tool":"x","ok":true,"output_sha256":"00","output_size":2,"output_text":"ok","charged":100}`))
	f.Add(gatelog.KindResult, []byte(`{"session":"s","session":"s"}`))
	f.Add(gatelog.KindRefuseAnswer, []byte(`{"session":"toolgate:a","caller":"a","approval":"r1","call_id":"dd","tool":"delete_file","arguments_sha256":"00","approver":"human","decision":"APPROVED","reason":"other_call","explanation":"e"}`))
	f.Add(gatelog.KindAsk, []byte(`{"approval":"r1","session":"toolgate:a","caller":"a","call_id":"dd","tool":"delete_file","arguments_sha256":"00","tier":"DELETE","arguments":"{}","question":"q","asked":"2026-03-01T09:00:00Z","expires":"2026-03-01T10:00:00+01:00"}`))
	f.Add(gatelog.KindAsk, []byte(`{"approval":"r1","session":"toolgate:a","caller":"a","call_id":"dd","tool":"delete_file","arguments_sha256":"00","tier":"DELETE","arguments":"{}","question":"q","asked":"2026-03-01T09:00:00Z","Question":"q"}`))
	f.Add(gatelog.KindExpire, []byte(`{"approval":"r1","session":"toolgate:a","caller":"a","tool":"delete_file","arguments_sha256":"00","tier":"DELETE","state":"waiting","asked":"2026-03-01T09:00:00Z","expires":"2026-03-01T10:00:00Z"}`))
	f.Add(gatelog.KindExpire, []byte(`{"approval":"r1","session":"toolgate:a","caller":"a","tool":"delete_file","arguments_sha256":"00","tier":"DELETE","state":"waiting","asked":"2026-03-01T09:00:00Z","expires":null}`))
	f.Add(gatelog.KindDeclassify, []byte(`{"session":"toolgate:a","caller":"a","label":"untrusted_input","approver":"idp|sue","reason":"reviewed"}`))
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		v, err := gatelog.Decode(trace.Entry{Kind: kind, Payload: payload})
		if err != nil {
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", payload, err)
		}
		again, err := gatelog.Decode(trace.Entry{Kind: kind, Payload: b})
		if err != nil {
			t.Fatalf("re-encoding %q gave %q, refused: %v", payload, b, err)
		}
		// Times keep their instant and offset, not their *time.Location:
		// compare the encodings.
		if b2, _ := json.Marshal(again); string(b2) != string(b) {
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
	g, err := toolgate.New(ctx, newLog(f), mustCompile(testConfig()))
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

// FuzzResume: whatever a framework brings back — any tool, arguments,
// caller, call id, request id and answer — Resume decides without
// panicking and never makes a request: Gate.Pending holds after it at
// most the requests it held before, and an AskApproval names one of
// them. A refused answer is a Refuse with ConditionAnswer.
func FuzzResume(f *testing.F) {
	f.Add("delete_file", []byte(`{"path":"/etc/passwd"}`), "s", "dd", "", uint8(1))
	f.Add("delete_file", []byte(`{"path":"/tmp/ok"}`), "s", "dd", "asked", uint8(1))
	f.Add("read_file", []byte(`{}`), "", "", "asked", uint8(2))
	f.Add("delete_file", []byte("\xff"), "\x00", "x", "unknown", uint8(0))
	g, err := toolgate.New(ctx, newLog(f), mustCompile(testConfig()))
	if err != nil {
		f.Fatal(err)
	}
	d, err := g.Before(ctx, toolgate.Call{ID: "dd", Caller: "s", Tool: "delete_file", Arguments: []byte(`{"path":"/tmp/ok"}`)})
	if err != nil || d.Verdict != toolgate.AskApproval {
		f.Fatalf("the real question: %v %v", d.Verdict, err)
	}
	asked := d.Approval.ID
	f.Fuzz(func(t *testing.T, tool string, args []byte, caller, id, request string, answer uint8) {
		if request == "asked" {
			request = asked
		}
		var a *toolgate.Answer
		switch answer % 3 {
		case 1:
			a = &toolgate.Answer{Approved: true, Approver: toolgate.DefaultApprover}
		case 2:
			a = &toolgate.Answer{Approver: toolgate.DefaultApprover}
		}
		before := map[string]bool{}
		for _, r := range g.Pending() {
			before[r.ID] = true
		}
		d, err := g.Resume(ctx, toolgate.Call{Tool: tool, Arguments: args, Caller: caller, ID: id}, request, a)
		for _, r := range g.Pending() {
			if !before[r.ID] {
				t.Fatalf("Resume made request %s (%s)", r.ID, r.Question)
			}
		}
		if err != nil {
			return
		}
		switch d.Verdict {
		case toolgate.Allow:
			if _, err := g.After(ctx, d.Call, toolgate.Result{}); err != nil {
				t.Fatalf("After: %v", err)
			}
		case toolgate.AskApproval:
			if d.Approval == nil || !before[d.Approval.ID] {
				t.Fatalf("asks about %+v, which did not wait", d.Approval)
			}
		case toolgate.Refuse:
			if strings.ContainsAny(d.Explanation, "\n\r") {
				t.Fatalf("explanation on more than one line: %q", d.Explanation)
			}
		default:
			t.Fatalf("verdict %v", d.Verdict)
		}
	})
}
