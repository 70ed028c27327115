package speculative

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// busyLog runs every kind of Steward call once and returns its log.
func busyLog(t *testing.T, opts ...Option) *trace.Log {
	t.Helper()
	ctx := context.Background()
	log := trace.NewMemoryLog()
	st, err := NewSteward(ctx, log, NewMemory(), opts...)
	require.NoError(t, err)
	_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "lane": "speculative"})
	require.Error(t, err)
	_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
	require.NoError(t, err)
	_, err = st.PersistHypothesis(ctx, "s1", Hypothesis{ClaimID: "c1", Content: "idea"}) // no proposition: soft failure
	require.NoError(t, err)
	require.NoError(t, st.RegisterProposition(ctx, "c1", map[string]any{"text": "t"}))
	_, err = st.PersistHypothesis(ctx, "s1", Hypothesis{ClaimID: "c1", Content: "idea"})
	require.NoError(t, err)
	id, err := st.ProposeStatus(ctx, "c1", StatusSupported, NonFragility{FeynmanPassed: true, SensitivityFailures: []string{}})
	require.NoError(t, err)
	require.NoError(t, st.Approve(ctx, id, Approval{By: "alice", Human: true}))
	_, err = st.Execute(ctx, id)
	require.NoError(t, err)
	id, err = st.ProposeStatus(ctx, "c1", StatusRefuted, NonFragility{})
	require.NoError(t, err)
	_, err = st.Execute(ctx, id)
	require.NoError(t, err)
	id, err = st.ProposeStatus(ctx, "c1", StatusSupported, NonFragility{})
	require.NoError(t, err)
	require.NoError(t, st.Reject(ctx, id, "not now"))
	h := sampleHints()
	_, err = st.Design(ctx, Claim{ID: h.ClaimID, Variables: []string{"pressure"}}, &h, "L1")
	require.NoError(t, err)
	return log
}

// TestDecodeEntryReadsEveryRecord: every entry the Steward records decodes
// as the type its kind names and encodes back to the same payload.
func TestDecodeEntryReadsEveryRecord(t *testing.T) {
	kinds := map[string]int{}
	for e, err := range busyLog(t).Entries(context.Background(), 0) {
		require.NoError(t, err)
		entry, err := DecodeEntry(e)
		require.NoError(t, err, "%s %s", e.Kind, e.Payload)
		assert.Equal(t, e.Kind, entry.kind())
		b, err := canon.Marshal(entry)
		require.NoError(t, err)
		assert.Equal(t, string(e.Payload), string(b))
		kinds[e.Kind]++
	}
	for _, k := range []string{KindIntent, KindApprove, KindReject, KindPersist, KindSoftFail, KindDesign} {
		assert.Positive(t, kinds[k], k)
	}
}

func TestDecodeEntryIsStrict(t *testing.T) {
	for _, tc := range []struct{ kind, payload string }{
		{"kernel.execute", `{}`},
		{KindIntent, `{"intent":"i","write":"evidence","extra":1}`},
		{KindIntent, `{"intent":"i","write":"poem"}`},
		{KindIntent, `{"intent":"i"}`},
		{KindIntent, `{"write":"evidence"}`},
		{KindIntent, `{"intent":"i","write":"status","to":"certain"}`},
		{KindPersist, `{"intent":"i","write":"status","direction":"sideways"}`},
		{KindPersist, `{"intent":"i","write":"evidence","digest":"00"}`},
		{KindApprove, `{"intent":"i","human":true}`},
		{KindReject, `{"intent":"i","write":"status","reasons":"no"}`},
		{KindDesign, `{"claim_id":"c","template_qid":"t@1.0.0"}`},
		{KindSoftFail, `{"intent":"i","write":"link","id":"h","claim_id":"c","reason":"r","reason":"s"}`},
	} {
		_, err := DecodeEntry(trace.Entry{Kind: tc.kind, Payload: []byte(tc.payload)})
		assert.ErrorIs(t, err, ErrMalformed, "%s %s", tc.kind, tc.payload)
	}
}

// TestStewardStampsEachCallWithOneInstant: a call reads the clock once;
// every entry it records carries that instant.
func TestStewardStampsEachCallWithOneInstant(t *testing.T) {
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	calls := 0
	clock := func() time.Time { calls++; return base.Add(time.Duration(calls) * time.Second) }
	n := 0
	log := busyLog(t, WithClock(clock), WithIDs(func() string { n++; return fmt.Sprintf("id-%d", n) }))
	seen := map[string]time.Time{} // intent → instant
	for e, err := range log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		assert.True(t, e.Time.After(base), "stamped by the steward's clock, not the log's")
		entry, err := DecodeEntry(e)
		require.NoError(t, err)
		var intent string
		switch x := entry.(type) {
		case IntentEntry:
			intent = x.Intent
		case PersistEntry:
			intent = x.Intent
		case RejectEntry:
			intent = x.Intent
		case SoftFailEntry:
			intent = x.Intent
		case ApproveEntry:
			if x.By != PolicyApprover {
				continue // a separate call
			}
			intent = x.Intent
		default:
			continue
		}
		if _, ok := seen[intent]; !ok || startsCall(entry) {
			seen[intent] = e.Time
			continue
		}
		assert.Equal(t, seen[intent], e.Time, "%s of %s", e.Kind, intent)
	}
	assert.Equal(t, 13, calls, "one clock reading per call")
}

// startsCall reports whether an entry starts a new call on an existing
// intent: a status intent is proposed, approved, executed or rejected in
// separate calls.
func startsCall(e Entry) bool {
	switch e := e.(type) {
	case PersistEntry:
		return e.Write == WriteKindStatus
	case RejectEntry:
		return e.Write == WriteKindStatus
	}
	return false
}
