package speculative

import (
	"fmt"
	"strings"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Trace kinds the Steward records, one per entry type.
const (
	KindIntent   = "speculative.intent"    // IntentEntry: a write intent was made
	KindApprove  = "speculative.approve"   // ApproveEntry: an intent was approved (by a person or by policy)
	KindReject   = "speculative.reject"    // RejectEntry: an intent was refused: a hard failure, nothing persisted
	KindPersist  = "speculative.persist"   // PersistEntry: an artifact was persisted
	KindSoftFail = "speculative.soft_fail" // SoftFailEntry: a best-effort step failed; the artifact persisted
	KindDesign   = "speculative.design"    // DesignEntry: an experiment was designed; only the hints digest is recorded
)

// PolicyApprover is the approver the Steward records when its own policy
// approves a write that needs no human (evidence, hypotheses,
// propositions).
const PolicyApprover = "steward-policy"

// Entry is the payload of one trace entry the Steward records: an
// IntentEntry, ApproveEntry, RejectEntry, PersistEntry, SoftFailEntry or
// DesignEntry. Payloads identify artifacts by id and digest, never by
// their content. DecodeEntry reads one back.
type Entry interface {
	kind() string
	check() error
}

// IntentEntry is the payload of a KindIntent entry, recorded before any
// guard runs. Evidence intents carry the claim id and the evidence's ID
// (Digest) when the document could be read; proposition intents the claim
// id; hypothesis intents the session, the claim id and the id the
// hypothesis will have (ID); status intents the claim id, the target
// status and the non-fragility checks.
type IntentEntry struct {
	Intent    string        `json:"intent"`
	Write     WriteKind     `json:"write"`
	ID        string        `json:"id,omitempty"`
	ClaimID   string        `json:"claim_id,omitempty"`
	SessionID string        `json:"session_id,omitempty"`
	Digest    trace.Hash    `json:"digest,omitzero"`
	To        Status        `json:"to,omitzero"`
	Checks    *NonFragility `json:"checks,omitempty"`
}

// ApproveEntry is the payload of a KindApprove entry: who approved an
// intent (PolicyApprover for the Steward's own policy) and whether that was
// a person.
type ApproveEntry struct {
	Intent string `json:"intent"`
	By     string `json:"by"`
	Human  bool   `json:"human"`
}

// RejectEntry is the payload of a KindReject entry: a hard failure, with
// every reason (a violation each, for a *ValidationError).
type RejectEntry struct {
	Intent  string    `json:"intent"`
	Write   WriteKind `json:"write"`
	Reasons []string  `json:"reasons"`
}

// PersistEntry is the payload of a KindPersist entry. Evidence carries its
// claim id and its ID (Digest); propositions their claim id; hypotheses
// their id, session and the Digest of their content; links the hypothesis
// id and the claim id; status writes the claim id, From, To, Direction,
// the IDs of the evidence on record and the approval, if any.
type PersistEntry struct {
	Intent    string       `json:"intent"`
	Write     WriteKind    `json:"write"`
	ID        string       `json:"id,omitempty"`
	ClaimID   string       `json:"claim_id,omitempty"`
	SessionID string       `json:"session_id,omitempty"`
	Digest    trace.Hash   `json:"digest,omitzero"`
	From      Status       `json:"from,omitzero"`
	To        Status       `json:"to,omitzero"`
	Direction Direction    `json:"direction,omitzero"`
	Evidence  []trace.Hash `json:"evidence,omitempty"`
	Approval  *Approval    `json:"approval,omitempty"`
}

// SoftFailEntry is the payload of a KindSoftFail entry: a best-effort step
// (today, linking hypothesis ID to the proposition of ClaimID) failed, and
// why.
type SoftFailEntry struct {
	Intent  string    `json:"intent"`
	Write   WriteKind `json:"write"`
	ID      string    `json:"id"`
	ClaimID string    `json:"claim_id"`
	Reason  string    `json:"reason"`
}

// DesignEntry is the payload of a KindDesign entry: the claim, the
// template chosen, the scope lock and, when hints were given, their
// Digest — never the hints themselves.
type DesignEntry struct {
	ClaimID     string     `json:"claim_id"`
	TemplateQID string     `json:"template_qid"`
	ScopeLockID string     `json:"scope_lock_id"`
	HintsDigest trace.Hash `json:"hints_digest,omitzero"`
}

func (IntentEntry) kind() string   { return KindIntent }
func (ApproveEntry) kind() string  { return KindApprove }
func (RejectEntry) kind() string   { return KindReject }
func (PersistEntry) kind() string  { return KindPersist }
func (SoftFailEntry) kind() string { return KindSoftFail }
func (DesignEntry) kind() string   { return KindDesign }

func (e IntentEntry) check() error   { return checkWrite(e.Intent, e.Write) }
func (e RejectEntry) check() error   { return checkWrite(e.Intent, e.Write) }
func (e PersistEntry) check() error  { return checkWrite(e.Intent, e.Write) }
func (e SoftFailEntry) check() error { return checkWrite(e.Intent, e.Write) }

func (e ApproveEntry) check() error {
	if e.Intent == "" || strings.TrimSpace(e.By) == "" {
		return fmt.Errorf("%w: an approval names its intent and its approver", ErrMalformed)
	}
	return nil
}

func (e DesignEntry) check() error {
	if e.ClaimID == "" || e.TemplateQID == "" || e.ScopeLockID == "" {
		return fmt.Errorf("%w: a design names its claim, template and scope lock", ErrMalformed)
	}
	return nil
}

func checkWrite(intent string, w WriteKind) error {
	if intent == "" || !w.valid() {
		return fmt.Errorf("%w: an entry names its intent and its write kind", ErrMalformed)
	}
	return nil
}

// DecodeEntry reads the payload of a trace entry the Steward recorded,
// strictly (canonical JSON, no unknown member, known enum names, the
// identifying members present), as the Entry type its kind names. An entry
// of another kind is an error.
func DecodeEntry(e trace.Entry) (Entry, error) {
	switch e.Kind {
	case KindIntent:
		return decodeAs[IntentEntry](e.Payload)
	case KindApprove:
		return decodeAs[ApproveEntry](e.Payload)
	case KindReject:
		return decodeAs[RejectEntry](e.Payload)
	case KindPersist:
		return decodeAs[PersistEntry](e.Payload)
	case KindSoftFail:
		return decodeAs[SoftFailEntry](e.Payload)
	case KindDesign:
		return decodeAs[DesignEntry](e.Payload)
	}
	return nil, fmt.Errorf("%w: %q is not a kind the steward records", ErrMalformed, e.Kind)
}

func decodeAs[T Entry](payload []byte) (Entry, error) {
	var v T
	if err := canon.DecodeInto(payload, &v, true); err != nil {
		// The error may quote one of the package's own (an unknown status
		// name): keep the prefix at the front only.
		return nil, fmt.Errorf("%w: %s payload: %s", ErrMalformed, v.kind(), strings.ReplaceAll(err.Error(), prefix, ""))
	}
	if err := v.check(); err != nil {
		return nil, err
	}
	return v, nil
}
