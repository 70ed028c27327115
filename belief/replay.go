package belief

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// Replay rebuilds a session from its audit log. Each event is verified
// (event_hash recomputed over its canonical form, seq, prev_event_hash
// link, session id, DECLARE_SESSION first and only first, unique event
// ids) and then re-executed from its recorded payload, time and id; the
// event the transition produces must equal the recorded one field for
// field (outcome, delta, survivors hashes, notes). Any failure is a
// *ReplayError naming the event. The rebuilt State's Snapshot equals the
// snapshot of the session that wrote the log.
func Replay(events []AuditEntry) (State, error) {
	if len(events) == 0 {
		return State{}, &ReplayError{Index: 0, Reason: "the log is empty; the first event must be DECLARE_SESSION"}
	}
	seen := make(map[string]struct{}, len(events))
	var s State
	for i, e := range events {
		if _, dup := seen[e.EventID]; dup {
			return State{}, &ReplayError{Index: i, EventID: e.EventID, Reason: "event id already used by an earlier event"}
		}
		seen[e.EventID] = struct{}{}
		next, err := s.Apply(e)
		if err != nil {
			return State{}, err
		}
		s = next
	}
	return s, nil
}

// Apply verifies one recorded event against s (the state after all
// earlier events; the zero State for the first) and re-executes it,
// returning the state after it. It is the step of Replay and what a shell
// uses to catch up with events another process appended.
func (s State) Apply(e AuditEntry) (State, error) {
	index := int(s.Len())
	fail := func(format string, args ...any) (State, error) {
		return s, &ReplayError{Index: index, EventID: e.EventID, Reason: fmt.Sprintf(format, args...)}
	}
	recRaw, err := e.Canonical()
	if err != nil {
		return fail("the entry cannot be canonicalised: %s", reason(err))
	}
	h := trace.Hash(sha256.Sum256(recRaw))
	if h != e.EventHash {
		return fail("event_hash %s does not match the entry (computed %s)", e.EventHash, h)
	}
	if e.Seq != uint64(index) {
		return fail("seq %d, expected %d", e.Seq, index)
	}
	_, prev := s.Head()
	if e.PrevEventHash != prev {
		return fail("prev_event_hash %s does not match the previous event's hash %s", e.PrevEventHash, prev)
	}
	if s.p == nil && e.Verb != VerbDeclareSession {
		return fail("the first event is %s, not DECLARE_SESSION", e.Verb)
	}
	if s.p != nil && e.SessionID != s.p.id {
		return fail("session_id %q, the log belongs to %q", e.SessionID, s.p.id)
	}
	st := Stamp{EventID: e.EventID, Time: e.Time}
	var (
		next     State
		produced *AuditEntry
	)
	switch e.Verb {
	case VerbDeclareSession:
		if s.p != nil {
			return fail("DECLARE_SESSION after the first event")
		}
		var req DeclareRequest
		if err = decodePayload(e.Payload, &req); err == nil {
			next, produced, err = Declare(e.SessionID, req, st)
		}
	case VerbEliminate:
		var req EliminateRequest
		if err = decodePayload(e.Payload, &req); err == nil {
			next, _, produced, err = s.eliminate(req, st)
		}
	case VerbEnterObligation:
		var req ObligationRequest
		if err = decodePayload(e.Payload, &req); err == nil {
			next, produced, err = s.EnterObligation(req, st)
		}
	case VerbRequestExit:
		var req ExitRequest
		if err = decodePayload(e.Payload, &req); err == nil {
			next, _, produced, err = s.RequestExit(req, st)
		}
	case VerbDeclareConclusion:
		var req ConclusionRequest
		if err = decodePayload(e.Payload, &req); err == nil {
			next, _, produced, err = s.DeclareConclusion(req, st)
		}
	case VerbRequestTermination:
		var req struct {
			TerminationRequest
			Policy Policy `json:"policy"`
		}
		if err = decodePayload(e.Payload, &req); err == nil {
			next, _, produced, err = s.RequestTermination(req.TerminationRequest, req.Policy, st)
		}
	default:
		return fail("unknown verb %q", e.Verb)
	}
	if err != nil {
		return fail("re-executing the event failed: %s", reason(err))
	}
	if produced == nil {
		return fail("the event is an idempotent repeat, which is never recorded")
	}
	if !bytes.Equal(recRaw, produced.raw) {
		field, rec, rep := diffEntries(recRaw, produced.raw)
		return fail("replay disagrees with the recorded %s: recorded %s, replayed %s", field, rec, rep)
	}
	if err := next.check(); err != nil {
		return fail("invariant broken after the event: %v", err)
	}
	return next, nil
}

// decodePayload reads a recorded request strictly (canon.DecodeInto:
// unknown members, duplicate keys and lossy integers are refused).
func decodePayload(b json.RawMessage, v any) error {
	if err := canon.DecodeInto(b, v, true); err != nil {
		return fmt.Errorf("payload: %s", canonReason(err))
	}
	return nil
}

// diffEntries names the first member of the canonical form in which the
// recorded and the replayed event differ, with both values.
func diffEntries(a, b []byte) (field, recorded, replayed string) {
	var ma, mb map[string]json.RawMessage
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	for _, k := range []string{"verb", "seq", "session_id", "event_id", "ts", "payload", "outcome", "delta",
		"survivors_before_hash", "survivors_after_hash", "notes", "prev_event_hash"} {
		if !bytes.Equal(ma[k], mb[k]) {
			return k, string(ma[k]), string(mb[k])
		}
	}
	return "entry", string(a), string(b)
}
