package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// audit reopens the log at path read-only, verifies its chain, shows the
// entries that record the gate's decisions, and replays each decision:
// the decision core (toolgate.Compiled.Decide) decides the call again from
// the rules, the call the model made, and a snapshot of the caller's
// session rebuilt from the log entries before the decision's own. Its
// ruling must agree with the decision recorded: an execution for an
// allowed call (same rule), a refusal with the same rule and condition
// for a refused one.
// The caller's kernel session is replayed too, to the live gate's spend.
func audit(ctx context.Context, out io.Writer, path string, cfg toolgate.Policy, calls []toolCall, live kernel.Meter) (entries, replayed int, err error) {
	store, err := trace.OpenFileReadOnly(path)
	if err != nil {
		return 0, 0, err
	}
	log, err := trace.NewLog(store)
	if err != nil {
		store.Close()
		return 0, 0, err
	}
	defer log.Close()
	var all []trace.Entry
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return 0, 0, err
		}
		all = append(all, e)
	}
	head, err := trace.Verify(all)
	if err != nil {
		return 0, 0, fmt.Errorf("the log does not verify: %w", err)
	}
	fmt.Fprintf(out, "%s: %d entries, hash chain verified (head %s)\n", path, len(all), head.Hash)

	compiled, err := cfg.Compile()
	if err != nil {
		return 0, 0, err
	}
	snap := toolgate.Snapshot{Labels: map[string]bool{}, Windows: map[string][]time.Time{}}
	session := toolgate.SessionPrefix + Caller
	next := 0 // the model's next call
	decide := func(seq uint64, digest string, at time.Time) (toolgate.Ruling, toolCall, error) {
		if next >= len(calls) {
			return toolgate.Ruling{}, toolCall{}, fmt.Errorf("entry %d: a decision the model's calls do not account for", seq)
		}
		c := calls[next]
		next++
		sum := sha256.Sum256(c.Arguments)
		if hex.EncodeToString(sum[:]) != digest {
			return toolgate.Ruling{}, c, fmt.Errorf("entry %d: %s's arguments differ from the call the model made", seq, c.Tool)
		}
		return compiled.Decide(snap, toolgate.Call{Tool: c.Tool, Arguments: c.Arguments, Caller: Caller}, at), c, nil
	}
	for _, e := range all {
		switch e.Kind {
		case kernel.KindExecute:
			d, err := kernel.DecodeEntry(e)
			if err != nil {
				return 0, 0, err
			}
			x, ok := d.(kernel.ExecuteEntry)
			if !ok || x.Session != session {
				continue
			}
			a := x.Record.Action
			fmt.Fprintf(out, "  #%-3d %-16s %-20s tags %s\n", e.Seq, e.Kind, a.Name, strings.Join(a.Tags, " "))
			ru, _, err := decide(e.Seq, hex.EncodeToString(x.Record.InputDigest[:]), x.Record.Time)
			if err != nil {
				return 0, 0, err
			}
			if ru.Verdict != toolgate.Allow || !slices.Contains(a.Tags, "rule:"+ruleTag(ru.Rule)) {
				return 0, 0, fmt.Errorf("replay of entry %d: %s by %s, the log says executed (tags %v)", e.Seq, ru.Verdict, ru.Rule, a.Tags)
			}
			replayed++
			for _, t := range a.Tags {
				if l, ok := strings.CutPrefix(t, "label:"); ok {
					snap.Labels[l] = true
				}
			}
		case gatelog.KindDeclassify:
			d, err := gatelog.Decode(e)
			if err != nil {
				return 0, 0, err
			}
			x := d.(gatelog.Declassify)
			if x.Caller != Caller {
				continue
			}
			fmt.Fprintf(out, "  #%-3d %-16s %-20s by %s: %s\n", e.Seq, e.Kind, x.Label, x.Approver, x.Reason)
			delete(snap.Labels, x.Label)
		case gatelog.KindRefuse:
			d, err := gatelog.Decode(e)
			if err != nil {
				return 0, 0, err
			}
			r, ok := d.(gatelog.Refuse)
			if !ok || r.Caller != Caller {
				continue
			}
			fmt.Fprintf(out, "  #%-3d %-16s %-20s rule %s %q, condition %s, reason %s\n", e.Seq, e.Kind, r.Tool, r.Rule, r.RuleName, r.Condition, r.Reason)
			fmt.Fprintf(out, "       explanation: %s\n", r.Explanation)
			ru, _, err := decide(e.Seq, r.ArgumentsSHA256, e.Time)
			if err != nil {
				return 0, 0, err
			}
			if ru.Verdict != toolgate.Refuse || ruleIndex(ru.Rule) != r.Rule || ru.Rule.Name != r.RuleName || ru.Condition != r.Condition || ru.Explanation != r.Explanation {
				return 0, 0, fmt.Errorf("replay of entry %d: %s by %s (%s), the log says refused by %s (%s)", e.Seq, ru.Verdict, ru.Rule, ru.Condition, r.Rule, r.Condition)
			}
			replayed++
		}
	}
	if next != len(calls) {
		return 0, 0, fmt.Errorf("the model made %d calls, the log decided %d", len(calls), next)
	}
	fmt.Fprintf(out, "replay: all %d decisions decided again from the log, identical\n", replayed)

	k, err := kernel.New(kernel.Config{Budget: cfg.Budget, MinActionCost: cfg.MinCost})
	if err != nil {
		return 0, 0, err
	}
	sess, err := kernel.Replay(ctx, log, k, session)
	if err != nil {
		return 0, 0, fmt.Errorf("replaying %s: %w", session, err)
	}
	b := sess.Meter().Budget()
	if b.Net() != live.Budget().Net() || sess.Meter().Steps() != live.Steps() {
		return 0, 0, fmt.Errorf("the replayed session spent %v in %d calls, the gate %v in %d", b.Net(), sess.Meter().Steps(), live.Budget().Net(), live.Steps())
	}
	fmt.Fprintf(out, "replay of %s: spent %v of %v in %d calls, equal to the live gate\n", session, b.Net(), b.Limit(), sess.Meter().Steps())
	return len(all), replayed, nil
}

// ruleIndex is how a refusal entry names a rule: "#" and its index.
func ruleIndex(r toolgate.RuleRef) string {
	if r.Index < 0 {
		return "default"
	}
	return fmt.Sprintf("#%d", r.Index)
}

// ruleTag is how an execution's tag names a rule: its name, else its
// index.
func ruleTag(r toolgate.RuleRef) string {
	if r.Name != "" && r.Index >= 0 {
		return r.Name
	}
	return ruleIndex(r)
}
