// The decisions the specification leaves open (see the package doc), the
// audit log's format and chaining, and the tests that check them.
//
//   - Declare, eliminate, obligations, conclusions, termination, and a
//     terminated session: TestDeclareRules, TestEliminateRules,
//     TestObligationRules, TestConclusionRules, TestTerminationRules,
//     TestTerminatedSessionRejectsMutations. Every rejection they see is
//     checked for its code and its single "belief: " prefix (requireCode).
//   - An invalid request is one *ValidationError with every violation,
//     JSON Pointer paths and rules, sorted: TestDeclareReportsAllViolationsSorted.
//   - The §2.2 snapshot: TestSnapshotFormat.
//   - Injective, canonical survivors hash (§4.2): TestSurvivorsHashInjective,
//     TestSurvivorsHashIsCanonicalJSON.
//   - The audit chain and its wire form (DecodeAuditEntry reads back what
//     MarshalJSON writes): TestAuditChain, TestEventsSince.
//   - Replay names the event it stops at, for every way a log can be
//     wrong: TestReplayErrorsNameTheEvent.

package belief_test

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

func requireCode(t *testing.T, err error, code belief.Code) {
	t.Helper()
	require.Error(t, err)
	assert.Equal(t, code, belief.CodeOf(err), "error %v", err)
	assertPrefixedOnce(t, err)
}

func TestDeclareRules(t *testing.T) {
	var st stamps
	cases := []struct {
		name string
		sid  string
		req  belief.DeclareRequest
		code belief.Code
		want []string
	}{
		{"EmptyListIsInvalid", "s", belief.DeclareRequest{Hypotheses: []string{}}, belief.CodeInvalidRequest, nil},
		{"NilListIsInvalid", "s", belief.DeclareRequest{}, belief.CodeInvalidRequest, nil},
		{"EmptySessionIDIsInvalid", "", belief.DeclareRequest{Hypotheses: []string{"a"}}, belief.CodeInvalidRequest, nil},
		{"InvalidUTF8IsInvalid", "s", belief.DeclareRequest{Hypotheses: []string{"a", "\xff"}}, belief.CodeInvalidRequest, nil},
		{"MetadataMustBeObject", "s", belief.DeclareRequest{Hypotheses: []string{"a"}, Metadata: json.RawMessage(`[1]`)}, belief.CodeInvalidRequest, nil},
		{"MetadataUnsafeInteger", "s", belief.DeclareRequest{Hypotheses: []string{"a"}, Metadata: json.RawMessage(`{"n":9007199254740993}`)}, belief.CodeInvalidRequest, nil},
		{"DuplicatesRemovedAndSorted", "s", belief.DeclareRequest{Hypotheses: []string{"b", "a", "b", "a"}}, "", []string{"a", "b"}},
		{"OpaqueIDs", "s", belief.DeclareRequest{Hypotheses: []string{"😀", " ", "", "é", "Z", "a,b"}}, "", []string{"", " ", "Z", "a,b", "é", "😀"}},
		{"MetadataObjectStored", "s", belief.DeclareRequest{Hypotheses: []string{"x"}, Metadata: json.RawMessage(` {"b":1, "a":2} `)}, "", []string{"x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, e, err := belief.Declare(c.sid, c.req, st.next())
			if c.code != "" {
				requireCode(t, err, c.code)
				assert.Nil(t, e)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, s.Snapshot().Survivors)
			assert.Equal(t, c.want, s.Declared())
			var p struct {
				Hypotheses []string        `json:"hypotheses"`
				Metadata   json.RawMessage `json:"metadata"`
			}
			require.NoError(t, json.Unmarshal(e.Payload, &p))
			assert.Equal(t, c.want, p.Hypotheses, "the declaration records the de-duplicated sorted list")
			if c.req.Metadata != nil {
				assert.JSONEq(t, string(c.req.Metadata), string(p.Metadata))
			}
			assert.Equal(t, belief.VerbDeclareSession, e.Verb)
			assert.Equal(t, uint64(0), e.Seq)
			assert.True(t, e.PrevEventHash.IsZero())
		})
	}
}

func TestDeclareReportsAllViolationsSorted(t *testing.T) {
	_, _, err := belief.Declare("", belief.DeclareRequest{Metadata: json.RawMessage(`1`),
		Hypotheses: []string{"a", "\xff", "b", "\xfe"}}, belief.Stamp{})
	var ve *belief.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.ErrorIs(t, err, belief.ErrInvalidRequest)
	assert.Equal(t, belief.CodeInvalidRequest, belief.CodeOf(err))
	assert.Equal(t, []belief.Violation{
		{Path: "/event_id", Rule: belief.RuleRequired, Message: "must not be empty"},
		{Path: "/hypotheses/1", Rule: belief.RuleUTF8, Message: "must be valid UTF-8"},
		{Path: "/hypotheses/3", Rule: belief.RuleUTF8, Message: "must be valid UTF-8"},
		{Path: "/metadata", Rule: belief.RuleType, Message: "want an object, got a number"},
		{Path: "/session_id", Rule: belief.RuleRequired, Message: "must not be empty"},
	}, ve.Violations)
}

func TestEliminateRules(t *testing.T) {
	t.Run("UnknownIDRejectsWholeCall", func(t *testing.T) {
		ss := newSession(t, "a", "b", "c")
		before := ss.s
		s, _, e, err := ss.s.Eliminate(belief.EliminateRequest{SourceID: "src", ObservationID: "o1",
			Eliminated: []string{"a", "zz", "yy", "zz"}}, ss.stamps.next())
		requireCode(t, err, belief.CodeInvalidHypothesisID)
		assert.Nil(t, e, "nothing is logged")
		assert.Equal(t, before, s, "nothing is applied")
		var be *belief.Error
		require.ErrorAs(t, err, &be)
		assert.Equal(t, []string{"yy", "zz"}, be.Details["unknown_ids"])
		assert.Equal(t, []string{"a", "b", "c"}, s.Survivors())
		// The key was not consumed: the corrected call is applied.
		r, err := ss.elim(t, "src", "o1", "a")
		require.NoError(t, err)
		assert.Equal(t, []string{"a"}, r.Applied)
	})
	t.Run("AlreadyEliminatedIsIgnored", func(t *testing.T) {
		ss := newSession(t, "a", "b", "c")
		_, err := ss.elim(t, "src", "o1", "a")
		require.NoError(t, err)
		r, err := ss.elim(t, "src", "o2", "b", "a", "b")
		require.NoError(t, err)
		assert.Equal(t, []string{"b"}, r.Applied)
		assert.Equal(t, []string{"a"}, r.Ignored)
		assert.Equal(t, []string{"c"}, ss.s.Survivors())
	})
	t.Run("SameKeySameBodyReturnsFirstResponse", func(t *testing.T) {
		ss := newSession(t, "a", "b", "c")
		first, err := ss.elim(t, "src", "o1", "a", "b")
		require.NoError(t, err)
		n := ss.s.Len()
		s, again, e, err := ss.s.Eliminate(belief.EliminateRequest{SourceID: "src", ObservationID: "o1",
			Eliminated: []string{"b", "a", "a"}}, ss.stamps.next())
		require.NoError(t, err)
		assert.Nil(t, e, "no new audit entry")
		assert.True(t, again.Repeated)
		assert.Equal(t, first.Applied, again.Applied)
		assert.Equal(t, first.Ignored, again.Ignored)
		assert.Equal(t, first.AuditEventID, again.AuditEventID)
		assert.Equal(t, n, s.Len())
		assert.Equal(t, ss.s, s)
	})
	t.Run("SameKeyDifferentBodyIsConflict", func(t *testing.T) {
		ss := newSession(t, "a", "b", "c")
		_, err := ss.elim(t, "src", "o1", "a")
		require.NoError(t, err)
		for _, req := range []belief.EliminateRequest{
			{SourceID: "src", ObservationID: "o1", Eliminated: []string{"b"}},
			{SourceID: "src", ObservationID: "o1", Eliminated: []string{"a"}, Justification: json.RawMessage(`{"why":1}`)},
		} {
			s, _, e, err := ss.s.Eliminate(req, ss.stamps.next())
			requireCode(t, err, belief.CodeConflict)
			assert.Nil(t, e)
			assert.Equal(t, ss.s, s)
		}
		assert.Equal(t, []string{"b", "c"}, ss.s.Survivors())
	})
	t.Run("KeyIsAPairNotAConcatenation", func(t *testing.T) {
		ss := newSession(t, "a", "b", "c")
		_, err := ss.elim(t, "ab", "c", "a")
		require.NoError(t, err)
		r, err := ss.elim(t, "a", "bc", "b")
		require.NoError(t, err, "(a, bc) is a different key from (ab, c)")
		assert.Equal(t, []string{"b"}, r.Applied)
		_, err = ss.elim(t, "a\x00b", "c", "c")
		require.NoError(t, err)
	})
	t.Run("NewObservationNothingNewHasEmptyDelta", func(t *testing.T) {
		ss := newSession(t, "a", "b")
		_, err := ss.elim(t, "src", "o1", "a")
		require.NoError(t, err)
		r, err := ss.elim(t, "src", "o2", "a")
		require.NoError(t, err)
		assert.Empty(t, r.Applied)
		assert.Equal(t, []string{"a"}, r.Ignored)
		last := ss.log[len(ss.log)-1]
		assert.Equal(t, []string{}, last.Eliminated)
		assert.Equal(t, r.AuditEventID, last.EventID)
		assert.Equal(t, uint64(3), ss.s.Len())
		r, err = ss.elim(t, "src", "o3")
		require.NoError(t, err, "an empty elimination list is a valid observation")
		assert.Empty(t, r.Applied)
	})
	t.Run("EliminatingEverySurvivorIsAllowed", func(t *testing.T) {
		ss := newSession(t, "a", "b")
		r, err := ss.elim(t, "src", "o1", "a", "b")
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, r.Applied)
		snap := ss.s.Snapshot()
		assert.Equal(t, 0, snap.NSurvivors)
		assert.Equal(t, []string{}, snap.Survivors)
		assert.False(t, math.Signbit(snap.EntropyProxy))
	})
	t.Run("RequiredFields", func(t *testing.T) {
		ss := newSession(t, "a")
		for _, req := range []belief.EliminateRequest{
			{ObservationID: "o", Eliminated: []string{"a"}},
			{SourceID: "s", Eliminated: []string{"a"}},
			{SourceID: "s", ObservationID: "o", Justification: json.RawMessage(`"text"`)},
			{SourceID: "s\xff", ObservationID: "o"},
		} {
			_, _, _, err := ss.s.Eliminate(req, ss.stamps.next())
			requireCode(t, err, belief.CodeInvalidRequest)
		}
	})
	t.Run("ZeroStateIsNotFound", func(t *testing.T) {
		_, _, _, err := belief.State{}.Eliminate(belief.EliminateRequest{SourceID: "s", ObservationID: "o"}, belief.Stamp{EventID: "e"})
		requireCode(t, err, belief.CodeSessionNotFound)
	})
}

func TestObligationRules(t *testing.T) {
	t.Run("OneActiveAtATime", func(t *testing.T) {
		ss := newSession(t, "a", "b", "c")
		s, e, err := ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "ob1", MinTotalEliminations: 1}, ss.stamps.next())
		require.NoError(t, err)
		require.NotNil(t, e)
		id, ok := s.ActiveObligation()
		assert.True(t, ok)
		assert.Equal(t, "ob1", id)
		s2, e2, err := s.EnterObligation(belief.ObligationRequest{ObligationID: "ob2"}, ss.stamps.next())
		requireCode(t, err, belief.CodeConflict)
		assert.Nil(t, e2)
		assert.Equal(t, s, s2)
	})
	t.Run("NegativeMinimumIsInvalid", func(t *testing.T) {
		ss := newSession(t, "a")
		_, _, err := ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "ob", MinTotalEliminations: -1}, ss.stamps.next())
		requireCode(t, err, belief.CodeInvalidRequest)
		_, _, err = ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "", MinTotalEliminations: 0}, ss.stamps.next())
		requireCode(t, err, belief.CodeInvalidRequest)
	})
	t.Run("ExitApprovedIffEliminatedSinceEntryReachesMinimum", func(t *testing.T) {
		ss := newSession(t, "a", "b", "c", "d")
		_, err := ss.elim(t, "src", "before", "a") // before entry: does not count
		require.NoError(t, err)
		s, e, err := ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "ob", MinTotalEliminations: 2}, ss.stamps.next())
		require.NoError(t, err)
		ss.s = s
		ss.record(e)
		_, err = ss.elim(t, "src", "o1", "a", "b") // a is ignored: only b counts
		require.NoError(t, err)
		s, r, e, err := ss.s.RequestExit(belief.ExitRequest{ObligationID: "ob"}, ss.stamps.next())
		require.NoError(t, err)
		assert.False(t, r.Approved)
		assert.Contains(t, r.Reason, "1 hypotheses eliminated since entry")
		require.NotNil(t, e, "a refused exit is audited")
		assert.Equal(t, r.AuditEventID, e.EventID)
		assert.JSONEq(t, `{"approved":false,"eliminations_since_entry":1,"reason":"`+r.Reason+`"}`, string(e.Outcome))
		ss.s = s
		ss.record(e)
		_, ok := s.ActiveObligation()
		assert.True(t, ok, "a refused exit keeps the obligation active")
		_, err = ss.elim(t, "src", "o2", "c")
		require.NoError(t, err)
		s, r, e, err = ss.s.RequestExit(belief.ExitRequest{ObligationID: "ob", Context: json.RawMessage(`{"who":"me"}`)}, ss.stamps.next())
		require.NoError(t, err)
		assert.True(t, r.Approved)
		ss.s = s
		ss.record(e)
		_, ok = s.ActiveObligation()
		assert.False(t, ok)
		// The obligation is now inactive: exit again is not found, re-entering the id is a conflict.
		_, _, e, err = ss.s.RequestExit(belief.ExitRequest{ObligationID: "ob"}, ss.stamps.next())
		requireCode(t, err, belief.CodeObligationNotFound)
		assert.Nil(t, e)
		_, _, err = ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "ob"}, ss.stamps.next())
		requireCode(t, err, belief.CodeConflict)
		_, err = belief.Replay(ss.log)
		require.NoError(t, err)
	})
	t.Run("ZeroMinimumApprovesAtOnce", func(t *testing.T) {
		ss := newSession(t, "a")
		s, _, err := ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "ob"}, ss.stamps.next())
		require.NoError(t, err)
		_, r, _, err := s.RequestExit(belief.ExitRequest{ObligationID: "ob"}, ss.stamps.next())
		require.NoError(t, err)
		assert.True(t, r.Approved)
	})
	t.Run("WrongObligationIsNotFound", func(t *testing.T) {
		ss := newSession(t, "a")
		_, _, e, err := ss.s.RequestExit(belief.ExitRequest{ObligationID: "nope"}, ss.stamps.next())
		requireCode(t, err, belief.CodeObligationNotFound)
		assert.Nil(t, e)
		s, _, err := ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "ob"}, ss.stamps.next())
		require.NoError(t, err)
		_, _, e, err = s.RequestExit(belief.ExitRequest{ObligationID: "other"}, ss.stamps.next())
		requireCode(t, err, belief.CodeObligationNotFound)
		assert.Nil(t, e)
	})
}

func TestConclusionRules(t *testing.T) {
	ss := newSession(t, "a", "b")
	s, r, e, err := ss.s.DeclareConclusion(belief.ConclusionRequest{ConclusionID: "c1"}, ss.stamps.next())
	require.NoError(t, err)
	assert.True(t, r.Accepted, "no obligation active")
	require.NotNil(t, e)
	s, _, err = s.EnterObligation(belief.ObligationRequest{ObligationID: "ob", MinTotalEliminations: 5}, ss.stamps.next())
	require.NoError(t, err)
	s2, r, e, err := s.DeclareConclusion(belief.ConclusionRequest{ConclusionID: "c2"}, ss.stamps.next())
	require.NoError(t, err)
	assert.False(t, r.Accepted)
	assert.Contains(t, r.Reason, `"ob"`)
	require.NotNil(t, e, "a refused conclusion is audited")
	assert.Equal(t, s.Len()+1, s2.Len())
	_, _, _, err = s.DeclareConclusion(belief.ConclusionRequest{}, ss.stamps.next())
	requireCode(t, err, belief.CodeInvalidRequest)
}

func TestTerminationRules(t *testing.T) {
	force := json.RawMessage(`{"force":true}`)
	type step func(*session) belief.State
	elimTo := func(keep ...string) step {
		return func(ss *session) belief.State {
			var drop []string
			for _, h := range ss.s.Survivors() {
				if !contains(keep, h) {
					drop = append(drop, h)
				}
			}
			s, _, _, err := ss.s.Eliminate(belief.EliminateRequest{SourceID: "s", ObservationID: "x", Eliminated: drop}, ss.stamps.next())
			if err != nil {
				panic(err)
			}
			return s
		}
	}
	enter := func(ss *session) belief.State {
		s, _, err := ss.s.EnterObligation(belief.ObligationRequest{ObligationID: "ob"}, ss.stamps.next())
		if err != nil {
			panic(err)
		}
		return s
	}
	cases := []struct {
		name     string
		setup    []step
		ctx      json.RawMessage
		policy   belief.Policy
		code     belief.Code
		approved bool
		forced   bool
	}{
		{"OneSurvivorNoObligationApproved", []step{elimTo("a")}, nil, belief.Policy{}, "", true, false},
		{"TwoSurvivorsRefused", nil, nil, belief.Policy{}, "", false, false},
		{"ObligationActiveRefused", []step{elimTo("a"), enter}, nil, belief.Policy{}, "", false, false},
		{"ContradictionRefused", []step{elimTo()}, nil, belief.Policy{}, "", false, false},
		{"ForceWithoutPolicyRefused", nil, force, belief.Policy{}, "", false, false},
		{"ForceWithPolicyApproved", nil, force, belief.Policy{AllowForce: true}, "", true, true},
		{"ForceEndsContradiction", []step{elimTo()}, force, belief.Policy{AllowForce: true}, "", true, true},
		{"ForceOverridesObligation", []step{enter}, force, belief.Policy{AllowForce: true}, "", true, true},
		{"ForceFalseIsNoForce", nil, json.RawMessage(`{"force":false}`), belief.Policy{AllowForce: true}, "", false, false},
		{"ForceStringIsInvalid", nil, json.RawMessage(`{"force":"true"}`), belief.Policy{AllowForce: true}, belief.CodeInvalidRequest, false, false},
		{"ForceNumberIsInvalid", nil, json.RawMessage(`{"force":1}`), belief.Policy{AllowForce: true}, belief.CodeInvalidRequest, false, false},
		{"ForceNullIsInvalid", nil, json.RawMessage(`{"force":null}`), belief.Policy{AllowForce: true}, belief.CodeInvalidRequest, false, false},
		{"ContextMustBeObject", nil, json.RawMessage(`[true]`), belief.Policy{AllowForce: true}, belief.CodeInvalidRequest, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ss := newSession(t, "a", "b", "c")
			for _, f := range c.setup {
				ss.s = f(ss)
			}
			s, r, e, err := ss.s.RequestTermination(belief.TerminationRequest{Context: c.ctx}, c.policy, ss.stamps.next())
			if c.code != "" {
				requireCode(t, err, c.code)
				assert.Nil(t, e)
				assert.Equal(t, ss.s, s)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, e, "every termination decision is audited")
			assert.Equal(t, c.approved, r.Approved, r.Reason)
			assert.Equal(t, c.forced, r.Forced)
			assert.Equal(t, c.approved, s.Terminated())
			assert.NotEmpty(t, r.Reason)
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestTerminatedSessionRejectsMutations(t *testing.T) {
	ss := newSession(t, "a", "b")
	_, err := ss.elim(t, "s", "o1", "a")
	require.NoError(t, err)
	s, r, e, err := ss.s.RequestTermination(belief.TerminationRequest{}, belief.Policy{}, ss.stamps.next())
	require.NoError(t, err)
	require.True(t, r.Approved)
	ss.s = s
	ss.record(e)
	n := s.Len()
	// Each rejected call returns the terminated state itself and no event:
	// nothing applied, nothing logged. (s is immutable, so the returned
	// values are what must be checked.)
	rejected := func(next belief.State, e *belief.AuditEntry, err error) {
		t.Helper()
		requireCode(t, err, belief.CodeSessionTerminated)
		assert.Nil(t, e, "nothing logged")
		assert.Equal(t, s, next, "nothing applied")
		assert.Equal(t, n, next.Len())
	}
	s1, _, e1, err := s.Eliminate(belief.EliminateRequest{SourceID: "s", ObservationID: "o1", Eliminated: []string{"a"}}, ss.stamps.next())
	rejected(s1, e1, err)
	s2, e2, err := s.EnterObligation(belief.ObligationRequest{ObligationID: "ob"}, ss.stamps.next())
	rejected(s2, e2, err)
	s3, _, e3, err := s.RequestExit(belief.ExitRequest{ObligationID: "ob"}, ss.stamps.next())
	rejected(s3, e3, err)
	s4, _, e4, err := s.DeclareConclusion(belief.ConclusionRequest{ConclusionID: "c"}, ss.stamps.next())
	rejected(s4, e4, err)
	s5, _, e5, err := s.RequestTermination(belief.TerminationRequest{Context: json.RawMessage(`{"force":true}`)}, belief.Policy{AllowForce: true}, ss.stamps.next())
	rejected(s5, e5, err)
	// Reads still work.
	snap := s.Snapshot()
	assert.True(t, snap.Terminated)
	assert.Equal(t, []string{"b"}, snap.Survivors)
	evs, err := s.Events("")
	require.NoError(t, err)
	assert.Len(t, evs, int(n))
}

func TestSnapshotFormat(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{{0, 0}, {1, 0}, {2, 1}, {3, math.Log2(3)}, {4, 2}, {1000, math.Log2(1000)}} {
		hyps := make([]string, max(c.n, 1))
		for i := range hyps {
			hyps[i] = string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676))
		}
		ss := newSession(t, hyps...)
		if c.n == 0 {
			_, err := ss.elim(t, "s", "o", hyps...)
			require.NoError(t, err)
		}
		snap := ss.s.Snapshot()
		assert.Equal(t, c.n, snap.NSurvivors)
		assert.Equal(t, c.want, snap.EntropyProxy, "n=%d", c.n)
		assert.False(t, math.Signbit(snap.EntropyProxy) || math.IsNaN(snap.EntropyProxy))
	}

	ss := newSession(t, "😀", "é", "a", "Z", "\uFFFD", "")
	b, err := json.Marshal(ss.s.Snapshot())
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	assert.ElementsMatch(t, []string{"session_id", "ontology", "survivors", "n_survivors", "entropy_proxy",
		"terminated", "active_obligation_id", "audit_head_event_id"}, keys)
	assert.JSONEq(t, `["","Z","a","é","\uFFFD","😀"]`, string(m["survivors"]), "sorted by code point")
	assert.Equal(t, "null", string(m["active_obligation_id"]))
	assert.Equal(t, `"ev-00001"`, string(m["audit_head_event_id"]))
	assert.JSONEq(t, `{"hypothesis_space_id":"hs-db","hypothesis_version":"v3","causal_graph_ref":"graphstore://postgres-repl","causal_graph_version":"v17"}`, string(m["ontology"]))
}

func TestSurvivorsHashIsCanonicalJSON(t *testing.T) {
	prev := trace.Hash(sha256.Sum256([]byte("prev")))
	for _, surv := range [][]string{{}, {"a"}, {"b", "a", "a"}, {"😀", "\u2028", "\"", "\\", "\x01", "é"}} {
		ref := map[string]any{"prev_event_hash": prev.String(), "session_id": "sid\n\"x\"", "survivors": sortedUnique(surv)}
		b, err := canon.Marshal(ref)
		require.NoError(t, err)
		assert.Equal(t, trace.Hash(sha256.Sum256(b)), belief.SurvivorsHash(surv, "sid\n\"x\"", prev))
	}
}

// TestSurvivorsHashInjective lists inputs on which the specification's
// sketch (ids joined by "\n", then concatenated with the session id and
// the previous hash) collides; the canonical encoding keeps them apart.
func TestSurvivorsHashInjective(t *testing.T) {
	var zero trace.Hash
	pairs := []struct {
		a, b []string
		sa   string
		sb   string
	}{
		{[]string{"a\nb"}, []string{"a", "b"}, "s", "s"},
		{[]string{"a"}, []string{"a", ""}, "s", "s"},
		{[]string{"ab"}, []string{"a"}, "s", "bs"},
		{[]string{"a,b"}, []string{"a", "b"}, "s", "s"},
		{[]string{`a","b`}, []string{"a", "b"}, "s", "s"},
		{[]string{}, []string{""}, "s", "s"},
	}
	for _, p := range pairs {
		assert.NotEqual(t, belief.SurvivorsHash(p.a, p.sa, zero), belief.SurvivorsHash(p.b, p.sb, zero), "%q/%q vs %q/%q", p.a, p.sa, p.b, p.sb)
	}
}

func sortedUnique(xs []string) []string {
	out := append([]string{}, xs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	w := 0
	for i, x := range out {
		if i == 0 || x != out[w-1] {
			out[w] = x
			w++
		}
	}
	return out[:w]
}

func TestEventsSince(t *testing.T) {
	ss := newSession(t, "a", "b", "c")
	_, err := ss.elim(t, "s", "o1", "a")
	require.NoError(t, err)
	_, err = ss.elim(t, "s", "o2", "b")
	require.NoError(t, err)
	all, err := ss.s.Events("")
	require.NoError(t, err)
	require.Len(t, all, 3)
	after, err := ss.s.Events(all[0].EventID)
	require.NoError(t, err)
	assert.Equal(t, all[1:], after)
	none, err := ss.s.Events(all[2].EventID)
	require.NoError(t, err)
	assert.Equal(t, []belief.AuditEntry{}, none)
	_, err = ss.s.Events("missing")
	requireCode(t, err, belief.CodeEventNotFound)
	// Entries handed out are copies.
	all[1].Eliminated[0] = "mutated"
	again, _ := ss.s.Events("")
	assert.Equal(t, []string{"a"}, again[1].Eliminated)
}

func TestAuditChain(t *testing.T) {
	ss := newSession(t, "a", "b", "c")
	_, err := ss.elim(t, "s", "o1", "a")
	require.NoError(t, err)
	_, err = ss.elim(t, "s", "o2", "a")
	require.NoError(t, err)
	for i, e := range ss.log {
		h, err := e.ComputeHash()
		require.NoError(t, err)
		assert.Equal(t, h, e.EventHash)
		if i > 0 {
			assert.Equal(t, ss.log[i-1].EventHash, e.PrevEventHash)
			assert.Equal(t, ss.log[i-1].SurvivorsAfterHash, e.SurvivorsBeforeHash, "states chain")
		}
	}
	for _, e := range ss.log {
		c, err := e.Canonical()
		require.NoError(t, err)
		require.NoError(t, canon.Valid(c), "Canonical is RFC 8785 canonical: %s", c)
		w, err := json.Marshal(e)
		require.NoError(t, err)
		require.NoError(t, canon.Valid(w), "the wire form is canonical too")
	}
	last := ss.log[2]
	assert.Equal(t, belief.SurvivorsHash([]string{"b", "c"}, "sess-1", ss.log[1].EventHash), last.SurvivorsAfterHash)
	// The wire form round-trips and carries every member of §1.1.
	b, err := json.Marshal(last)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"event_id", "ts", "verb", "payload", "survivors_before_hash", "survivors_after_hash", "delta", "event_hash", "prev_event_hash"} {
		assert.Contains(t, m, k)
	}
	back, err := belief.DecodeAuditEntry(b)
	require.NoError(t, err)
	c1, _ := back.Canonical()
	c2, _ := last.Canonical()
	assert.Equal(t, c2, c1)
	assert.Equal(t, last.EventHash, back.EventHash)
}

func TestReplayErrorsNameTheEvent(t *testing.T) {
	build := func() []belief.AuditEntry {
		ss := newSession(t, "a", "b", "c")
		_, err := ss.elim(t, "s", "o1", "a")
		require.NoError(t, err)
		s, _, e, err := ss.s.RequestExit(belief.ExitRequest{ObligationID: "x"}, ss.stamps.next())
		_ = s
		requireCode(t, err, belief.CodeObligationNotFound)
		require.Nil(t, e)
		s2, _, e2, err := ss.s.RequestTermination(belief.TerminationRequest{}, belief.Policy{}, ss.stamps.next())
		require.NoError(t, err)
		ss.s = s2
		ss.record(e2)
		_, err = ss.elim(t, "s", "o2", "b")
		require.NoError(t, err)
		return ss.log
	}
	rehash := func(log []belief.AuditEntry, from int) {
		for i := from; i < len(log); i++ {
			if i > 0 {
				log[i].PrevEventHash = log[i-1].EventHash
			}
			h, err := log[i].ComputeHash()
			require.NoError(t, err)
			log[i].EventHash = h
		}
	}
	cases := []struct {
		name   string
		tamper func([]belief.AuditEntry) []belief.AuditEntry
		index  int
		reason string
	}{
		{"Empty", func(l []belief.AuditEntry) []belief.AuditEntry { return nil }, 0, "empty"},
		{"PayloadEdited", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[1].Payload = json.RawMessage(`{"eliminated":["b"],"observation_id":"o1","source_id":"s"}`)
			return l
		}, 1, "event_hash"},
		{"ChainBroken", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[2].PrevEventHash = trace.Hash{1}
			rehash(l[2:3], 0)
			return l
		}, 2, "prev_event_hash"},
		{"EventDropped", func(l []belief.AuditEntry) []belief.AuditEntry { return append(l[:1], l[2:]...) }, 1, "seq"},
		{"OutcomeDisagrees", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[2].Outcome = json.RawMessage(`{"approved":true,"forced":false,"reason":"3 survivors"}`)
			rehash(l, 2)
			return l
		}, 2, "recorded outcome"},
		{"DeltaDisagrees", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[1].Eliminated = []string{"a", "b"}
			rehash(l, 1)
			return l
		}, 1, "recorded delta"},
		{"SurvivorsHashDisagrees", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[3].SurvivorsAfterHash = trace.Hash{2}
			rehash(l, 3)
			return l
		}, 3, "survivors_after_hash"},
		{"UnknownHypothesisInPayload", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[3].Payload = json.RawMessage(`{"eliminated":["zz"],"observation_id":"o2","source_id":"s"}`)
			rehash(l, 3)
			return l
		}, 3, "invalid hypothesis id"},
		{"FirstIsNotDeclaration", func(l []belief.AuditEntry) []belief.AuditEntry {
			l = l[1:]
			l[0].Seq = 0
			l[0].PrevEventHash = trace.Hash{}
			rehash(l, 0)
			return l
		}, 0, "not DECLARE_SESSION"},
		{"DuplicateEventID", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[3].EventID = l[1].EventID
			rehash(l, 3)
			return l
		}, 3, "already used"},
		{"ForeignSession", func(l []belief.AuditEntry) []belief.AuditEntry {
			l[1].SessionID = "other"
			rehash(l, 1)
			return l
		}, 1, "session_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := build()
			_, err := belief.Replay(log)
			require.NoError(t, err, "untampered log replays")
			_, err = belief.Replay(c.tamper(log))
			var re *belief.ReplayError
			require.ErrorAs(t, err, &re)
			assert.True(t, errors.Is(err, belief.ErrReplay))
			assert.Equal(t, c.index, re.Index)
			if c.index < len(log) && c.name != "Empty" {
				assert.NotEmpty(t, re.EventID)
			}
			assert.Contains(t, err.Error(), c.reason)
		})
	}
}

// TestEliminateResultIsNotAnAlias: the applied ids handed back by
// ELIMINATE are the caller's to keep; changing them must not change the
// session's recorded delta (values are immutable, accessors never hand out
// aliases).
func TestEliminateResultIsNotAnAlias(t *testing.T) {
	ss := newSession(t, "a", "b", "c")
	r, err := ss.elim(t, "s", "o1", "a", "b")
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, r.Applied)
	r.Applied[0] = "mutated"
	evs, err := ss.s.Events("")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, evs[1].Eliminated, "the recorded delta is unchanged")
	_, err = belief.Replay(evs)
	require.NoError(t, err, "the log still replays")
}
