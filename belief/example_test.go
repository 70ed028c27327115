package belief_test

import (
	"context"
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
	log, _ := belief.DecodeAuditLog(wire)
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

// The shell: a Server keeps sessions over a Storage (one trace log per
// session), stamps events with its clock and UUIDv7 ids, and orders each
// session's events under its own lock.
func ExampleNewServer() {
	ctx := context.Background()
	srv, err := belief.NewServer(ctx, belief.NewMemoryStorage())
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	sess, st, _ := srv.Declare(ctx, belief.DeclareRequest{Hypotheses: []string{"disk", "network", "config"}})
	head, _ := st.Head()

	// Conditional on the head we saw: applied.
	r, _, err := sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "adapter://sre", ObservationID: "p1",
		Eliminated: []string{"disk", "network"}}, belief.ExpectHead(head))
	fmt.Println(r.Applied, err)
	// The same condition again is stale now.
	_, _, err = sess.Eliminate(ctx, belief.EliminateRequest{SourceID: "adapter://sre", ObservationID: "p2",
		Eliminated: []string{"config"}}, belief.ExpectHead(head))
	fmt.Println(belief.CodeOf(err))

	t, st, _ := sess.RequestTermination(ctx, belief.TerminationRequest{})
	fmt.Println(t.Approved, st.Snapshot().Survivors)

	evs, _ := sess.Events(ctx, "") // AUDIT_TRACE
	rebuilt, err := belief.Replay(evs)
	fmt.Println(len(evs), rebuilt.Survivors(), err)

	verified, err := sess.Verify(ctx) // the session's trace log, replayed in full
	fmt.Println(verified.Size, err)
	// Output:
	// [disk network] <nil>
	// CONFLICT
	// true [config]
	// 3 [config] <nil>
	// 3 <nil>
}

// An invalid request is one *ValidationError listing every violation, each
// located by a JSON Pointer and named by a rule.
func ExampleValidationError() {
	_, _, err := belief.Declare("sess-1", belief.DeclareRequest{
		Hypotheses: []string{"ok", "\xff"},
		Metadata:   []byte(`[1]`),
	}, belief.Stamp{EventID: "ev-1", Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)})
	var ve *belief.ValidationError
	if errors.As(err, &ve) {
		for _, v := range ve.Violations {
			fmt.Println(v.Path, v.Rule)
		}
	}
	fmt.Println(belief.CodeOf(err))
	// Output:
	// /hypotheses/1 utf8
	// /metadata type
	// INVALID_REQUEST
}
