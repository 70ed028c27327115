package kernel_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// recordedRun runs a session through a start, an execution, a rejection
// and a rollback, with the session's clock ticking a second per reading
// and the log's own clock far away, and returns what it recorded.
func recordedRun(t testing.TB) (entries []trace.Entry, rec kernel.Record, rr kernel.RollbackRecord, clock []time.Time) {
	k := mustKernel(t, kernel.Config{
		Budget: 10 * kernel.Unit, MinActionCost: kernel.Unit,
		Invariants:       []kernel.Invariant{nonNegative("x"), {Name: "l short", Enforcement: kernel.EnforcementMonitoring, Check: func(s kernel.State) bool { v, _ := s.Get("l"); return v.Len() < 3 }}},
		Preconditions:    []kernel.Precondition{{Name: "any", Check: func(kernel.State, kernel.Action) bool { return true }}},
		EmergencyActions: []string{"hover", "land"},
	})
	logTime := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)
	log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(func() time.Time { return logTime }))
	require.NoError(t, err)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))
	tick := func() time.Time {
		now = now.Add(time.Second)
		clock = append(clock, now)
		return now
	}
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, map[string]any{"x": 0, "l": []any{1, 1}}), kernel.WithSessionID("s1"), kernel.WithClock(tick))
	require.NoError(t, err)
	a := kernel.Action{ID: "act", Name: "n", Description: "d", Cost: 1500, Category: "c", Tags: []string{"t"},
		Effects: []kernel.Effect{kernel.Append("l", value.Int(1)), kernel.Set("f", value.Float(2))}}
	rec, err = sess.Execute(ctx, a)
	require.NoError(t, err)
	_, err = sess.Execute(ctx, kernel.Action{ID: "bad", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Set("x", value.Int(-1))}})
	require.ErrorIs(t, err, kernel.CheckInvariant)
	rr, err = sess.Rollback(ctx, rec.ExecID)
	require.NoError(t, err)
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		entries = append(entries, e)
	}
	require.Len(t, entries, 4)
	return entries, rec, rr, clock
}

// TestSessionRecordsEveryTransition: every start, execution, rejection
// and rollback is one entry whose typed payload (DecodeEntry) holds all
// of its fields, and re-encodes to the recorded bytes exactly.
func TestSessionRecordsEveryTransition(t *testing.T) {
	entries, rec, rr, _ := recordedRun(t)
	var kinds []string
	var decoded []kernel.Entry
	for _, e := range entries {
		require.NoError(t, canon.Valid(e.Payload), "payloads are canonical")
		kinds = append(kinds, e.Kind)
		x, err := kernel.DecodeEntry(e)
		require.NoError(t, err, "%s", e.Payload)
		decoded = append(decoded, x)
		assert.Equal(t, string(e.Payload), string(kernel.EntryPayload(x)), "the typed entry re-encodes to the recorded bytes")
	}
	assert.Equal(t, []string{kernel.KindStart, kernel.KindExecute, kernel.KindReject, kernel.KindRollback}, kinds)

	start := decoded[0].(kernel.StartEntry)
	assert.Equal(t, "s1", start.Session)
	assert.Equal(t, []string{"hover", "land"}, start.Emergency)
	assert.Equal(t, []string{"any"}, start.Preconditions)
	assert.Equal(t, kernel.EnforcementMonitoring, start.Invariants[1].Enforcement)
	assert.Equal(t, uint64(10), start.MaxSteps)
	assert.Equal(t, `{"l":[1,1],"x":0}`, start.State.String())

	exec := decoded[1].(kernel.ExecuteEntry)
	for i := range rec.Warnings {
		rec.Warnings[i].Err = nil // an error is recorded as its Reason
	}
	assert.Equal(t, kernel.ExecuteEntry{Session: "s1", Record: rec}, exec, "the recorded execution is the Record, exactly (the float 2 stays a float)")
	assert.Equal(t, kernel.BudgetSnapshot{Limit: 10 * kernel.Unit, Gross: 1500}, exec.Budget)
	require.Len(t, exec.Warnings, 1)

	rej := decoded[2].(kernel.RejectEntry)
	assert.Len(t, rej.Checks, 8, "every check of the verdict is recorded")
	assert.Equal(t, "bad", rej.Action.ID)
	assert.Equal(t, rec.After, rej.State)

	rb := decoded[3].(kernel.RollbackEntry)
	assert.Equal(t, kernel.RollbackEntry{Session: "s1", RollbackRecord: rr}, rb)
	assert.Equal(t, kernel.Cost(1500), rb.Refund)
	assert.Equal(t, rec.Before, rb.After)
}

// TestSessionStampsOneInstant: the session's clock, not the log's, stamps
// each entry, and the Record or RollbackRecord it returns carries the
// same instant as its entry.
func TestSessionStampsOneInstant(t *testing.T) {
	entries, rec, rr, clock := recordedRun(t)
	require.Len(t, clock, len(entries))
	for i, e := range entries {
		assert.True(t, e.Time.Equal(clock[i]), "entry %d stamped %v, session clock read %v", i, e.Time, clock[i])
	}
	assert.Equal(t, entries[1].Time, rec.Time)
	assert.Equal(t, entries[3].Time, rr.Time)
	assert.Equal(t, time.UTC, rec.Time.Location(), "the instant as the log stores it")
}

// TestDecodeEntryIsStrict: an unknown or missing member, a count or cost
// written another way, an unknown status and an unknown kind are errors
// wrapping ErrDecode.
func TestDecodeEntryIsStrict(t *testing.T) {
	entries, _, _, _ := recordedRun(t)
	for _, tc := range []struct {
		name     string
		entry    int
		old, new string
	}{
		{"unknown member", 1, `{"action":`, `{"extra":1,"action":`},
		{"missing member", 1, `"emergency":false,`, ``},
		{"count as a string", 1, `"steps":1`, `"steps":"1"`},
		{"cost as a number", 3, `"refund":"1.5"`, `"refund":1.5`},
		{"cost not as written", 3, `"refund":"1.5"`, `"refund":"1.50"`},
		{"unknown status", 2, `"status":"failed"`, `"status":"fine"`},
		{"unknown enforcement", 0, `"enforcement":"monitoring"`, `"enforcement":"loud"`},
		{"fingerprint in upper case", 3, `"after":"`, `"after":"A`},
		{"duplicate member", 1, `{"action":`, `{"steps":1,"action":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := entries[tc.entry]
			p := string(e.Payload)
			require.Contains(t, p, tc.old)
			e.Payload = []byte(strings.Replace(p, tc.old, tc.new, 1))
			_, err := kernel.DecodeEntry(e)
			require.ErrorIs(t, err, kernel.ErrDecode)
		})
	}
	e := entries[1]
	e.Kind = "kernel.other"
	_, err := kernel.DecodeEntry(e)
	require.ErrorIs(t, err, kernel.ErrDecode)
}

// FuzzDecodeEntry: no payload makes DecodeEntry panic, and what it
// accepts re-encodes to canonical JSON that decodes to the same entry.
func FuzzDecodeEntry(f *testing.F) {
	entries, _, _, _ := recordedRun(f)
	kinds := []string{kernel.KindStart, kernel.KindExecute, kernel.KindReject, kernel.KindRollback, kernel.KindReserve, kernel.KindSettle, kernel.KindRefund}
	for i, e := range entries {
		f.Add(uint8(i), e.Payload)
	}
	f.Add(uint8(2), []byte(`{"action":{"id":""},"budget":{"gross":"0","limit":"1","refunded":"0"},"checks":[],"emergency":false,"session":"","state":"`+strings.Repeat("0", 64)+`","steps":9007199254740991}`))
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte) {
		checkDecodeReencodes(t, trace.Entry{Kind: kinds[int(kind)%len(kinds)], Payload: payload})
	})
}

// toolCallRun records a reservation with an input that canonical JSON
// refuses, a settlement with an overrun, a refund, a rejection with a
// binary input and an execution with an input beyond the input limit.
func toolCallRun(t testing.TB) []trace.Entry {
	k := mustKernel(t, kernel.Config{Budget: 3 * kernel.Unit, MinActionCost: 1})
	log := fixedClockLog(t)
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, nil), kernel.WithInputLimit(40))
	require.NoError(t, err)
	a := callAction("search", kernel.Unit)
	a.Input = []byte(`{"n":1152921504606846976,"n":1}`)
	rec, err := sess.Reserve(ctx, a)
	require.NoError(t, err)
	_, err = sess.Settle(ctx, rec.ExecID, 3*kernel.Unit)
	require.ErrorIs(t, err, kernel.ErrOverrun)
	_, err = sess.Refund(ctx, rec.ExecID, kernel.Unit, "the search timed out")
	require.NoError(t, err)
	a.Input, a.Cost = []byte("\xff\x00binary"), 5*kernel.Unit
	_, err = sess.Execute(ctx, a)
	require.ErrorIs(t, err, kernel.CheckBudget)
	a.Input, a.Cost = []byte(strings.Repeat("long ", 20)), 1
	_, err = sess.Execute(ctx, a)
	require.NoError(t, err)
	var entries []trace.Entry
	for e, err := range log.Entries(ctx, 1) {
		require.NoError(t, err)
		entries = append(entries, e)
	}
	return entries
}

// FuzzDecodeToolCallEntry is FuzzDecodeEntry for the entries of tool
// calls: reservations, settlements, refunds, and executions and
// rejections with an input.
func FuzzDecodeToolCallEntry(f *testing.F) {
	kinds := []string{kernel.KindReserve, kernel.KindSettle, kernel.KindRefund, kernel.KindReject, kernel.KindExecute}
	for _, e := range toolCallRun(f) {
		f.Add(uint8(slices.Index(kinds, e.Kind)), e.Payload)
	}
	f.Fuzz(func(t *testing.T, kind uint8, payload []byte) {
		checkDecodeReencodes(t, trace.Entry{Kind: kinds[int(kind)%len(kinds)], Payload: payload})
	})
}

// TestSessionReplaysInputsOfAnySize: an Input beyond the trace's payload
// limit is recorded by its digest and size alone, and the entries (an
// execution and a rejection) decode and replay; a size a JSON number
// cannot hold exactly is refused.
func TestSessionReplaysInputsOfAnySize(t *testing.T) {
	k := mustKernel(t, kernel.Config{Budget: units(10), MinActionCost: 1})
	log := fixedClockLog(t)
	sess, err := kernel.NewSession(ctx, log, k, mustState(t, nil))
	require.NoError(t, err)
	a := callAction("upload", units(1))
	a.Input = make([]byte, trace.MaxPayloadLen+1)
	_, err = sess.Execute(ctx, a)
	require.NoError(t, err)
	a.Cost = units(20)
	_, err = sess.Execute(ctx, a)
	require.ErrorIs(t, err, kernel.CheckBudget)
	_, err = kernel.Replay(ctx, log, k, "")
	require.NoError(t, err)

	e := lastEntry(t, log)
	size := fmt.Sprintf(`"size":%d`, trace.MaxPayloadLen+1)
	require.Contains(t, string(e.Payload), size)
	for text, ok := range map[string]bool{`"size":9007199254740991`: true, `"size":"9007199254740992"`: false} {
		e.Payload = []byte(strings.Replace(string(e.Payload), size, text, 1))
		_, err := kernel.DecodeEntry(e)
		assert.Equal(t, ok, err == nil, "%s: %v", text, err)
		size = text
	}
}

// checkDecodeReencodes: a payload DecodeEntry accepts re-encodes to
// canonical JSON that decodes again to the same bytes.
func checkDecodeReencodes(t *testing.T, e trace.Entry) {
	t.Helper()
	x, err := kernel.DecodeEntry(e)
	if err != nil {
		return
	}
	once := kernel.EntryPayload(x)
	if err := canon.Valid(once); err != nil {
		t.Fatalf("re-encoded %s is not canonical: %v", once, err)
	}
	e.Payload = once
	y, err := kernel.DecodeEntry(e)
	if err != nil {
		t.Fatalf("re-encoded %s does not decode: %v", once, err)
	}
	if twice := kernel.EntryPayload(y); string(twice) != string(once) {
		t.Fatalf("not stable:\n%s\n%s", once, twice)
	}
}
