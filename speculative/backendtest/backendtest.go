// Package backendtest is the conformance suite for speculative.Backend
// implementations: Run(t, newBackend) checks the contract documented on
// the interface, driving the backend through a speculative.Steward (the
// only code that can make the writes a backend receives).
package backendtest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

// Run runs every check against fresh backends from newBackend.
func Run(t *testing.T, newBackend func(t *testing.T) speculative.Backend) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T, speculative.Backend)
	}{
		{"ZeroWriteRefused", zeroWriteRefused},
		{"EvidenceByClaimInOrder", evidenceByClaimInOrder},
		{"HypothesesBySessionOnly", hypothesesBySessionOnly},
		{"LinkNeedsProposition", linkNeedsProposition},
		{"StatusRecord", statusRecord},
		{"AppliedByIntent", appliedByIntent},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newBackend(t)) })
	}
}

func steward(t *testing.T, b speculative.Backend) *speculative.Steward {
	t.Helper()
	n := 0
	st, err := speculative.NewSteward(context.Background(), trace.NewMemoryLog(), b, speculative.WithIDs(func() string { n++; return fmt.Sprintf("id-%d", n) }))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func zeroWriteRefused(t *testing.T, b speculative.Backend) {
	ctx := context.Background()
	if err := b.Apply(ctx, speculative.Write{}); !errors.Is(err, speculative.ErrNotSteward) {
		t.Fatalf("Apply(Write{}) = %v, want ErrNotSteward", err)
	}
	if docs, err := b.Evidence(ctx, ""); err != nil || len(docs) != 0 {
		t.Fatalf("after a refused write: %d documents, %v", len(docs), err)
	}
}

func evidenceByClaimInOrder(t *testing.T, b speculative.Backend) {
	ctx := context.Background()
	st := steward(t, b)
	docs := []map[string]any{
		{"claim_id": "c1", "success": true, "run": 1.0},
		{"claim_id": "c2", "success": true, "run": 2.0},
		{"claim_id": "c1", "success": false, "run": 3.0},
	}
	for _, d := range docs {
		if _, err := st.PersistEvidence(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Evidence(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"claim_id":"c1","run":1,"success":true}`, `{"claim_id":"c1","run":3,"success":false}`}
	if len(got) != len(want) {
		t.Fatalf("Evidence(c1) returned %d documents, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("Evidence(c1)[%d] = %s, want %s", i, got[i], want[i])
		}
	}
	got[0][0] = 'X'
	again, _ := b.Evidence(ctx, "c1")
	if again[0][0] != '{' {
		t.Fatal("Evidence hands out the backend's own bytes")
	}
	if none, err := b.Evidence(ctx, "c3"); err != nil || len(none) != 0 {
		t.Fatalf("Evidence(c3) = %d documents, %v", len(none), err)
	}
}

func hypothesesBySessionOnly(t *testing.T, b speculative.Backend) {
	ctx := context.Background()
	st := steward(t, b)
	for _, s := range []string{"s1", "s2", "s1"} {
		if _, err := st.PersistHypothesis(ctx, s, speculative.Hypothesis{ClaimID: "c1", Content: map[string]any{"claim_id": "c1", "success": true, "session": s}}); err != nil {
			t.Fatal(err)
		}
	}
	for s, n := range map[string]int{"s1": 2, "s2": 1, "s3": 0} {
		hs, err := b.Hypotheses(ctx, s)
		if err != nil || len(hs) != n {
			t.Fatalf("Hypotheses(%s) = %d, %v; want %d", s, len(hs), err, n)
		}
		for _, h := range hs {
			if h.SessionID != s || h.ClaimID != "c1" {
				t.Fatalf("Hypotheses(%s) returned %+v", s, h)
			}
		}
	}
	if docs, err := b.Evidence(ctx, "c1"); err != nil || len(docs) != 0 {
		t.Fatalf("hypotheses returned as evidence: %d documents, %v", len(docs), err)
	}
}

func linkNeedsProposition(t *testing.T, b speculative.Backend) {
	ctx := context.Background()
	st := steward(t, b)
	rc, err := st.PersistHypothesis(ctx, "s1", speculative.Hypothesis{ClaimID: "c1", Content: "idea"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.PropositionLinks != (speculative.LinkStats{Attempted: 1}) || len(rc.SoftFailures) != 1 {
		t.Fatalf("link without a proposition: %+v", rc)
	}
	if err := st.RegisterProposition(ctx, "c1", map[string]any{"text": "t"}); err != nil {
		t.Fatal(err)
	}
	rc, err = st.PersistHypothesis(ctx, "s1", speculative.Hypothesis{ClaimID: "c1", Content: "idea 2"})
	if err != nil {
		t.Fatal(err)
	}
	if rc.PropositionLinks != (speculative.LinkStats{Attempted: 1, Created: 1}) {
		t.Fatalf("link with a proposition: %+v", rc)
	}
	hs, err := b.Hypotheses(ctx, "s1")
	if err != nil || len(hs) != 2 {
		t.Fatalf("Hypotheses(s1) = %d, %v", len(hs), err)
	}
	if hs[0].Linked || !hs[1].Linked {
		t.Fatalf("linked flags %v %v, want false true", hs[0].Linked, hs[1].Linked)
	}
}

func statusRecord(t *testing.T, b speculative.Backend) {
	ctx := context.Background()
	if r, err := b.Status(ctx, "c1"); err != nil || r.Status != 0 || len(r.Evidence) != 0 {
		t.Fatalf("Status of an unknown claim = %+v, %v", r, err)
	}
	st := steward(t, b)
	rc, err := st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
	if err != nil {
		t.Fatal(err)
	}
	id, err := st.ProposeStatus(ctx, "c1", speculative.StatusSupported, speculative.NonFragility{FeynmanPassed: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Approve(ctx, id, speculative.Approval{By: "alice", Human: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Execute(ctx, id); err != nil {
		t.Fatal(err)
	}
	r, err := b.Status(ctx, "c1")
	if err != nil || r.Status != speculative.StatusSupported || len(r.Evidence) != 1 || r.Evidence[0] != rc.ID {
		t.Fatalf("Status(c1) = %+v, %v", r, err)
	}
}

func appliedByIntent(t *testing.T, b speculative.Backend) {
	ctx := context.Background()
	st := steward(t, b)
	applied := func(kind speculative.WriteKind, intent string, want bool) {
		t.Helper()
		got, err := b.Applied(ctx, kind, intent)
		if err != nil || got != want {
			t.Fatalf("Applied(%v, %q) = %v, %v; want %v", kind, intent, got, err, want)
		}
	}
	doc := map[string]any{"claim_id": "c1", "success": true}
	first, err := st.PersistEvidence(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	again, err := st.PersistEvidence(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	applied(speculative.WriteKindEvidence, first.Intent, true)
	applied(speculative.WriteKindEvidence, again.Intent, false) // the document was stored already
	if err := st.RegisterProposition(ctx, "c1", map[string]any{"text": "t"}); err != nil {
		t.Fatal(err)
	}
	applied(speculative.WriteKindProposition, "id-3", true)
	linked, err := st.PersistHypothesis(ctx, "s1", speculative.Hypothesis{ClaimID: "c1", Content: "idea"})
	if err != nil {
		t.Fatal(err)
	}
	alone, err := st.PersistHypothesis(ctx, "s1", speculative.Hypothesis{Content: "idea"})
	if err != nil {
		t.Fatal(err)
	}
	applied(speculative.WriteKindHypothesis, linked.Intent, true)
	applied(speculative.WriteKindLink, linked.Intent, true)
	applied(speculative.WriteKindHypothesis, alone.Intent, true)
	applied(speculative.WriteKindLink, alone.Intent, false)
	id, err := st.ProposeStatus(ctx, "c1", speculative.StatusRefuted, speculative.NonFragility{})
	if err != nil {
		t.Fatal(err)
	}
	applied(speculative.WriteKindStatus, id, false)
	if _, err := st.Execute(ctx, id); err != nil {
		t.Fatal(err)
	}
	applied(speculative.WriteKindStatus, id, true)
	applied(speculative.WriteKindStatus, first.Intent, false)
	applied(speculative.WriteKindEvidence, "unknown", false)
}
