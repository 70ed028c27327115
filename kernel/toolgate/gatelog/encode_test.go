package gatelog

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
)

// TestEntriesAreCanonical: the hand-written encoders give exactly the
// bytes canonical JSON gives for the same entry, whatever it holds (any
// strings, invalid UTF-8 included, any costs and sizes).
func TestEntriesAreCanonical(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.Just(""), rapid.StringMatching(`[\x00-\x1f"\\<>&\x{2028}\x{7f}-\x{ff}]*`),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
	cost := rapid.Custom(func(t *rapid.T) kernel.Cost { return kernel.Cost(rapid.Int64Range(-1<<62, 1<<62).Draw(t, "cost")) })
	size := rapid.IntRange(0, 1<<40)
	rapid.Check(t, func(t *rapid.T) {
		r := Result{Session: str.Draw(t, "session"), Caller: str.Draw(t, "caller"), CallID: str.Draw(t, "call"),
			ExecID: str.Draw(t, "exec"), Tool: str.Draw(t, "tool"), OK: rapid.Bool().Draw(t, "ok"), Error: str.Draw(t, "error"),
			OutputSHA256: str.Draw(t, "sha"), OutputSize: size.Draw(t, "size"), OutputText: str.Draw(t, "text"),
			OutputBase64: str.Draw(t, "b64"), Truncated: rapid.Bool().Draw(t, "truncated"), Charged: cost.Draw(t, "charged"),
			Unpaid: cost.Draw(t, "unpaid"), Measured: rapid.Bool().Draw(t, "measured"), Actual: cost.Draw(t, "actual"),
			Speculative: rapid.Bool().Draw(t, "speculative"), Finding: str.Draw(t, "finding"), Definition: str.Draw(t, "definition"), Trace: str.Draw(t, "trace")}
		want, err := canon.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("result entry:\n got %s\nwant %s", got, want)
		}
		f := Refuse{Session: str.Draw(t, "session"), Caller: str.Draw(t, "caller"), CallID: str.Draw(t, "call"),
			Tool: str.Draw(t, "tool"), Reason: str.Draw(t, "reason"), Explanation: str.Draw(t, "explanation"),
			ArgumentsSHA256: str.Draw(t, "sha"), ArgumentsSize: size.Draw(t, "size"), Approval: str.Draw(t, "approval"),
			Rule: str.Draw(t, "rule"), RuleName: str.Draw(t, "rule name"), Condition: str.Draw(t, "condition"), Definition: str.Draw(t, "definition"), Trace: str.Draw(t, "trace")}
		want, err = canon.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := f.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("refuse entry:\n got %s\nwant %s", got, want)
		}
	})
}
