package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/speculative"
	"github.com/verity-go/verity/trace"
)

// replayError is a log that verifies but disagrees with a replay of the
// sessions it records (exit 8). It wraps the library's error.
type replayError struct{ err error }

func (e *replayError) Error() string { return e.err.Error() }
func (e *replayError) Unwrap() error { return e.err }

// replayed is what one pass over a log rebuilds: belief sessions (by
// State.Apply), claims decisions (by claims.DecodeRecord), speculative
// entries (by speculative.DecodeEntry), and what kernel.Replay needs.
type replayed struct {
	kernel      map[string]*kernelRecorded
	kernelOrder []string
	belief      map[string]belief.State
	// beliefCheckpoints counts belief.checkpoint entries; otherKinds says
	// the log holds entries of other packages too.
	beliefCheckpoints int
	otherKinds        bool
	beliefOrder       []string
	claims            []claimRecord
	speculative       map[string]int
	refusals          []string
	pins              *pinReplay
}

// claimRecord is one claims entry, decoded.
type claimRecord struct {
	seq    uint64
	kind   string
	record claims.Record
}

func newReplayed() *replayed {
	return &replayed{kernel: map[string]*kernelRecorded{}, belief: map[string]belief.State{}, speculative: map[string]int{}, pins: newPinReplay()}
}

// add replays one verified entry. An entry its package cannot read or
// that disagrees with the replay is a *replayError.
func (r *replayed) add(e trace.Entry) error {
	fail := func(err error) error {
		return &replayError{fmt.Errorf("entry %d (%s): %w", e.Seq, e.Kind, err)}
	}
	if !strings.HasPrefix(e.Kind, "belief.") {
		r.otherKinds = true
	}
	if err := r.pins.add(e); err != nil {
		return fail(err)
	}
	switch {
	case strings.HasPrefix(e.Kind, "kernel."):
		if err := noteKernel(r.kernel, &r.kernelOrder, e); err != nil {
			return &replayError{err}
		}
	case e.Kind == belief.KindCheckpoint:
		// A checkpoint is not an event: it repeats the state the events
		// before it built, which belief.VerifyLog compares (see replay).
		r.beliefCheckpoints++
		return nil
	case strings.HasPrefix(e.Kind, "belief."):
		a, err := belief.DecodeAuditEntry(e.Payload)
		if err != nil {
			return fail(err)
		}
		st, seen := r.belief[a.SessionID]
		if !seen {
			r.beliefOrder = append(r.beliefOrder, a.SessionID)
		}
		next, err := st.Apply(a)
		if err != nil {
			return fail(err)
		}
		r.belief[a.SessionID] = next
	case strings.HasPrefix(e.Kind, "claims."):
		rec, err := claims.DecodeRecord(e.Payload)
		if err != nil {
			return fail(err)
		}
		r.claims = append(r.claims, claimRecord{e.Seq, e.Kind, rec})
	case strings.HasPrefix(e.Kind, "speculative."):
		x, err := speculative.DecodeEntry(e)
		if err != nil {
			return fail(err)
		}
		r.speculative[e.Kind]++
		if rej, ok := x.(speculative.RejectEntry); ok {
			r.refusals = append(r.refusals, fmt.Sprintf("entry %d: intent %s (%s): %s", e.Seq, rej.Intent, rej.Write, strings.Join(rej.Reasons, "; ")))
		}
	}
	return nil
}

func cmdReplay(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	src, err := oneSource("replay", pos)
	if err != nil {
		return err
	}
	r := newReplayed()
	if err := walk(ctx, e, src, r.add); err != nil {
		return ignoreListed(err)
	}
	w := bufio.NewWriter(e.stdout)
	defer w.Flush()
	if len(r.kernelOrder) > 0 {
		o, err := openLog(ctx, e, src)
		if err != nil {
			return err
		}
		defer o.close()
		for _, id := range r.kernelOrder {
			s, err := replayKernel(ctx, o.store, r.kernel[id])
			if err != nil {
				return &replayError{err}
			}
			fmt.Fprintf(w, "kernel session %s\n  meter  %s\n  state  %s\n", id, s.Meter(), s.State())
		}
	}
	if r.beliefCheckpoints > 0 && !r.otherKinds && len(r.beliefOrder) == 1 {
		// A belief session's own log: every checkpoint is compared with
		// the state its events built.
		o, err := openLog(ctx, e, src)
		if err != nil {
			return err
		}
		defer o.close()
		if _, _, err := belief.VerifyLog(ctx, o.store); err != nil {
			return &replayError{err}
		}
		fmt.Fprintf(w, "belief checkpoints: %d, each agrees with the events before it\n", r.beliefCheckpoints)
	} else if r.beliefCheckpoints > 0 {
		fmt.Fprintf(w, "belief checkpoints: %d, not compared (they are compared in a belief session's own log)\n", r.beliefCheckpoints)
	}
	for _, id := range r.beliefOrder {
		snap := r.belief[id].Snapshot()
		fmt.Fprintf(w, "belief session %s: %d events, %d survivors [%s]\n", id, r.belief[id].Len(), snap.NSurvivors, strings.Join(snap.Survivors, " "))
	}
	for _, c := range latestDecisions(r.claims) {
		b := c.record.Bundle
		fmt.Fprintf(w, "claims bundle %s (entry %d): %s", b.ID, c.seq, b.Decision)
		if b.Reason != "" {
			fmt.Fprintf(w, " (%s)", b.Reason)
		}
		fmt.Fprintln(w)
		for _, a := range b.AuditTrail.HumanApprovals {
			fmt.Fprintf(w, "  approval %s %s at %s: %s\n", a.Approver, a.Decision, trace.FormatTime(a.Timestamp), a.Reason)
		}
	}
	if p := r.pins; p.entries > 0 || p.decisions > 0 {
		fmt.Fprintf(w, "pins: %d entries, servers [%s]; %d decisions named a definition pinned when they were made\n",
			p.entries, strings.Join(slices.Sorted(maps.Keys(p.servers)), " "), p.decisions)
		for _, s := range slices.Sorted(maps.Keys(p.servers)) {
			pins, _ := p.state.Pins(s)
			for _, tool := range slices.Sorted(maps.Keys(pins)) {
				line := fmt.Sprintf("  %s/%s %s (%s", s, tool, pins[tool].Hash, pins[tool].Source)
				if pins[tool].Approver != "" {
					line += " by " + pins[tool].Approver
				}
				if _, err := p.state.Check(s, tool); err != nil {
					line += "; drifted: " + strings.TrimPrefix(err.Error(), "pin: ")
				}
				fmt.Fprintln(w, pin.Visible(line+")"))
			}
		}
	}
	if len(r.speculative) > 0 {
		kinds := slices.Sorted(maps.Keys(r.speculative))
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(k, "speculative."), r.speculative[k]))
		}
		fmt.Fprintf(w, "speculative: %s\n", strings.Join(parts, ", "))
		for _, ref := range r.refusals {
			fmt.Fprintf(w, "  refused %s\n", ref)
		}
	}
	return nil
}

// latestDecisions returns, per bundle id in order of first appearance,
// the last record of that bundle: its current decision.
func latestDecisions(rs []claimRecord) []claimRecord {
	var order []string
	last := map[string]claimRecord{}
	for _, c := range rs {
		id := c.record.Bundle.ID
		if _, ok := last[id]; !ok {
			order = append(order, id)
		}
		last[id] = c
	}
	out := make([]claimRecord, len(order))
	for i, id := range order {
		out[i] = last[id]
	}
	return out
}
