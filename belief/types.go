package belief

import (
	"encoding/json"
	"strings"
	"time"
)

// Verb names a recorded message of the belief protocol (§2.1). The reads,
// QUERY_BELIEF and AUDIT_TRACE, are never recorded and have no Verb. The
// zero Verb is none of them: Replay refuses an event that carries it.
type Verb string

// The recorded verbs.
const (
	VerbDeclareSession     Verb = "DECLARE_SESSION"
	VerbEliminate          Verb = "ELIMINATE"
	VerbEnterObligation    Verb = "ENTER_OBLIGATION"
	VerbRequestExit        Verb = "REQUEST_EXIT"
	VerbDeclareConclusion  Verb = "DECLARE_CONCLUSION"
	VerbRequestTermination Verb = "REQUEST_TERMINATION"
)

// Kind returns the trace kind under which events of this verb are
// recorded: "belief." followed by the verb in lower case
// ("belief.eliminate").
func (v Verb) Kind() string {
	switch v { // the recorded verbs, without building a string per event
	case VerbDeclareSession:
		return "belief.declare_session"
	case VerbEliminate:
		return "belief.eliminate"
	case VerbEnterObligation:
		return "belief.enter_obligation"
	case VerbRequestExit:
		return "belief.request_exit"
	case VerbDeclareConclusion:
		return "belief.declare_conclusion"
	case VerbRequestTermination:
		return "belief.request_termination"
	}
	return "belief." + strings.ToLower(string(v))
}

func verbOfKind(kind string) (Verb, bool) {
	for _, v := range []Verb{VerbDeclareSession, VerbEliminate, VerbEnterObligation,
		VerbRequestExit, VerbDeclareConclusion, VerbRequestTermination} {
		if v.Kind() == kind {
			return v, true
		}
	}
	return "", false
}

// OntologyBundle references the upstream causal model a session reasons
// about. The server stores it and never fetches or validates the
// references (§1.1).
type OntologyBundle struct {
	HypothesisSpaceID  string `json:"hypothesis_space_id"`
	HypothesisVersion  string `json:"hypothesis_version"`
	CausalGraphRef     string `json:"causal_graph_ref"`
	CausalGraphVersion string `json:"causal_graph_version"`
}

// Snapshot is the belief state of a session as §2.2 defines it.
// Survivors are sorted by code point; EntropyProxy is log2(NSurvivors), and
// 0 when NSurvivors ≤ 1. ActiveObligationID and AuditHeadEventID are nil
// when there is none (they are emitted as JSON null).
type Snapshot struct {
	SessionID          string         `json:"session_id"`
	Ontology           OntologyBundle `json:"ontology"`
	Survivors          []string       `json:"survivors"`
	NSurvivors         int            `json:"n_survivors"`
	EntropyProxy       float64        `json:"entropy_proxy"`
	Terminated         bool           `json:"terminated"`
	ActiveObligationID *string        `json:"active_obligation_id"`
	AuditHeadEventID   *string        `json:"audit_head_event_id"`
}

// Stamp carries the inputs a transition must not invent itself: the id of
// the audit event it records and the time of it. The shell fills it from
// its id source (UUIDv7) and its clock.
type Stamp struct {
	EventID string
	Time    time.Time
}

// Policy holds the server-side choices the specification leaves open.
// The zero Policy is the conservative default: forced termination refused.
type Policy struct {
	// AllowForce lets REQUEST_TERMINATION with context.force = true
	// terminate a session that the default rule would keep open.
	AllowForce bool `json:"allow_force"`
}

// DeclareRequest is the DECLARE_SESSION message. Hypotheses must not be
// empty; duplicates are removed. Metadata, if present, is a JSON object.
type DeclareRequest struct {
	Ontology   OntologyBundle  `json:"ontology"`
	Hypotheses []string        `json:"hypotheses"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	// Owner names the principal the session belongs to ("" for none).
	// A transport sets it from the caller's authentication, never from
	// the request body; it is recorded in the DECLARE_SESSION payload, so
	// the log carries it across restarts and storages.
	Owner string `json:"owner,omitempty"`
}

// EliminateRequest is the ELIMINATE message. (SourceID, ObservationID) is
// the idempotence key; Justification, if present, is a JSON object that
// is stored and never interpreted.
type EliminateRequest struct {
	SourceID      string          `json:"source_id"`
	ObservationID string          `json:"observation_id"`
	Eliminated    []string        `json:"eliminated"`
	Justification json.RawMessage `json:"justification,omitempty"`
}

// ObligationRequest is the ENTER_OBLIGATION message.
type ObligationRequest struct {
	ObligationID         string `json:"obligation_id"`
	MinTotalEliminations int64  `json:"min_total_eliminations"`
}

// ExitRequest is the REQUEST_EXIT message. Context, if present, is a JSON
// object.
type ExitRequest struct {
	ObligationID string          `json:"obligation_id"`
	Context      json.RawMessage `json:"context,omitempty"`
}

// ConclusionRequest is the DECLARE_CONCLUSION message.
type ConclusionRequest struct {
	ConclusionID string          `json:"conclusion_id"`
	Context      json.RawMessage `json:"context,omitempty"`
}

// TerminationRequest is the REQUEST_TERMINATION message. A context member
// "force" must be a JSON boolean; true asks for forced termination.
type TerminationRequest struct {
	Context json.RawMessage `json:"context,omitempty"`
}

// EliminateResult is the ELIMINATE response without its snapshot (take it
// from the returned State). Repeated is true when the call was an
// idempotent retry: Applied, Ignored and AuditEventID are then those of
// the first call and nothing was recorded.
type EliminateResult struct {
	Applied      []string `json:"applied_eliminated"`
	Ignored      []string `json:"ignored_eliminated"`
	AuditEventID string   `json:"audit_event_id"`
	Repeated     bool     `json:"-"`
}

// ExitResult is the REQUEST_EXIT response without its snapshot.
type ExitResult struct {
	Approved     bool   `json:"approved"`
	Reason       string `json:"reason"`
	AuditEventID string `json:"audit_event_id"`
}

// ConclusionResult is the DECLARE_CONCLUSION response without its
// snapshot.
type ConclusionResult struct {
	Accepted     bool   `json:"accepted"`
	Reason       string `json:"reason"`
	AuditEventID string `json:"audit_event_id"`
}

// TerminationResult is the REQUEST_TERMINATION response without its
// snapshot. Forced is true when only the force policy made it approved.
type TerminationResult struct {
	Approved     bool   `json:"approved"`
	Reason       string `json:"reason"`
	Forced       bool   `json:"-"`
	AuditEventID string `json:"audit_event_id"`
}
