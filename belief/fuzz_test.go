// Fuzz targets: the audit-log decoder and Replay (FuzzReplayLog), and
// ELIMINATE with arbitrary ids, keys and justifications (FuzzEliminate).
// Neither may panic; what replays replays again to the same snapshot; a
// rejected call changes nothing.

package belief_test

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/verity-go/verity/belief"
)

// FuzzReplayLog feeds arbitrary bytes to the audit-log decoder and to
// Replay: neither may panic, and whatever replays must replay again to
// the same snapshot.
func FuzzReplayLog(f *testing.F) {
	ss := newSession(f, "a", "b", "c")
	_, _ = ss.elim(f, "s", "o1", "a")
	s, _, e, _ := ss.s.RequestTermination(belief.TerminationRequest{Context: json.RawMessage(`{"force":true}`)}, belief.Policy{AllowForce: true}, ss.stamps.next())
	ss.s = s
	ss.record(e)
	good, _ := json.Marshal(ss.log)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{"seq":0}]`))
	f.Add([]byte(`[{"delta":{"eliminated":[]},"event_id":"e","outcome":{},"payload":{"hypotheses":["a"],"ontology":{}},"prev_event_hash":"0000000000000000000000000000000000000000000000000000000000000000","seq":0,"session_id":"s","survivors_after_hash":"0000000000000000000000000000000000000000000000000000000000000000","survivors_before_hash":"0000000000000000000000000000000000000000000000000000000000000000","ts":"2026-01-01T00:00:00Z","verb":"DECLARE_SESSION"}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		log, err := belief.DecodeAuditLog(b)
		if err != nil {
			return
		}
		s, err := belief.Replay(log)
		if err != nil {
			return
		}
		evs, err := s.Events("")
		if err != nil {
			t.Fatalf("events of a replayed session: %v", err)
		}
		again, err := belief.Replay(evs)
		if err != nil {
			t.Fatalf("a replayed log does not replay again: %v", err)
		}
		a, _ := json.Marshal(s.Snapshot())
		c, _ := json.Marshal(again.Snapshot())
		if string(a) != string(c) {
			t.Fatalf("snapshots differ: %s vs %s", a, c)
		}
	})
}

// FuzzEliminate drives ELIMINATE with arbitrary ids and keys: it returns a
// value or an error, never panics, and never grows the survivors.
func FuzzEliminate(f *testing.F) {
	f.Add("src", "obs", "a", "b", []byte(`{"x":1}`))
	f.Add("", "", "\xff", "", []byte(`[`))
	f.Add("s", "o", "zz", "a", []byte(`null`))
	f.Fuzz(func(t *testing.T, src, obs, id1, id2 string, just []byte) {
		hyps := []string{"a", "b", "c"}
		if utf8.ValidString(id1) {
			hyps = append(hyps, id1)
		}
		ss := newSession(t, hyps...)
		before := ss.s.NSurvivors()
		s, r, e, err := ss.s.Eliminate(belief.EliminateRequest{SourceID: src, ObservationID: obs,
			Eliminated: []string{id1, id2}, Justification: just}, ss.stamps.next())
		if err != nil {
			if e != nil || s != ss.s {
				t.Fatalf("rejected call changed something: %v", err)
			}
			return
		}
		if s.NSurvivors() != before-len(r.Applied) {
			t.Fatalf("survivors %d, before %d, applied %d", s.NSurvivors(), before, len(r.Applied))
		}
		if _, err := belief.Replay(append(ss.log, *e)); err != nil {
			t.Fatalf("replay: %v", err)
		}
	})
}
