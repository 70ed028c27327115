package belief_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// stamps hands out deterministic event ids and times.
type stamps struct{ n int }

func (c *stamps) next() belief.Stamp {
	c.n++
	return belief.Stamp{EventID: fmt.Sprintf("ev-%05d", c.n), Time: t0.Add(time.Duration(c.n) * time.Millisecond)}
}

var onto = belief.OntologyBundle{
	HypothesisSpaceID:  "hs-db",
	HypothesisVersion:  "v3",
	CausalGraphRef:     "graphstore://postgres-repl",
	CausalGraphVersion: "v17",
}

// session declares a session and returns it with its log so far.
type session struct {
	s      belief.State
	log    []belief.AuditEntry
	stamps stamps
}

func newSession(t testing.TB, hyps ...string) *session {
	t.Helper()
	ss := &session{}
	s, e, err := belief.Declare("sess-1", belief.DeclareRequest{Ontology: onto, Hypotheses: hyps}, ss.stamps.next())
	require.NoError(t, err)
	ss.s = s
	ss.log = append(ss.log, *e)
	return ss
}

func (ss *session) record(e *belief.AuditEntry) {
	if e != nil {
		ss.log = append(ss.log, *e)
	}
}

func (ss *session) elim(t testing.TB, src, obs string, ids ...string) (belief.EliminateResult, error) {
	t.Helper()
	s, r, e, err := ss.s.Eliminate(belief.EliminateRequest{SourceID: src, ObservationID: obs, Eliminated: ids}, ss.stamps.next())
	if err == nil {
		ss.s = s
		ss.record(e)
	}
	return r, err
}
