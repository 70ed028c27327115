package belief

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/hamt"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
	"github.com/verity-go/verity/trace"
)

// State is the value of one belief session: the declared hypothesis space
// and ontology (immutable), the survivors, the obligations, the terminated
// flag, the idempotence table and the audit log with its head.
//
// A State is immutable. Every transition returns a new State and leaves
// the receiver unchanged and usable; a rejected transition returns the
// receiver itself and records nothing. The zero State is the empty log
// before DECLARE_SESSION: only Apply accepts it.
type State struct{ p *state }

type obligation struct {
	min     int64
	atEntry int // total eliminations when the obligation was entered
	active  bool
}

// obsKey is the idempotence key of ELIMINATE: the pair (source id,
// observation id), compared field by field and never concatenated.
type obsKey struct {
	source, observation string
}

// obsRecord is what the first ELIMINATE with a key produced.
type obsRecord struct {
	fingerprint trace.Hash // of the request body (eliminated set + justification)
	applied     []string
	ignored     []string
	eventID     string
}

// obsMap is the idempotence index: a persistent map, so a session value is
// extended in O(log n) while every older value stays valid (the
// order-independence and replay properties compare such branches).
type obsMap = hamt.Map[obsKey, obsRecord, hamt.Seeded[obsKey]]

type state struct {
	id          string
	owner       string // DeclareRequest.Owner
	ontology    OntologyBundle
	sp          *space
	alive       []uint64
	n           int
	terminated  bool
	obligations map[string]obligation
	active      string // "" when no obligation is active (ids are never empty)
	obs         obsMap
	events      *eventNode // the events held, newest first
	base        uint64     // events before the held ones (restored from a checkpoint), not held
	baseID      string     // the event id of the last of those (the head when none is held)
	seq         uint64     // number of events recorded
	headHash    trace.Hash
	survHash    trace.Hash // survivors_after_hash of the head event
}

type eventNode struct {
	e    AuditEntry
	prev *eventNode
}

func (s State) live() (*state, error) {
	if s.p == nil {
		return nil, reject(ErrSessionNotFound, "the session has not been declared")
	}
	return s.p, nil
}

// SessionID returns the session id ("" for the zero State).
func (s State) SessionID() string {
	if s.p == nil {
		return ""
	}
	return s.p.id
}

// Ontology returns the session's ontology bundle.
func (s State) Ontology() OntologyBundle {
	if s.p == nil {
		return OntologyBundle{}
	}
	return s.p.ontology
}

// Declared returns the declared hypotheses, de-duplicated and sorted by
// code point.
func (s State) Declared() []string {
	if s.p == nil {
		return nil
	}
	return slices.Clone(s.p.sp.ids)
}

// NSurvivors returns the number of surviving hypotheses.
func (s State) NSurvivors() int {
	if s.p == nil {
		return 0
	}
	return s.p.n
}

// Survivors returns the surviving hypotheses sorted by code point.
func (s State) Survivors() []string {
	if s.p == nil {
		return []string{}
	}
	p := s.p
	out := make([]string, 0, p.n)
	n := len(p.sp.ids)
	for i := nextSet(p.alive, 0, n); i < n; i = nextSet(p.alive, i+1, n) {
		out = append(out, p.sp.ids[i])
	}
	return out
}

// Terminated reports whether the session was terminated.
func (s State) Terminated() bool { return s.p != nil && s.p.terminated }

// ActiveObligation returns the id of the active obligation, if any.
func (s State) ActiveObligation() (string, bool) {
	if s.p == nil || s.p.active == "" {
		return "", false
	}
	return s.p.active, true
}

// Owner returns the principal the session belongs to, as its
// DECLARE_SESSION recorded it ("" for a session declared without one).
func (s State) Owner() string {
	if s.p == nil {
		return ""
	}
	return s.p.owner
}

// Len returns the number of events in the audit log.
func (s State) Len() uint64 {
	if s.p == nil {
		return 0
	}
	return s.p.seq
}

// Head returns the event id and event hash of the last audit event (empty
// and zero for the zero State).
func (s State) Head() (eventID string, hash trace.Hash) {
	if s.p == nil {
		return "", trace.Hash{}
	}
	return s.p.headID(), s.p.headHash
}

func (p *state) headID() string {
	if p.events == nil {
		return p.baseID
	}
	return p.events.e.EventID
}

// Snapshot returns the §2.2 snapshot. It is O(survivors).
func (s State) Snapshot() Snapshot {
	if s.p == nil {
		return Snapshot{Survivors: []string{}}
	}
	p := s.p
	snap := Snapshot{
		SessionID:    p.id,
		Ontology:     p.ontology,
		Survivors:    s.Survivors(),
		NSurvivors:   p.n,
		EntropyProxy: entropyProxy(p.n),
		Terminated:   p.terminated,
	}
	if p.active != "" {
		a := p.active
		snap.ActiveObligationID = &a
	}
	if id := p.headID(); id != "" {
		snap.AuditHeadEventID = &id
	}
	return snap
}

func entropyProxy(n int) float64 {
	if n <= 1 {
		return 0
	}
	return math.Log2(float64(n))
}

// Events answers AUDIT_TRACE: the audit entries after the event with id
// since, or all of them when since is empty, oldest first. An unknown
// since is ErrEventNotFound.
//
// A State that a Server restored from a checkpoint (see the package
// documentation, Checkpoints) holds only the events after it; asked for
// earlier ones, Events returns an error (code INTERNAL), and
// Session.Events reads them from the session's log instead.
func (s State) Events(since string) ([]AuditEntry, error) {
	p, err := s.live()
	if err != nil {
		return nil, err
	}
	var out []AuditEntry
	found := since == "" && p.base == 0 || since != "" && since == p.baseID
	for n := p.events; n != nil; n = n.prev {
		if since != "" && n.e.EventID == since {
			found = true
			break
		}
		out = append(out, cloneEntry(n.e))
	}
	if !found && p.base > 0 {
		return nil, fmt.Errorf("%w (the first %d events)", errNotHeld, p.base)
	}
	if !found {
		return nil, &Error{Err: ErrEventNotFound, Message: fmt.Sprintf("no event %q in session %q", since, p.id),
			Details: map[string]any{"since_event_id": since}}
	}
	slices.Reverse(out)
	if out == nil {
		out = []AuditEntry{}
	}
	return out, nil
}

func cloneEntry(e AuditEntry) AuditEntry {
	e.Payload = bytes.Clone(e.Payload)
	e.Outcome = bytes.Clone(e.Outcome)
	e.Eliminated = slices.Clone(e.Eliminated)
	e.raw = nil
	return e
}

// checkString appends a violation when a required string is empty or is
// not valid UTF-8.
func checkString(vs []Violation, path, v string, required bool) []Violation {
	if required && v == "" {
		return append(vs, Violation{Path: path, Rule: RuleRequired, Message: "must not be empty"})
	}
	if !utf8.ValidString(v) {
		return append(vs, Violation{Path: path, Rule: RuleUTF8, Message: "must be valid UTF-8"})
	}
	return vs
}

// checkObject canonicalises an optional JSON object (absent or null is
// nil).
func checkObject(vs []Violation, path string, raw json.RawMessage) (json.RawMessage, []Violation) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil, vs
	}
	c, err := canon.Transform(t)
	if err != nil {
		return nil, append(vs, Violation{Path: path, Rule: RuleSyntax, Message: canonReason(err)})
	}
	if c[0] != '{' {
		return nil, append(vs, Violation{Path: path, Rule: RuleType, Message: strictjson.WantMessage("an object", strictjson.KindOfJSON(c))})
	}
	return c, vs
}

func checkStamp(vs []Violation, st Stamp) []Violation {
	if y := st.Time.UTC().Year(); y < 0 || y > 9999 {
		vs = append(vs, Violation{Path: "/ts", Rule: RuleRange, Message: "year must be within 0000–9999"})
	}
	return checkString(vs, "/event_id", st.EventID, true)
}

// commit records one event: next is the state after the transition (its
// survivors already updated); commit fills in the audit head and returns
// the entry.
func (p *state) commit(next *state, verb Verb, payload, outcome map[string]any, delta []string, notes string, st Stamp) (AuditEntry, error) {
	pb, err := canon.Marshal(payload)
	if err != nil {
		return AuditEntry{}, &Error{Err: ErrInvalidRequest, Message: canonReason(err)}
	}
	ob, err := canon.Marshal(outcome)
	if err != nil {
		return AuditEntry{}, &Error{Err: ErrInvalidRequest, Message: canonReason(err)}
	}
	return p.commitRaw(next, verb, pb, ob, delta, notes, st)
}

// commitRaw is commit with payload and outcome already canonical JSON.
func (p *state) commitRaw(next *state, verb Verb, pb, ob []byte, delta []string, notes string, st Stamp) (AuditEntry, error) {
	if delta == nil {
		delta = []string{}
	}
	e := AuditEntry{
		Seq:                 p.seq,
		EventID:             st.EventID,
		SessionID:           next.id,
		Time:                st.Time.UTC(),
		Verb:                verb,
		SurvivorsBeforeHash: p.survHash,
		Eliminated:          delta,
		Notes:               notes,
		PrevEventHash:       p.headHash,
	}
	e.SurvivorsAfterHash = survivorsHash(next.sp, next.alive, next.id, p.headHash)
	raw, oAt, pAt, err := e.appendCanonicalTrusted(make([]byte, 0, 480+len(pb)+len(ob)+len(next.id)), ob, pb)
	if err != nil {
		return AuditEntry{}, err // wraps ErrInvalidRequest
	}
	// Payload and outcome are copied verbatim into raw: the entry points
	// at them there (capacity-limited), so pb and ob may be scratch space.
	// (Neither is ever empty; an empty one would be written as null and is
	// kept empty.)
	e.Payload = raw[pAt : pAt+len(pb) : pAt+len(pb)]
	e.Outcome = raw[oAt : oAt+len(ob) : oAt+len(ob)]
	e.raw = raw
	e.EventHash = sha256.Sum256(raw)
	next.survHash = e.SurvivorsAfterHash
	next.headHash = e.EventHash
	next.seq = p.seq + 1
	next.events = &eventNode{e: e, prev: p.events}
	return e, nil
}

func published(e AuditEntry) *AuditEntry {
	c := cloneEntry(e)
	c.raw = e.raw
	return &c
}

// Declare performs DECLARE_SESSION: a new session with the given id whose
// survivors are the declared hypotheses, and its first audit event.
// An empty hypothesis list is INVALID_REQUEST; duplicates are removed and
// the event records the de-duplicated list sorted by code point. Any
// string (empty, spaces, emoji) is a valid hypothesis id.
func Declare(sessionID string, req DeclareRequest, st Stamp) (State, *AuditEntry, error) {
	var vs []Violation
	vs = checkString(vs, "/session_id", sessionID, true)
	if len(req.Hypotheses) == 0 {
		vs = append(vs, Violation{Path: "/hypotheses", Rule: RuleRequired, Message: "must not be empty"})
	}
	for i, h := range req.Hypotheses {
		if !utf8.ValidString(h) { // the path is formatted only for a violation
			vs = checkString(vs, violation.Index("/hypotheses", i), h, false)
		}
	}
	o := req.Ontology
	vs = checkString(vs, "/ontology/hypothesis_space_id", o.HypothesisSpaceID, false)
	vs = checkString(vs, "/ontology/hypothesis_version", o.HypothesisVersion, false)
	vs = checkString(vs, "/ontology/causal_graph_ref", o.CausalGraphRef, false)
	vs = checkString(vs, "/ontology/causal_graph_version", o.CausalGraphVersion, false)
	meta, vs := checkObject(vs, "/metadata", req.Metadata)
	vs = checkString(vs, "/owner", req.Owner, false)
	vs = checkStamp(vs, st)
	if err := invalid(vs); err != nil {
		return State{}, nil, err
	}
	sp := newSpace(req.Hypotheses)
	pre := &state{id: sessionID, owner: req.Owner, ontology: o, sp: sp, alive: make([]uint64, (len(sp.ids)+63)/64)}
	pre.survHash = survivorsHash(sp, pre.alive, sessionID, trace.Hash{})
	next := *pre
	next.alive = newFullSet(len(sp.ids))
	next.n = len(sp.ids)
	payload := map[string]any{
		"ontology": map[string]any{
			"hypothesis_space_id":  o.HypothesisSpaceID,
			"hypothesis_version":   o.HypothesisVersion,
			"causal_graph_ref":     o.CausalGraphRef,
			"causal_graph_version": o.CausalGraphVersion,
		},
		"hypotheses": sp.ids,
	}
	if meta != nil {
		payload["metadata"] = meta
	}
	if req.Owner != "" {
		payload["owner"] = req.Owner
	}
	e, err := pre.commit(&next, VerbDeclareSession, payload, map[string]any{"n_survivors": next.n}, nil, "", st)
	if err != nil {
		return State{}, nil, err
	}
	return State{&next}, published(e), nil
}

// fingerprint identifies an ELIMINATE body for the idempotence check:
// SHA-256 over the canonical {"eliminated":[the ids as a sorted set],
// "justification":<canonical object or null>}.
func fingerprint(sp *space, idx []int32, just json.RawMessage) trace.Hash {
	var scratch [256]byte // on the stack unless the body outgrows it
	b := scratch[:0]
	b = append(b, `{"eliminated":[`...)
	for i, x := range idx {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, sp.enc[sp.off[x]+1:sp.off[x+1]]...)
	}
	b = append(b, `],"justification":`...)
	if just == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, just...)
	}
	return sha256.Sum256(append(b, '}'))
}

func appendStrings(b []byte, ids []string) []byte {
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = canon.AppendString(b, id)
	}
	return append(b, ']')
}

// Eliminate performs ELIMINATE: survivors := survivors \ (eliminated ∩
// survivors). The response splits the request into applied (were
// survivors) and ignored (declared but already eliminated), both sorted.
//
// Rules: an id outside the declared set rejects the whole call with
// INVALID_HYPOTHESIS_ID (details "unknown_ids"); the idempotence key is the
// pair (source_id, observation_id): the same key with the same body
// (eliminated as a set, and justification) returns the first result again
// with Repeated set and records nothing; the same key with a different
// body is CONFLICT. A new key that eliminates nothing new is recorded with
// an empty delta. Eliminating every survivor is allowed.
func (s State) Eliminate(req EliminateRequest, st Stamp) (State, EliminateResult, *AuditEntry, error) {
	next, res, e, err := s.eliminate(req, st)
	if e != nil {
		e = published(*e)
	}
	return next, res, e, err
}

// eliminate is Eliminate returning the recorded entry itself (the head of
// the new state's log, which the caller must not modify) rather than a
// published copy: the shell only reads its verb and canonical bytes.
func (s State) eliminate(req EliminateRequest, st Stamp) (State, EliminateResult, *AuditEntry, error) {
	p, err := s.live()
	if err != nil {
		return s, EliminateResult{}, nil, err
	}
	var vs []Violation
	vs = checkString(vs, "/source_id", req.SourceID, true)
	vs = checkString(vs, "/observation_id", req.ObservationID, true)
	for i, h := range req.Eliminated {
		if !utf8.ValidString(h) { // the path is formatted only for a violation
			vs = checkString(vs, violation.Index("/eliminated", i), h, false)
		}
	}
	just, vs := checkObject(vs, "/justification", req.Justification)
	vs = checkStamp(vs, st)
	if err := invalid(vs); err != nil {
		return s, EliminateResult{}, nil, err
	}
	if p.terminated {
		return s, EliminateResult{}, nil, reject(ErrSessionTerminated, "session %q is terminated", p.id)
	}
	idx := make([]int32, 0, len(req.Eliminated))
	var unknown []string
	for _, h := range req.Eliminated {
		i, ok := p.sp.index[h]
		if !ok {
			unknown = append(unknown, h)
			continue
		}
		idx = append(idx, i)
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		unknown = slices.Compact(unknown)
		return s, EliminateResult{}, nil, &Error{Err: ErrInvalidHypothesisID,
			Message: fmt.Sprintf("%d id(s) not in the declared hypothesis set", len(unknown)),
			Details: map[string]any{"unknown_ids": unknown}}
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	fp := fingerprint(p.sp, idx, just)
	key := obsKey{req.SourceID, req.ObservationID}
	if rec, ok := p.obs.Get(key); ok {
		if rec.fingerprint != fp {
			return s, EliminateResult{}, nil, &Error{Err: ErrConflict,
				Message: "observation already recorded with a different body",
				Details: map[string]any{"source_id": req.SourceID, "observation_id": req.ObservationID, "audit_event_id": rec.eventID}}
		}
		return s, EliminateResult{Applied: slices.Clone(rec.applied), Ignored: slices.Clone(rec.ignored),
			AuditEventID: rec.eventID, Repeated: true}, nil, nil
	}
	applied, ignored := []string{}, []string{}
	for _, i := range idx {
		if has(p.alive, i) {
			applied = append(applied, p.sp.ids[i])
		} else {
			ignored = append(ignored, p.sp.ids[i])
		}
	}
	next := *p
	if len(applied) > 0 {
		next.alive = slices.Clone(p.alive)
		for _, i := range idx {
			next.alive[i>>6] &^= 1 << (uint(i) & 63)
		}
		next.n = p.n - len(applied)
	}
	// The payload and outcome are written in canonical member order by
	// hand: ELIMINATE is the hot path. Every string was checked for UTF-8
	// above and justification is canonical already.
	// pb and ob are built one after the other in a scratch buffer (on the
	// stack unless they outgrow it): commitRaw copies them into the
	// entry's canonical bytes.
	var scratch [512]byte
	pb := append(scratch[:0], `{"eliminated":`...)
	pb = appendStrings(pb, req.Eliminated)
	if just != nil {
		pb = append(pb, `,"justification":`...)
		pb = append(pb, just...)
	}
	pb = append(pb, `,"observation_id":`...)
	pb = canon.AppendString(pb, req.ObservationID)
	pb = append(pb, `,"source_id":`...)
	pb = canon.AppendString(pb, req.SourceID)
	pb = append(pb, '}')
	ob := append(pb[len(pb):], `{"applied_eliminated":`...)
	ob = appendStrings(ob, applied)
	ob = append(ob, `,"ignored_eliminated":`...)
	ob = appendStrings(ob, ignored)
	ob = append(ob, '}')
	e, err := p.commitRaw(&next, VerbEliminate, pb, ob, applied, "", st)
	if err != nil {
		return s, EliminateResult{}, nil, err
	}
	next.obs = p.obs.Set(key, obsRecord{fingerprint: fp, applied: slices.Clone(applied),
		ignored: slices.Clone(ignored), eventID: e.EventID})
	// applied is the recorded delta (e.Eliminated): the caller gets a copy.
	return State{&next}, EliminateResult{Applied: slices.Clone(applied), Ignored: ignored, AuditEventID: e.EventID},
		&next.events.e, nil
}

func (p *state) eliminations() int { return len(p.sp.ids) - p.n }

// EnterObligation performs ENTER_OBLIGATION. Only one obligation may be
// active (a second is CONFLICT), an obligation id is used once per session
// (reuse is CONFLICT), and min_total_eliminations must be ≥ 0.
func (s State) EnterObligation(req ObligationRequest, st Stamp) (State, *AuditEntry, error) {
	p, err := s.live()
	if err != nil {
		return s, nil, err
	}
	var vs []Violation
	vs = checkString(vs, "/obligation_id", req.ObligationID, true)
	if req.MinTotalEliminations < 0 {
		vs = append(vs, Violation{Path: "/min_total_eliminations", Rule: RuleRange, Message: "must be ≥ 0"})
	} else if req.MinTotalEliminations > canon.MaxSafeInteger {
		vs = append(vs, Violation{Path: "/min_total_eliminations", Rule: RuleRange, Message: "must be ≤ 2^53−1"})
	}
	vs = checkStamp(vs, st)
	if err := invalid(vs); err != nil {
		return s, nil, err
	}
	if p.terminated {
		return s, nil, reject(ErrSessionTerminated, "session %q is terminated", p.id)
	}
	if p.active != "" {
		return s, nil, &Error{Err: ErrConflict, Message: fmt.Sprintf("obligation %q is already active", p.active),
			Details: map[string]any{"active_obligation_id": p.active}}
	}
	if _, used := p.obligations[req.ObligationID]; used {
		return s, nil, &Error{Err: ErrConflict, Message: fmt.Sprintf("obligation id %q was already used in this session", req.ObligationID),
			Details: map[string]any{"obligation_id": req.ObligationID}}
	}
	next := *p
	next.obligations = make(map[string]obligation, len(p.obligations)+1)
	for k, v := range p.obligations {
		next.obligations[k] = v
	}
	next.obligations[req.ObligationID] = obligation{min: req.MinTotalEliminations, atEntry: p.eliminations(), active: true}
	next.active = req.ObligationID
	e, err := p.commit(&next, VerbEnterObligation,
		map[string]any{"obligation_id": req.ObligationID, "min_total_eliminations": req.MinTotalEliminations},
		map[string]any{"eliminations_at_entry": p.eliminations()}, nil, "", st)
	if err != nil {
		return s, nil, err
	}
	return State{&next}, published(e), nil
}

// RequestExit performs REQUEST_EXIT on the active obligation: approved iff
// the hypotheses eliminated since its entry are at least its minimum; an
// approved exit deactivates it. A refusal is recorded too. An id that is
// not the active obligation is OBLIGATION_NOT_FOUND and records nothing.
func (s State) RequestExit(req ExitRequest, st Stamp) (State, ExitResult, *AuditEntry, error) {
	p, err := s.live()
	if err != nil {
		return s, ExitResult{}, nil, err
	}
	var vs []Violation
	vs = checkString(vs, "/obligation_id", req.ObligationID, true)
	ctx, vs := checkObject(vs, "/context", req.Context)
	vs = checkStamp(vs, st)
	if err := invalid(vs); err != nil {
		return s, ExitResult{}, nil, err
	}
	if p.terminated {
		return s, ExitResult{}, nil, reject(ErrSessionTerminated, "session %q is terminated", p.id)
	}
	if p.active != req.ObligationID {
		return s, ExitResult{}, nil, &Error{Err: ErrObligationNotFound,
			Message: fmt.Sprintf("obligation %q is not the active obligation", req.ObligationID),
			Details: map[string]any{"obligation_id": req.ObligationID}}
	}
	ob := p.obligations[req.ObligationID]
	since := p.eliminations() - ob.atEntry
	approved := int64(since) >= ob.min
	var reason string
	next := *p
	if approved {
		reason = fmt.Sprintf("%d hypotheses eliminated since entry, at least the %d required", since, ob.min)
		next.obligations = make(map[string]obligation, len(p.obligations))
		for k, v := range p.obligations {
			next.obligations[k] = v
		}
		ob.active = false
		next.obligations[req.ObligationID] = ob
		next.active = ""
	} else {
		reason = fmt.Sprintf("%d hypotheses eliminated since entry, fewer than the %d required", since, ob.min)
	}
	payload := map[string]any{"obligation_id": req.ObligationID}
	if ctx != nil {
		payload["context"] = ctx
	}
	e, err := p.commit(&next, VerbRequestExit, payload,
		map[string]any{"approved": approved, "reason": reason, "eliminations_since_entry": since}, nil, reason, st)
	if err != nil {
		return s, ExitResult{}, nil, err
	}
	return State{&next}, ExitResult{Approved: approved, Reason: reason, AuditEventID: e.EventID}, published(e), nil
}

// DeclareConclusion performs DECLARE_CONCLUSION: accepted iff no
// obligation is active. A refusal is recorded too.
func (s State) DeclareConclusion(req ConclusionRequest, st Stamp) (State, ConclusionResult, *AuditEntry, error) {
	p, err := s.live()
	if err != nil {
		return s, ConclusionResult{}, nil, err
	}
	var vs []Violation
	vs = checkString(vs, "/conclusion_id", req.ConclusionID, true)
	ctx, vs := checkObject(vs, "/context", req.Context)
	vs = checkStamp(vs, st)
	if err := invalid(vs); err != nil {
		return s, ConclusionResult{}, nil, err
	}
	if p.terminated {
		return s, ConclusionResult{}, nil, reject(ErrSessionTerminated, "session %q is terminated", p.id)
	}
	accepted := p.active == ""
	reason := "no obligation is active"
	if !accepted {
		reason = fmt.Sprintf("obligation %q is active and has not been exited", p.active)
	}
	next := *p
	payload := map[string]any{"conclusion_id": req.ConclusionID}
	if ctx != nil {
		payload["context"] = ctx
	}
	e, err := p.commit(&next, VerbDeclareConclusion, payload,
		map[string]any{"accepted": accepted, "reason": reason}, nil, reason, st)
	if err != nil {
		return s, ConclusionResult{}, nil, err
	}
	return State{&next}, ConclusionResult{Accepted: accepted, Reason: reason, AuditEventID: e.EventID}, published(e), nil
}

// forceOf reads context.force: absent is false, a JSON boolean is its
// value, anything else is a violation.
func forceOf(vs []Violation, ctx json.RawMessage) (bool, []Violation) {
	if ctx == nil {
		return false, vs
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(ctx, &m); err != nil {
		return false, append(vs, Violation{Path: "/context", Rule: RuleSyntax, Message: err.Error()})
	}
	f, ok := m["force"]
	if !ok {
		return false, vs
	}
	switch string(f) {
	case "true":
		return true, vs
	case "false":
		return false, vs
	}
	return false, append(vs, Violation{Path: "/context/force", Rule: RuleType, Message: strictjson.WantMessage("a boolean", strictjson.KindOfJSON(f))})
}

// RequestTermination performs REQUEST_TERMINATION: approved iff no
// obligation is active and exactly one survivor remains, or context.force
// is true and pol.AllowForce. An approved termination ends the session:
// every later mutation is SESSION_TERMINATED. A refusal is recorded too,
// and the event records the policy so that replay decides alike.
func (s State) RequestTermination(req TerminationRequest, pol Policy, st Stamp) (State, TerminationResult, *AuditEntry, error) {
	p, err := s.live()
	if err != nil {
		return s, TerminationResult{}, nil, err
	}
	var vs []Violation
	ctx, vs := checkObject(vs, "/context", req.Context)
	force, vs := forceOf(vs, ctx)
	vs = checkStamp(vs, st)
	if err := invalid(vs); err != nil {
		return s, TerminationResult{}, nil, err
	}
	if p.terminated {
		return s, TerminationResult{}, nil, reject(ErrSessionTerminated, "session %q is terminated", p.id)
	}
	natural := p.active == "" && p.n == 1
	forced := !natural && force && pol.AllowForce
	approved := natural || forced
	var reason string
	switch {
	case natural:
		reason = "exactly one survivor remains and no obligation is active"
	case forced:
		reason = "forced by the caller; the policy allows force"
	default:
		var why []string
		if p.active != "" {
			why = append(why, fmt.Sprintf("obligation %q is active", p.active))
		}
		if p.n != 1 {
			why = append(why, fmt.Sprintf("%d survivors remain, exactly 1 is required", p.n))
		}
		if force {
			why = append(why, "force was requested but the policy does not allow it")
		}
		reason = joinReasons(why)
	}
	next := *p
	next.terminated = approved
	payload := map[string]any{"policy": map[string]any{"allow_force": pol.AllowForce}}
	if ctx != nil {
		payload["context"] = ctx
	}
	e, err := p.commit(&next, VerbRequestTermination, payload,
		map[string]any{"approved": approved, "reason": reason, "forced": forced}, nil, reason, st)
	if err != nil {
		return s, TerminationResult{}, nil, err
	}
	return State{&next}, TerminationResult{Approved: approved, Reason: reason, Forced: forced, AuditEventID: e.EventID},
		published(e), nil
}

func joinReasons(why []string) string {
	out := ""
	for i, w := range why {
		if i > 0 {
			out += "; "
		}
		out += w
	}
	return out
}

// check verifies the internal invariants of a state (used by tests and
// by replay as the output side of each transition).
func (s State) check() error {
	p := s.p
	if p == nil {
		return nil
	}
	count := 0
	for _, w := range p.alive {
		count += bits.OnesCount64(w)
	}
	if count != p.n {
		return fmt.Errorf("survivor count %d, bitmap holds %d", p.n, count)
	}
	if len(p.alive) != (len(p.sp.ids)+63)/64 {
		return fmt.Errorf("bitmap of %d words for %d hypotheses", len(p.alive), len(p.sp.ids))
	}
	if r := len(p.sp.ids) % 64; r != 0 && p.alive[len(p.alive)-1]>>r != 0 {
		return fmt.Errorf("bits set beyond the declared hypotheses")
	}
	actives := 0
	for id, o := range p.obligations {
		if o.active {
			actives++
			if id != p.active {
				return fmt.Errorf("obligation %q active but head says %q", id, p.active)
			}
		}
	}
	if actives > 1 || (p.active != "" && actives != 1) {
		return fmt.Errorf("%d active obligations, head says %q", actives, p.active)
	}
	return nil
}
