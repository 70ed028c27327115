package kernel_test

import (
	"encoding/json"
	"testing"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// benchExecuteEntry is the execute entry of a tool call as a gate records
// it: a counted call and the call's input as text (749 bytes).
func benchExecuteEntry(b *testing.B) trace.Entry {
	k := mustKernel(b, kernel.Config{Budget: 100 * kernel.Unit, MinActionCost: 1})
	log := trace.NewMemoryLog()
	sess, err := kernel.NewSession(ctx, log, k, mustState(b, map[string]any{"spent": 0}), kernel.WithSessionID("agent-7"))
	if err != nil {
		b.Fatal(err)
	}
	a := kernel.Action{
		ID: "call-0001", Name: "search", Category: "tool", Cost: 2500,
		Tags: []string{"tool:search"},
		Effects: []kernel.Effect{
			kernel.Count("calls/search", value.Int(1), value.Int(0)),
		},
		Input: []byte(`{"query":"revenue by region","limit":20}`),
	}
	if _, err := sess.Execute(ctx, a); err != nil {
		b.Fatal(err)
	}
	var last trace.Entry
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			b.Fatal(err)
		}
		last = e
	}
	if last.Kind != kernel.KindExecute {
		b.Fatalf("last entry is %s", last.Kind)
	}
	return last
}

// jsonExecute is an execute payload as plain encoding/json reads it: the
// same members, every value in the Go type closest to it, no checks.
type jsonExecute struct {
	Action struct {
		Category      string       `json:"category"`
		Cost          string       `json:"cost"`
		Description   string       `json:"description"`
		Effects       []jsonEffect `json:"effects"`
		ID            string       `json:"id"`
		Name          string       `json:"name"`
		Postcondition string       `json:"postcondition"`
		Precondition  string       `json:"precondition"`
		Reversible    bool         `json:"reversible"`
		Tags          []string     `json:"tags"`
	} `json:"action"`
	After  string `json:"after"`
	Before string `json:"before"`
	Budget struct {
		Gross    string `json:"gross"`
		Limit    string `json:"limit"`
		Refunded string `json:"refunded"`
	} `json:"budget"`
	Emergency      bool   `json:"emergency"`
	EmergencySteps uint64 `json:"emergency_steps"`
	Exec           string `json:"exec"`
	Input          *struct {
		Base64 string `json:"base64"`
		Digest string `json:"digest"`
		Size   uint64 `json:"size"`
		Text   string `json:"text"`
	} `json:"input"`
	Inverse  []jsonEffect `json:"inverse"`
	Session  string       `json:"session"`
	Steps    uint64       `json:"steps"`
	Warnings []struct {
		Check  string `json:"check"`
		Name   string `json:"name"`
		Reason string `json:"reason"`
		Status string `json:"status"`
	} `json:"warnings"`
}

type jsonEffect struct {
	Initial any    `json:"initial"`
	Key     string `json:"key"`
	Op      string `json:"op"`
	Value   any    `json:"value"`
}

// BenchmarkDecodeEntry: DecodeEntry of an execute entry (strict, checked,
// into the typed ExecuteEntry) beside encoding/json reading the same
// payload into a plain struct of the same members (json).
func BenchmarkDecodeEntry(b *testing.B) {
	e := benchExecuteEntry(b)
	b.Run("kernel", func(b *testing.B) {
		b.SetBytes(int64(len(e.Payload)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := kernel.DecodeEntry(e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		b.SetBytes(int64(len(e.Payload)))
		b.ReportAllocs()
		for b.Loop() {
			var x jsonExecute
			if err := json.Unmarshal(e.Payload, &x); err != nil {
				b.Fatal(err)
			}
		}
	})
}
