package speculative

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

// failingStore is a trace.Store whose appends fail once ok of them have
// succeeded.
type failingStore struct {
	trace.Store
	ok int
}

func (s *failingStore) Append(ctx context.Context, es ...trace.Entry) error {
	if s.ok == 0 {
		return errors.New("disk full")
	}
	s.ok--
	return s.Store.Append(ctx, es...)
}

// refusingBackend answers every write with one of the package's own
// errors, as a backend may.
type refusingBackend struct{ *Memory }

func (refusingBackend) Apply(context.Context, Write) error { return ErrNotSteward }

// TestErrorsArePrefixedOnce walks the package's error paths: every message
// starts with "speculative: " and says it once, however many of the
// package's errors it wraps.
func TestErrorsArePrefixedOnce(t *testing.T) {
	ctx := context.Background()
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	second := func(_ any, err error) error { return err }

	// Detection.
	_, _, err := Detect(json.RawMessage(nest(MaxDepth+1, "1")))
	add(err)
	_, _, err = Detect(map[string]any{"c": make(chan int)})
	add(err)
	add(Check(map[string]any{"p": `{"lane":"speculative"}`}))

	// Evidence, specs, hints, statuses, promotion.
	for _, doc := range []string{
		`{"claim_id":"c1","payload":"{\"lane\":\"speculative\"}"}`,
		`{"entity_id":"e1","success":true}`,
		`{"claim_id":"c1","success":"yes","outcome":"maybe","variance":-1}`,
		`[1]`, `{"claim_id":`, nest(MaxDepth+1, "1"),
	} {
		add(second(DecodeEvidence([]byte(doc))))
	}
	for _, doc := range []string{
		`{"claim_id":"","template_qid":"Bad","params":{"l":[{"alternatives":1}]},"x":1}`,
		`{"a":1,"a":2}`, `[]`, `{"claim_id":"c","template_qid":"t@1.0.0","scope_lock_id":"L","params":` + nest(MaxDepth+1, "1") + `}`,
		`{"claim_id":"c","template_qid":"t@1.0.0","scope_lock_id":"L","params":{"x":"` + strings.Repeat("a", maxSpecBytes) + `"}}`,
	} {
		add(second(DecodeExperimentSpec([]byte(doc))))
	}
	var h ExperimentHints
	add(json.Unmarshal([]byte(`{"claim_id":"c","epistemic_status":"grounded"}`), &h))
	add(json.Unmarshal([]byte(`{"claim_id":"c","extra":1}`), &h))
	add(second(ExperimentHints{PriorSuggestions: []PriorSuggestion{{Params: map[string]float64{"x": math.NaN()}}}}.Digest()))
	add(second(ExtractHints(Brainstorm{})))
	add(second(Design(Claim{}, nil, "L")))
	add(second(Design(Claim{ID: "c"}, nil, " ")))
	add(second(Design(Claim{ID: "c"}, &ExperimentHints{ClaimID: "d"}, "L")))
	add(second(Design(Claim{ID: "c", Statement: "s", Variables: []string{`"alternatives"`}}, nil, "L")))
	add(second(ParseStatus("maybe")))
	add(second(Status(0).MarshalText()))
	add(second(Direction(0).MarshalText()))
	add(second(WriteKind(0).MarshalText()))
	var d Direction
	add(d.UnmarshalText([]byte("sideways")))
	var k WriteKind
	add(k.UnmarshalText([]byte("poem")))
	add(second(Promote(PromotionRequest{})))
	e, err := DecodeEvidence([]byte(`{"claim_id":"c2","success":true}`))
	require.NoError(t, err)
	add(second(Promote(PromotionRequest{ClaimID: "c1", From: StatusRefuted, To: StatusProven, Evidence: []Evidence{e}})))

	// Entries.
	add(second(DecodeEntry(trace.Entry{Kind: "kernel.execute", Payload: []byte(`{}`)})))
	add(second(DecodeEntry(trace.Entry{Kind: KindIntent, Payload: []byte(`{"intent":"i","write":"status","to":"maybe"}`)})))
	add(second(DecodeEntry(trace.Entry{Kind: KindIntent, Payload: []byte(`{"intent":"i","write":"poem"}`)})))
	add(second(DecodeEntry(trace.Entry{Kind: KindApprove, Payload: []byte(`{"intent":"i","by":" ","human":true}`)})))
	add(second(DecodeEntry(trace.Entry{Kind: KindDesign, Payload: []byte(`{"claim_id":"c"}`)})))

	// The Steward and the reference backend.
	add(NewMemory().Apply(ctx, Write{}))
	add(second(NewSteward(ctx, nil, NewMemory())))
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	add(second(NewSteward(canceled, trace.NewMemoryLog(), NewMemory())))
	r := newRig(t)
	add(second(r.st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "x": `{"lane":"speculative"}`})))
	add(second(r.st.PersistEvidence(ctx, map[string]any{"success": true})))
	add(r.st.RegisterProposition(ctx, " ", map[string]any{"text": "t"}))
	add(r.st.RegisterProposition(ctx, "c1", map[string]any{"lane": "speculative"}))
	add(r.st.RegisterProposition(ctx, "c1", map[string]any{"c": make(chan int)}))
	add(second(r.st.PersistHypothesis(ctx, " ", Hypothesis{Content: "x"})))
	add(second(r.st.PersistHypothesis(ctx, "s", Hypothesis{Content: []byte("not json")})))
	add(second(r.st.ProposeStatus(ctx, " ", StatusSupported, NonFragility{})))
	add(second(r.st.ProposeStatus(ctx, "c1", 0, NonFragility{})))
	add(r.st.Approve(ctx, "nope", Approval{By: "a"}))
	id, err := r.st.ProposeStatus(ctx, "c1", StatusProven, NonFragility{})
	require.NoError(t, err)
	add(r.st.Approve(ctx, id, Approval{}))
	add(second(r.st.Execute(ctx, id)))
	add(second(r.st.Execute(ctx, id)))
	add(r.st.Reject(ctx, id, "no"))

	refusing, err := NewSteward(ctx, trace.NewMemoryLog(), refusingBackend{NewMemory()})
	require.NoError(t, err)
	add(second(refusing.PersistEvidence(ctx, map[string]any{"claim_id": "c1"})))
	add(refusing.RegisterProposition(ctx, "c1", map[string]any{"text": "t"}))
	add(second(refusing.PersistHypothesis(ctx, "s", Hypothesis{Content: "x"})))
	id, err = refusing.ProposeStatus(ctx, "c1", StatusRefuted, NonFragility{})
	require.NoError(t, err)
	add(second(refusing.Execute(ctx, id)))

	for ok := range 2 {
		log, err := trace.NewLog(&failingStore{Store: trace.NewMemory(), ok: ok})
		require.NoError(t, err)
		st, err := NewSteward(ctx, log, NewMemory())
		require.NoError(t, err)
		add(second(st.PersistEvidence(ctx, map[string]any{"lane": "speculative"}))) // ok=1: the rejection is not recorded
		add(second(st.Design(ctx, Claim{ID: "c"}, nil, "L")))
	}

	// Restarts and Compare.
	add(Compare(ctx, nil, NewMemory()))
	full := newRig(t)
	_, err = full.st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true})
	require.NoError(t, err)
	add(Compare(ctx, full.log, NewMemory()))
	bad := trace.NewMemoryLog()
	_, err = bad.Append(ctx, KindIntent, []byte(`{"intent":"i"}`))
	require.NoError(t, err)
	add(second(NewSteward(ctx, bad, NewMemory())))
	add(Compare(ctx, bad, NewMemory()))

	for i, err := range errs {
		require.Error(t, err, "error path %d", i)
		msg := err.Error()
		assert.True(t, strings.HasPrefix(msg, prefix), "error path %d: %s", i, msg)
		assert.Equal(t, 1, strings.Count(msg, prefix), "error path %d: %s", i, msg)
	}
}

// TestWrappedErrorsKeepTheirSentinels: adding context never hides what
// errors.Is and errors.As find.
func TestWrappedErrorsKeepTheirSentinels(t *testing.T) {
	ctx := context.Background()
	st, err := NewSteward(ctx, trace.NewMemoryLog(), refusingBackend{NewMemory()})
	require.NoError(t, err)
	_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1"})
	assert.ErrorIs(t, err, ErrNotSteward)
	assert.Equal(t, "speculative: persisting evidence: write not issued by a steward", err.Error())

	log, err := trace.NewLog(&failingStore{Store: trace.NewMemory(), ok: 1})
	require.NoError(t, err)
	st, err = NewSteward(ctx, log, NewMemory())
	require.NoError(t, err)
	_, err = st.PersistEvidence(ctx, map[string]any{"lane": "speculative"})
	assert.ErrorIs(t, err, ErrSpeculative)
	assert.ErrorIs(t, err, ErrMissingClaimID)
	var se *SpeculativeError
	assert.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "recording speculative.reject")
}
