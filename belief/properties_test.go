// The protocol's properties (§4.1), checked with rapid over random
// sessions, and the tests that check them.
//
//   - Monotonicity, survivors_next ⊆ survivors_prev: TestMonotonicity.
//   - Idempotence of ELIMINATE: TestIdempotence.
//   - Order independence of eliminations: TestOrderIndependence.
//   - Replayability, the log rebuilds the snapshot (also from its wire
//     form through DecodeAuditLog): TestReplayability.
//   - All verbs against a naive model: TestStateMachine.

package belief_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/canon"
	"pgregory.net/rapid"
)

var idPool = []string{"", " ", "a", "b", "c", "Z", "é", "😀", "a,b", "a\nb", `"`, "\uFFFD", "x y"}

func genID() *rapid.Generator[string] {
	return rapid.OneOf(rapid.SampledFrom(idPool), rapid.StringN(0, 4, 8))
}

func genHyps() *rapid.Generator[[]string] { return rapid.SliceOfN(genID(), 1, 10) }

func declareRapid(t *rapid.T) *session {
	ss := &session{}
	s, e, err := belief.Declare("sess-r", belief.DeclareRequest{Ontology: onto, Hypotheses: genHyps().Draw(t, "hyps")}, ss.stamps.next())
	if err != nil {
		t.Fatalf("declare: %v", err)
	}
	ss.s = s
	ss.log = append(ss.log, *e)
	return ss
}

// subset draws some declared ids (with repeats), in any order.
func subset(t *rapid.T, s belief.State, label string) []string {
	decl := s.Declared()
	return rapid.SliceOfN(rapid.SampledFrom(decl), 0, len(decl)+2).Draw(t, label)
}

// randomStep performs one random mutating verb on ss, recording what it
// logs. It returns the state before and the error.
func randomStep(t *rapid.T, ss *session) (belief.State, error) {
	before := ss.s
	var (
		next belief.State
		e    *belief.AuditEntry
		err  error
	)
	switch rapid.IntRange(0, 9).Draw(t, "verb") {
	case 0, 1, 2, 3, 4:
		next, _, e, err = ss.s.Eliminate(belief.EliminateRequest{
			SourceID:      rapid.SampledFrom([]string{"adapter://sre", "oracle://20q"}).Draw(t, "src"),
			ObservationID: rapid.SampledFrom([]string{"o1", "o2", "o3", "o4"}).Draw(t, "obs"),
			Eliminated:    subset(t, ss.s, "elim"),
			Justification: rapid.SampledFrom([]json.RawMessage{nil, json.RawMessage(`{"probe":1}`)}).Draw(t, "just"),
		}, ss.stamps.next())
	case 5:
		next, e, err = ss.s.EnterObligation(belief.ObligationRequest{
			ObligationID:         rapid.SampledFrom([]string{"ob1", "ob2"}).Draw(t, "ob"),
			MinTotalEliminations: rapid.Int64Range(-1, 3).Draw(t, "min"),
		}, ss.stamps.next())
	case 6:
		next, _, e, err = ss.s.RequestExit(belief.ExitRequest{ObligationID: rapid.SampledFrom([]string{"ob1", "ob2"}).Draw(t, "ob")}, ss.stamps.next())
	case 7:
		next, _, e, err = ss.s.DeclareConclusion(belief.ConclusionRequest{ConclusionID: "c"}, ss.stamps.next())
	default:
		ctx := rapid.SampledFrom([]json.RawMessage{nil, json.RawMessage(`{"force":true}`), json.RawMessage(`{"force":false}`)}).Draw(t, "ctx")
		next, _, e, err = ss.s.RequestTermination(belief.TerminationRequest{Context: ctx},
			belief.Policy{AllowForce: rapid.Bool().Draw(t, "allowForce")}, ss.stamps.next())
	}
	if err != nil {
		if next != before {
			t.Fatalf("a rejected transition changed the state: %v", err)
		}
		if e != nil {
			t.Fatalf("a rejected transition produced an event: %v", err)
		}
		return before, err
	}
	ss.s = next
	ss.record(e)
	return before, nil
}

func isSubset(a, b []string) bool {
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			return false
		}
	}
	return true
}

// TestMonotonicity: survivors_next ⊆ survivors_prev for every transition
// of every verb, accepted or rejected (§4.1).
func TestMonotonicity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ss := declareRapid(t)
		for range rapid.IntRange(1, 30).Draw(t, "steps") {
			before, _ := randomStep(t, ss)
			prev, next := before.Survivors(), ss.s.Survivors()
			if !isSubset(next, prev) {
				t.Fatalf("survivors grew: %q -> %q", prev, next)
			}
			if before.Terminated() && !ss.s.Terminated() {
				t.Fatalf("termination was undone")
			}
		}
	})
}

// TestIdempotence: reapplying the same ELIMINATE yields no state change
// and no event; the same set under a new observation id changes no
// survivor (§4.1).
func TestIdempotence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ss := declareRapid(t)
		for range rapid.IntRange(0, 10).Draw(t, "prefix") {
			randomStep(t, ss)
		}
		if ss.s.Terminated() {
			return
		}
		req := belief.EliminateRequest{SourceID: "idem", ObservationID: "k", Eliminated: subset(t, ss.s, "elim")}
		s1, r1, e1, err := ss.s.Eliminate(req, ss.stamps.next())
		require.NoError(t, err)
		require.NotNil(t, e1)
		req.Eliminated = slices.Clone(req.Eliminated)
		slices.Reverse(req.Eliminated)
		s2, r2, e2, err := s1.Eliminate(req, ss.stamps.next())
		require.NoError(t, err)
		if e2 != nil || s2 != s1 {
			t.Fatalf("a repeated ELIMINATE changed the state or logged an event")
		}
		if !r2.Repeated || !slices.Equal(r1.Applied, r2.Applied) || !slices.Equal(r1.Ignored, r2.Ignored) || r1.AuditEventID != r2.AuditEventID {
			t.Fatalf("repeat response %+v differs from the first %+v", r2, r1)
		}
		req.ObservationID = "k2"
		s3, r3, e3, err := s1.Eliminate(req, ss.stamps.next())
		require.NoError(t, err)
		require.NotNil(t, e3)
		if len(r3.Applied) != 0 || len(e3.Eliminated) != 0 || !slices.Equal(s3.Survivors(), s1.Survivors()) {
			t.Fatalf("re-eliminating the same set under a new id changed survivors: %+v", r3)
		}
	})
}

// TestOrderIndependence: applying two elimination sets in either order
// yields the same survivors, which are the declared set minus both (§4.1).
func TestOrderIndependence(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ss := declareRapid(t)
		for range rapid.IntRange(0, 6).Draw(t, "prefix") {
			randomStep(t, ss)
		}
		if ss.s.Terminated() {
			return
		}
		a, b := subset(t, ss.s, "A"), subset(t, ss.s, "B")
		st := ss.stamps
		ab := mustElim(t, mustElim(t, ss.s, "x", a, st.next()), "y", b, st.next())
		ba := mustElim(t, mustElim(t, ss.s, "y", b, st.next()), "x", a, st.next())
		if !slices.Equal(ab.Survivors(), ba.Survivors()) {
			t.Fatalf("A then B gives %q, B then A gives %q", ab.Survivors(), ba.Survivors())
		}
		var want []string
		for _, h := range ss.s.Survivors() {
			if !slices.Contains(a, h) && !slices.Contains(b, h) {
				want = append(want, h)
			}
		}
		if !slices.Equal(ab.Survivors(), append([]string{}, want...)) && !(len(want) == 0 && ab.NSurvivors() == 0) {
			t.Fatalf("survivors %q, want %q", ab.Survivors(), want)
		}
	})
}

func mustElim(t *rapid.T, s belief.State, obs string, ids []string, st belief.Stamp) belief.State {
	next, _, _, err := s.Eliminate(belief.EliminateRequest{SourceID: "order", ObservationID: obs, Eliminated: ids}, st)
	if err != nil {
		t.Fatalf("eliminate: %v", err)
	}
	return next
}

// TestReplayability: replaying the audit log — as values or through its
// JSON wire form — reproduces the snapshot, the head, and the behaviour
// (idempotence table, obligations) of the session that wrote it (§4.1).
func TestReplayability(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ss := declareRapid(t)
		for range rapid.IntRange(0, 25).Draw(t, "steps") {
			randomStep(t, ss)
		}
		for _, e := range ss.log {
			if canon.Valid(e.Payload) != nil || canon.Valid(e.Outcome) != nil {
				t.Fatalf("payload %s or outcome %s is not canonical JSON", e.Payload, e.Outcome)
			}
		}
		r, err := belief.Replay(ss.log)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		wire, err := json.Marshal(ss.log)
		require.NoError(t, err)
		back, err := belief.DecodeAuditLog(wire)
		require.NoError(t, err)
		r2, err := belief.Replay(back)
		if err != nil {
			t.Fatalf("replay from JSON: %v", err)
		}
		for _, got := range []belief.State{r, r2} {
			require.Equal(t, ss.s.Snapshot(), got.Snapshot())
			id1, h1 := ss.s.Head()
			id2, h2 := got.Head()
			require.Equal(t, id1, id2)
			require.Equal(t, h1, h2)
			require.Equal(t, ss.s.Len(), got.Len())
		}
		// The rebuilt session continues exactly like the original.
		orig, twin := *ss, *ss
		twin.s = r2
		for range 3 {
			st := orig.stamps.next()
			req := belief.EliminateRequest{SourceID: "adapter://sre", ObservationID: rapid.SampledFrom([]string{"o1", "o2", "o9"}).Draw(t, "obs"),
				Eliminated: subset(t, orig.s, "more")}
			a, ra, ea, errA := orig.s.Eliminate(req, st)
			b, rb, eb, errB := twin.s.Eliminate(req, st)
			require.Equal(t, belief.CodeOf(errA), belief.CodeOf(errB))
			require.Equal(t, ra, rb)
			require.Equal(t, ea == nil, eb == nil)
			if errA == nil {
				require.Equal(t, a.Snapshot(), b.Snapshot())
				orig.s, twin.s = a, b
			}
		}
	})
}

// model is the deliberately naive reference: plain maps and counters.
type model struct {
	declared   map[string]bool
	survivors  map[string]bool
	terminated bool
	active     string
	used       map[string]bool
	min        map[string]int64
	atEntry    map[string]int
	obs        map[[2]string]modelObs
	events     int
}

type modelObs struct {
	body    string
	applied []string
	ignored []string
	event   string
}

func (m *model) eliminated() int { return len(m.declared) - len(m.survivors) }

func sortedKeys(m map[string]bool) []string {
	out := []string{}
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

type machine struct {
	ss  *session
	m   *model
	pol belief.Policy
}

func (mc *machine) eliminate(t *rapid.T) {
	ids := subset(t, mc.ss.s, "elim")
	if rapid.IntRange(0, 9).Draw(t, "withUnknown") == 0 {
		ids = append(ids, "not-declared-"+rapid.StringN(0, 3, 3).Draw(t, "u"))
	}
	src := rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "src")
	obs := rapid.SampledFrom([]string{"o1", "o2", "o3"}).Draw(t, "obs")
	just := rapid.SampledFrom([]string{"", `{"j":1}`}).Draw(t, "just")
	req := belief.EliminateRequest{SourceID: src, ObservationID: obs, Eliminated: ids}
	if just != "" {
		req.Justification = json.RawMessage(just)
	}
	next, r, e, err := mc.ss.s.Eliminate(req, mc.ss.stamps.next())

	m := mc.m
	set := map[string]bool{}
	unknown := false
	for _, id := range ids {
		if !m.declared[id] {
			unknown = true
		}
		set[id] = true
	}
	body := fmt.Sprintf("%q %q", sortedKeys(set), just)
	key := [2]string{src, obs}
	switch prev, seen := m.obs[key]; {
	case m.terminated:
		expectCode(t, err, belief.CodeSessionTerminated)
	case unknown:
		expectCode(t, err, belief.CodeInvalidHypothesisID)
	case seen && prev.body != body:
		expectCode(t, err, belief.CodeConflict)
	case seen:
		require.NoError(t, err)
		require.Nil(t, e)
		require.Equal(t, prev.applied, r.Applied)
		require.Equal(t, prev.ignored, r.Ignored)
		require.Equal(t, prev.event, r.AuditEventID)
	default:
		require.NoError(t, err)
		require.NotNil(t, e)
		applied, ignored := []string{}, []string{}
		for _, id := range sortedKeys(set) {
			if m.survivors[id] {
				applied = append(applied, id)
				delete(m.survivors, id)
			} else {
				ignored = append(ignored, id)
			}
		}
		require.Equal(t, applied, r.Applied)
		require.Equal(t, ignored, r.Ignored)
		m.obs[key] = modelObs{body, applied, ignored, e.EventID}
		m.events++
	}
	mc.commit(next, e, err)
}

func expectCode(t *rapid.T, err error, code belief.Code) {
	if belief.CodeOf(err) != code || err == nil {
		t.Fatalf("got error %v, want %s", err, code)
	}
}

func (mc *machine) commit(next belief.State, e *belief.AuditEntry, err error) {
	if err == nil {
		mc.ss.s = next
		mc.ss.record(e)
	}
}

func (mc *machine) enter(t *rapid.T) {
	id := rapid.SampledFrom([]string{"ob1", "ob2", "ob3"}).Draw(t, "ob")
	min := rapid.Int64Range(-1, 3).Draw(t, "min")
	next, e, err := mc.ss.s.EnterObligation(belief.ObligationRequest{ObligationID: id, MinTotalEliminations: min}, mc.ss.stamps.next())
	m := mc.m
	switch {
	case min < 0:
		expectCode(t, err, belief.CodeInvalidRequest)
	case m.terminated:
		expectCode(t, err, belief.CodeSessionTerminated)
	case m.active != "" || m.used[id]:
		expectCode(t, err, belief.CodeConflict)
	default:
		require.NoError(t, err)
		m.active, m.used[id], m.min[id], m.atEntry[id] = id, true, min, m.eliminated()
		m.events++
	}
	mc.commit(next, e, err)
}

func (mc *machine) exit(t *rapid.T) {
	id := rapid.SampledFrom([]string{"ob1", "ob2", "ob3"}).Draw(t, "ob")
	next, r, e, err := mc.ss.s.RequestExit(belief.ExitRequest{ObligationID: id}, mc.ss.stamps.next())
	m := mc.m
	switch {
	case m.terminated:
		expectCode(t, err, belief.CodeSessionTerminated)
	case m.active != id:
		expectCode(t, err, belief.CodeObligationNotFound)
	default:
		require.NoError(t, err)
		want := int64(m.eliminated()-m.atEntry[id]) >= m.min[id]
		require.Equal(t, want, r.Approved, r.Reason)
		if want {
			m.active = ""
		}
		m.events++
	}
	mc.commit(next, e, err)
}

func (mc *machine) conclude(t *rapid.T) {
	next, r, e, err := mc.ss.s.DeclareConclusion(belief.ConclusionRequest{ConclusionID: "c"}, mc.ss.stamps.next())
	if mc.m.terminated {
		expectCode(t, err, belief.CodeSessionTerminated)
	} else {
		require.NoError(t, err)
		require.Equal(t, mc.m.active == "", r.Accepted)
		mc.m.events++
	}
	mc.commit(next, e, err)
}

func (mc *machine) terminate(t *rapid.T) {
	force := rapid.SampledFrom([]string{"", "true", "false", `"yes"`}).Draw(t, "force")
	var ctx json.RawMessage
	if force != "" {
		ctx = json.RawMessage(`{"force":` + force + `}`)
	}
	next, r, e, err := mc.ss.s.RequestTermination(belief.TerminationRequest{Context: ctx}, mc.pol, mc.ss.stamps.next())
	m := mc.m
	switch {
	case force == `"yes"`:
		expectCode(t, err, belief.CodeInvalidRequest)
	case m.terminated:
		expectCode(t, err, belief.CodeSessionTerminated)
	default:
		require.NoError(t, err)
		want := (m.active == "" && len(m.survivors) == 1) || (force == "true" && mc.pol.AllowForce)
		require.Equal(t, want, r.Approved, r.Reason)
		m.terminated = want
		m.events++
	}
	mc.commit(next, e, err)
}

func (mc *machine) check(t *rapid.T) {
	snap := mc.ss.s.Snapshot()
	require.Equal(t, sortedKeys(mc.m.survivors), snap.Survivors)
	require.Equal(t, len(mc.m.survivors), snap.NSurvivors)
	require.Equal(t, mc.m.terminated, snap.Terminated)
	if mc.m.active == "" {
		require.Nil(t, snap.ActiveObligationID)
	} else {
		require.Equal(t, mc.m.active, *snap.ActiveObligationID)
	}
	require.Equal(t, uint64(mc.m.events), mc.ss.s.Len())
	require.Len(t, mc.ss.log, mc.m.events)
	require.Equal(t, mc.ss.log[len(mc.ss.log)-1].EventID, *snap.AuditHeadEventID)
}

// TestStateMachine drives every verb in random order against the naive
// model and checks, after every step, the snapshot against the model and
// (at the end) that the log replays to the same snapshot.
func TestStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ss := declareRapid(t)
		m := &model{declared: map[string]bool{}, survivors: map[string]bool{}, used: map[string]bool{},
			min: map[string]int64{}, atEntry: map[string]int{}, obs: map[[2]string]modelObs{}, events: 1}
		for _, h := range ss.s.Declared() {
			m.declared[h], m.survivors[h] = true, true
		}
		mc := &machine{ss: ss, m: m, pol: belief.Policy{AllowForce: rapid.Bool().Draw(t, "allowForce")}}
		t.Repeat(map[string]func(*rapid.T){
			"eliminate": mc.eliminate,
			"enter":     mc.enter,
			"exit":      mc.exit,
			"conclude":  mc.conclude,
			"terminate": mc.terminate,
			"query":     func(t *rapid.T) { mc.check(t) },
			"auditTrace": func(t *rapid.T) {
				evs, err := mc.ss.s.Events("")
				require.NoError(t, err)
				require.Len(t, evs, m.events)
			},
			"": mc.check,
		})
		r, err := belief.Replay(ss.log)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		require.Equal(t, ss.s.Snapshot(), r.Snapshot())
	})
}
