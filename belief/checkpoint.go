package belief

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/hamt"
	"github.com/verity-go/verity/trace"
)

// KindCheckpoint is the trace kind of a checkpoint: an entry of a
// session's log, between its audit events and covered by the same chain,
// that holds the session's state after the events before it, so that a
// Server opening the session replays only the events after the latest
// checkpoint. A checkpoint is not an audit event: AUDIT_TRACE does not
// show it and it has no seq. See the Server documentation.
const KindCheckpoint = "belief.checkpoint"

// errNotHeld is what State.Events answers for events a State restored
// from a checkpoint does not hold.
var errNotHeld = errors.New("belief: the earlier events are in the session's log, not in this State (Session.Events reads them)")

// checkpointWire is the payload of a checkpoint, canonical JSON. Events
// is the number of audit events before it; Observations holds the
// idempotence records added since the previous checkpoint of the log,
// which was taken after Since events (0: there is none), so that each
// record is written once and the checkpoints of a log stay O(events)
// together. Everything else is the whole state.
type checkpointWire struct {
	Events        uint64            `json:"events"`
	HeadEventHash trace.Hash        `json:"head_event_hash"`
	HeadEventID   string            `json:"head_event_id"`
	Hypotheses    []string          `json:"hypotheses"`
	Obligations   []obligationWire  `json:"obligations"`
	Observations  []observationWire `json:"observations"`
	Ontology      OntologyBundle    `json:"ontology"`
	Owner         string            `json:"owner,omitempty"`
	SessionID     string            `json:"session_id"`
	Since         uint64            `json:"since"`
	Survivors     []string          `json:"survivors"`
	SurvivorsHash trace.Hash        `json:"survivors_hash"`
	Terminated    bool              `json:"terminated"`
}

type obligationWire struct {
	Active               bool   `json:"active"`
	EliminationsAtEntry  int    `json:"eliminations_at_entry"`
	MinTotalEliminations int64  `json:"min_total_eliminations"`
	ObligationID         string `json:"obligation_id"`
}

type observationWire struct {
	Applied       []string   `json:"applied_eliminated"`
	EventID       string     `json:"event_id"`
	Fingerprint   trace.Hash `json:"fingerprint"`
	Ignored       []string   `json:"ignored_eliminated"`
	ObservationID string     `json:"observation_id"`
	SourceID      string     `json:"source_id"`
}

// mark is where the last checkpoint of a log was taken: after events
// audit events, with the idempotence table obs.
type mark struct {
	events uint64
	obs    obsMap
}

// checkpoint returns the canonical payload of a checkpoint of s taken
// after the checkpoint at prev.
func (s State) checkpoint(prev mark) ([]byte, error) {
	p, err := s.live()
	if err != nil {
		return nil, err
	}
	w := checkpointWire{
		Events:        p.seq,
		HeadEventHash: p.headHash,
		HeadEventID:   p.headID(),
		Hypotheses:    p.sp.ids,
		Obligations:   []obligationWire{},
		Observations:  []observationWire{},
		Ontology:      p.ontology,
		Owner:         p.owner,
		SessionID:     p.id,
		Since:         prev.events,
		Survivors:     s.Survivors(),
		SurvivorsHash: p.survHash,
		Terminated:    p.terminated,
	}
	for id, o := range p.obligations {
		w.Obligations = append(w.Obligations, obligationWire{Active: o.active, EliminationsAtEntry: o.atEntry, MinTotalEliminations: o.min, ObligationID: id})
	}
	slices.SortFunc(w.Obligations, func(a, b obligationWire) int { return cmp.Compare(a.ObligationID, b.ObligationID) })
	var diffErr error
	diffObs(prev.obs, p.obs, func(k obsKey, r obsRecord, changed bool) {
		if changed {
			diffErr = fmt.Errorf("observation (%q, %q) changed since the previous checkpoint", k.source, k.observation)
		}
		w.Observations = append(w.Observations, observationWire{Applied: orEmpty(r.applied), EventID: r.eventID, Fingerprint: r.fingerprint,
			Ignored: orEmpty(r.ignored), ObservationID: k.observation, SourceID: k.source})
	})
	if diffErr != nil {
		return nil, diffErr
	}
	slices.SortFunc(w.Observations, func(a, b observationWire) int {
		return cmp.Or(cmp.Compare(a.SourceID, b.SourceID), cmp.Compare(a.ObservationID, b.ObservationID))
	})
	return canon.Marshal(w)
}

// diffObs calls f for every record of b that a does not hold (changed:
// a holds another record under its key, or b none).
func diffObs(a, b obsMap, f func(k obsKey, r obsRecord, changed bool)) {
	hamt.Diff(a, b, func(k obsKey, va, vb *obsRecord) {
		switch {
		case vb == nil:
			f(k, *va, true) // a record removed: never by a transition
		case va == nil:
			f(k, *vb, false)
		case !sameRecord(*va, *vb):
			f(k, *vb, true)
		}
	})
}

// orEmpty is ids, or an empty list for nil (written [], never null).
func orEmpty(ids []string) []string {
	if ids == nil {
		return []string{}
	}
	return ids
}

func sameRecord(a, b obsRecord) bool {
	return a.fingerprint == b.fingerprint && a.eventID == b.eventID && slices.Equal(a.applied, b.applied) && slices.Equal(a.ignored, b.ignored)
}

// decodeCheckpoint reads a checkpoint payload strictly.
func decodeCheckpoint(b []byte) (checkpointWire, error) {
	var w checkpointWire
	if err := canon.DecodeInto(b, &w, true); err != nil {
		return w, fmt.Errorf("checkpoint: %s", canonReason(err))
	}
	return w, nil
}

// restorer rebuilds a State from the checkpoints of one session's log, in
// log order, without the events between them: the last checkpoint's state
// with the idempotence records of all of them.
type restorer struct {
	id   string
	last *checkpointWire
	obs  obsMap
}

// add takes the next checkpoint of the log.
func (r *restorer) add(b []byte) error {
	w, err := decodeCheckpoint(b)
	if err != nil {
		return err
	}
	var prev uint64
	if r.last != nil {
		prev = r.last.Events
	}
	switch {
	case w.SessionID != r.id:
		return fmt.Errorf("checkpoint of session %q in the log of %q", w.SessionID, r.id)
	case w.Since != prev:
		return fmt.Errorf("checkpoint after %d events extends one after %d events, but the log's previous checkpoint is after %d", w.Events, w.Since, prev)
	case w.Events <= prev:
		return fmt.Errorf("checkpoint after %d events follows one after %d", w.Events, prev)
	}
	bld := r.obs.Builder()
	for _, o := range w.Observations {
		rec := obsRecord{fingerprint: o.Fingerprint, applied: o.Applied, ignored: o.Ignored, eventID: o.EventID}
		if _, replaced := bld.Set(obsKey{o.SourceID, o.ObservationID}, rec); replaced {
			return fmt.Errorf("observation (%q, %q) recorded by two checkpoints", o.SourceID, o.ObservationID)
		}
	}
	r.obs = bld.Map()
	r.last = &w
	return nil
}

// state returns the State of the last checkpoint added (which holds none
// of the events before it) and its mark.
func (r *restorer) state() (State, mark, error) {
	w := r.last
	sp := newSpace(w.Hypotheses)
	if len(w.Hypotheses) == 0 || !slices.Equal(sp.ids, w.Hypotheses) {
		return State{}, mark{}, errors.New("checkpoint hypotheses are not a sorted set")
	}
	p := &state{id: w.SessionID, owner: w.Owner, ontology: w.Ontology, sp: sp, alive: make([]uint64, (len(sp.ids)+63)/64),
		terminated: w.Terminated, obligations: map[string]obligation{}, obs: r.obs,
		base: w.Events, baseID: w.HeadEventID, seq: w.Events, headHash: w.HeadEventHash, survHash: w.SurvivorsHash}
	last := int32(-1)
	for _, h := range w.Survivors {
		i, ok := sp.index[h]
		if !ok || i <= last {
			return State{}, mark{}, errors.New("checkpoint survivors are not a sorted subset of the hypotheses")
		}
		p.alive[i>>6] |= 1 << (uint(i) & 63)
		last = i
	}
	p.n = len(w.Survivors)
	for _, o := range w.Obligations {
		if _, dup := p.obligations[o.ObligationID]; dup || o.ObligationID == "" {
			return State{}, mark{}, fmt.Errorf("checkpoint obligation %q is empty or repeated", o.ObligationID)
		}
		p.obligations[o.ObligationID] = obligation{min: o.MinTotalEliminations, atEntry: o.EliminationsAtEntry, active: o.Active}
		if o.Active {
			p.active = o.ObligationID
		}
	}
	s := State{p}
	if err := s.check(); err != nil {
		return State{}, mark{}, fmt.Errorf("checkpoint state: %v", err)
	}
	return s, mark{events: w.Events, obs: r.obs}, nil
}

// checkCheckpoint compares the checkpoint payload b with the one the
// state reached by replaying the events before it would write, and names
// the first member in which they differ.
func checkCheckpoint(s State, prev mark, b []byte) error {
	want, err := s.checkpoint(prev)
	if err != nil {
		return err
	}
	if bytes.Equal(want, b) {
		return nil
	}
	var mw, mb map[string]json.RawMessage
	_ = json.Unmarshal(want, &mw)
	if err := json.Unmarshal(b, &mb); err != nil {
		return fmt.Errorf("the checkpoint is not a JSON object: %v", err)
	}
	keys := make([]string, 0, len(mw)+len(mb))
	for k := range mw {
		keys = append(keys, k)
	}
	for k := range mb {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !bytes.Equal(mw[k], mb[k]) {
			return fmt.Errorf("the checkpoint disagrees with the events before it: %s is %s, replay gives %s", k, clip(mb[k]), clip(mw[k]))
		}
	}
	return errors.New("the checkpoint disagrees with the events before it")
}

// clip shortens a JSON value for an error message.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:77]) + "…"
	}
	return string(b)
}
