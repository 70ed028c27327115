package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

// The logs the tests read are written by the library's own shells: a
// kernel.Session (executions, rejections by a blocking invariant,
// monitoring warnings, rollbacks), belief events from the pure core (one
// session declaring 50 hypotheses, eliminating one every 20 steps), a
// claims.Session (a refused bundle, an escalated one and its approval)
// and a speculative.Steward (a stored hunch and a refused laundering).

// clock is a deterministic clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time {
	c.t = c.t.Add(250 * time.Millisecond)
	return c.t
}

func idSource(prefix string) func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("%s-%d", prefix, n)
	}
}

// logShape says what writeLog wrote.
type logShape struct {
	executed, rejected, rolledBack, eliminated int
}

// writeLog records the demonstration into log, with steps kernel actions.
func writeLog(t testing.TB, log *trace.Log, clk *clock, steps int) logShape {
	t.Helper()
	ctx := context.Background()
	report(t, ctx, log, clk)
	firewall(t, ctx, log, clk)

	k, err := kernel.New(kernel.Config{
		Budget:        kernel.Cost(steps)*10 + kernel.Unit,
		MinActionCost: 10,
		Invariants: []kernel.Invariant{{
			Name: "non-negative", Enforcement: kernel.EnforcementBlocking, Suggestion: "never drain below zero",
			Check: func(s kernel.State) bool { v, _ := s.Get("replicas"); n, _ := v.AsInt(); return n >= 0 },
		}, {
			Name: "short-queue", Enforcement: kernel.EnforcementMonitoring, Suggestion: "scale out",
			Check: func(s kernel.State) bool { v, _ := s.Get("queue"); n, _ := v.AsInt(); return n < 30 },
		}},
	})
	require.NoError(t, err)
	initial, err := kernel.NewState(map[string]any{"replicas": int64(3), "queue": int64(0)})
	require.NoError(t, err)
	sess, err := kernel.NewSession(ctx, log, k, initial, kernel.WithSessionID("oncall-7"), kernel.WithIDs(idSource("exec")), kernel.WithClock(clk.now))
	require.NoError(t, err)

	bst, ev, err := belief.Declare("incident-1", belief.DeclareRequest{
		Ontology:   belief.OntologyBundle{HypothesisSpaceID: "outage", HypothesisVersion: "v1", CausalGraphRef: "graph://x", CausalGraphVersion: "v1"},
		Hypotheses: hypotheses(50),
	}, belief.Stamp{EventID: "ev-0", Time: clk.now()})
	require.NoError(t, err)
	appendBelief(t, log, ev)

	var shape logShape
	var last string
	for i := range steps {
		a := kernel.Action{ID: fmt.Sprintf("step-%d", i), Cost: 10, Reversible: true,
			Effects: []kernel.Effect{kernel.Increment("replicas", value.Int(1)), kernel.Set("queue", value.Int(int64(i%60)))}}
		if i%10 == 3 {
			a = kernel.Action{ID: "drain-all", Cost: 20, Effects: []kernel.Effect{kernel.Set("replicas", value.Int(-1))}}
		}
		rec, err := sess.Execute(ctx, a)
		var rej *kernel.RejectedError
		switch {
		case errors.As(err, &rej):
			shape.rejected++
		case err != nil:
			require.NoError(t, err)
		default:
			shape.executed++
			last = rec.ExecID
		}
		if i%7 == 5 && last != "" {
			_, err := sess.Rollback(ctx, last)
			require.NoError(t, err)
			shape.rolledBack++
			last = ""
		}
		if i%20 == 19 && shape.eliminated < 48 {
			next, _, ev, err := bst.Eliminate(belief.EliminateRequest{SourceID: "probe", ObservationID: fmt.Sprintf("obs-%d", i),
				Eliminated: []string{hypotheses(50)[shape.eliminated]}}, belief.Stamp{EventID: fmt.Sprintf("ev-%d", i+1), Time: clk.now()})
			require.NoError(t, err)
			appendBelief(t, log, ev)
			bst = next
			shape.eliminated++
		}
	}
	return shape
}

func hypotheses(n int) []string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = fmt.Sprintf("h%02d", i)
	}
	return hs
}

// appendBelief records a belief event as the belief shell does: its
// canonical form (without event_hash) under the verb's kind, at its time.
func appendBelief(t testing.TB, log *trace.Log, ev *belief.AuditEntry) {
	t.Helper()
	b, err := ev.Canonical()
	require.NoError(t, err)
	_, err = log.Append(context.Background(), ev.Verb.Kind(), b, trace.At(ev.Time))
	require.NoError(t, err)
}

func report(t testing.TB, ctx context.Context, log *trace.Log, clk *clock) {
	t.Helper()
	policy := claims.DefaultPolicy()
	policy.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"sre-lead"}}
	sess, err := claims.NewSession(ctx, log, policy, claims.WithClock(clk.now), claims.WithIDs(idSource("claims")))
	require.NoError(t, err)
	sum := sha256.Sum256([]byte("metrics"))
	low := claims.Uncertainty{Method: claims.MethodConfidenceScore, Value: 0.08, Interpretation: "calibrated", GateRecommendation: claims.RecommendExecute}
	bundle := claims.NewBundle("bundle-4411", clk.now(), "agent-7",
		claims.Claim{ID: "c-rate", Statement: "The error rate fell.", ClaimType: claims.ClaimFact, Uncertainty: low, RiskTier: claims.TierReadOnly,
			EvidencePointers: []claims.EvidencePointer{{Source: "metrics://rate", SourceConfidence: 0.92, EvidenceHash: hex.EncodeToString(sum[:]),
				RetrievedAt: time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)}}},
		claims.Claim{ID: "c-cleanup", Statement: "Delete the v40 replica set.", ClaimType: claims.ClaimDecision, Uncertainty: low, RiskTier: claims.TierDelete},
	)
	actor := claims.Context{Actor: "agent-7", Clearance: claims.TierDelete}
	bare := bundle.Clone()
	bare.ID = "bundle-4410"
	bare.Claims[0].EvidencePointers = nil
	_, err = sess.Evaluate(ctx, bare, actor)
	require.NoError(t, err)
	ev, err := sess.Evaluate(ctx, bundle, actor)
	require.NoError(t, err)
	_, err = sess.Approve(ctx, ev.Bundle, actor, "sre-lead", claims.ApprovalApproved, "v40 serves no traffic")
	require.NoError(t, err)
}

func firewall(t testing.TB, ctx context.Context, log *trace.Log, clk *clock) {
	t.Helper()
	st, err := speculative.NewSteward(ctx, log, speculative.NewMemory(), speculative.WithClock(clk.now), speculative.WithIDs(idSource("intent")))
	require.NoError(t, err)
	_, err = st.PersistHypothesis(ctx, "oncall-7", speculative.Hypothesis{ClaimID: "c-root", Content: map[string]any{
		"claim_id": "c-root", "epistemic_status": "speculative", "idea": "the pool is too small"}})
	require.NoError(t, err)
	_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": "c-root", "success": true,
		"details": `{"notes":{"epistemicStatus":" Speculative "}}`})
	require.Error(t, err)
}

// fileLog writes the demonstration to a new log file and returns its path.
func fileLog(t testing.TB, steps int) (string, logShape) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.trace")
	store, err := trace.OpenFile(path, trace.FileOptions{Sync: trace.SyncManual})
	require.NoError(t, err)
	clk := &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	log, err := trace.NewLog(store, trace.WithClock(clk.now))
	require.NoError(t, err)
	shape := writeLog(t, log, clk, steps)
	require.NoError(t, store.Sync())
	require.NoError(t, log.Close())
	return path, shape
}

// TestWriteDemoLog writes a demonstration log to the path in
// VERITY_DEMO_LOG (with VERITY_DEMO_STEPS kernel actions, default 1000),
// to look at with `verity view`; without it, it does nothing.
func TestWriteDemoLog(t *testing.T) {
	dst := os.Getenv("VERITY_DEMO_LOG")
	if dst == "" {
		t.Skip("VERITY_DEMO_LOG is not set")
	}
	steps, err := strconv.Atoi(os.Getenv("VERITY_DEMO_STEPS"))
	if err != nil {
		steps = 1000
	}
	path, _ := fileLog(t, steps)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o600))
}
