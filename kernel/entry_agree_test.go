package kernel_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

// entryKinds are the kinds a Session records, in the order the
// differential fuzz target picks them.
var entryKinds = []string{kernel.KindStart, kernel.KindExecute, kernel.KindReject, kernel.KindRollback, kernel.KindReserve, kernel.KindSettle, kernel.KindRefund}

// FuzzDecodeEntryAgrees: DecodeEntry accepts exactly the payloads the
// decoder it replaced accepted, and reads them as the same entries. The
// one intended difference: the old decoder matched a top-level member
// name case-insensitively (encoding/json's rule), so it took "Steps" for
// "steps"; DecodeEntry refuses it.
func FuzzDecodeEntryAgrees(f *testing.F) {
	entries, _, _, _ := recordedRun(f)
	for _, e := range append(entries, toolCallRun(f)...) {
		f.Add(uint8(slices.Index(entryKinds, e.Kind)), e.Payload)
	}
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte) {
		e := trace.Entry{Kind: entryKinds[int(kind)%len(entryKinds)], Payload: payload}
		checkDecodersAgree(t, e)
	})
}

// TestDecodeEntryAgreesOnEdges: the differential check on payloads at the
// edges of what the old decoder accepted.
func TestDecodeEntryAgreesOnEdges(t *testing.T) {
	entries, _, _, _ := recordedRun(t)
	calls := toolCallRun(t)
	fp := `"` + strings.Repeat("0", 64) + `"`
	budget := `{"gross":"0","limit":"1","refunded":"0"}`
	for _, tc := range []struct {
		entry    trace.Entry
		old, new string
		accepted bool
	}{
		{entries[1], `"emergency":false`, `"emergency":null`, false},
		{entries[1], `"steps":1`, `"steps":1.0`, false},
		{entries[1], `"steps":1`, `"steps":9007199254740993`, false},
		{entries[1], `"steps":1`, `"steps":"9007199254740992"`, true},
		{entries[1], `"steps":1`, `"steps":9007199254740992`, false},
		{entries[1], `"session":`, `"session":"\u0061","x":`, false},
		{entries[1], `"exec":`, `"exec":"\ud800",` + `"y":`, false},
		{entries[1], `"cost":"1.5"`, `"cost":1.5`, true},
		{entries[1], `"cost":"1.5"`, `"cost":15e-1`, true},
		{entries[1], `"cost":"1.5"`, `"cost":"1.50"`, true},
		{entries[1], `"value":1}`, `"value":{"$int":"1"}}`, true},
		{entries[1], `"value":1}`, `"value":{"$int":1}}`, false},
		{entries[1], `"value":1}`, `"value":{"$int":"1","a":2}}`, true},
		{entries[1], `"value":1}`, `"value":{"$object":{"$int":1}}}`, true},
		{entries[1], `"value":1}`, `"value":{"$object":{"$int":1},"b":{"$int":1}}}`, false},
		{entries[1], `"value":1}`, `"value":{"b":1,"a":-0}}`, true},
		{entries[1], `"value":1}`, `"value":9007199254740992}`, false},
		{entries[1], `"value":1}`, `"value":1e400}`, false},
		{entries[1], `{"action":{`, `{"action":{"tags":null,`, false},
		{entries[1], `"warnings":`, `"input":null,"warnings":`, true},
		{entries[1], `{"action":`, `{"Session":"s","action":`, true},
		{entries[2], `"checks":[`, `"checks":[{"check":"a","name":"b","reason":"c","status":"passed","x":1},`, false},
		{calls[0], `"size":`, `"text":null,"size":`, false},
		{trace.Entry{Kind: kernel.KindReject, Payload: []byte(`{"action":{"id":"x"},"budget":` + budget + `,"checks":[],"emergency":false,"session":"","state":` + fp + `,"steps":1}`)}, "", "", true},
		{trace.Entry{Kind: kernel.KindReject, Payload: []byte(`{"action":{"name":"x"},"budget":` + budget + `,"checks":[],"emergency":false,"session":"","state":` + fp + `,"steps":1}`)}, "", "", false},
	} {
		e := tc.entry
		if tc.old != "" {
			p := string(e.Payload)
			if !strings.Contains(p, tc.old) {
				t.Fatalf("%s has no %s", p, tc.old)
			}
			e.Payload = []byte(strings.Replace(p, tc.old, tc.new, 1))
		}
		_, err := kernel.OldDecodeEntry(e)
		if (err == nil) != tc.accepted {
			t.Errorf("old decoder on %s: %v", e.Payload, err)
		}
		checkDecodersAgree(t, e)
	}
}

func checkDecodersAgree(t *testing.T, e trace.Entry) {
	t.Helper()
	want, oldErr := kernel.OldDecodeEntry(e)
	got, newErr := kernel.DecodeEntry(e)
	if (oldErr == nil) != (newErr == nil) {
		if oldErr == nil && foldedMember(e.Payload) {
			return
		}
		t.Fatalf("%s %s:\nold: %v\nnew: %v", e.Kind, e.Payload, oldErr, newErr)
	}
	if oldErr != nil {
		return
	}
	// Every member a payload has is written back: the same type and the
	// same bytes are the same entry.
	if reflect.TypeOf(want) != reflect.TypeOf(got) || string(kernel.EntryPayload(want)) != string(kernel.EntryPayload(got)) {
		t.Fatalf("%s %s:\nold: %#v\nnew: %#v", e.Kind, e.Payload, want, got)
	}
}

// foldedMember reports whether the payload has a top-level member whose
// name equals a member name only case-insensitively.
func foldedMember(payload []byte) bool {
	tree, err := canon.Decode(payload)
	m, ok := tree.(map[string]any)
	if err != nil || !ok {
		return false
	}
	names := []string{"action", "actual", "after", "amount", "before", "budget", "checks", "effects", "emergency",
		"emergency_steps", "exec", "input", "invariants", "inverse", "max_steps", "min_cost", "overrun",
		"preconditions", "reason", "refund", "reserved", "session", "state", "steps", "unpaid", "warnings"}
	for k := range m {
		if slices.Contains(names, k) {
			continue
		}
		for _, n := range names {
			if strings.EqualFold(k, n) {
				return true
			}
		}
	}
	return false
}
