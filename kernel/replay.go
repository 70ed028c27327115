package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/verity-go/verity/trace"
)

// Replay rebuilds a Session from its log: it verifies the hash chain while
// streaming the entries, decodes every entry of session sessionID (the
// first StartEntry's session if sessionID is empty) with DecodeEntry,
// re-executes every execution, reservation, settlement, refund and
// rollback with k, and checks at each step that the fingerprints, budget
// totals, step counters, emergency flag, inverse, warnings, rollback
// effects and every amount equal the recorded ones. The open reservations
// are rebuilt with them (Meter.Reservations), so a host that stopped
// mid-call settles or refunds after Replay. Entries of other kinds or other sessions are skipped; a rejection
// is checked against the state, budget and steps it was made in. The
// returned Session continues appending to log; its states equal those of
// the Session that wrote the log, and its History's Records carry the
// times of their entries.
//
// k must be configured as the recording kernel was (budget, minimum cost,
// emergency ids, invariant and precondition names are compared with the
// StartEntry); its predicates are re-run, so a nondeterministic predicate
// makes replay fail rather than diverge silently.
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
		switch e.Kind {
		case KindStart, KindExecute, KindReject, KindRollback, KindReserve, KindSettle, KindRefund:
		default:
			continue
		}
		x, err := DecodeEntry(e)
		if err != nil {
			return nil, replayErr(e, err)
		}
		if s == nil {
			if st, ok := x.(StartEntry); ok && (sessionID == "" || st.Session == sessionID) {
				if s, err = replayStart(log, k, st, opts); err != nil {
					return nil, replayErr(e, err)
				}
			}
			continue
		}
		if err := s.replay(x); err != nil {
			return nil, replayErr(e, err)
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

func replayErr(e trace.Entry, err error) error {
	return fmt.Errorf("%w: entry %d (%s): %s", ErrReplay, e.Seq, e.Kind, unprefixed(err.Error()))
}

func replayStart(log *trace.Log, k *Kernel, st StartEntry, opts []Option) (*Session, error) {
	s, err := newSession(log, k, st.State, append(slices.Clone(opts), WithSessionID(st.Session)))
	if err != nil {
		return nil, err
	}
	want := s.startEntry()
	if err := same(
		field{"budget", appendCost(nil, st.Budget), appendCost(nil, want.Budget)},
		field{"min_cost", appendCost(nil, st.MinCost), appendCost(nil, want.MinCost)},
		field{"max_steps", appendCount(nil, st.MaxSteps), appendCount(nil, want.MaxSteps)},
		field{"emergency", appendStrings(nil, st.Emergency), appendStrings(nil, want.Emergency)},
		field{"invariants", appendInvariants(nil, st.Invariants), appendInvariants(nil, want.Invariants)},
		field{"preconditions", appendStrings(nil, st.Preconditions), appendStrings(nil, want.Preconditions)},
	); err != nil {
		return nil, fmt.Errorf("the kernel's configuration differs from the recorded one: %w", err)
	}
	return s, nil
}

// replay applies one decoded entry of any session to s: entries of other
// sessions are skipped.
func (s *Session) replay(x Entry) error {
	switch e := x.(type) {
	case StartEntry:
		if e.Session == s.id {
			return fmt.Errorf("second kernel.start for the same session")
		}
	case ExecuteEntry:
		if e.Session == s.id {
			return s.replayExecute(e.Record)
		}
	case ReserveEntry:
		if e.Session == s.id {
			return s.replayExecute(e.Record)
		}
	case SettleEntry:
		if e.Session == s.id {
			return s.replaySettle(e.SettleRecord)
		}
	case RefundEntry:
		if e.Session == s.id {
			return s.replayRefund(e.RefundRecord)
		}
	case RejectEntry:
		if e.Session == s.id {
			return s.replayReject(e)
		}
	case RollbackEntry:
		if e.Session == s.id {
			return s.replayRollback(e.RollbackRecord)
		}
	}
	return nil
}

func (s *Session) replayExecute(got Record) error {
	if got.Before != s.world.Fingerprint() {
		return fmt.Errorf("recorded state %s, replayed state %s", got.Before, s.world.Fingerprint())
	}
	commit := s.k.Commit
	if got.Reserved {
		commit = s.k.Reserve
	}
	world, meter, rec, err := commit(s.meter, s.world, s.k.Evaluate(s.meter, s.world, got.Action), got.ExecID)
	if err != nil {
		return fmt.Errorf("re-execution failed: %w", err)
	}
	// The input's digest and size are as recorded (DecodeEntry checked
	// them against its bytes when the entry kept them).
	rec.InputDigest, rec.InputSize = got.InputDigest, got.InputSize
	rec.Time, rec.Seq, rec.Hash = got.Time, got.Seq, got.Hash
	if err := same(
		field{"after", appendFP(nil, got.After), appendFP(nil, rec.After)},
		field{"budget", appendBudget(nil, got.Budget), appendBudget(nil, rec.Budget)},
		field{"steps", appendCount(nil, got.Steps), appendCount(nil, rec.Steps)},
		field{"emergency", fmt.Append(nil, got.Emergency), fmt.Append(nil, rec.Emergency)},
		field{"emergency_steps", appendCount(nil, got.EmergencySteps), appendCount(nil, rec.EmergencySteps)},
		field{"inverse", appendEffects(nil, got.Inverse), appendEffects(nil, rec.Inverse)},
		field{"warnings", appendChecks(nil, got.Warnings), appendChecks(nil, rec.Warnings)},
	); err != nil {
		return err
	}
	s.world, s.meter = world, meter
	s.remember(rec, false)
	return nil
}

func (s *Session) replayReject(got RejectEntry) error {
	if got.State != s.world.Fingerprint() {
		return fmt.Errorf("rejection recorded in state %s, replayed state %s", got.State, s.world.Fingerprint())
	}
	return same(
		field{"budget", appendBudget(nil, got.Budget), appendBudget(nil, snapshot(s.meter.budget))},
		field{"steps", appendCount(nil, got.Steps), appendCount(nil, s.meter.steps)},
	)
}

func (s *Session) replayRollback(got RollbackRecord) error {
	rec := s.window.find(got.ExecID)
	if rec == nil {
		return fmt.Errorf("rollback: %w", s.beyond(got.ExecID, fmt.Errorf("%w: %q", ErrUnknownExecution, got.ExecID)))
	}
	world, meter, rr, err := s.k.Rollback(s.meter, s.world, *rec)
	if err != nil {
		return fmt.Errorf("re-rollback failed: %w", err)
	}
	if err := same(
		field{"after", appendFP(nil, got.After), appendFP(nil, rr.After)},
		field{"before", appendFP(nil, got.Before), appendFP(nil, rr.Before)},
		field{"budget", appendBudget(nil, got.Budget), appendBudget(nil, rr.Budget)},
		field{"steps", appendCount(nil, got.Steps), appendCount(nil, rr.Steps)},
		field{"effects", appendEffects(nil, got.Effects), appendEffects(nil, rr.Effects)},
		field{"refund", appendCost(nil, got.Refund), appendCost(nil, rr.Refund)},
	); err != nil {
		return err
	}
	s.world, s.meter = world, meter
	return nil
}

func (s *Session) replaySettle(got SettleRecord) error {
	meter, r, err := s.k.Settle(s.meter, got.ExecID, got.Actual)
	if err != nil {
		return fmt.Errorf("re-settlement failed: %w", err)
	}
	if err := same(
		field{"reserved", appendCost(nil, got.Reserved), appendCost(nil, r.Reserved)},
		field{"refund", appendCost(nil, got.Refund), appendCost(nil, r.Refund)},
		field{"overrun", appendCost(nil, got.Overrun), appendCost(nil, r.Overrun)},
		field{"unpaid", appendCost(nil, got.Unpaid), appendCost(nil, r.Unpaid)},
		field{"budget", appendBudget(nil, got.Budget), appendBudget(nil, r.Budget)},
	); err != nil {
		return err
	}
	s.meter = meter
	s.forgetIfBeyond(got.ExecID)
	return nil
}

func (s *Session) replayRefund(got RefundRecord) error {
	meter, r, err := s.k.Refund(s.meter, got.ExecID, got.Amount, got.Reason)
	if errors.Is(err, ErrUnknownExecution) && s.forgotten > 0 {
		// Held, or within the recording session's longer horizon: the
		// execution's ledger entry is forgotten here, the totals are not.
		var b Budget
		if b, err = s.meter.budget.refundForgotten(got.Amount); err == nil {
			meter = s.meter
			meter.budget = b
			r.Budget = snapshot(b)
		}
	}
	if err != nil {
		return fmt.Errorf("re-refund failed: %w", err)
	}
	if err := same(field{"budget", appendBudget(nil, got.Budget), appendBudget(nil, r.Budget)}); err != nil {
		return err
	}
	s.meter = meter
	return nil
}

// field is one recorded member and what the replay produced for it, both
// in their payload form.
type field struct {
	name          string
	recorded, got []byte
}

func same(fields ...field) error {
	for _, f := range fields {
		if string(f.recorded) != string(f.got) {
			return fmt.Errorf("recorded %s %s, replayed %s", f.name, f.recorded, f.got)
		}
	}
	return nil
}
