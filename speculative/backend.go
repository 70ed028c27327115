package speculative

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/verity-go/verity/trace"
)

// WriteKind says what a Write persists. The zero value is not a kind: it
// marks a Write no Steward issued.
type WriteKind uint8

const (
	// WriteKindEvidence persists validation evidence (grounded lane).
	WriteKindEvidence WriteKind = iota + 1
	// WriteKindHypothesis persists a speculative hypothesis, scoped to a
	// session.
	WriteKindHypothesis
	// WriteKindLink links a speculative hypothesis to the proposition of a
	// claim.
	WriteKindLink
	// WriteKindStatus sets the epistemic status of a claim.
	WriteKindStatus
	// WriteKindProposition registers the proposition of a claim (grounded
	// lane).
	WriteKindProposition
)

var writeKindNames = [...]string{"", "evidence", "hypothesis", "link", "status", "proposition"}

func (k WriteKind) valid() bool { return k >= WriteKindEvidence && k <= WriteKindProposition }

func (k WriteKind) String() string {
	if k.valid() {
		return writeKindNames[k]
	}
	return fmt.Sprintf("WriteKind(%d)", uint8(k))
}

// MarshalText writes the lower-case name; the zero WriteKind is an error.
func (k WriteKind) MarshalText() ([]byte, error) {
	if !k.valid() {
		return nil, fmt.Errorf("%w: write kind %v", ErrMalformed, k)
	}
	return []byte(writeKindNames[k]), nil
}

// UnmarshalText reads the lower-case name.
func (k *WriteKind) UnmarshalText(b []byte) error {
	i := slices.Index(writeKindNames[1:], string(b))
	if i < 0 {
		return fmt.Errorf("%w: unknown write kind %q", ErrMalformed, b)
	}
	*k = WriteKind(i + 1)
	return nil
}

// Write is one persistence operation. Its fields are unexported and the
// package has no exported constructor: only a Steward creates Writes, after
// its guards and the promotion policy have passed them. A Backend therefore
// receives nothing but Steward-issued writes; the zero Write (the only one
// another package can make) has Kind 0 and must be refused with
// ErrNotSteward, as Memory does.
type Write struct {
	kind      WriteKind
	intent    string
	id        string
	claimID   string
	sessionID string
	doc       []byte
	from, to  Status
	evidence  []trace.Hash
}

// Kind says what the write persists; 0 for a write no Steward issued.
func (w Write) Kind() WriteKind { return w.kind }

// Intent is the id of the write intent the Steward executed.
func (w Write) Intent() string { return w.intent }

// ID is the artifact's id: the hex Evidence.ID for evidence, the
// hypothesis id for hypotheses and links.
func (w Write) ID() string { return w.id }

// ClaimID is the claim the write concerns ("" for a hypothesis without one).
func (w Write) ClaimID() string { return w.claimID }

// SessionID is the session of a hypothesis.
func (w Write) SessionID() string { return w.sessionID }

// Document returns a copy of the canonical JSON document, if any.
func (w Write) Document() []byte { return bytes.Clone(w.doc) }

// Transition returns the statuses of a status write.
func (w Write) Transition() (from, to Status) { return w.from, w.to }

// Evidence returns the ids of the evidence on record when a status write
// was made (a copy).
func (w Write) Evidence() []trace.Hash { return slices.Clone(w.evidence) }

// Backend is the persistence the Steward writes through. Implementations
// must refuse a Write whose Kind is 0 (ErrNotSteward), apply each Write
// atomically, and answer the queries below with values the caller may
// modify. The queries are the whole read surface: evidence is looked up by
// claim and never includes hypotheses; hypotheses are looked up by session
// only (Guard 4). The conformance suite in speculative/backendtest checks
// this contract (backendtest.Run).
type Backend interface {
	// Apply performs one write. A WriteKindLink to a claim with no registered
	// proposition fails with ErrNoProposition.
	Apply(ctx context.Context, w Write) error
	// Evidence returns the canonical documents of the validation evidence
	// recorded for a claim, in the order they were written.
	Evidence(ctx context.Context, claimID string) ([][]byte, error)
	// Hypotheses returns the speculative hypotheses of one session.
	Hypotheses(ctx context.Context, sessionID string) ([]HypothesisRecord, error)
	// Status returns the status record of a claim; the zero record when the
	// claim has none.
	Status(ctx context.Context, claimID string) (StatusRecord, error)
	// Applied reports whether the backend holds a write of kind made for
	// intent (Write.Intent): a Steward restarted after a crash asks it to
	// learn the outcome of a write its log shows as started but not
	// finished. An evidence write of a document already stored stores
	// nothing and is not applied; a link is applied once its hypothesis is
	// linked.
	Applied(ctx context.Context, kind WriteKind, intent string) (bool, error)
}

// HypothesisRecord is a stored speculative hypothesis.
type HypothesisRecord struct {
	ID        string
	SessionID string
	ClaimID   string
	Document  []byte
	// Linked reports whether it is linked to its claim's proposition.
	Linked bool
}

// StatusRecord is the stored status of a claim and the evidence that was
// on record when it was set.
type StatusRecord struct {
	Status   Status
	Evidence []trace.Hash
}

// Memory is the in-memory reference Backend. It is safe for concurrent use.
type Memory struct {
	mu           sync.Mutex
	evidence     map[string][][]byte
	evidenceIDs  map[string]bool
	hypotheses   map[string][]HypothesisRecord // by session
	propositions map[string][]byte
	status       map[string]StatusRecord
	applied      map[applied]bool
}

// applied names a write a Memory applied.
type applied struct {
	kind   WriteKind
	intent string
}

// NewMemory returns an empty Memory backend.
func NewMemory() *Memory {
	return &Memory{
		evidence:     map[string][][]byte{},
		evidenceIDs:  map[string]bool{},
		hypotheses:   map[string][]HypothesisRecord{},
		propositions: map[string][]byte{},
		status:       map[string]StatusRecord{},
		applied:      map[applied]bool{},
	}
}

// Apply implements Backend. Evidence is content-addressed: writing the same
// document twice stores it once.
func (m *Memory) Apply(ctx context.Context, w Write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch w.kind {
	case WriteKindEvidence:
		if m.evidenceIDs[w.id] {
			return nil
		}
		m.evidenceIDs[w.id] = true
		m.evidence[w.claimID] = append(m.evidence[w.claimID], bytes.Clone(w.doc))
	case WriteKindHypothesis:
		m.hypotheses[w.sessionID] = append(m.hypotheses[w.sessionID], HypothesisRecord{
			ID: w.id, SessionID: w.sessionID, ClaimID: w.claimID, Document: bytes.Clone(w.doc),
		})
	case WriteKindLink:
		if _, ok := m.propositions[w.claimID]; !ok {
			return fmt.Errorf("%w: %q", ErrNoProposition, w.claimID)
		}
		hs := m.hypotheses[w.sessionID]
		i := slices.IndexFunc(hs, func(h HypothesisRecord) bool { return h.ID == w.id })
		if i < 0 {
			return fmt.Errorf("%w: link to unknown hypothesis %q", ErrMalformed, w.id)
		}
		hs[i].Linked = true
	case WriteKindStatus:
		m.status[w.claimID] = StatusRecord{Status: w.to, Evidence: slices.Clone(w.evidence)}
	case WriteKindProposition:
		m.propositions[w.claimID] = bytes.Clone(w.doc)
	default:
		return ErrNotSteward
	}
	m.applied[applied{w.kind, w.intent}] = true
	return nil
}

// Applied implements Backend.
func (m *Memory) Applied(ctx context.Context, kind WriteKind, intent string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.applied[applied{kind, intent}], nil
}

// Evidence implements Backend.
func (m *Memory) Evidence(ctx context.Context, claimID string) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]byte, 0, len(m.evidence[claimID]))
	for _, d := range m.evidence[claimID] {
		out = append(out, bytes.Clone(d))
	}
	return out, nil
}

// Hypotheses implements Backend.
func (m *Memory) Hypotheses(ctx context.Context, sessionID string) ([]HypothesisRecord, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := slices.Clone(m.hypotheses[sessionID])
	for i := range out {
		out[i].Document = bytes.Clone(out[i].Document)
	}
	return out, nil
}

// Status implements Backend.
func (m *Memory) Status(ctx context.Context, claimID string) (StatusRecord, error) {
	if err := ctx.Err(); err != nil {
		return StatusRecord{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.status[claimID]
	r.Evidence = slices.Clone(r.Evidence)
	return r, nil
}

// counts reports how many evidence documents, hypotheses, hypothesis links
// and propositions are stored.
func (m *Memory) counts() (evidence, hypotheses, links, propositions int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.evidence {
		evidence += len(e)
	}
	for _, hs := range m.hypotheses {
		hypotheses += len(hs)
		for _, h := range hs {
			if h.Linked {
				links++
			}
		}
	}
	return evidence, hypotheses, links, len(m.propositions)
}
