// Command seedtour is a tour of the parts Verity's tool gate is built on:
// an on-call agent remediating a failing deployment, with every decision
// it makes passing through Verity's limits and landing in one
// hash-chained log. (examples/agentloop shows the gate itself.)
//
//  1. kernel: actions change a world model under a budget and invariants;
//     an action that would break a blocking invariant, or overspend, is
//     rejected and changes nothing; a committed action is rolled back
//     exactly, with its cost refunded.
//  2. speculative: the agent's hunch is stored in the speculative lane, and
//     its attempt to file the hunch as validation evidence is refused.
//  3. claims: the agent's report is a ClaimBundle; a FACT needs evidence, a
//     DELETE action needs a human, and the bundle is published only after
//     the approval.
//  4. trace: the log verifies, and the kernel session is rebuilt from it by
//     replay with the same state and budget.
//
// The log is a file in a temporary directory, removed at the end, unless
// -log names a new file to keep it in:
//
//	go run ./examples/seedtour -log agent.trace
//	go run ./examples/verity verify agent.trace
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

func main() {
	logPath := flag.String("log", "", "keep the log in this new `file` (default: a temporary file, removed at the end)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *logPath); err != nil {
		fmt.Fprintln(os.Stderr, "seedtour:", err)
		os.Exit(1)
	}
}

// clock is a deterministic clock so that the demonstration prints the same
// log every time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time {
	c.t = c.t.Add(250 * time.Millisecond)
	return c.t
}

// ids returns a deterministic id source (the sessions default to UUIDv7).
func ids(prefix string) func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("%s-%d", prefix, n)
	}
}

// run writes the demonstration's log to keep, a new file, or (if keep is
// empty) to a temporary file it removes.
func run(ctx context.Context, w io.Writer, keep string) error {
	path := keep
	if keep == "" {
		dir, err := os.MkdirTemp("", "verity-seedtour-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "agent.trace")
	} else if _, err := os.Lstat(keep); !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("-log %s: the demonstration writes a new log; give a path where no file is", keep)
	}

	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return err
	}
	clk := &clock{t: time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)}
	log, err := trace.NewLog(store, trace.WithClock(clk.now))
	if err != nil {
		store.Close()
		return err
	}
	defer log.Close() // on an early return; closed in step 4 before reopening

	fmt.Fprintln(w, "== 1. kernel: acting under a budget and invariants")
	k, sess, err := startKernel(ctx, log, clk.now)
	if err != nil {
		return err
	}
	if err := act(ctx, w, sess); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n== 2. speculative: a hunch is not evidence")
	if err := firewall(ctx, w, log, clk.now); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n== 3. claims: the report passes the gates, with a human for DELETE")
	if err := report(ctx, w, log, clk.now); err != nil {
		return err
	}

	fmt.Fprintln(w, "\n== 4. trace: verify the one log and replay the kernel session")
	head := log.Head()
	if err := log.Close(); err != nil {
		return err
	}
	store, err = trace.OpenFile(path, trace.FileOptions{}) // verifies the whole chain
	if err != nil {
		return err
	}
	log, err = trace.NewLog(store)
	if err != nil {
		store.Close()
		return err
	}
	defer log.Close()
	if _, err := log.VerifyAgainst(ctx, head); err != nil {
		return err
	}
	kinds := map[string]int{}
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return err
		}
		kinds[e.Kind]++
	}
	fmt.Fprintf(w, "log verified: %d entries, head %s…\n", head.Size, head.Hash.String()[:16])
	for _, kind := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprintf(w, "  %-22s %d\n", kind, kinds[kind])
	}
	replayed, err := kernel.Replay(ctx, log, k, sess.ID())
	if err != nil {
		return err
	}
	if !replayed.State().Equal(sess.State()) || replayed.Meter().Budget().Net() != sess.Meter().Budget().Net() {
		return errors.New("replayed kernel session differs from the live one")
	}
	fmt.Fprintf(w, "replayed kernel session: state %s, net spend %s — equal to the live session\n",
		replayed.State(), replayed.Meter().Budget().Net())
	if keep != "" {
		fmt.Fprintf(w, "log kept in %s\n", keep)
	}
	return nil
}

func startKernel(ctx context.Context, log *trace.Log, now func() time.Time) (*kernel.Kernel, *kernel.Session, error) {
	k, err := kernel.New(kernel.Config{
		Budget:        5 * kernel.Unit,
		MinActionCost: kernel.Unit / 10,
		Invariants: []kernel.Invariant{{
			Name:        "min-replicas",
			Description: "at least two replicas serve traffic",
			Check: func(s kernel.State) bool {
				n, ok := s.Int("replicas")
				return ok && n >= 2
			},
			Enforcement: kernel.EnforcementBlocking,
			Suggestion:  "scale out before removing replicas",
		}},
	})
	if err != nil {
		return nil, nil, err
	}
	initial, err := kernel.NewState(map[string]any{"replicas": int64(3), "version": "v41", "canary": false})
	if err != nil {
		return nil, nil, err
	}
	sess, err := kernel.NewSession(ctx, log, k, initial, kernel.WithClock(now), kernel.WithSessionID("oncall-7"), kernel.WithIDs(ids("exec")))
	return k, sess, err
}

func act(ctx context.Context, w io.Writer, sess *kernel.Session) error {
	try := func(a kernel.Action) (kernel.Record, error) {
		rec, err := sess.Execute(ctx, a)
		var rej *kernel.RejectedError
		switch {
		case errors.As(err, &rej):
			for _, f := range rej.Verdict.Failures() {
				// The reason names its check ("invariant \"min-replicas\" violated").
				fmt.Fprintf(w, "rejected  %-16s %s\n", a.ID, strings.TrimPrefix(f.Reason, "kernel: "))
			}
		case err != nil:
			return rec, err
		default:
			fmt.Fprintf(w, "committed %-16s cost %s, state %s, net spend %s\n",
				a.ID, a.Cost, sess.State(), sess.Meter().Budget().Net())
		}
		return rec, nil
	}
	steps := []kernel.Action{
		{ID: "scale-out", Name: "Scale out", Cost: 1500, Reversible: true,
			Effects: []kernel.Effect{kernel.Increment("replicas", value.Int(2))}},
		{ID: "drain-all", Name: "Drain every replica", Cost: 500,
			Effects: []kernel.Effect{kernel.Set("replicas", value.Int(0))}},
		{ID: "full-rebuild", Name: "Rebuild the cluster", Cost: 9 * kernel.Unit,
			Effects: []kernel.Effect{kernel.Set("version", value.String("v42"))}},
	}
	for _, a := range steps {
		if _, err := try(a); err != nil {
			return err
		}
	}
	canary := kernel.Action{ID: "enable-canary", Name: "Route 5% to the canary", Cost: 1000, Reversible: true,
		Effects: []kernel.Effect{kernel.Set("canary", value.Bool(true)), kernel.Set("version", value.String("v42-rc1"))}}
	rec, err := try(canary)
	if err != nil {
		return err
	}
	if _, err := sess.Rollback(ctx, rec.ExecID); err != nil {
		return err
	}
	fmt.Fprintf(w, "rolled back enable-canary: state %s, net spend %s (refunded %s)\n",
		sess.State(), sess.Meter().Budget().Net(), canary.Cost)
	return nil
}

func firewall(ctx context.Context, w io.Writer, log *trace.Log, now func() time.Time) error {
	steward, err := speculative.NewSteward(ctx, log, speculative.NewMemory(), speculative.WithClock(now), speculative.WithIDs(ids("intent")))
	if err != nil {
		return err
	}
	hunch := map[string]any{
		"claim_id":         "c-root-cause",
		"epistemic_status": "speculative",
		"idea":             "the v41 connection pool is too small under the evening peak",
	}
	if _, err := steward.PersistHypothesis(ctx, "oncall-7", speculative.Hypothesis{ClaimID: "c-root-cause", Content: hunch}); err != nil {
		return err
	}
	fmt.Fprintln(w, "stored the hunch in the speculative lane (session-scoped)")

	// The agent tries to launder the hunch into validation evidence, hiding
	// the marker one JSON-encoding deep.
	laundered := map[string]any{
		"claim_id": "c-root-cause",
		"success":  true,
		"details":  `{"notes":{"epistemicStatus":" Speculative "}}`,
	}
	_, err = steward.PersistEvidence(ctx, laundered)
	var se *speculative.SpeculativeError
	if !errors.As(err, &se) {
		return fmt.Errorf("laundered evidence was not refused: %v", err)
	}
	fmt.Fprintf(w, "refused evidence: %v\n", err)
	ev, err := steward.Evidence(ctx, "c-root-cause")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "grounded evidence on c-root-cause: %d item(s)\n", len(ev))
	return nil
}

func report(ctx context.Context, w io.Writer, log *trace.Log, now func() time.Time) error {
	policy := claims.DefaultPolicy()
	policy.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"sre-lead"}}
	sess, err := claims.NewSession(ctx, log, policy, claims.WithClock(now), claims.WithIDs(ids("claims")))
	if err != nil {
		return err
	}
	metrics := "error_rate 09:00 4.1% -> 09:05 0.3% after scale-out"
	sum := sha256.Sum256([]byte(metrics))
	evidence := claims.EvidencePointer{
		Source:           "metrics://prod/checkout/error_rate?from=09:00&to=09:05",
		SourceConfidence: 0.92,
		EvidenceHash:     hex.EncodeToString(sum[:]),
		RetrievedAt:      time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC),
	}
	low := claims.Uncertainty{Method: claims.MethodConfidenceScore, Value: 0.08, Interpretation: "calibrated confidence 0.92", GateRecommendation: claims.RecommendExecute}
	bundle := claims.NewBundle("bundle-incident-4411", now(), "oncall-agent-7",
		claims.Claim{ID: "c-error-rate", Statement: "The checkout error rate fell from 4.1% to 0.3% after the scale-out.",
			ClaimType: claims.ClaimFact, EvidencePointers: []claims.EvidencePointer{evidence}, Uncertainty: low,
			RiskTier: claims.TierReadOnly, IfWrongCost: "a premature all-clear"},
		claims.Claim{ID: "c-cleanup", Statement: "Delete the v40 replica set that is no longer serving.",
			ClaimType: claims.ClaimDecision, Uncertainty: low, RiskTier: claims.TierDelete,
			IfWrongCost: "a slower rollback path"},
	)
	actor := claims.Context{Actor: "oncall-agent-7", Clearance: claims.TierDelete}

	// Without evidence, the same FACT is refused.
	bare := bundle.Clone()
	bare.Claims[0].EvidencePointers = nil
	ev, err := sess.Evaluate(ctx, bare, actor)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "without evidence: %s at the %s gate\n", ev.Decision, ev.StoppedAt)

	ev, err = sess.Evaluate(ctx, bundle, actor)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "with evidence:    %s, waiting for %v\n", ev.Decision, ev.Pending)
	ev, err = sess.Approve(ctx, ev.Bundle, actor, "sre-lead", claims.ApprovalApproved, "v40 has served no traffic for 7 days")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "after approval:   %s\n", ev.Decision)
	if ev.Decision != claims.DecisionPublish {
		return fmt.Errorf("approved bundle was not published: %s (%s)", ev.Decision, ev.Reason)
	}
	return nil
}
