package speculative

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/verity-go/verity/trace"
)

// intentState is where a status write intent stands.
type intentState uint8

const (
	intentPending intentState = iota + 1
	intentApproved
	intentExecuted
	intentRejected
)

var intentStateNames = [...]string{"", "pending", "approved", "executed", "rejected"}

func (s intentState) String() string {
	if s >= intentPending && s <= intentRejected {
		return intentStateNames[s]
	}
	return fmt.Sprintf("intentState(%d)", uint8(s))
}

// intent is a status write intent as the Steward holds it.
type intent struct {
	id       string
	claimID  string
	to       Status
	checks   NonFragility
	approval *Approval
	state    intentState
	n        uint64 // the order intents were made in
}

// Steward is the only executor of write intents (Guard 3). It checks every
// write with the guards and the promotion policy, issues the Write values a
// Backend accepts (nothing else can make them), and records every intent,
// approval, rejection, soft failure and persisted artifact in a trace.Log
// as typed entries (IntentEntry, …). Hard failures abort the write; soft
// failures are reported in the receipt and in the log. Each call reads the
// clock once and stamps every entry it records with that instant. It is
// safe for concurrent use; calls are serialised.
//
// The log is the Steward's memory: a Steward opened over a log that holds
// entries continues where the last one stopped (see NewSteward). In
// memory it keeps only the status intents still open; an intent leaves it
// once executed or rejected, so finished work costs nothing. One Steward
// at a time may write to a log.
type Steward struct {
	mu      sync.Mutex
	backend Backend
	log     *trace.Log
	now     func() time.Time
	newID   func() string
	intents map[string]*intent // open status intents only
	n       uint64
}

// Option configures a Steward.
type Option func(*Steward)

// WithClock replaces the clock (time.Now by default); nil keeps it.
func WithClock(now func() time.Time) Option {
	return func(s *Steward) {
		if now != nil {
			s.now = now
		}
	}
}

// WithIDs replaces the id source of intents and hypotheses (UUIDv7 by
// default); nil keeps it.
func WithIDs(newID func() string) Option {
	return func(s *Steward) {
		if newID != nil {
			s.newID = newID
		}
	}
}

// NewSteward returns a Steward writing through backend and recording into
// log. It first reads the whole log (entries of other kinds are skipped;
// one that does not decode is an error): status intents proposed and not
// yet executed or rejected are open again, with their approvals. A write
// the log shows as started and not finished — the process stopped between
// the intent and its outcome — is finished from what the backend holds
// (Backend.Applied): persisted if the write landed, else rejected (a link:
// a soft failure), and a status intent whose write landed is recorded as
// executed. After that, Compare holds for a backend and log that agreed
// before the stop.
func NewSteward(ctx context.Context, log *trace.Log, backend Backend, opts ...Option) (*Steward, error) {
	if err := ctx.Err(); err != nil {
		return nil, wrap("new steward", err)
	}
	if backend == nil || log == nil {
		return nil, fmt.Errorf("%w: a steward needs a log and a backend", ErrMalformed)
	}
	s := &Steward{backend: backend, log: log, intents: map[string]*intent{}, now: time.Now, newID: func() string {
		return uuid.Must(uuid.NewV7()).String()
	}}
	for _, o := range opts {
		o(s)
	}
	if err := s.restart(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// record appends e stamped with at.
func (s *Steward) record(ctx context.Context, at time.Time, e Entry) error {
	if _, err := s.log.AppendValue(ctx, e.kind(), e, trace.At(at)); err != nil {
		return wrap("recording "+e.kind(), err)
	}
	return nil
}

// reasons lists why err refused a write: one line per violation of a
// *ValidationError, else the error's message.
func reasons(err error) []string {
	var ve *ValidationError
	if errors.As(err, &ve) {
		out := make([]string, len(ve.Violations))
		for i, v := range ve.Violations {
			out[i] = v.String()
		}
		return out
	}
	return []string{err.Error()}
}

// reject records a hard failure and returns err (with a recording failure,
// if any).
func (s *Steward) reject(ctx context.Context, at time.Time, intent string, kind WriteKind, err error) error {
	rerr := s.record(ctx, at, RejectEntry{Intent: intent, Write: kind, Reasons: reasons(err)})
	if rerr == nil {
		return err
	}
	return &wrapped{msg: err.Error() + "; and " + detail(rerr), errs: []error{err, rerr}}
}

func (s *Steward) approveByPolicy(ctx context.Context, at time.Time, intent string) error {
	return s.record(ctx, at, ApproveEntry{Intent: intent, By: PolicyApprover})
}

// EvidenceReceipt describes persisted validation evidence.
type EvidenceReceipt struct {
	Intent  string
	ID      trace.Hash
	ClaimID string
}

// PersistEvidence persists validation evidence, given as anything Detect
// accepts (a JSON text, a decoded object, a Go value). Guards 1 and 2 are
// hard failures: a speculative marker anywhere, or a missing or blank
// claim id, aborts the write with the *ValidationError of DecodeEvidence,
// and the rejection is recorded.
func (s *Steward) PersistEvidence(ctx context.Context, doc any) (EvidenceReceipt, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, intent := s.now(), s.newID()
	ev, perr := evidenceOf(doc)
	in := IntentEntry{Intent: intent, Write: WriteKindEvidence}
	if perr == nil {
		in.ClaimID, in.Digest = ev.claimID, ev.id
	}
	if err := s.record(ctx, at, in); err != nil {
		return EvidenceReceipt{}, err
	}
	if perr != nil {
		return EvidenceReceipt{}, s.reject(ctx, at, intent, WriteKindEvidence, perr)
	}
	if err := s.approveByPolicy(ctx, at, intent); err != nil {
		return EvidenceReceipt{}, err
	}
	w := Write{kind: WriteKindEvidence, intent: intent, id: ev.id.String(), claimID: ev.claimID, doc: ev.doc}
	if err := s.backend.Apply(ctx, w); err != nil {
		return EvidenceReceipt{}, s.reject(ctx, at, intent, WriteKindEvidence, wrap("persisting evidence", err))
	}
	if err := s.record(ctx, at, PersistEntry{Intent: intent, Write: WriteKindEvidence, ClaimID: ev.claimID, Digest: ev.id}); err != nil {
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
	at, intent := s.now(), s.newID()
	if err := s.record(ctx, at, IntentEntry{Intent: intent, Write: WriteKindProposition, ClaimID: claimID}); err != nil {
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
		return s.reject(ctx, at, intent, WriteKindProposition, err)
	}
	if err := s.approveByPolicy(ctx, at, intent); err != nil {
		return err
	}
	if err := s.backend.Apply(ctx, Write{kind: WriteKindProposition, intent: intent, claimID: claimID, doc: b}); err != nil {
		return s.reject(ctx, at, intent, WriteKindProposition, wrap("persisting proposition", err))
	}
	return s.record(ctx, at, PersistEntry{Intent: intent, Write: WriteKindProposition, ClaimID: claimID})
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
	at, intent, id := s.now(), s.newID(), s.newID()
	if err := s.record(ctx, at, IntentEntry{Intent: intent, Write: WriteKindHypothesis, ID: id, SessionID: sessionID, ClaimID: h.ClaimID}); err != nil {
		return HypothesisReceipt{}, err
	}
	if strings.TrimSpace(sessionID) == "" {
		return HypothesisReceipt{}, s.reject(ctx, at, intent, WriteKindHypothesis, ErrSession)
	}
	doc, err := canonical(h.Content)
	if err != nil {
		return HypothesisReceipt{}, s.reject(ctx, at, intent, WriteKindHypothesis, fmt.Errorf("%w: hypothesis content: %v", ErrMalformed, err))
	}
	if err := s.approveByPolicy(ctx, at, intent); err != nil {
		return HypothesisReceipt{}, err
	}
	w := Write{kind: WriteKindHypothesis, intent: intent, id: id, claimID: h.ClaimID, sessionID: sessionID, doc: doc}
	if err := s.backend.Apply(ctx, w); err != nil {
		return HypothesisReceipt{}, s.reject(ctx, at, intent, WriteKindHypothesis, wrap("persisting hypothesis", err))
	}
	r := HypothesisReceipt{Intent: intent, ID: id, SessionID: sessionID, Links: []Link{{Role: "session", Target: sessionID}}}
	if err := s.record(ctx, at, PersistEntry{Intent: intent, Write: WriteKindHypothesis, ID: id, SessionID: sessionID, Digest: sha256.Sum256(doc)}); err != nil {
		return r, err
	}
	if strings.TrimSpace(h.ClaimID) == "" {
		return r, nil
	}
	r.PropositionLinks.Attempted++
	link := Write{kind: WriteKindLink, intent: intent, id: id, claimID: h.ClaimID, sessionID: sessionID}
	if err := s.backend.Apply(ctx, link); err != nil {
		reason := fmt.Sprintf("proposition link to %q: %s", h.ClaimID, detail(err))
		r.SoftFailures = append(r.SoftFailures, reason)
		return r, s.record(ctx, at, SoftFailEntry{Intent: intent, Write: WriteKindLink, ID: id, ClaimID: h.ClaimID, Reason: detail(err)})
	}
	r.PropositionLinks.Created++
	r.Links = append(r.Links, Link{Role: "proposition", Target: h.ClaimID})
	return r, s.record(ctx, at, PersistEntry{Intent: intent, Write: WriteKindLink, ID: id, ClaimID: h.ClaimID})
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
	s.n++
	in := &intent{id: s.newID(), claimID: claimID, to: to, state: intentPending, n: s.n,
		checks: NonFragility{FeynmanPassed: checks.FeynmanPassed, SensitivityFailures: slices.Clone(checks.SensitivityFailures)}}
	c := in.checks
	if err := s.record(ctx, s.now(), IntentEntry{Intent: in.id, Write: WriteKindStatus, ClaimID: claimID, To: to, Checks: &c}); err != nil {
		return "", err
	}
	s.intents[in.id] = in
	return in.id, nil
}

func (s *Steward) intent(id string, states ...intentState) (*intent, error) {
	in, ok := s.intents[id]
	if !ok {
		return nil, fmt.Errorf("%w: intent %q is unknown or finished", ErrIntent, id)
	}
	if !slices.Contains(states, in.state) {
		return nil, fmt.Errorf("%w: intent %q is %v", ErrIntent, id, in.state)
	}
	return in, nil
}

// Approve approves a pending status intent.
func (s *Steward) Approve(ctx context.Context, intentID string, a Approval) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, err := s.intent(intentID, intentPending)
	if err != nil {
		return err
	}
	if strings.TrimSpace(a.By) == "" {
		return fmt.Errorf("%w: an approval names its approver", ErrIntent)
	}
	if err := s.record(ctx, s.now(), ApproveEntry{Intent: intentID, By: a.By, Human: a.Human}); err != nil {
		return err
	}
	in.approval, in.state = &a, intentApproved
	return nil
}

// Reject refuses a pending or approved status intent.
func (s *Steward) Reject(ctx context.Context, intentID, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in, err := s.intent(intentID, intentPending, intentApproved)
	if err != nil {
		return err
	}
	if err := s.record(ctx, s.now(), RejectEntry{Intent: intentID, Write: WriteKindStatus, Reasons: []string{reason}}); err != nil {
		return err
	}
	delete(s.intents, in.id)
	return nil
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
	in, err := s.intent(intentID, intentPending, intentApproved)
	if err != nil {
		return Transition{}, err
	}
	at := s.now()
	fail := func(err error) (Transition, error) {
		delete(s.intents, in.id)
		return Transition{}, s.reject(ctx, at, in.id, WriteKindStatus, err)
	}
	from, known, err := s.status(ctx, in.claimID)
	if err != nil {
		return fail(err)
	}
	evidence, err := s.evidence(ctx, in.claimID)
	if err != nil {
		return fail(err)
	}
	req := PromotionRequest{ClaimID: in.claimID, From: from, To: in.to, Evidence: evidence, Checks: in.checks, Approval: in.approval}
	if from == StatusRefuted {
		req.Known = known
	}
	t, err := Promote(req)
	if err != nil {
		return fail(err)
	}
	ids := make([]trace.Hash, len(evidence))
	for i, e := range evidence {
		ids[i] = e.id
	}
	w := Write{kind: WriteKindStatus, intent: in.id, claimID: in.claimID, from: from, to: in.to, evidence: ids}
	if err := s.backend.Apply(ctx, w); err != nil {
		return fail(wrap("persisting status", err))
	}
	delete(s.intents, in.id)
	return t, s.record(ctx, at, PersistEntry{Intent: in.id, Write: WriteKindStatus, ClaimID: in.claimID,
		From: from, To: in.to, Direction: t.Direction, Evidence: t.Evidence, Approval: in.approval})
}

// status reads a claim's status record: speculative when none was ever
// set (the zero Status), an error when the backend holds no status.
func (s *Steward) status(ctx context.Context, claimID string) (Status, []trace.Hash, error) {
	rec, err := s.backend.Status(ctx, claimID)
	switch {
	case err != nil:
		return 0, nil, wrap("reading status", err)
	case rec.Status == 0:
		return StatusSpeculative, rec.Evidence, nil
	case !rec.Status.Valid():
		return 0, nil, fmt.Errorf("%w: stored status of %q: %v", ErrUnknownStatus, claimID, rec.Status)
	}
	return rec.Status, rec.Evidence, nil
}

func (s *Steward) evidence(ctx context.Context, claimID string) ([]Evidence, error) {
	docs, err := s.backend.Evidence(ctx, claimID)
	if err != nil {
		return nil, wrap("reading evidence", err)
	}
	out := make([]Evidence, 0, len(docs))
	for i, d := range docs {
		ev, err := evidenceOf(d)
		if err != nil {
			return nil, wrap(fmt.Sprintf("stored evidence %d for %q", i, claimID), err)
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
	st, _, err := s.status(ctx, claimID)
	return st, err
}

// Design runs Design and records the crossing in the log (a DesignEntry):
// the claim, the template chosen and, when hints were given, their Digest —
// never the hints themselves.
func (s *Steward) Design(ctx context.Context, claim Claim, hints *ExperimentHints, scopeLockID string) (ExperimentSpec, error) {
	spec, err := Design(claim, hints, scopeLockID)
	if err != nil {
		return ExperimentSpec{}, err
	}
	e := DesignEntry{ClaimID: claim.ID, TemplateQID: spec.TemplateQID, ScopeLockID: scopeLockID}
	if hints != nil {
		if e.HintsDigest, err = hints.Digest(); err != nil {
			return ExperimentSpec{}, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.record(ctx, s.now(), e); err != nil {
		return ExperimentSpec{}, err
	}
	return spec, nil
}
