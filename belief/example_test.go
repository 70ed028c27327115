package belief_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/verity-go/verity/belief"
)

// The pure core: every verb is a function from the old session value to
// the new one, a response and the audit event to record. Ids and times are
// inputs.
func ExampleDeclare() {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, ev, err := belief.Declare("sess-1", belief.DeclareRequest{
		Ontology:   belief.OntologyBundle{HypothesisSpaceID: "db-outage", HypothesisVersion: "v1"},
		Hypotheses: []string{"disk", "network", "config", "network"},
	}, belief.Stamp{EventID: "ev-1", Time: at})
	if err != nil {
		panic(err)
	}
	snap := s.Snapshot()
	fmt.Println(ev.Verb, snap.Survivors, snap.NSurvivors, snap.EntropyProxy)
	// Output:
	// DECLARE_SESSION [config disk network] 3 1.5849625007211563
}

func ExampleState_Eliminate() {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, _, _ := belief.Declare("sess-1", belief.DeclareRequest{Hypotheses: []string{"disk", "network", "config"}},
		belief.Stamp{EventID: "ev-1", Time: at})
	req := belief.EliminateRequest{SourceID: "adapter://sre", ObservationID: "probe-7", Eliminated: []string{"disk", "disk"}}
	s2, r, ev, _ := s.Eliminate(req, belief.Stamp{EventID: "ev-2", Time: at.Add(time.Second)})
	fmt.Println(r.Applied, r.Ignored, ev.Eliminated, s2.Survivors())
	// The same observation again: same answer, nothing new to record.
	s3, again, ev2, _ := s2.Eliminate(req, belief.Stamp{EventID: "ev-3", Time: at.Add(2 * time.Second)})
	fmt.Println(again.Repeated, again.AuditEventID, ev2 == nil, s3.Len())
	// The old value is untouched.
	fmt.Println(s.Survivors())
	// Output:
	// [disk] [] [disk] [config network]
	// true ev-2 true 2
	// [config disk network]
}

func ExampleReplay() {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, e1, _ := belief.Declare("sess-1", belief.DeclareRequest{Hypotheses: []string{"a", "b", "c"}},
		belief.Stamp{EventID: "ev-1", Time: at})
	s, _, e2, _ := s.Eliminate(belief.EliminateRequest{SourceID: "src", ObservationID: "o1", Eliminated: []string{"a", "b"}},
		belief.Stamp{EventID: "ev-2", Time: at})
	s, r, e3, _ := s.RequestTermination(belief.TerminationRequest{}, belief.Policy{}, belief.Stamp{EventID: "ev-3", Time: at})

	wire, _ := json.Marshal([]belief.AuditEntry{*e1, *e2, *e3}) // what AUDIT_TRACE returns
	var log []belief.AuditEntry
	_ = json.Unmarshal(wire, &log)
	rebuilt, err := belief.Replay(log)
	fmt.Println(r.Approved, err, rebuilt.Survivors(), rebuilt.Terminated())

	log[1].Eliminated = []string{"a"} // tamper with the delta
	_, err = belief.Replay(log)
	var re *belief.ReplayError
	if errors.As(err, &re) {
		fmt.Println("replay stopped at event", re.Index, re.EventID)
	}
	// Output:
	// true <nil> [c] true
	// replay stopped at event 1 ev-2
}
