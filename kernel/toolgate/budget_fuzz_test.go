package toolgate_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// FuzzDecodeBudgetEntry: any payload of a gatelog.KindBudget entry is
// refused with gatelog.ErrDecode or read as a grant of a positive
// amount or a reset of none, naming an approver and a reason, which
// reads back the same when written again.
func FuzzDecodeBudgetEntry(f *testing.F) {
	for _, s := range []string{
		`{"session":"toolgate:a","caller":"a","action":"grant","amount":"2.5","approver":"idp|olga","reason":"release night","period":"day 2026-11-30 (UTC)"}`,
		`{"session":"toolgate:a","caller":"a","action":"reset","approver":"human","reason":"new quarter"}`,
		`{"session":"toolgate:a","caller":"a","action":"grant","amount":0,"approver":"h","reason":"r"}`,
		`{"session":"toolgate:a","caller":"a","action":"reset","amount":"1","approver":"h","reason":"r"}`,
		`{"session":"toolgate:a","caller":"a","action":"grant","amount":"-1","approver":"","reason":"r"}`,
		`{"session":"toolgate:a","caller":"a","action":"give","amount":"1","approver":"h","reason":"r","x":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		d, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindBudget, Payload: payload})
		if err != nil {
			if !errors.Is(err, gatelog.ErrDecode) {
				t.Fatalf("%q: %v does not wrap ErrDecode", payload, err)
			}
			return
		}
		b := d.(gatelog.Budget)
		switch {
		case b.Action == "grant" && b.Amount <= 0, b.Action == "reset" && b.Amount != 0,
			b.Action != "grant" && b.Action != "reset", b.Approver == "", b.Reason == "":
			t.Fatalf("%q accepted as %+v", payload, b)
		}
		again, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := gatelog.Decode(trace.Entry{Kind: gatelog.KindBudget, Payload: again})
		if err != nil || d2.(gatelog.Budget) != b {
			t.Fatalf("%q wrote %s, read back %+v, %v", payload, again, d2, err)
		}
	})
}
