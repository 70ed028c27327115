// Command quickstart is the first program to write with Verity: an agent's
// actions under a budget and an invariant, its report through the claims
// gates with one human approval, a document through the speculative guard,
// and the log of it all closed, reopened and verified.
//
//	go run ./examples/quickstart                  # the log in a temporary file, removed
//	go run ./examples/quickstart -log agent.trace # the log kept in a new file
package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

func main() {
	keep := flag.String("log", "", "keep the log in this new `file` (default: a temporary file, removed at the end)")
	flag.Parse()
	if err := start(os.Stdout, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// start runs the program with its log in keep, a new file, or (if keep
// is empty) in a temporary file it removes.
func start(w io.Writer, keep string) error {
	if keep != "" {
		if _, err := os.Lstat(keep); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("-log %s: the program writes a new log; give a path where no file is", keep)
		}
		if err := run(w, keep); err != nil {
			return err
		}
		_, err := fmt.Fprintf(w, "log kept in %s\n", keep)
		return err
	}
	dir, err := os.MkdirTemp("", "verity-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	return run(w, filepath.Join(dir, "agent.trace"))
}

// run writes the log to path.
func run(w io.Writer, path string) error {
	ctx := context.Background()
	store, err := trace.OpenFile(path, trace.FileOptions{})
	if err != nil {
		return err
	}
	log, err := trace.NewLog(store)
	if err != nil {
		store.Close()
		return err
	}
	defer log.Close() // on an early return; closed below before reopening

	// 1. The kernel: every action is checked, committed and logged, or refused.
	k, err := kernel.New(kernel.Config{
		Budget:        2 * kernel.Unit,
		MinActionCost: kernel.Unit / 2,
		Invariants: []kernel.Invariant{{Name: "at least 2 replicas", Check: func(s kernel.State) bool {
			n, ok := s.Int("replicas")
			return ok && n >= 2
		}}},
		EmergencyActions: []string{"pause"}, // runs even when the budget is spent
	})
	if err != nil {
		return err
	}
	initial, err := kernel.NewState(map[string]any{"replicas": 3, "version": "v1", "paused": false})
	if err != nil {
		return err
	}
	sess, err := kernel.NewSession(ctx, log, k, initial)
	if err != nil {
		return err
	}
	for _, a := range []kernel.Action{
		{ID: "scale-down", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Decrement("replicas", value.Int(1))}},
		{ID: "scale-down", Cost: kernel.Unit / 2, Effects: []kernel.Effect{kernel.Decrement("replicas", value.Int(1))}},
		{ID: "deploy", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Set("version", value.String("v2"))}},
		{ID: "scale-up", Cost: kernel.Unit / 2, Effects: []kernel.Effect{kernel.Increment("replicas", value.Int(1))}},
		{ID: "pause", Effects: []kernel.Effect{kernel.Set("paused", value.Bool(true))}},
	} {
		if _, err := sess.Execute(ctx, a); err != nil {
			fmt.Fprintln(w, err) // a *kernel.RejectedError: every failed check, and nothing changed
		} else {
			fmt.Fprintf(w, "kernel: ran %s: %s, %s\n", a.ID, sess.State(), sess.Meter())
		}
	}

	// 2. Claims: the agent's report passes the gates; deleting needs a human.
	policy := claims.DefaultPolicy()
	policy.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"alice"}}
	cs, err := claims.NewSession(ctx, log, policy)
	if err != nil {
		return err
	}
	metrics := []byte("p99 latency 180 ms after the v2 deploy")
	sure := claims.Uncertainty{Method: claims.MethodConfidenceScore, Value: 0.1, GateRecommendation: claims.RecommendExecute}
	report := claims.ClaimBundle{OriginAgent: "ops-agent", Claims: []claims.Claim{ // the session fills in id and time
		{ID: "latency", Statement: "v2 answers in under 200 ms", ClaimType: claims.ClaimFact, Uncertainty: sure,
			RiskTier: claims.TierReadOnly, EvidencePointers: []claims.EvidencePointer{{Source: "metrics://p99",
				SourceConfidence: 0.9, EvidenceHash: fmt.Sprintf("%x", sha256.Sum256(metrics)), RetrievedAt: time.Now()}}},
		{ID: "cleanup", Statement: "delete the v1 images", ClaimType: claims.ClaimDecision, Uncertainty: sure,
			RiskTier: claims.TierDelete},
	}}
	actor := claims.Context{Actor: "ops-agent", Clearance: claims.TierDelete}
	ev, err := cs.Evaluate(ctx, report, actor)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "claims: %s, waiting for %v\n", ev.Decision, ev.Pending)
	ev, err = cs.Approve(ctx, ev.Bundle, actor, "alice", claims.ApprovalApproved, "v1 is retired")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "claims: %s after alice approved (%s)\n", ev.Decision, ev.Reason)

	// 3. The speculative guard: an idea never passes as grounded evidence,
	// however deeply it is hidden.
	for _, doc := range []string{
		`{"claim_id":"latency","success":true,"p99_ms":180}`,
		`{"claim_id":"latency","success":true,"notes":"{\"lane\":\"speculative\"}"}`,
	} {
		if err := speculative.Check([]byte(doc)); err != nil {
			fmt.Fprintf(w, "guard: refused: %v\n", err)
		} else {
			fmt.Fprintln(w, "guard: grounded, accepted")
		}
	}

	// 4. The log: keep its head, close it, reopen it (which verifies every
	// entry) and check that it still extends the kept head.
	head := log.Head()
	if err := log.Close(); err != nil {
		return err
	}
	if store, err = trace.OpenFile(path, trace.FileOptions{}); err != nil {
		return err
	}
	if log, err = trace.NewLog(store); err != nil {
		store.Close()
		return err
	}
	defer log.Close()
	if _, err := log.VerifyAgainst(ctx, head); err != nil {
		return err
	}
	fmt.Fprintf(w, "trace: %d entries verified, head %s\n", head.Size, head.Hash)
	return nil
}
