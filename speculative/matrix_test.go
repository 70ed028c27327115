/*
The tests in this file are the rows of the specification's
test-to-invariant traceability matrix (specification 001, section G), one
Go test per row, named after the row's test:

	No speculative → evidence        TestV22P11GuardSpeculativeEvidence
	No nested speculative            TestV22P11GuardNestedSpeculative
	No JSON string bypass            TestV22P11GuardJSONStringSpeculative
	Kebab-case JSON bypass           TestV22P11GuardJSONStringKebabSpeculative
	claim_id required                TestV22P11GuardMissingClaimID
	No entity_id fallback            TestV22P11MissingClaimIDDoesNotFallbackToEntityID
	kebab claim-id accepted          TestV22P11ClaimIDKebabCaseAccepted
	Session link created             TestV22P11SpeculativeHappyPathWithProposition
	Proposition link conditional     TestV22P11SpeculativeNoPropositionNoLink
	No evidence from speculative     TestV22P11SpeculativeSegregation
	Bridge: Hints have digest        TestExperimentHintsDigestIsStable
	Bridge: No residue top-level     TestExperimentSpecRejectsExperimentHintsField
	Bridge: No residue nested        TestExperimentSpecRejectsNestedSpeculativeContent
	Bridge: Hints extraction         TestSpeculativeAgentExtractExperimentHints
	Bridge: Steward catches hints    TestStewardRejectsExperimentHintsInEvidenceViaEpistemicStatus
	Bridge: VerifyAgent uses hints   TestVerifyAgentDesignUsesHintsForTemplateSelection
	Bridge: VerifyAgent fallback     TestVerifyAgentDesignFallsBackWithoutHints
*/

package speculative

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

type rig struct {
	st  *Steward
	mem *Memory
	log *trace.Log
}

func newRig(t tb) rig {
	t.Helper()
	mem := NewMemory()
	log := trace.NewMemoryLog()
	n := 0
	st, err := NewSteward(context.Background(), log, mem, WithIDs(func() string { n++; return fmt.Sprintf("id-%03d", n) }))
	require.NoError(t, err)
	return rig{st: st, mem: mem, log: log}
}

type logged struct {
	Kind    string
	Payload map[string]any
}

func (r rig) entries(t testing.TB) []logged {
	t.Helper()
	var out []logged
	for e, err := range r.log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		var p map[string]any
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		out = append(out, logged{e.Kind, p})
	}
	_, err := r.log.Verify(context.Background())
	require.NoError(t, err)
	return out
}

func (r rig) kinds(t testing.TB) []string {
	var ks []string
	for _, e := range r.entries(t) {
		ks = append(ks, e.Kind)
	}
	return ks
}

// assertHardFail checks the common shape of a Guard 1/2 failure: an error
// of the wanted kind, nothing persisted, the rejection recorded.
func assertHardFail(t *testing.T, r rig, err error, want error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, want)
	ev, hy, _, _ := r.mem.counts()
	assert.Zero(t, ev, "nothing persisted")
	assert.Zero(t, hy)
	assert.Equal(t, []string{KindIntent, KindReject}, r.kinds(t))
}

// Row "No speculative → evidence".
func TestV22P11GuardSpeculativeEvidence(t *testing.T) {
	r := newRig(t)
	_, err := r.st.PersistEvidence(context.Background(), map[string]any{
		"claim_id": "c1", "success": true, "epistemic_status": "speculative",
	})
	assertHardFail(t, r, err, ErrSpeculative)
	assert.Contains(t, err.Error(), "epistemic_status", "says where")
	var se *SpeculativeError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "/epistemic_status", se.Finding.Path)
}

// Row "No nested speculative".
func TestV22P11GuardNestedSpeculative(t *testing.T) {
	r := newRig(t)
	_, err := r.st.PersistEvidence(context.Background(), decode(t,
		`{"claim_id":"c1","success":true,"runs":[{"meta":{"provenance":{"epistemic_status":"speculative"}}}]}`))
	assertHardFail(t, r, err, ErrSpeculative)
	var se *SpeculativeError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "/runs/0/meta/provenance/epistemic_status", se.Finding.Path)
}

// Row "No JSON string bypass".
func TestV22P11GuardJSONStringSpeculative(t *testing.T) {
	r := newRig(t)
	_, err := r.st.PersistEvidence(context.Background(), map[string]any{
		"claim_id": "c1", "success": true, "payload": `{"epistemic_status": "speculative", "idea": "x"}`,
	})
	assertHardFail(t, r, err, ErrSpeculative)
	var se *SpeculativeError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "/payload/epistemic_status", se.Finding.Path)
	assert.Equal(t, 1, se.Finding.Encodings)
}

// Row "Kebab-case JSON bypass".
func TestV22P11GuardJSONStringKebabSpeculative(t *testing.T) {
	r := newRig(t)
	_, err := r.st.PersistEvidence(context.Background(), map[string]any{
		"claim_id": "c1", "success": true, "payload": `{"epistemic-status": "speculative"}`,
	})
	assertHardFail(t, r, err, ErrSpeculative)
	var se *SpeculativeError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "epistemic_status", se.Finding.Marker)
	assert.Equal(t, "epistemic-status", se.Finding.Key)
}

// Row "claim_id required".
func TestV22P11GuardMissingClaimID(t *testing.T) {
	for _, doc := range []string{
		`{"success":true}`,
		`{"claim_id":"","success":true}`,
		`{"claim_id":"   ","success":true}`,
		`{"claim_id":null,"success":true}`,
		`{"claim_id":42,"success":true}`,
		`{"claim-id":["c1"],"success":true}`,
		`{"proposition_id":{"id":"c1"},"success":true}`,
	} {
		t.Run(doc, func(t *testing.T) {
			r := newRig(t)
			_, err := r.st.PersistEvidence(context.Background(), decode(t, doc))
			assertHardFail(t, r, err, ErrMissingClaimID)
		})
	}
}

// Row "No entity_id fallback".
func TestV22P11MissingClaimIDDoesNotFallbackToEntityID(t *testing.T) {
	r := newRig(t)
	_, err := r.st.PersistEvidence(context.Background(), map[string]any{"entity_id": "ev-1", "success": true})
	assertHardFail(t, r, err, ErrMissingClaimID)
	assert.Contains(t, err.Error(), "entity_id")
	_, err = claimIDOf(map[string]any{"entity_id": "ev-1"})
	require.ErrorIs(t, err, ErrMissingClaimID)
}

// Row "kebab claim-id accepted": the persisted write and the log carry the
// claim id read from "claim-id".
func TestV22P11ClaimIDKebabCaseAccepted(t *testing.T) {
	r := newRig(t)
	rc, err := r.st.PersistEvidence(context.Background(), map[string]any{"claim-id": "c-kebab", "success": true})
	require.NoError(t, err)
	assert.Equal(t, "c-kebab", rc.ClaimID)
	docs, err := r.mem.Evidence(context.Background(), "c-kebab")
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Contains(t, string(docs[0]), `"claim-id":"c-kebab"`)
	es := r.entries(t)
	require.Equal(t, []string{KindIntent, KindApprove, KindPersist}, r.kinds(t))
	assert.Equal(t, "c-kebab", es[2].Payload["claim_id"])

	// Precedence: claim_id, then claim-id, then proposition_id.
	id, err := claimIDOf(map[string]any{"proposition_id": "p", "claim-id": "k", "claim_id": "s"})
	require.NoError(t, err)
	assert.Equal(t, "s", id)
	id, err = claimIDOf(map[string]any{"proposition_id": "p", "claim-id": "k"})
	require.NoError(t, err)
	assert.Equal(t, "k", id)
	id, err = claimIDOf(map[string]any{"proposition_id": "p", "entity_id": "e"})
	require.NoError(t, err)
	assert.Equal(t, "p", id)
}

// Row "Session link created": with a proposition, the hypothesis gets its
// session link and its proposition link.
func TestV22P11SpeculativeHappyPathWithProposition(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	require.NoError(t, r.st.RegisterProposition(ctx, "c1", map[string]any{"text": "water boils at 100 C at sea level"}))
	rc, err := r.st.PersistHypothesis(ctx, "sess-1", Hypothesis{ClaimID: "c1", Content: map[string]any{
		"epistemic_status": "speculative", "alternatives": []any{"pressure differs"},
	}})
	require.NoError(t, err)
	assert.Len(t, rc.Links, 2)
	assert.Equal(t, []Link{{"session", "sess-1"}, {"proposition", "c1"}}, rc.Links)
	assert.Equal(t, LinkStats{Attempted: 1, Created: 1}, rc.PropositionLinks)
	assert.Empty(t, rc.SoftFailures)
	hs, err := r.st.Hypotheses(ctx, "sess-1")
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.True(t, hs[0].Linked)
}

// Row "Proposition link conditional": without a proposition the link is
// attempted, not created, and the hypothesis persists (a soft failure,
// recorded in the receipt and the log).
func TestV22P11SpeculativeNoPropositionNoLink(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	rc, err := r.st.PersistHypothesis(ctx, "sess-1", Hypothesis{ClaimID: "c-missing", Content: map[string]any{"idea": "x"}})
	require.NoError(t, err)
	assert.Equal(t, 0, rc.PropositionLinks.Created)
	assert.Equal(t, 1, rc.PropositionLinks.Attempted)
	assert.Len(t, rc.Links, 1)
	require.Len(t, rc.SoftFailures, 1)
	assert.Contains(t, rc.SoftFailures[0], "no such proposition")
	_, hy, links, _ := r.mem.counts()
	assert.Equal(t, 1, hy, "the hypothesis persisted")
	assert.Zero(t, links)
	assert.Equal(t, []string{KindIntent, KindApprove, KindPersist, KindSoftFail}, r.kinds(t))
}

// Row "No evidence from speculative": a stored hypothesis never shows up
// as evidence, by claim or otherwise.
func TestV22P11SpeculativeSegregation(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	require.NoError(t, r.st.RegisterProposition(ctx, "c1", map[string]any{"text": "t"}))
	_, err := r.st.PersistHypothesis(ctx, "sess-1", Hypothesis{ClaimID: "c1", Content: map[string]any{"claim_id": "c1", "success": true}})
	require.NoError(t, err)
	evs, err := r.st.Evidence(ctx, "c1")
	require.NoError(t, err)
	assert.Len(t, evs, 0)
	ev, hy, _, _ := r.mem.counts()
	assert.Zero(t, ev)
	assert.Equal(t, 1, hy)
	other, err := r.st.Hypotheses(ctx, "sess-2")
	require.NoError(t, err)
	assert.Empty(t, other, "hypotheses are session-scoped")
	// And a hypothesis-grounded promotion is impossible: there is no evidence.
	id, err := r.st.ProposeStatus(ctx, "c1", StatusSupported, NonFragility{FeynmanPassed: true})
	require.NoError(t, err)
	require.NoError(t, r.st.Approve(ctx, id, Approval{By: "alice", Human: true}))
	_, err = r.st.Execute(ctx, id)
	require.ErrorIs(t, err, ErrPromotion)
}

// Row "Bridge: Hints have digest": the digest is stable for the same
// content, whatever the order of the lists.
func TestExperimentHintsDigestIsStable(t *testing.T) {
	h := sampleHints()
	d1, err := h.Digest()
	require.NoError(t, err)
	d2, err := sampleHints().Digest()
	require.NoError(t, err)
	assert.Equal(t, d1, d2)
	p := sampleHints()
	p.CandidateMechanisms[0], p.CandidateMechanisms[1] = p.CandidateMechanisms[1], p.CandidateMechanisms[0]
	p.PriorSuggestions[0], p.PriorSuggestions[1] = p.PriorSuggestions[1], p.PriorSuggestions[0]
	d3, err := p.Digest()
	require.NoError(t, err)
	assert.Equal(t, d1, d3)
	assert.Equal(t, sampleHintsDigest, d1.String())
}

// Row "Bridge: No residue top-level".
func TestExperimentSpecRejectsExperimentHintsField(t *testing.T) {
	_, err := DecodeExperimentSpec([]byte(`{"claim_id":"c1","template_qid":"numeric_consistency@1.0.0","scope_lock_id":"L1","experiment_hints":{"claim_id":"c1"}}`))
	require.ErrorIs(t, err, ErrResidue)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "/experiment_hints", ve.Violations[0].Path)
}

// Row "Bridge: No residue nested".
func TestExperimentSpecRejectsNestedSpeculativeContent(t *testing.T) {
	_, err := DecodeExperimentSpec([]byte(`{"claim_id":"c1","template_qid":"sensitivity_suite@1.0.0","scope_lock_id":"L1",
		"params":{"l":[{"alternatives":["a","b"]}],"m":"{\"speculative_context\":{}}","s":{"epistemic_status":"grounded"}}}`))
	require.ErrorIs(t, err, ErrResidue)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	var paths []string
	for _, v := range ve.Violations {
		paths = append(paths, v.Path)
	}
	assert.Equal(t, []string{"/params/l/0/alternatives", "/params/m/speculative_context", "/params/s/epistemic_status"}, paths)
	assert.Contains(t, err.Error(), "/params/l/0/alternatives")
}

// Row "Bridge: Hints extraction".
func TestSpeculativeAgentExtractExperimentHints(t *testing.T) {
	h, err := ExtractHints(sampleBrainstorm())
	require.NoError(t, err)
	assert.Equal(t, "c1", h.ClaimID)
	assert.Equal(t, []string{"impurities lower the boiling point", "convection dominates"}, h.CandidateMechanisms)
	assert.Equal(t, []string{"boiling point shifts with salinity", "boiling point shifts with altitude"}, h.DiscriminativePredictions)
	assert.Equal(t, []string{"no shift with pressure"}, h.FalsificationCriteria)
	assert.Equal(t, []string{"pressure", "salinity"}, h.SensitivityAxes)
	require.Len(t, h.PriorSuggestions, 1)
	assert.Equal(t, PriorSuggestion{Parameter: "pressure", Distribution: "normal", Params: map[string]float64{"mu": 101.3, "sigma": 2}, Source: "meteorology"}, h.PriorSuggestions[0])
	b, err := json.Marshal(h)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"epistemic_status":"speculative"`, "hints say they are speculative")
	_, err = ExtractHints(Brainstorm{})
	require.ErrorIs(t, err, ErrMalformed)
}

// Row "Bridge: Steward catches hints": hints that leak into evidence are
// caught by their epistemic_status marker.
func TestStewardRejectsExperimentHintsInEvidenceViaEpistemicStatus(t *testing.T) {
	r := newRig(t)
	hints, err := json.Marshal(sampleHints())
	require.NoError(t, err)
	var inner any
	require.NoError(t, json.Unmarshal(hints, &inner))
	for name, doc := range map[string]map[string]any{
		"object": {"claim_id": "c1", "success": true, "context": inner},
		"string": {"claim_id": "c1", "success": true, "context": string(hints)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := r.st.PersistEvidence(context.Background(), doc)
			var se *SpeculativeError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "epistemic_status", se.Finding.Marker)
			assert.Equal(t, "/context/epistemic_status", se.Finding.Path)
		})
	}
	ev, _, _, _ := r.mem.counts()
	assert.Zero(t, ev)
}

// Row "Bridge: VerifyAgent uses hints".
func TestVerifyAgentDesignUsesHintsForTemplateSelection(t *testing.T) {
	h := sampleHints()
	spec, err := Design(sampleClaim(), &h, "L1")
	require.NoError(t, err)
	assert.Equal(t, TemplateSensitivitySuite, spec.TemplateQID)
	assert.Equal(t, []any{"Pressure", "salinity"}, spec.Params["vary"])
	require.NoError(t, spec.validate())
}

// Row "Bridge: VerifyAgent fallback".
func TestVerifyAgentDesignFallsBackWithoutHints(t *testing.T) {
	spec, err := Design(sampleClaim(), nil, "L1")
	require.NoError(t, err)
	assert.Equal(t, TemplateNumericConsistency, spec.TemplateQID)
	// Hints without a usable sensitivity axis fall back too.
	h := sampleHints()
	h.SensitivityAxes = []string{"moon phase"}
	spec, err = Design(sampleClaim(), &h, "L1")
	require.NoError(t, err)
	assert.Equal(t, TemplateNumericConsistency, spec.TemplateQID)
}

func sampleClaim() Claim {
	return Claim{ID: "c1", Statement: "water boils at 100 C at sea level", Variables: []string{"temperature", "Pressure", "salinity"}}
}

func sampleBrainstorm() Brainstorm {
	return Brainstorm{
		ClaimID: "c1",
		Alternatives: []Alternative{
			{Mechanism: "impurities lower the boiling point", Prediction: "boiling point shifts with salinity"},
			{Mechanism: "convection dominates", Prediction: "boiling point shifts with altitude", Falsifier: "no shift with pressure"},
			{Mechanism: "  "},
		},
		Analogies: []Analogy{
			{Domain: "meteorology", Parameter: "pressure", Distribution: "normal", Params: map[string]float64{"mu": 101.3, "sigma": 2}},
			{Domain: "cooking"},
		},
		EdgeCases: []EdgeCase{{Axis: "pressure"}, {Axis: "salinity", Description: "sea water"}},
	}
}

func sampleHints() ExperimentHints {
	return ExperimentHints{
		ClaimID:                   "c1",
		CandidateMechanisms:       []string{"impurities", "convection"},
		DiscriminativePredictions: []string{"shift with salinity"},
		SensitivityAxes:           []string{"pressure", "salinity"},
		PriorSuggestions: []PriorSuggestion{
			{Parameter: "pressure", Distribution: "normal", Params: map[string]float64{"mu": 101.3, "sigma": 2}, Source: "meteorology"},
			{Parameter: "salinity", Distribution: "uniform", Params: map[string]float64{"low": 0, "high": 35}},
		},
		FalsificationCriteria: []string{"no shift with pressure"},
	}
}
