package kernel

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Replay rebuilds a Session from its log: it verifies the hash chain while
// streaming the entries, re-executes every recorded execution and rollback
// of session sessionID (the first kernel.start's session if sessionID is
// empty) with k, and checks at each step that the fingerprints, budget
// totals, step counters, emergency flag, inverse, warnings and rollback
// effects and refund equal the recorded ones. Entries of other kinds or other sessions
// are skipped; a rejection is checked against the state, budget and steps
// it was made in. The returned Session continues appending to log; its
// states equal those of the Session that wrote the log.
//
// k must be configured as the recording kernel was (budget, minimum cost,
// emergency ids, invariant and precondition names are compared with the
// kernel.start entry); its predicates are re-run, so a nondeterministic
// predicate makes replay fail rather than diverge silently.
func Replay(ctx context.Context, log *trace.Log, k *Kernel, sessionID string, opts ...Option) (*Session, error) {
	var s *Session
	var v trace.Verifier
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return nil, fmt.Errorf("%w: reading the log: %w", ErrReplay, err)
		}
		if err := v.Add(e); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrReplay, err)
		}
		if !strings.HasPrefix(e.Kind, "kernel.") {
			continue
		}
		x, err := decodeJSON(e.Payload)
		if err != nil {
			return nil, replayErr(e, "payload: %v", err)
		}
		p, ok := x.(map[string]any)
		if !ok {
			return nil, replayErr(e, "payload is not an object")
		}
		sid, _ := p["session"].(string)
		if s == nil {
			if e.Kind != KindStart || (sessionID != "" && sid != sessionID) {
				continue
			}
			if s, err = replayStart(k, log, p, sid, opts); err != nil {
				return nil, replayErr(e, "%v", err)
			}
			continue
		}
		if sid != s.id {
			continue
		}
		if err := s.replayEntry(e.Kind, p); err != nil {
			return nil, replayErr(e, "%v", err)
		}
	}
	if s == nil {
		return nil, fmt.Errorf("%w: no kernel.start entry for session %q", ErrReplay, sessionID)
	}
	// New execution ids must not repeat ids of this session's earlier
	// instances, including attempts that were never recorded.
	u, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	s.prefix = u.String()
	return s, nil
}

func replayErr(e trace.Entry, format string, args ...any) error {
	return fmt.Errorf("%w: entry %d (%s): %s", ErrReplay, e.Seq, e.Kind, fmt.Sprintf(format, args...))
}

func replayStart(k *Kernel, log *trace.Log, p map[string]any, sid string, opts []Option) (*Session, error) {
	st, ok := p["state"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("state is not an object")
	}
	b := newBuilder(State{})
	for key, raw := range st {
		v, err := fromJSON(raw, 1)
		if err != nil {
			return nil, fmt.Errorf("state variable %q: %w", key, err)
		}
		b.set(key, v)
	}
	s, err := newSession(log, k, b.state(), append(slices.Clone(opts), WithSessionID(sid)))
	if err != nil {
		return nil, err
	}
	want, err := decodeJSON(s.startPayload(nil))
	if err != nil {
		return nil, err
	}
	for _, f := range []string{"budget", "min_cost", "max_steps", "emergency", "invariants", "preconditions"} {
		if !sameJSON(want.(map[string]any)[f], p[f]) {
			return nil, fmt.Errorf("the kernel's %s differs from the recorded one", f)
		}
	}
	return s, nil
}

// sameJSON compares two decoded JSON values by their canonical form.
func sameJSON(a, b any) bool {
	ca, errA := canon.Marshal(a)
	cb, errB := canon.Marshal(b)
	return errA == nil && errB == nil && string(ca) == string(cb)
}

func (s *Session) replayEntry(kind string, p map[string]any) error {
	switch kind {
	case KindExecute:
		a, err := actionFromJSON(p["action"])
		if err != nil {
			return fmt.Errorf("action: %w", err)
		}
		id, _ := p["exec"].(string)
		if fp(p["before"]) != s.world.Fingerprint().String() {
			return fmt.Errorf("recorded state %v, replayed state %s", p["before"], s.world.Fingerprint())
		}
		world, ks, rec, err := s.k.Execute(s.ks, s.world, a, id)
		if err != nil {
			return fmt.Errorf("re-execution failed: %w", err)
		}
		if fp(p["after"]) != rec.After.String() {
			return fmt.Errorf("recorded next state %v, replayed %s", p["after"], rec.After)
		}
		if err := sameCounters(p, rec.Budget, rec.Steps); err != nil {
			return err
		}
		if err := sameFields(p, map[string][]byte{
			"emergency":       strconv.AppendBool(nil, rec.Emergency),
			"emergency_steps": appendCount(nil, rec.EmergencySteps),
			"inverse":         appendEffects(nil, rec.Inverse),
			"warnings":        appendChecks(nil, rec.Warnings, true),
		}); err != nil {
			return err
		}
		s.world, s.ks = world, ks
		s.history.add(rec)
	case KindReject:
		if fp(p["state"]) != s.world.Fingerprint().String() {
			return fmt.Errorf("rejection recorded in state %v, replayed state %s", p["state"], s.world.Fingerprint())
		}
		if err := sameCounters(p, snapshot(s.ks.budget), s.ks.steps); err != nil {
			return err
		}
	case KindRollback:
		id, _ := p["exec"].(string)
		rec := s.history.find(id)
		if rec == nil {
			return fmt.Errorf("rollback of unknown execution %q", id)
		}
		world, ks, rr, err := s.k.Rollback(s.ks, s.world, *rec)
		if err != nil {
			return fmt.Errorf("re-rollback failed: %w", err)
		}
		if fp(p["after"]) != rr.After.String() {
			return fmt.Errorf("recorded restored state %v, replayed %s", p["after"], rr.After)
		}
		if err := sameCounters(p, rr.Budget, rr.Steps); err != nil {
			return err
		}
		if err := sameFields(p, map[string][]byte{
			"before":  appendFP(nil, rr.Before),
			"effects": appendEffects(nil, rr.Effects),
			"refund":  appendCost(nil, rr.Refund),
		}); err != nil {
			return err
		}
		s.world, s.ks = world, ks
	case KindStart:
		return fmt.Errorf("second kernel.start for the same session")
	}
	return nil
}

// sameFields checks that each recorded field of p equals the JSON the
// replay produces for it.
func sameFields(p map[string]any, want map[string][]byte) error {
	for _, f := range slices.Sorted(maps.Keys(want)) {
		w, err := decodeJSON(want[f])
		if err != nil {
			return err
		}
		if !sameJSON(w, p[f]) {
			return fmt.Errorf("recorded %s %v, replayed %s", f, p[f], want[f])
		}
	}
	return nil
}

func fp(x any) string { s, _ := x.(string); return s }

func sameCounters(p map[string]any, b BudgetSnapshot, steps uint64) error {
	want, err := decodeJSON(appendBudget(nil, b))
	if err != nil {
		return err
	}
	if !sameJSON(want, p["budget"]) {
		return fmt.Errorf("recorded budget %v, replayed %v", p["budget"], want)
	}
	wantSteps, err := decodeJSON(appendCount(nil, steps))
	if err != nil {
		return err
	}
	if !sameJSON(wantSteps, p["steps"]) {
		return fmt.Errorf("recorded steps %v, replayed %d", p["steps"], steps)
	}
	return nil
}
