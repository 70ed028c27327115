package speculative

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/verity-go/verity/trace"
)

// Trace kinds the Steward records. Every payload but speculative.design's
// has "intent" (the intent id), and all but speculative.approve's and
// speculative.design's have "write" (the WriteKind); speculative.design
// has "claim_id", "template_qid", "scope_lock_id" and "hints_digest". Evidence is identified by "claim_id" and "digest" (its ID),
// hypotheses by "id", "session_id" and the "digest" of their content —
// never the content itself; status intents carry "claim_id", "to",
// "feynman_passed" and "sensitivity_failures", and their persist entry
// "from", "to", "direction", the "evidence" digests and the approval;
// rejections carry "reasons", soft failures a "reason", approvals "by"
// and "human".
const (
	KindIntent   = "speculative.intent"    // a write intent was made
	KindApprove  = "speculative.approve"   // an intent was approved (by a person or by policy)
	KindReject   = "speculative.reject"    // an intent was refused: a hard failure, nothing persisted
	KindPersist  = "speculative.persist"   // an artifact was persisted
	KindSoftFail = "speculative.soft_fail" // a best-effort step failed; the artifact persisted
	KindDesign   = "speculative.design"    // an experiment was designed; only the hints digest is recorded
)

// PolicyApprover is the approver the Steward records when its own policy
// approves a write that needs no human (evidence, hypotheses,
// propositions, downgrades).
const PolicyApprover = "steward-policy"

// IntentState is where a status write intent stands.
type IntentState uint8

const (
	IntentPending IntentState = iota + 1
	IntentApproved
	IntentExecuted
	IntentRejected
)

func (s IntentState) String() string {
	switch s {
	case IntentPending:
		return "pending"
	case IntentApproved:
		return "approved"
	case IntentExecuted:
		return "executed"
	case IntentRejected:
		return "rejected"
	}
	return fmt.Sprintf("IntentState(%d)", uint8(s))
}

// Intent is a status write intent as the Steward holds it.
type Intent struct {
	ID       string
	ClaimID  string
	To       Status
	Checks   NonFragility
	Approval *Approval
	State    IntentState
}

// Steward is the only executor of write intents (Guard 3). It checks every
// write with the guards and the promotion policy, issues the Write values a
// Backend accepts (nothing else can make them), and records every intent,
// approval, rejection, soft failure and persisted artifact in a trace.Log.
// Hard failures abort the write; soft failures are reported in the receipt
// and in the log. It is safe for concurrent use; calls are serialised.
type Steward struct {
	mu      sync.Mutex
	backend Backend
	log     *trace.Log
	newID   func() string
	intents map[string]*Intent
}

// StewardOption configures a Steward.
type StewardOption func(*Steward)

// WithIDs replaces the id source (UUIDv7 by default).
func WithIDs(newID func() string) StewardOption { return func(s *Steward) { s.newID = newID } }

// NewSteward returns a Steward writing through backend and recording into
// log.
func NewSteward(backend Backend, log *trace.Log, opts ...StewardOption) (*Steward, error) {
	if backend == nil || log == nil {
		return nil, fmt.Errorf("%w: a steward needs a backend and a log", ErrMalformed)
	}
	s := &Steward{backend: backend, log: log, intents: map[string]*Intent{}, newID: func() string {
		return uuid.Must(uuid.NewV7()).String()
	}}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

func (s *Steward) record(ctx context.Context, kind string, payload map[string]any) error {
	if _, err := s.log.AppendValue(ctx, kind, payload); err != nil {
		return fmt.Errorf("speculative: recording %s: %w", kind, err)
	}
	return nil
}

func reasons(err error) []any {
	var ve *ValidationError
	if errors.As(err, &ve) {
		out := make([]any, len(ve.Violations))
		for i, v := range ve.Violations {
			out[i] = v.String()
		}
		return out
	}
	return []any{err.Error()}
}

// reject records a hard failure and returns err (joined with a recording
// failure, if any).
func (s *Steward) reject(ctx context.Context, intent string, kind WriteKind, err error) error {
	rerr := s.record(ctx, KindReject, map[string]any{"intent": intent, "write": kind.String(), "reasons": reasons(err)})
	return errors.Join(err, rerr)
}

func (s *Steward) approveByPolicy(ctx context.Context, intent string) error {
	return s.record(ctx, KindApprove, map[string]any{"intent": intent, "by": PolicyApprover, "human": false})
}

// EvidenceReceipt describes persisted validation evidence.
type EvidenceReceipt struct {
	Intent  string
	ID      Digest
	ClaimID string
}

// PersistEvidence persists validation evidence. Guards 1 and 2 are hard
// failures: a speculative marker anywhere, or a missing or blank claim id,
// aborts the write with the *ValidationError of ParseEvidence, and the
// rejection is recorded.
func (s *Steward) PersistEvidence(ctx context.Context, doc any) (EvidenceReceipt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	intent := s.newID()
	ev, perr := ParseEvidence(doc)
	p := map[string]any{"intent": intent, "write": WriteEvidence.String()}
	if perr == nil {
		p["claim_id"], p["digest"] = ev.claimID, ev.id.String()
	}
	if err := s.record(ctx, KindIntent, p); err != nil {
		return EvidenceReceipt{}, err
	}
	if perr != nil {
		return EvidenceReceipt{}, s.reject(ctx, intent, WriteEvidence, perr)
	}
	if err := s.approveByPolicy(ctx, intent); err != nil {
		return EvidenceReceipt{}, err
	}
	w := Write{kind: WriteEvidence, intent: intent, id: ev.id.String(), claimID: ev.claimID, doc: ev.doc}
	if err := s.backend.Apply(ctx, w); err != nil {
		return EvidenceReceipt{}, s.reject(ctx, intent, WriteEvidence, fmt.Errorf("speculative: persisting evidence: %w", err))
	}
	if err := s.record(ctx, KindPersist, map[string]any{"intent": intent, "write": WriteEvidence.String(), "claim_id": ev.claimID, "digest": ev.id.String()}); err != nil {
		return EvidenceReceipt{}, err
	}
	return EvidenceReceipt{Intent: intent, ID: ev.id, ClaimID: ev.claimID}, nil
}

// RegisterProposition registers the proposition of a claim, the anchor
// speculative hypotheses link to. The document is grounded: Guard 1
// applies, and a speculative one is a hard failure.
func (s *Steward) RegisterProposition(ctx context.Context, claimID string, doc any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	intent := s.newID()
	if err := s.record(ctx, KindIntent, map[string]any{"intent": intent, "write": WriteProposition.String(), "claim_id": claimID}); err != nil {
		return err
	}
	var err error
	var b []byte
	switch {
	case strings.TrimSpace(claimID) == "":
		err = fmt.Errorf("%w: proposition claim id is blank", ErrMissingClaimID)
	default:
		if err = Check(doc); err == nil {
			if b, err = canonical(doc); err != nil {
				err = fmt.Errorf("%w: proposition: %v", ErrMalformed, err)
			}
		}
	}
	if err != nil {
		return s.reject(ctx, intent, WriteProposition, err)
	}
	if err := s.approveByPolicy(ctx, intent); err != nil {
		return err
	}
	if err := s.backend.Apply(ctx, Write{kind: WriteProposition, intent: intent, claimID: claimID, doc: b}); err != nil {
		return s.reject(ctx, intent, WriteProposition, fmt.Errorf("speculative: persisting proposition: %w", err))
	}
	return s.record(ctx, KindPersist, map[string]any{"intent": intent, "write": WriteProposition.String(), "claim_id": claimID})
}

// Hypothesis is a speculative hypothesis to store: its content (any JSON)
// and, optionally, the claim whose proposition it should be linked to.
type Hypothesis struct {
	ClaimID string
	Content any
}

// LinkStats counts proposition links.
type LinkStats struct {
	Attempted, Created int
}

// Link is one link of a stored hypothesis.
type Link struct {
	Role   string // "session" or "proposition"
	Target string // the session id or the claim id
}

// HypothesisReceipt describes a stored hypothesis. Links lists the links
// made: the session link always, the proposition link when it was created.
type HypothesisReceipt struct {
	Intent           string
	ID               string
	SessionID        string
	Links            []Link
	PropositionLinks LinkStats
	SoftFailures     []string
}

// PersistHypothesis stores a speculative hypothesis, scoped to a session
// (Guard 4): it is written as a hypothesis, never as evidence, and can be
// read back only through Hypotheses(sessionID). A blank session id or
// content that is not JSON is a hard failure. Linking to the claim's
// proposition is best effort: when it fails (no proposition, say) the
// hypothesis is still stored, and the failure is a soft failure in the
// receipt and the log.
func (s *Steward) PersistHypothesis(ctx context.Context, sessionID string, h Hypothesis) (HypothesisReceipt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	intent := s.newID()
	id := s.newID()
	if err := s.record(ctx, KindIntent, map[string]any{"intent": intent, "write": WriteHypothesis.String(), "session_id": sessionID, "claim_id": h.ClaimID}); err != nil {
		return HypothesisReceipt{}, err
	}
	if strings.TrimSpace(sessionID) == "" {
		return HypothesisReceipt{}, s.reject(ctx, intent, WriteHypothesis, ErrSession)
	}
	doc, err := canonical(h.Content)
	if err != nil {
		return HypothesisReceipt{}, s.reject(ctx, intent, WriteHypothesis, fmt.Errorf("%w: hypothesis content: %v", ErrMalformed, err))
	}
	if err := s.approveByPolicy(ctx, intent); err != nil {
		return HypothesisReceipt{}, err
	}
	w := Write{kind: WriteHypothesis, intent: intent, id: id, claimID: h.ClaimID, sessionID: sessionID, doc: doc}
	if err := s.backend.Apply(ctx, w); err != nil {
		return HypothesisReceipt{}, s.reject(ctx, intent, WriteHypothesis, fmt.Errorf("speculative: persisting hypothesis: %w", err))
	}
	r := HypothesisReceipt{Intent: intent, ID: id, SessionID: sessionID, Links: []Link{{Role: "session", Target: sessionID}}}
	digest := sha256.Sum256(doc)
	if err := s.record(ctx, KindPersist, map[string]any{"intent": intent, "write": WriteHypothesis.String(), "id": id, "session_id": sessionID, "digest": Digest(digest).String()}); err != nil {
		return r, err
	}
	if strings.TrimSpace(h.ClaimID) == "" {
		return r, nil
	}
	r.PropositionLinks.Attempted++
	link := Write{kind: WriteLink, intent: intent, id: id, claimID: h.ClaimID, sessionID: sessionID}
	if err := s.backend.Apply(ctx, link); err != nil {
		r.SoftFailures = append(r.SoftFailures, fmt.Sprintf("proposition link to %q: %v", h.ClaimID, err))
		return r, s.record(ctx, KindSoftFail, map[string]any{"intent": intent, "write": WriteLink.String(), "id": id, "claim_id": h.ClaimID, "reason": err.Error()})
	}
	r.PropositionLinks.Created++
	r.Links = append(r.Links, Link{Role: "proposition", Target: h.ClaimID})
	return r, s.record(ctx, KindPersist, map[string]any{"intent": intent, "write": WriteLink.String(), "id": id, "claim_id": h.ClaimID})
}

// ProposeStatus makes a write intent to move a claim to status to, with
// the outcome of the non-fragility checks. It returns the intent id; the
// intent is pending until approved, rejected or executed.
func (s *Steward) ProposeStatus(ctx context.Context, claimID string, to Status, checks NonFragility) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.TrimSpace(claimID) == "" {
		return "", fmt.Errorf("%w: status intent without a claim id", ErrMissingClaimID)
	}
	if !to.Valid() {
		return "", fmt.Errorf("%w: %v", ErrUnknownStatus, to)
	}
	in := &Intent{ID: s.newID(), ClaimID: claimID, To: to, State: IntentPending,
		Checks: NonFragility{FeynmanPassed: checks.FeynmanPassed, SensitivityFailures: append([]string(nil), checks.SensitivityFailures...)}}
	failures := make([]any, len(in.Checks.SensitivityFailures))
	for i, f := range in.Checks.SensitivityFailures {
		failures[i] = f
	}
	if err := s.record(ctx, KindIntent, map[string]any{"intent": in.ID, "write": WriteStatus.String(), "claim_id": claimID, "to": to.String(),
		"feynman_passed": checks.FeynmanPassed, "sensitivity_failures": failures}); err != nil {
		return "", err
	}
	s.intents[in.ID] = in
	return in.ID, nil
}

func (s *Steward) intent(id string, states ...IntentState) (*Intent, error) {
	in, ok := s.intents[id]
	if !ok {
		return nil, fmt.Errorf("%w: unknown intent %q", ErrIntent, id)
	}
	for _, st := range states {
		if in.State == st {
			return in, nil
		}
	}
	return nil, fmt.Errorf("%w: intent %q is %v", ErrIntent, id, in.State)
}

// Approve approves a pending status intent.
func (s *Steward) Approve(ctx context.Context, intentID string, a Approval) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, err := s.intent(intentID, IntentPending)
	if err != nil {
		return err
	}
	if strings.TrimSpace(a.By) == "" {
		return fmt.Errorf("%w: an approval names its approver", ErrIntent)
	}
	if err := s.record(ctx, KindApprove, map[string]any{"intent": intentID, "by": a.By, "human": a.Human}); err != nil {
		return err
	}
	in.Approval, in.State = &a, IntentApproved
	return nil
}

// Reject refuses a pending or approved status intent.
func (s *Steward) Reject(ctx context.Context, intentID, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, err := s.intent(intentID, IntentPending, IntentApproved)
	if err != nil {
		return err
	}
	if err := s.record(ctx, KindReject, map[string]any{"intent": intentID, "write": WriteStatus.String(), "reasons": []any{reason}}); err != nil {
		return err
	}
	in.State = IntentRejected
	return nil
}

// Intent returns a copy of a status intent.
func (s *Steward) Intent(id string) (Intent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, ok := s.intents[id]
	if !ok {
		return Intent{}, false
	}
	c := *in
	c.Checks.SensitivityFailures = append([]string(nil), in.Checks.SensitivityFailures...)
	if in.Approval != nil {
		a := *in.Approval
		c.Approval = &a
	}
	return c, true
}

// Execute executes a pending or approved status intent. The claim's
// current status (speculative when it has none), the evidence on record
// (re-checked by Guards 1 and 2 on the way out of the backend) and the
// intent's checks and approval go to Promote. A refusal is a hard failure:
// the intent is rejected and nothing is written. An allowed transition is
// written — downgrades included — and recorded.
func (s *Steward) Execute(ctx context.Context, intentID string) (Transition, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, err := s.intent(intentID, IntentPending, IntentApproved)
	if err != nil {
		return Transition{}, err
	}
	fail := func(err error) (Transition, error) {
		in.State = IntentRejected
		return Transition{}, s.reject(ctx, in.ID, WriteStatus, err)
	}
	rec, err := s.backend.Status(ctx, in.ClaimID)
	if err != nil {
		return fail(fmt.Errorf("speculative: reading status: %w", err))
	}
	from := rec.Status
	if from == 0 {
		from = StatusSpeculative
	}
	evidence, err := s.evidence(ctx, in.ClaimID)
	if err != nil {
		return fail(err)
	}
	req := PromotionRequest{ClaimID: in.ClaimID, From: from, To: in.To, Evidence: evidence, Checks: in.Checks, Approval: in.Approval}
	if from == StatusRefuted {
		req.Known = rec.Evidence
	}
	t, err := Promote(req)
	if err != nil {
		return fail(err)
	}
	ids := make([]Digest, len(evidence))
	for i, e := range evidence {
		ids[i] = e.id
	}
	w := Write{kind: WriteStatus, intent: in.ID, claimID: in.ClaimID, from: from, to: in.To, evidence: ids}
	if err := s.backend.Apply(ctx, w); err != nil {
		return fail(fmt.Errorf("speculative: persisting status: %w", err))
	}
	in.State = IntentExecuted
	evs := make([]any, len(t.Evidence))
	for i, d := range t.Evidence {
		evs[i] = d.String()
	}
	p := map[string]any{"intent": in.ID, "write": WriteStatus.String(), "claim_id": in.ClaimID,
		"from": from.String(), "to": in.To.String(), "direction": t.Direction.String(), "evidence": evs}
	if in.Approval != nil {
		p["approved_by"], p["human"] = in.Approval.By, in.Approval.Human
	}
	return t, s.record(ctx, KindPersist, p)
}

func (s *Steward) evidence(ctx context.Context, claimID string) ([]Evidence, error) {
	docs, err := s.backend.Evidence(ctx, claimID)
	if err != nil {
		return nil, fmt.Errorf("speculative: reading evidence: %w", err)
	}
	out := make([]Evidence, 0, len(docs))
	for i, d := range docs {
		ev, err := ParseEvidence(d)
		if err != nil {
			return nil, fmt.Errorf("speculative: stored evidence %d for %q: %w", i, claimID, err)
		}
		if ev.claimID != claimID {
			return nil, fmt.Errorf("%w: stored evidence %d filed under %q names claim %q", ErrMalformed, i, claimID, ev.claimID)
		}
		out = append(out, ev)
	}
	return out, nil
}

// Evidence returns the validation evidence on record for a claim, each
// document re-checked by Guards 1 and 2. Hypotheses never appear here.
func (s *Steward) Evidence(ctx context.Context, claimID string) ([]Evidence, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.evidence(ctx, claimID)
}

// Hypotheses returns the speculative hypotheses of a session.
func (s *Steward) Hypotheses(ctx context.Context, sessionID string) ([]HypothesisRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backend.Hypotheses(ctx, sessionID)
}

// Status returns a claim's status: speculative when none was ever set.
func (s *Steward) Status(ctx context.Context, claimID string) (Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, err := s.backend.Status(ctx, claimID)
	if err != nil {
		return 0, err
	}
	if rec.Status == 0 {
		return StatusSpeculative, nil
	}
	return rec.Status, nil
}

// Design runs Design and records the crossing in the log: the claim, the
// template chosen and, when hints were given, their Digest — never the
// hints themselves.
func (s *Steward) Design(ctx context.Context, claim Claim, hints *ExperimentHints, scopeLockID string) (ExperimentSpec, error) {
	spec, err := Design(claim, hints, scopeLockID)
	if err != nil {
		return ExperimentSpec{}, err
	}
	p := map[string]any{"claim_id": claim.ID, "template_qid": spec.TemplateQID, "scope_lock_id": scopeLockID}
	if hints != nil {
		d, err := hints.Digest()
		if err != nil {
			return ExperimentSpec{}, err
		}
		p["hints_digest"] = d.String()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record(ctx, KindDesign, p); err != nil {
		return ExperimentSpec{}, err
	}
	return spec, nil
}
