package speculative

import (
	"cmp"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"
)

// interrupted is the reason recorded for a write a stop interrupted
// before it reached the backend.
const interrupted = "interrupted: the steward stopped before the write was applied"

// restart rebuilds the open status intents from the log and finishes the
// writes a stop interrupted (see NewSteward).
func (s *Steward) restart(ctx context.Context) error {
	h, err := replay(ctx, s.log)
	if err != nil {
		return err
	}
	s.intents, s.n = h.open, h.n
	if len(h.started) == 0 && len(h.open) == 0 {
		return nil
	}
	at := s.now() // one instant stamps everything the restart records
	ws := make([]*started, 0, len(h.started))
	for _, w := range h.started {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *started) int { return cmp.Compare(a.at, b.at) })
	for _, w := range ws {
		if err := s.finish(ctx, at, w); err != nil {
			return err
		}
	}
	for _, in := range s.pending() {
		if err := s.finishStatus(ctx, at, h, in); err != nil {
			return err
		}
	}
	return nil
}

// finish records the outcome of an interrupted write other than a status
// change, as the backend holds it.
func (s *Steward) finish(ctx context.Context, at time.Time, w *started) error {
	e := w.entry
	if !w.linking {
		done := false
		if w.approved {
			var err error
			if done, err = s.backend.Applied(ctx, e.Write, e.Intent); err != nil {
				return wrap("finishing intent "+e.Intent, err)
			}
		}
		if !done {
			return s.record(ctx, at, RejectEntry{Intent: e.Intent, Write: e.Write, Reasons: []string{interrupted}})
		}
		p := PersistEntry{Intent: e.Intent, Write: e.Write, ClaimID: e.ClaimID, Digest: e.Digest}
		if e.Write == WriteKindHypothesis {
			var err error
			if p, err = s.persistedHypothesis(ctx, e); err != nil {
				return err
			}
		}
		if err := s.record(ctx, at, p); err != nil {
			return err
		}
		if e.Write != WriteKindHypothesis || strings.TrimSpace(e.ClaimID) == "" {
			return nil
		}
	}
	linked, err := s.backend.Applied(ctx, WriteKindLink, e.Intent)
	switch {
	case err != nil:
		return wrap("finishing intent "+e.Intent, err)
	case linked:
		return s.record(ctx, at, PersistEntry{Intent: e.Intent, Write: WriteKindLink, ID: e.ID, ClaimID: e.ClaimID})
	}
	return s.record(ctx, at, SoftFailEntry{Intent: e.Intent, Write: WriteKindLink, ID: e.ID, ClaimID: e.ClaimID,
		Reason: "interrupted: the steward stopped before the link was made"})
}

// persistedHypothesis is the PersistEntry of a hypothesis the backend
// holds: its id, session and the digest of its document.
func (s *Steward) persistedHypothesis(ctx context.Context, e IntentEntry) (PersistEntry, error) {
	hs, err := s.backend.Hypotheses(ctx, e.SessionID)
	if err != nil {
		return PersistEntry{}, wrap("finishing intent "+e.Intent, err)
	}
	i := slices.IndexFunc(hs, func(h HypothesisRecord) bool { return h.ID == e.ID })
	if i < 0 {
		return PersistEntry{}, fmt.Errorf("%w: the backend applied hypothesis intent %q but holds no hypothesis %q in session %q", ErrMismatch, e.Intent, e.ID, e.SessionID)
	}
	return PersistEntry{Intent: e.Intent, Write: WriteKindHypothesis, ID: e.ID, SessionID: e.SessionID, Digest: sha256.Sum256(hs[i].Document)}, nil
}

// finishStatus records a status intent whose write landed before the stop
// as executed, with the transition the promotion policy gives for what the
// log and the backend hold; an intent whose write did not land stays open.
func (s *Steward) finishStatus(ctx context.Context, at time.Time, h *history, in *intent) error {
	done, err := s.backend.Applied(ctx, WriteKindStatus, in.id)
	if err != nil || !done {
		return wrapIf("finishing intent "+in.id, err)
	}
	from := StatusSpeculative
	if st, ok := h.status[in.claimID]; ok {
		from = st.status
	}
	evidence, err := s.evidence(ctx, in.claimID)
	if err != nil {
		return err
	}
	req := PromotionRequest{ClaimID: in.claimID, From: from, To: in.to, Evidence: evidence, Checks: in.checks, Approval: in.approval}
	if from == StatusRefuted {
		req.Known = h.status[in.claimID].evidence
	}
	t, err := Promote(req)
	if err != nil {
		// The write landed, so the policy allowed it: record the move.
		t = Transition{ClaimID: in.claimID, From: from, To: in.to, Direction: direction(from, in.to)}
	}
	delete(s.intents, in.id)
	return s.record(ctx, at, PersistEntry{Intent: in.id, Write: WriteKindStatus, ClaimID: in.claimID,
		From: from, To: in.to, Direction: t.Direction, Evidence: t.Evidence, Approval: in.approval})
}

func wrapIf(context string, err error) error {
	if err == nil {
		return nil
	}
	return wrap(context, err)
}

// PendingIntent is a status write intent that is neither executed nor
// rejected: its id, what it would do, and its approval once approved.
type PendingIntent struct {
	ID       string
	ClaimID  string
	To       Status
	Checks   NonFragility
	Approval *Approval
}

// Pending lists the open status intents, oldest first — after a restart,
// those the log shows as proposed and not finished.
func (s *Steward) Pending() []PendingIntent {
	s.mu.Lock()
	defer s.mu.Unlock()
	ins := s.pending()
	out := make([]PendingIntent, len(ins))
	for i, in := range ins {
		out[i] = PendingIntent{ID: in.id, ClaimID: in.claimID, To: in.to,
			Checks: NonFragility{FeynmanPassed: in.checks.FeynmanPassed, SensitivityFailures: slices.Clone(in.checks.SensitivityFailures)}}
		if in.approval != nil {
			a := *in.approval
			out[i].Approval = &a
		}
	}
	return out
}

// pending returns the open intents in the order they were made.
func (s *Steward) pending() []*intent {
	out := make([]*intent, 0, len(s.intents))
	for _, in := range s.intents {
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b *intent) int { return cmp.Compare(a.n, b.n) })
	return out
}
