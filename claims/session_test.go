// The Session: the guarantees of the shell and the tests that check them
// (the record form and the property over any input are in record_test.go).
//
//   - Every decision the Session returns is on the log, and one that could
//     not be recorded is not returned: TestSessionRecordsEvaluationsAndApprovals,
//     TestSessionReturnsNoUnrecordedDecision, TestSessionConcurrentUse.
//   - One clock: a single reading stamps what a step records and its trace
//     entry; a reading no entry can hold is an error and nothing is
//     recorded: TestSessionStampsRecordAndEntryWithOneInstant,
//     TestSessionRefusesAClockItCannotRecord.
//   - A bad setup or context is an error: TestSessionRejectsBadSetup;
//     DecodeRecord is strict: TestDecodeRecordRejects.

package claims

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/trace"
)

func fixedClock() func() time.Time {
	var mu sync.Mutex
	now := t0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

func entries(t *testing.T, log *trace.Log) []trace.Entry {
	t.Helper()
	var out []trace.Entry
	for e, err := range log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func TestSessionRecordsEvaluationsAndApprovals(t *testing.T) {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	s, err := NewSession(context.Background(), log, approverPolicy(), WithClock(fixedClock()))
	require.NoError(t, err)
	c := Context{Actor: "ops-agent", Clearance: TierPrivilege}

	// A bundle without ids gets UUIDv7 ids and the session's time.
	in := ClaimBundle{OriginAgent: "planner", Claims: []Claim{mkClaim("", ClaimDecision, TierDelete, 0.1, RecommendExecute)}}
	ev, err := s.Evaluate(ctx, in, c)
	require.NoError(t, err)
	require.Equal(t, DecisionEscalate, ev.Decision)
	id, err := uuid.Parse(ev.Bundle.ID)
	require.NoError(t, err)
	assert.Equal(t, uuid.Version(7), id.Version())
	assert.NotEmpty(t, ev.Bundle.Claims[0].ID)
	assert.Equal(t, t0.Add(time.Second), ev.Bundle.Timestamp)

	_, err = s.Approve(ctx, ev.Bundle, c, "mallory", ApprovalApproved, "me")
	require.ErrorIs(t, err, ErrNotRequired)
	ev2, err := s.Approve(ctx, ev.Bundle, c, "dba", ApprovalApproved, "checked backup")
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev2.Decision)
	assert.Equal(t, []Approval{{Approver: "dba", Timestamp: t0.Add(3 * time.Second), Decision: ApprovalApproved, Reason: "checked backup"}},
		ev2.Bundle.AuditTrail.HumanApprovals)

	es := entries(t, log)
	require.Len(t, es, 2, "a rejected approval is not recorded")
	_, err = log.Verify(ctx)
	require.NoError(t, err)
	assert.Equal(t, es[1].Seq, ev2.Seq, "an evaluation names its entry")
	ev3, err := s.Evaluate(ctx, in, c)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), ev3.Seq)
	assert.Equal(t, KindEvaluate, es[0].Kind)
	assert.Equal(t, KindApprove, es[1].Kind)

	r0, err := DecodeRecord(es[0].Payload)
	require.NoError(t, err)
	assert.Equal(t, Record{Actor: "ops-agent", Clearance: TierPrivilege, Bundle: ev.Bundle}, r0)
	r1, err := DecodeRecord(es[1].Payload)
	require.NoError(t, err)
	require.NotNil(t, r1.Approval)
	assert.Equal(t, ev2.Bundle.AuditTrail.HumanApprovals[0], *r1.Approval)
	assert.Equal(t, ev2.Bundle, r1.Bundle)
	// Replaying the log: re-evaluating the recorded input reproduces the
	// recorded decision.
	replayed, err := Evaluate(r1.Bundle, approverPolicy(), Context{Actor: r1.Actor, Clearance: r1.Clearance})
	require.NoError(t, err)
	assert.Equal(t, r1.Bundle, replayed.Bundle)
}

func TestSessionRejectsBadSetup(t *testing.T) {
	_, err := NewSession(context.Background(), nil, DefaultPolicy())
	assert.ErrorIs(t, err, ErrNoLog)
	_, err = NewSession(context.Background(), trace.NewMemoryLog(), Policy{ExecuteMax: 1, ExplainMax: 0})
	assert.ErrorIs(t, err, ErrInvalidPolicy)
	s, err := NewSession(context.Background(), trace.NewMemoryLog(), DefaultPolicy())
	require.NoError(t, err)
	_, err = s.Evaluate(context.Background(), mkBundle(fact("a")), Context{Clearance: "root"})
	assert.ErrorIs(t, err, ErrInvalidContext)
}

// failingStore refuses every append.
type failingStore struct{ *trace.Memory }

var errDisk = errors.New("disk full")

func (failingStore) Append(context.Context, ...trace.Entry) error { return errDisk }

func TestSessionReturnsNoUnrecordedDecision(t *testing.T) {
	ctx := context.Background()
	log, err := trace.NewLog(failingStore{trace.NewMemory()})
	require.NoError(t, err)
	store := NewMemoryPending()
	s, err := NewSession(ctx, log, approverPolicy(), WithIDs(func() string { return "id" }), WithPending(store))
	require.NoError(t, err)
	ev, err := s.Evaluate(ctx, mkBundle(fact("a")), clearance(TierReadOnly))
	require.ErrorIs(t, err, errDisk)
	assert.Equal(t, Evaluation{}, ev)

	pending, err := Evaluate(mkBundle(mkClaim("d", ClaimDecision, TierDelete, 0, RecommendExecute)), approverPolicy(), clearance(TierDelete))
	require.NoError(t, err)
	require.NoError(t, store.Put(ctx, Pending{Bundle: pending.Bundle, Context: clearance(TierDelete)}))
	ev, err = s.Approve(ctx, pending.Bundle, clearance(TierDelete), "dba", ApprovalApproved, "")
	require.ErrorIs(t, err, errDisk)
	assert.Equal(t, Evaluation{}, ev)
	p, err := store.Get(ctx, pending.Bundle.ID)
	require.NoError(t, err, "an approval that was not recorded leaves the bundle waiting")
	assert.Empty(t, p.Bundle.AuditTrail.HumanApprovals)
}

func TestSessionConcurrentUse(t *testing.T) {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	s, err := NewSession(context.Background(), log, DefaultPolicy())
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				_, err := s.Evaluate(ctx, mkBundle(fact(fmt.Sprintf("c%d-%d", i, j))), clearance(TierReadOnly))
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	h, err := log.Verify(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(80), h.Size)
}

func TestDecodeRecordRejects(t *testing.T) {
	for _, in := range []string{`{}`, `{"actor":"a","clearance":"READ_ONLY"}`, `[]`, `{"actor":"a","clearance":"ROOT","bundle":{"origin_agent":"a","claims":[]}}`,
		`{"actor":"a","clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[]},"x":1}`,
		`{"actor":"a","clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[],"x":1}}`,
		`{"actor":"a","clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[]}} {}`,
		// Strict like DecodeBundle: exact member names, no duplicate keys,
		// nothing after the value.
		`{"Actor":"a","clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[]}}`,
		`{"actor":"a","CLEARANCE":"READ_ONLY","bundle":{"origin_agent":"a","claims":[]}}`,
		`{"actor":"a","clearance":"READ_ONLY","Bundle":{"origin_agent":"a","claims":[]}}`,
		`{"actor":"a","actor":"b","clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[]}}`,
		`{"actor":"a","clearance":"READ_ONLY","clearance":"PRIVILEGE","bundle":{"origin_agent":"a","claims":[]}}`,
		`{"actor":"a","clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[]}} }`,
		`{"actor":"a","clearance":"READ_ONLY","bundle":null}`,
		`{"actor":1,"clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[]}}`,
		`{"actor":"a","clearance":"READ_ONLY","approval":{"approver":"x"},"bundle":{"origin_agent":"a","claims":[]}}`} {
		_, err := DecodeRecord([]byte(in))
		assert.ErrorIs(t, err, ErrMalformed, in)
	}
}

// TestSessionStampsRecordAndEntryWithOneInstant: one clock reading per
// step stamps both what the step records (a bundle's missing timestamp,
// an approval's time) and the trace entry that records it.
func TestSessionStampsRecordAndEntryWithOneInstant(t *testing.T) {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	s, err := NewSession(ctx, log, approverPolicy(), WithClock(fixedClock()))
	require.NoError(t, err)
	c := Context{Actor: "ops-agent", Clearance: TierDelete}
	in := ClaimBundle{OriginAgent: "planner", Claims: []Claim{mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute)}}
	ev, err := s.Evaluate(ctx, in, c)
	require.NoError(t, err)
	ev2, err := s.Approve(ctx, ev.Bundle, c, "dba", ApprovalApproved, "")
	require.NoError(t, err)

	es := entries(t, log)
	require.Len(t, es, 2)
	assert.Equal(t, t0.Add(time.Second), ev.Bundle.Timestamp)
	assert.Equal(t, ev.Bundle.Timestamp, es[0].Time)
	assert.Equal(t, t0.Add(2*time.Second), ev2.Bundle.AuditTrail.HumanApprovals[0].Timestamp)
	assert.Equal(t, ev2.Bundle.AuditTrail.HumanApprovals[0].Timestamp, es[1].Time)
}

// TestSessionRefusesAClockItCannotRecord: the zero time and instants
// outside the years 0000-9999 cannot stamp a trace entry; the Session
// returns an error and records nothing.
func TestSessionRefusesAClockItCannotRecord(t *testing.T) {
	ctx := context.Background()
	for _, at := range []time.Time{{}, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		log := trace.NewMemoryLog()
		s, err := NewSession(ctx, log, DefaultPolicy(), WithClock(func() time.Time { return at }))
		require.NoError(t, err)
		ev, err := s.Evaluate(ctx, mkBundle(fact("a")), clearance(TierReadOnly))
		require.ErrorIs(t, err, trace.ErrMalformed, "%v", at)
		assert.Equal(t, Evaluation{}, ev)
		assert.Empty(t, entries(t, log))
	}
}
