/*
This file checks epistemic status and the promotion policy:

	speculative → proven is never allowed directly             TestSpeculativeNeverProvenDirectly
	downgrades are always allowed                              TestDowngradesAlwaysAllowed
	upgrades need grounded evidence, checks and approval       TestUpgradeNeedsGroundedEvidenceChecksAndApproval, TestPromoteRules
	one document is one experiment                             TestDuplicateEvidenceIsOneExperiment
	evidence passes Guards 1 and 2 before it counts            TestDecodeEvidence

The Steward's state machine against a naive model is in steward_test.go
(TestStewardStateMachine).
*/

package speculative

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/trace"
)

func TestParseStatus(t *testing.T) {
	for in, want := range map[string]Status{
		"proven": StatusProven, "PROVEN": StatusProven, " Supported ": StatusSupported,
		"unresolved": StatusUnresolved, "Speculative": StatusSpeculative, "rEfUtEd": StatusRefuted,
	} {
		got, err := ParseStatus(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got)
	}
	for _, in := range []string{"", "prove", "proven!", "grounded", "speculative_context", "0"} {
		_, err := ParseStatus(in)
		assert.ErrorIs(t, err, ErrUnknownStatus, in)
	}
	var s Status
	require.NoError(t, json.Unmarshal([]byte(`"Refuted"`), &s))
	assert.Equal(t, StatusRefuted, s)
	require.ErrorIs(t, json.Unmarshal([]byte(`"maybe"`), &s), ErrUnknownStatus)
	b, err := json.Marshal(StatusSupported)
	require.NoError(t, err)
	assert.Equal(t, `"supported"`, string(b))
	_, err = json.Marshal(Status(0))
	require.Error(t, err)
	assert.Len(t, statuses(), 5)
}

// tb is what both *testing.T and *rapid.T offer.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	FailNow()
}

func ev(t tb, claim string, success bool, outcome string, variance any) Evidence {
	t.Helper()
	doc := map[string]any{"claim_id": claim, "success": success}
	if outcome != "" {
		doc["outcome"] = outcome
	}
	if variance != nil {
		doc["variance"] = variance
	}
	e, err := evidenceOf(doc)
	require.NoError(t, err)
	return e
}

func TestDeriveStatus(t *testing.T) {
	sup := func(v float64) Evidence { return ev(t, "c", true, "supports", v) }
	for _, tc := range []struct {
		name string
		in   []Evidence
		want Status
	}{
		{"no evidence", nil, StatusSpeculative},
		{"only failed runs", []Evidence{ev(t, "c", false, "supports", 0.0)}, StatusSpeculative},
		{"one support", []Evidence{sup(0.01)}, StatusSupported},
		{"two low variance", []Evidence{sup(0.01), sup(0.1)}, StatusProven},
		{"two, one high variance", []Evidence{sup(0.01), sup(0.11)}, StatusSupported},
		{"two, no variance", []Evidence{ev(t, "c", true, "", nil), ev(t, "c", true, "", nil)}, StatusSupported},
		{"contradiction", []Evidence{sup(0.01), sup(0.01), ev(t, "c", true, "contradicts", nil)}, StatusUnresolved},
		{"refuted wins", []Evidence{sup(0.01), ev(t, "c", true, "contradicts", nil), ev(t, "c", true, "Refutes", nil)}, StatusRefuted},
		{"failed refutation ignored", []Evidence{sup(0.01), ev(t, "c", false, "refutes", nil)}, StatusSupported},
	} {
		assert.Equal(t, tc.want, DeriveStatus(tc.in), tc.name)
	}
}

func TestDecodeEvidence(t *testing.T) {
	e, err := evidenceOf([]byte(`{"claim_id":"c1","success":true,"outcome":"supports","variance":0.05,"entity_id":"ev1"}`))
	require.NoError(t, err)
	assert.Equal(t, "c1", e.ClaimID())
	assert.True(t, e.Success())
	assert.Equal(t, OutcomeSupports, e.Outcome())
	v, ok := e.Variance()
	assert.True(t, ok)
	assert.Equal(t, 0.05, v)
	assert.Equal(t, `{"claim_id":"c1","entity_id":"ev1","outcome":"supports","success":true,"variance":0.05}`, string(e.Document()))
	doc := e.Document()
	doc[0] = 'X'
	assert.Equal(t, byte('{'), e.Document()[0], "Document returns a copy")
	same, err := evidenceOf(map[string]any{"variance": 0.05, "success": true, "outcome": "supports", "claim_id": "c1", "entity_id": "ev1"})
	require.NoError(t, err)
	assert.Equal(t, e.ID(), same.ID(), "content-addressed")

	for _, tc := range []struct {
		doc  string
		want []error
	}{
		{`{"claim_id":"c1","success":"yes"}`, []error{ErrMalformed}},
		{`{"claim_id":"c1","outcome":"maybe"}`, []error{ErrMalformed}},
		{`{"claim_id":"c1","variance":-1}`, []error{ErrMalformed}},
		{`{"claim_id":"c1","variance":"0.1"}`, []error{ErrMalformed}},
		{`[1]`, []error{ErrMalformed}},
		{`{"claim_id":`, []error{ErrMalformed}},
		{`{"lane":"speculative"}`, []error{ErrSpeculative, ErrMissingClaimID}},
	} {
		_, err := evidenceOf([]byte(tc.doc))
		for _, w := range tc.want {
			assert.ErrorIs(t, err, w, tc.doc)
		}
	}
}

// goodUpgrade is a request that passes: supported → proven with two
// low-variance successes, passed checks and an approval.
func goodUpgrade(t testing.TB) PromotionRequest {
	return PromotionRequest{
		ClaimID: "c", From: StatusSupported, To: StatusProven,
		Evidence: []Evidence{ev(t, "c", true, "supports", 0.01), ev(t, "c", true, "supports", 0.02)},
		Checks:   NonFragility{FeynmanPassed: true},
		Approval: &Approval{By: "alice", Human: true},
	}
}

func TestPromoteRules(t *testing.T) {
	tr, err := Promote(goodUpgrade(t))
	require.NoError(t, err)
	assert.Equal(t, DirectionUpgrade, tr.Direction)
	assert.Equal(t, StatusProven, tr.Derived)
	assert.Len(t, tr.Evidence, 2)

	for _, tc := range []struct {
		name string
		edit func(*PromotionRequest)
		rule string
	}{
		{"speculative to proven", func(r *PromotionRequest) { r.From = StatusSpeculative }, "no-direct-proof"},
		{"no evidence", func(r *PromotionRequest) { r.Evidence = nil }, "evidence"},
		{"failed evidence only", func(r *PromotionRequest) { r.Evidence = []Evidence{ev(t, "c", false, "", 0.0)} }, "evidence"},
		{"not enough for proven", func(r *PromotionRequest) { r.Evidence = r.Evidence[:1] }, "evidence"},
		{"other claim", func(r *PromotionRequest) { r.Evidence = append(r.Evidence, ev(t, "other", true, "", 0.0)) }, "claim"},
		{"feynman failed", func(r *PromotionRequest) { r.Checks.FeynmanPassed = false }, "non-fragility"},
		{"sensitivity failure", func(r *PromotionRequest) { r.Checks.SensitivityFailures = []string{"pressure"} }, "non-fragility"},
		{"not approved", func(r *PromotionRequest) { r.Approval = nil }, "approval"},
		{"refuted needs new evidence", func(r *PromotionRequest) {
			r.From, r.To = StatusRefuted, StatusSupported
			for _, e := range r.Evidence {
				r.Known = append(r.Known, e.ID())
			}
		}, "refuted"},
		{"refuted needs a human", func(r *PromotionRequest) {
			r.From, r.To = StatusRefuted, StatusSupported
			r.Approval = &Approval{By: PolicyApprover}
		}, "refuted"},
		{"bad status", func(r *PromotionRequest) { r.To = 9 }, "status"},
		{"blank claim", func(r *PromotionRequest) { r.ClaimID = " " }, "claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := goodUpgrade(t)
			tc.edit(&req)
			_, err := Promote(req)
			require.ErrorIs(t, err, ErrPromotion)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			var rules []string
			for _, v := range ve.Violations {
				rules = append(rules, v.Rule)
			}
			assert.Contains(t, rules, tc.rule)
		})
	}

	// Leaving refuted with new evidence and a human approval is allowed.
	req := goodUpgrade(t)
	req.From, req.To = StatusRefuted, StatusSupported
	req.Known = []trace.Hash{req.Evidence[0].ID()}
	_, err = Promote(req)
	require.NoError(t, err)
}

func genStatus() *rapid.Generator[Status] {
	return rapid.SampledFrom(statuses())
}

// genRequest draws any promotion request over claim "c".
func genRequest(t *rapid.T) PromotionRequest {
	var evs []Evidence
	for i := range rapid.IntRange(0, 4).Draw(t, "n") {
		evs = append(evs, ev(t, "c", rapid.Bool().Draw(t, fmt.Sprint("ok", i)),
			rapid.SampledFrom([]string{"supports", "contradicts", "refutes"}).Draw(t, fmt.Sprint("o", i)),
			rapid.Float64Range(0, 0.3).Draw(t, fmt.Sprint("v", i))))
	}
	req := PromotionRequest{
		ClaimID: "c", From: genStatus().Draw(t, "from"), To: genStatus().Draw(t, "to"), Evidence: evs,
		Checks: NonFragility{FeynmanPassed: rapid.Bool().Draw(t, "feynman")},
	}
	if rapid.Bool().Draw(t, "sensFail") {
		req.Checks.SensitivityFailures = []string{"axis"}
	}
	if rapid.Bool().Draw(t, "approved") {
		req.Approval = &Approval{By: "x", Human: rapid.Bool().Draw(t, "human")}
	}
	if len(evs) > 0 && rapid.Bool().Draw(t, "known") {
		req.Known = []trace.Hash{evs[0].ID()}
	}
	return req
}

// TestSpeculativeNeverProvenDirectly: no request moves a claim from
// speculative straight to proven.
func TestSpeculativeNeverProvenDirectly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		req.From, req.To = StatusSpeculative, StatusProven
		if _, err := Promote(req); err == nil {
			t.Fatal("speculative → proven allowed")
		}
	})
}

// TestDowngradesAlwaysAllowed: a downgrade needs nothing and is reported as
// one.
func TestDowngradesAlwaysAllowed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		if req.To >= req.From {
			t.Skip()
		}
		tr, err := Promote(req)
		if err != nil || tr.Direction != DirectionDowngrade {
			t.Fatalf("downgrade %v → %v refused: %v", req.From, req.To, err)
		}
	})
}

// TestUpgradeNeedsGroundedEvidenceChecksAndApproval: whenever an upgrade is
// allowed, every condition of the policy holds (checked against a naive
// restatement of the policy).
func TestUpgradeNeedsGroundedEvidenceChecksAndApproval(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		req := genRequest(t)
		_, err := Promote(req)
		if req.To <= req.From {
			if err != nil {
				t.Fatalf("non-upgrade refused: %v", err)
			}
			return
		}
		var ok []Evidence
		fresh := false
		for _, e := range req.Evidence {
			if e.Success() {
				ok = append(ok, e)
				if len(req.Known) == 0 || req.Known[0] != e.ID() {
					fresh = true
				}
			}
		}
		want := len(ok) > 0 && DeriveStatus(ok) >= req.To &&
			req.Checks.FeynmanPassed && len(req.Checks.SensitivityFailures) == 0 &&
			req.Approval != nil &&
			!(req.From == StatusSpeculative && req.To == StatusProven) &&
			(req.From != StatusRefuted || (fresh && req.Approval.Human))
		if want != (err == nil) {
			t.Fatalf("want allowed=%v, got %v for %+v", want, err, req)
		}
	})
}

// TestDuplicateEvidenceIsOneExperiment: evidence is content-addressed, so
// the same document listed twice is one experiment, not the two that
// StatusProven needs. A Backend is not required to deduplicate (only
// Memory does), so the policy must not count an id twice.
func TestDuplicateEvidenceIsOneExperiment(t *testing.T) {
	e := ev(t, "c", true, "supports", 0.01)
	assert.Equal(t, StatusSupported, DeriveStatus([]Evidence{e, e}))
	assert.Equal(t, StatusProven, DeriveStatus([]Evidence{e, ev(t, "c", true, "supports", 0.02)}))

	req := goodUpgrade(t)
	req.Evidence = []Evidence{e, e}
	_, err := Promote(req)
	require.ErrorIs(t, err, ErrPromotion)

	req = goodUpgrade(t)
	req.Evidence = append(req.Evidence, req.Evidence[0])
	tr, err := Promote(req)
	require.NoError(t, err)
	assert.Len(t, tr.Evidence, 2, "each evidence id once")
}
