/*
This file checks the Steward:

	only the Steward writes (Guard 3)                         TestGuard3OnlyStewardWrites (and backendtest.Run)
	hypotheses are session-scoped, never evidence (Guard 4)   TestGuard4HypothesesAreSessionScoped
	random call sequences match a naive model                 TestStewardStateMachine
	only the hints digest is recorded; hints never travel     TestDesignRecordsOnlyTheDigest, TestDesignNothingOfHintsSurvives

Its entries and clock are checked in entry_test.go, its errors in
errors_test.go.
*/

package speculative

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// TestGuard3OnlyStewardWrites: a Write can only come from a Steward. The
// zero Write — the only one code outside the package can build — is
// refused by the reference backend, and nothing is stored.
func TestGuard3OnlyStewardWrites(t *testing.T) {
	mem := NewMemory()
	require.ErrorIs(t, mem.Apply(context.Background(), Write{}), ErrNotSteward)
	ev, hy, links, props := mem.counts()
	assert.Zero(t, ev+hy+links+props)
	_, err := NewSteward(context.Background(), trace.NewMemoryLog(), nil)
	require.ErrorIs(t, err, ErrMalformed)
	_, err = NewSteward(context.Background(), nil, mem)
	require.ErrorIs(t, err, ErrMalformed)
}

// TestGuard4HypothesesAreSessionScoped: no session, no hypothesis; one
// session never sees another's.
func TestGuard4HypothesesAreSessionScoped(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, err := r.st.PersistHypothesis(ctx, " ", Hypothesis{Content: "x"})
	require.ErrorIs(t, err, ErrSession)
	_, err = r.st.PersistHypothesis(ctx, "s1", Hypothesis{Content: map[string]any{"bad": make(chan int)}})
	require.ErrorIs(t, err, ErrMalformed)
	_, err = r.st.PersistHypothesis(ctx, "s1", Hypothesis{Content: []byte(`{"idea": 1}`)})
	require.NoError(t, err)
	_, err = r.st.PersistHypothesis(ctx, "s1", Hypothesis{Content: []byte(`not json`)})
	require.ErrorIs(t, err, ErrMalformed)
	_, err = r.st.PersistHypothesis(ctx, "s1", Hypothesis{Content: "idea one"})
	require.NoError(t, err)
	_, err = r.st.PersistHypothesis(ctx, "s2", Hypothesis{Content: "idea two"})
	require.NoError(t, err)
	h1, _ := r.st.Hypotheses(ctx, "s1")
	h2, _ := r.st.Hypotheses(ctx, "s2")
	require.Len(t, h1, 2)
	require.Len(t, h2, 1)
	assert.Equal(t, `{"idea":1}`, string(h1[0].Document))
	assert.Equal(t, `"idea one"`, string(h1[1].Document))
	assert.Equal(t, `"idea two"`, string(h2[0].Document))
}

func TestRegisterPropositionGuards(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	require.ErrorIs(t, r.st.RegisterProposition(ctx, "c1", map[string]any{"lane": "speculative"}), ErrSpeculative)
	require.ErrorIs(t, r.st.RegisterProposition(ctx, "", map[string]any{"text": "t"}), ErrMissingClaimID)
	require.NoError(t, r.st.RegisterProposition(ctx, "c1", map[string]any{"text": "t"}))
	_, _, _, props := r.mem.counts()
	assert.Equal(t, 1, props)
}

// TestStatusLifecycle walks a claim through the promotion policy and checks
// what the log says.
func TestStatusLifecycle(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	checks := NonFragility{FeynmanPassed: true}
	human := Approval{By: "alice", Human: true}

	// An unapproved upgrade is refused and the intent is spent.
	id, err := r.st.ProposeStatus(ctx, "c1", StatusSupported, checks)
	require.NoError(t, err)
	_, err = r.st.Execute(ctx, id)
	require.ErrorIs(t, err, ErrPromotion)
	assert.NotContains(t, r.st.intents, id, "a finished intent is forgotten")
	_, err = r.st.Execute(ctx, id)
	require.ErrorIs(t, err, ErrIntent)

	_, err = r.st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
	require.NoError(t, err)
	id, _ = r.st.ProposeStatus(ctx, "c1", StatusSupported, checks)
	require.NoError(t, r.st.Approve(ctx, id, human))
	require.ErrorIs(t, r.st.Approve(ctx, id, human), ErrIntent, "approved once")
	tr, err := r.st.Execute(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, Transition{ClaimID: "c1", From: StatusSpeculative, To: StatusSupported, Direction: DirectionUpgrade, Derived: StatusSupported, Evidence: tr.Evidence}, tr)
	st, _ := r.st.Status(ctx, "c1")
	assert.Equal(t, StatusSupported, st)

	// A downgrade needs no approval and is recorded.
	id, _ = r.st.ProposeStatus(ctx, "c1", StatusRefuted, NonFragility{})
	tr, err = r.st.Execute(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, DirectionDowngrade, tr.Direction)
	es := r.entries(t)
	last := es[len(es)-1]
	assert.Equal(t, KindPersist, last.Kind)
	assert.Equal(t, "downgrade", last.Payload["direction"])

	// Leaving refuted: the old evidence does not count as new, ...
	id, _ = r.st.ProposeStatus(ctx, "c1", StatusSupported, checks)
	require.NoError(t, r.st.Approve(ctx, id, human))
	_, err = r.st.Execute(ctx, id)
	require.ErrorIs(t, err, ErrPromotion)
	assert.Contains(t, err.Error(), "new evidence")
	// ... new evidence with a policy approval is not enough either, ...
	_, err = r.st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.02, "run": 2})
	require.NoError(t, err)
	id, _ = r.st.ProposeStatus(ctx, "c1", StatusSupported, checks)
	require.NoError(t, r.st.Approve(ctx, id, Approval{By: "bot"}))
	_, err = r.st.Execute(ctx, id)
	require.ErrorIs(t, err, ErrPromotion)
	assert.Contains(t, err.Error(), "human")
	// ... new evidence and a human approval is.
	id, _ = r.st.ProposeStatus(ctx, "c1", StatusSupported, checks)
	require.NoError(t, r.st.Approve(ctx, id, human))
	_, err = r.st.Execute(ctx, id)
	require.NoError(t, err)

	// Rejected intents cannot be executed.
	id, _ = r.st.ProposeStatus(ctx, "c1", StatusProven, checks)
	require.NoError(t, r.st.Reject(ctx, id, "not yet"))
	_, err = r.st.Execute(ctx, id)
	require.ErrorIs(t, err, ErrIntent)
	require.ErrorIs(t, r.st.Approve(ctx, "nope", human), ErrIntent)

	// Every intent, approval, rejection and persisted artifact is in the log.
	counts := map[string]int{}
	for _, e := range r.entries(t) {
		counts[e.Kind]++
	}
	assert.Equal(t, map[string]int{KindIntent: 9, KindApprove: 6, KindReject: 4, KindPersist: 5}, counts)
}

// TestDesignRecordsOnlyTheDigest: the audit trail of a design holds the
// hints digest and never their content.
func TestDesignRecordsOnlyTheDigest(t *testing.T) {
	r := newRig(t)
	h := sampleHints()
	spec, err := r.st.Design(context.Background(), sampleClaim(), &h, "L1")
	require.NoError(t, err)
	assert.Equal(t, TemplateSensitivitySuite, spec.TemplateQID)
	es := r.entries(t)
	require.Len(t, es, 1)
	assert.Equal(t, KindDesign, es[0].Kind)
	assert.Equal(t, sampleHintsDigest, es[0].Payload["hints_digest"])
	for e, err := range r.log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		assert.NotContains(t, string(e.Payload), "impurities")
		assert.NotContains(t, string(e.Payload), "meteorology")
	}
}

// TestDesignNothingOfHintsSurvives: whatever the hints say, no string of
// theirs that the claim does not itself contain reaches the spec, and the
// spec always passes its own validation.
func TestDesignNothingOfHintsSurvives(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		word := rapid.StringMatching(`[b-dz][a-z]{2,6}`)
		claim := Claim{ID: "c", Statement: "s", Variables: rapid.SliceOfN(word, 0, 4).Draw(t, "vars")}
		hintWord := rapid.StringMatching(`hint[a-z]{1,6}`)
		h := ExperimentHints{
			ClaimID:                   "c",
			CandidateMechanisms:       rapid.SliceOfN(hintWord, 0, 3).Draw(t, "cm"),
			DiscriminativePredictions: rapid.SliceOfN(hintWord, 0, 3).Draw(t, "dp"),
			FalsificationCriteria:     rapid.SliceOfN(hintWord, 0, 3).Draw(t, "fc"),
			SensitivityAxes:           append(rapid.SliceOfN(hintWord, 0, 2).Draw(t, "ax"), rapid.SliceOfN(word, 0, 2).Draw(t, "axv")...),
			PriorSuggestions:          []PriorSuggestion{{Parameter: hintWord.Draw(t, "pp"), Distribution: "hintnormal", Params: map[string]float64{"hintmu": 3.25}}},
		}
		spec, err := Design(claim, &h, "L")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(spec)
		if strings.Contains(string(b), "hint") || strings.Contains(string(b), "3.25") {
			t.Fatalf("hint content in spec: %s", b)
		}
		if isSpeculative(json.RawMessage(b)) {
			t.Fatalf("spec is speculative: %s", b)
		}
		wantSuite := slices.ContainsFunc(claim.Variables, func(v string) bool { return slices.Contains(h.SensitivityAxes, v) })
		if wantSuite != (spec.TemplateQID == TemplateSensitivitySuite) {
			t.Fatalf("template %s for %+v", spec.TemplateQID, h.SensitivityAxes)
		}
	})
}

// stewardModel is a deliberately naive model of a Steward over one claim.
type stewardModel struct {
	evidence   []string // canonical documents of clean evidence, in order, no repeats
	hypotheses map[string]int
	status     Status
	known      []string // evidence on record when the status was last set
	intents    map[string]*modelIntent
	props      bool
}

type modelIntent struct {
	to       Status
	feynman  bool
	approved bool
	human    bool
	state    intentState
}

func (m *stewardModel) allowed(in *modelIntent) bool {
	from := m.status
	if in.to <= from {
		return true
	}
	var ok []Evidence
	fresh := false
	for _, d := range m.evidence {
		e, _ := evidenceOf([]byte(d))
		if e.Success() {
			ok = append(ok, e)
			if !slices.Contains(m.known, d) {
				fresh = true
			}
		}
	}
	if from == StatusSpeculative && in.to == StatusProven {
		return false
	}
	if len(ok) == 0 || DeriveStatus(ok) < in.to || !in.feynman || !in.approved {
		return false
	}
	return from != StatusRefuted || (fresh && in.human)
}

// TestStewardStateMachine runs random sequences of Steward calls against
// the naive model: stored evidence is exactly the clean evidence submitted,
// speculative evidence is never stored, statuses follow the policy, and
// the log always verifies.
func TestStewardStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newRig(t)
		ctx := context.Background()
		m := &stewardModel{hypotheses: map[string]int{}, status: StatusSpeculative, intents: map[string]*modelIntent{}}
		var ids []string
		// pick favours the latest intent, so that propose → approve →
		// execute chains (and the states they lead to) are common.
		pick := func(t *rapid.T) string {
			if rapid.Bool().Draw(t, "latest") {
				return ids[len(ids)-1]
			}
			return rapid.SampledFrom(ids).Draw(t, "id")
		}
		t.Repeat(map[string]func(*rapid.T){
			"evidence": func(t *rapid.T) {
				doc := map[string]any{"claim_id": "c", "success": rapid.Bool().Draw(t, "success"),
					"variance": rapid.SampledFrom([]float64{0, 0.05, 0.5}).Draw(t, "variance"),
					"outcome":  rapid.SampledFrom([]string{"supports", "supports", "contradicts", "refutes"}).Draw(t, "outcome"),
					"run":      float64(rapid.IntRange(0, 3).Draw(t, "run"))}
				spec := rapid.IntRange(0, 3).Draw(t, "speculative") == 0
				if spec {
					doc["notes"] = `{"lane":"speculative"}`
				}
				_, err := r.st.PersistEvidence(ctx, doc)
				if spec != (err != nil) {
					t.Fatalf("speculative=%v err=%v", spec, err)
				}
				if !spec {
					b, _ := canonJSON(doc)
					if !slices.Contains(m.evidence, b) {
						m.evidence = append(m.evidence, b)
					}
				}
			},
			"hypothesis": func(t *rapid.T) {
				s := rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "session")
				rc, err := r.st.PersistHypothesis(ctx, s, Hypothesis{ClaimID: "c", Content: map[string]any{"alternatives": []any{"x"}}})
				if err != nil {
					t.Fatal(err)
				}
				if (rc.PropositionLinks.Created == 1) != m.props {
					t.Fatalf("link created=%d with proposition=%v", rc.PropositionLinks.Created, m.props)
				}
				m.hypotheses[s]++
			},
			"proposition": func(t *rapid.T) {
				if err := r.st.RegisterProposition(ctx, "c", map[string]any{"text": "t"}); err != nil {
					t.Fatal(err)
				}
				m.props = true
			},
			"propose": func(t *rapid.T) {
				to := rapid.SampledFrom(statuses()).Draw(t, "to")
				feynman := rapid.Bool().Draw(t, "feynman")
				id, err := r.st.ProposeStatus(ctx, "c", to, NonFragility{FeynmanPassed: feynman})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
				m.intents[id] = &modelIntent{to: to, feynman: feynman, state: intentPending}
			},
			"approve": func(t *rapid.T) {
				if len(ids) == 0 {
					t.Skip()
				}
				id := pick(t)
				human := rapid.Bool().Draw(t, "human")
				err := r.st.Approve(ctx, id, Approval{By: "a", Human: human})
				in := m.intents[id]
				if (in.state == intentPending) != (err == nil) {
					t.Fatalf("approve in state %v: %v", in.state, err)
				}
				if err == nil {
					in.approved, in.human, in.state = true, human, intentApproved
				}
			},
			"reject": func(t *rapid.T) {
				if len(ids) == 0 {
					t.Skip()
				}
				id := pick(t)
				err := r.st.Reject(ctx, id, "no")
				in := m.intents[id]
				open := in.state == intentPending || in.state == intentApproved
				if open != (err == nil) {
					t.Fatalf("reject in state %v: %v", in.state, err)
				}
				if err == nil {
					in.state = intentRejected
				}
			},
			"execute": func(t *rapid.T) {
				if len(ids) == 0 {
					t.Skip()
				}
				id := pick(t)
				in := m.intents[id]
				_, err := r.st.Execute(ctx, id)
				if in.state != intentPending && in.state != intentApproved {
					if !errors.Is(err, ErrIntent) {
						t.Fatalf("execute in state %v: %v", in.state, err)
					}
					return
				}
				want := m.allowed(in)
				if want != (err == nil) {
					t.Fatalf("execute %v → %v: model allows=%v, got %v", m.status, in.to, want, err)
				}
				if err != nil {
					in.state = intentRejected
					return
				}
				in.state = intentExecuted
				m.status = in.to
				m.known = slices.Clone(m.evidence)
			},
			"": func(t *rapid.T) {
				docs, err := r.mem.Evidence(ctx, "c")
				if err != nil {
					t.Fatal(err)
				}
				got := make([]string, len(docs))
				for i, d := range docs {
					got[i] = string(d)
					if isSpeculative(d) {
						t.Fatalf("speculative evidence stored: %s", d)
					}
				}
				if !slices.Equal(got, m.evidence) {
					t.Fatalf("evidence %v, model %v", got, m.evidence)
				}
				st, _ := r.st.Status(ctx, "c")
				if st != m.status {
					t.Fatalf("status %v, model %v", st, m.status)
				}
				for s, n := range m.hypotheses {
					hs, _ := r.st.Hypotheses(ctx, s)
					if len(hs) != n {
						t.Fatalf("session %s: %d hypotheses, model %d", s, len(hs), n)
					}
				}
				if _, err := r.log.Verify(ctx); err != nil {
					t.Fatal(err)
				}
			},
		})
	})
}

func canonJSON(v any) (string, error) {
	b, err := canon.Marshal(v)
	return string(b), err
}

// appendOnly is a Backend that stores evidence per write, without
// deduplication, as the Backend contract allows.
type appendOnly struct {
	*Memory
	docs map[string][][]byte
}

func (a *appendOnly) Apply(ctx context.Context, w Write) error {
	if w.Kind() == WriteKindEvidence {
		a.docs[w.ClaimID()] = append(a.docs[w.ClaimID()], w.Document())
	}
	return a.Memory.Apply(ctx, w)
}

func (a *appendOnly) Evidence(_ context.Context, claimID string) ([][]byte, error) {
	return slices.Clone(a.docs[claimID]), nil
}

// TestStewardOneExperimentPersistedTwiceIsNotProof: persisting the same
// evidence document twice through a backend that keeps both copies does
// not give the two experiments StatusProven needs.
func TestStewardOneExperimentPersistedTwiceIsNotProof(t *testing.T) {
	ctx := context.Background()
	b := &appendOnly{Memory: NewMemory(), docs: map[string][][]byte{}}
	st, err := NewSteward(ctx, trace.NewMemoryLog(), b)
	require.NoError(t, err)
	checks := NonFragility{FeynmanPassed: true}
	human := Approval{By: "alice", Human: true}
	doc := map[string]any{"claim_id": "c1", "success": true, "variance": 0.01}
	for range 2 {
		_, err = st.PersistEvidence(ctx, doc)
		require.NoError(t, err)
	}
	for _, to := range []Status{StatusSupported, StatusProven} {
		id, err := st.ProposeStatus(ctx, "c1", to, checks)
		require.NoError(t, err)
		require.NoError(t, st.Approve(ctx, id, human))
		_, err = st.Execute(ctx, id)
		if to == StatusProven {
			require.ErrorIs(t, err, ErrPromotion)
		} else {
			require.NoError(t, err)
		}
	}
	got, err := st.Status(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, StatusSupported, got)
}
