package speculative_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

func ExampleCheck() {
	docs := []string{
		`{"claim_id":"c1","lane":"grounded","note":"an earlier idea was speculative"}`,
		`{"claim_id":"c1","meta":{"EpistemicStatus":" Speculative "}}`,
		`{"claim_id":"c1","payload":"{\"epistemic-status\":\"speculative\"}"}`,
		`{"claim_id":"c1","note":"the agent called it \"speculative\""}`,
	}
	for _, d := range docs {
		err := speculative.Check(json.RawMessage(d))
		fmt.Println(errors.Is(err, speculative.ErrSpeculative))
	}
	// Output:
	// false
	// true
	// true
	// true
}

func ExampleDetect() {
	var doc any
	_ = json.Unmarshal([]byte(`{"params":{"l":[{"alternatives":["a","b"]}]}}`), &doc)
	f, found, err := speculative.Detect(doc)
	fmt.Println(found, err)
	fmt.Println(f.Path, f.Marker, f.Rule)
	// Output:
	// true <nil>
	// /params/l/0/alternatives alternatives artifact
}

func ExampleDecodeEvidence() {
	e, err := speculative.DecodeEvidence([]byte(`{"claim-id":"c7","entity_id":"ev1","success":true}`))
	fmt.Println(e.ClaimID(), e.Success(), err)
	_, err = speculative.DecodeEvidence([]byte(`{"entity_id":"ev1","success":true}`))
	fmt.Println(errors.Is(err, speculative.ErrMissingClaimID))
	// Output:
	// c7 true <nil>
	// true
}

func ExampleExperimentHints_Digest() {
	h := speculative.ExperimentHints{
		ClaimID:             "c1",
		CandidateMechanisms: []string{"impurities", "convection"},
		SensitivityAxes:     []string{"pressure"},
	}
	d, _ := h.Digest()
	h.CandidateMechanisms = []string{"convection", "impurities"} // order does not matter
	d2, _ := h.Digest()
	fmt.Println(d == d2)
	// Output:
	// true
}

func ExampleDecodeExperimentSpec() {
	_, err := speculative.DecodeExperimentSpec([]byte(`{
		"claim_id": "c1",
		"template_qid": "sensitivity_suite@1.0.0",
		"scope_lock_id": "L1",
		"params": {"l": [{"alternatives": ["a"]}], "note": "{\"lane\": \"speculative\"}"}
	}`))
	fmt.Println(errors.Is(err, speculative.ErrResidue))
	var ve *speculative.ValidationError
	errors.As(err, &ve)
	for _, v := range ve.Violations {
		fmt.Println(v.Path)
	}
	// Output:
	// true
	// /params/l/0/alternatives
	// /params/note/lane
}

func ExampleDesign() {
	claim := speculative.Claim{ID: "c1", Statement: "water boils at 100 C at sea level", Variables: []string{"pressure", "temperature"}}
	hints, _ := speculative.ExtractHints(speculative.Brainstorm{
		ClaimID:      "c1",
		Alternatives: []speculative.Alternative{{Mechanism: "dissolved salts raise the boiling point"}},
		EdgeCases:    []speculative.EdgeCase{{Axis: "Pressure"}},
	})
	withHints, _ := speculative.Design(claim, &hints, "lock-1")
	without, _ := speculative.Design(claim, nil, "lock-1")
	b, _ := json.Marshal(withHints)
	fmt.Println(string(b))
	fmt.Println(without.TemplateQID)
	// Output:
	// {"claim_id":"c1","template_qid":"sensitivity_suite@1.0.0","scope_lock_id":"lock-1","params":{"levels":5,"relative_step":0.1,"vary":["pressure"]}}
	// numeric_consistency@1.0.0
}

func ExampleDeriveStatus() {
	var evs []speculative.Evidence
	for _, d := range []string{
		`{"claim_id":"c1","success":true,"variance":0.02}`,
		`{"claim_id":"c1","success":true,"variance":0.05}`,
		`{"claim_id":"c1","success":false}`,
	} {
		e, _ := speculative.DecodeEvidence([]byte(d))
		evs = append(evs, e)
	}
	fmt.Println(speculative.DeriveStatus(evs[:1]), speculative.DeriveStatus(evs))
	// Output: supported proven
}

func ExamplePromote() {
	e, _ := speculative.DecodeEvidence([]byte(`{"claim_id":"c1","success":true,"variance":0.02}`))
	_, err := speculative.Promote(speculative.PromotionRequest{
		ClaimID: "c1", From: speculative.StatusSpeculative, To: speculative.StatusProven,
		Evidence: []speculative.Evidence{e},
		Checks:   speculative.NonFragility{FeynmanPassed: true},
	})
	var ve *speculative.ValidationError
	errors.As(err, &ve)
	for _, v := range ve.Violations {
		fmt.Println(v.Rule)
	}
	t, err := speculative.Promote(speculative.PromotionRequest{ClaimID: "c1", From: speculative.StatusProven, To: speculative.StatusUnresolved})
	fmt.Println(t.Direction, err)
	// Output:
	// approval
	// evidence
	// no-direct-proof
	// downgrade <nil>
}

// Example is the package's usage: the Steward refuses speculative
// evidence, persists grounded evidence, and promotes a claim once a person
// approves; every step is in the log as a typed entry.
func Example() {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	st, err := speculative.NewSteward(ctx, log, speculative.NewMemory())
	if err != nil {
		panic(err)
	}

	// Guard 1: speculative content never becomes evidence, however deep.
	_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "payload": `{"lane":"speculative"}`})
	fmt.Println(errors.Is(err, speculative.ErrSpeculative))
	fmt.Println(err)

	// Grounded evidence is persisted, then a promotion is proposed,
	// approved by a person and executed.
	_, _ = st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
	id, _ := st.ProposeStatus(ctx, "c1", speculative.StatusSupported, speculative.NonFragility{FeynmanPassed: true})
	_ = st.Approve(ctx, id, speculative.Approval{By: "alice", Human: true})
	t, err := st.Execute(ctx, id)
	fmt.Println(t.From, "→", t.To, err)

	for e := range log.Entries(ctx, 0) {
		entry, _ := speculative.DecodeEntry(e)
		fmt.Printf("%s %T\n", e.Kind, entry)
	}
	// Output:
	// true
	// speculative: invalid validation evidence: 1 violation: /payload/lane: guard-1: "lane" is speculative (inside 1 JSON-in-string layer)
	// speculative → supported <nil>
	// speculative.intent speculative.IntentEntry
	// speculative.reject speculative.RejectEntry
	// speculative.intent speculative.IntentEntry
	// speculative.approve speculative.ApproveEntry
	// speculative.persist speculative.PersistEntry
	// speculative.intent speculative.IntentEntry
	// speculative.approve speculative.ApproveEntry
	// speculative.persist speculative.PersistEntry
}
