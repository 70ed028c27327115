/*
This file checks that the Steward's log is its memory:

	finished intents are forgotten: memory stays bounded        TestStewardForgetsFinishedIntents
	a restarted Steward has the open intents and approvals      TestStewardRestartContinues
	a stop at any append leaves log and backend in agreement
	once a Steward restarts (and acknowledged work is there)    TestRestartAfterAnyStopAgreesWithBackend
	Compare names the first disagreement                        TestCompareNamesTheFirstDisagreement
*/

package speculative

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/trace"
)

// TestStewardForgetsFinishedIntents: N status intents that are executed
// or rejected leave nothing behind in the Steward.
func TestStewardForgetsFinishedIntents(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	const n = 1000
	for i := range n {
		id, err := r.st.ProposeStatus(ctx, "c1", StatusRefuted, NonFragility{})
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = r.st.Execute(ctx, id)
		} else {
			err = r.st.Reject(ctx, id, "no")
		}
		require.NoError(t, err)
	}
	assert.Empty(t, r.st.intents, "finished intents stay in memory")
	assert.Empty(t, r.st.Pending())
}

// TestStewardRestartContinues: a Steward opened over the log of another
// has its open intents, with their approvals, and finishes them.
func TestStewardRestartContinues(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	_, err := r.st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true, "variance": 0.01})
	require.NoError(t, err)
	checks := NonFragility{FeynmanPassed: true, SensitivityFailures: []string{}}
	approved, err := r.st.ProposeStatus(ctx, "c1", StatusSupported, checks)
	require.NoError(t, err)
	require.NoError(t, r.st.Approve(ctx, approved, Approval{By: "alice", Human: true}))
	waiting, err := r.st.ProposeStatus(ctx, "c2", StatusRefuted, NonFragility{})
	require.NoError(t, err)
	done, err := r.st.ProposeStatus(ctx, "c2", StatusRefuted, NonFragility{})
	require.NoError(t, err)
	require.NoError(t, r.st.Reject(ctx, done, "no"))

	st, err := NewSteward(ctx, r.log, r.mem)
	require.NoError(t, err)
	assert.Equal(t, []PendingIntent{
		{ID: approved, ClaimID: "c1", To: StatusSupported, Checks: NonFragility{FeynmanPassed: true}, Approval: &Approval{By: "alice", Human: true}},
		{ID: waiting, ClaimID: "c2", To: StatusRefuted},
	}, st.Pending())
	tr, err := st.Execute(ctx, approved)
	require.NoError(t, err)
	assert.Equal(t, DirectionUpgrade, tr.Direction)
	require.ErrorIs(t, st.Approve(ctx, done, Approval{By: "bob"}), ErrIntent)
	require.NoError(t, st.Reject(ctx, waiting, "no"))
	assert.Empty(t, st.Pending())
	require.NoError(t, Compare(ctx, r.log, r.mem))
}

// stopAfter is a trace store that fails every append after the first n:
// the process stops there.
type stopAfter struct {
	trace.Store
	n int
}

var errStopped = errors.New("stopped")

func (s *stopAfter) Append(ctx context.Context, es ...trace.Entry) error {
	if s.n <= 0 {
		return errStopped
	}
	s.n--
	return s.Store.Append(ctx, es...)
}

// TestRestartAfterAnyStopAgreesWithBackend: random Steward calls, stopped
// at a random append (every write the Steward makes before or after it
// reached the backend); a Steward restarted over the log and the backend
// finishes the interrupted write, after which Compare finds nothing, the
// acknowledged open intents are pending and the log verifies.
func TestRestartAfterAnyStopAgreesWithBackend(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		store, mem := trace.NewMemory(), NewMemory()
		stop := &stopAfter{Store: store, n: rapid.IntRange(0, 40).Draw(t, "stop")}
		log, err := trace.NewLog(stop)
		require.NoError(t, err)
		n := 0
		st, err := NewSteward(ctx, log, mem, WithIDs(func() string { n++; return fmt.Sprintf("id-%03d", n) }))
		require.NoError(t, err)
		open := map[string]bool{} // acknowledged open intents
		claim := rapid.SampledFrom([]string{"c1", "c2"})
		var last string // the intent of the call the stop interrupted, when it names one
		for i := 0; ; i++ {
			var err error
			last = ""
			ids := slices.Sorted(func(yield func(string) bool) {
				for id := range open {
					if !yield(id) {
						return
					}
				}
			})
			switch op := rapid.IntRange(0, 6).Draw(t, "op"); {
			case op == 0:
				_, err = st.PersistEvidence(ctx, map[string]any{"claim_id": claim.Draw(t, "claim"), "success": rapid.Bool().Draw(t, "ok"), "run": rapid.IntRange(0, 3).Draw(t, "run")})
			case op == 1:
				err = st.RegisterProposition(ctx, claim.Draw(t, "claim"), map[string]any{"text": "p"})
			case op == 2:
				_, err = st.PersistHypothesis(ctx, rapid.SampledFrom([]string{"s1", "s2"}).Draw(t, "session"),
					Hypothesis{ClaimID: rapid.SampledFrom([]string{"", "c1", "c2"}).Draw(t, "link"), Content: "idea"})
			case op == 3:
				var id string
				id, err = st.ProposeStatus(ctx, claim.Draw(t, "claim"), rapid.SampledFrom(statuses()).Draw(t, "to"), NonFragility{FeynmanPassed: true})
				if err == nil {
					open[id] = true
				}
			case len(ids) == 0:
				continue
			case op == 4:
				last = rapid.SampledFrom(ids).Draw(t, "intent")
				err = st.Approve(ctx, last, Approval{By: "alice", Human: true})
			case op == 5:
				last = rapid.SampledFrom(ids).Draw(t, "intent")
				_, err = st.Execute(ctx, last)
				if err == nil || errors.Is(err, ErrPromotion) {
					delete(open, last)
				}
			default:
				last = rapid.SampledFrom(ids).Draw(t, "intent")
				if err = st.Reject(ctx, last, "no"); err == nil {
					delete(open, last)
				}
			}
			if errors.Is(err, errStopped) {
				break
			}
			if i > 500 {
				t.Fatal("the store never stopped")
			}
		}
		restarted, err := trace.NewLog(store)
		require.NoError(t, err)
		st2, err := NewSteward(ctx, restarted, mem)
		require.NoError(t, err)
		require.NoError(t, Compare(ctx, restarted, mem))
		pending := map[string]bool{}
		for _, p := range st2.Pending() {
			pending[p.ID] = true
		}
		for id := range open {
			if id != last {
				require.True(t, pending[id], "acknowledged intent %s is not pending after the restart", id)
			}
		}
		_, err = restarted.Verify(ctx)
		require.NoError(t, err)
		// A second restart has nothing left to finish.
		before := restarted.Head()
		_, err = NewSteward(ctx, restarted, mem)
		require.NoError(t, err)
		require.Equal(t, before, restarted.Head())
	})
}

// TestCompareNamesTheFirstDisagreement: a write the log does not show, or
// one missing from the backend, is named with the entry that set it.
func TestCompareNamesTheFirstDisagreement(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	rc, err := r.st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true})
	require.NoError(t, err)
	_, err = r.st.PersistHypothesis(ctx, "s1", Hypothesis{Content: "idea"})
	require.NoError(t, err)
	require.NoError(t, Compare(ctx, r.log, r.mem))

	// A write behind the Steward's back.
	require.NoError(t, r.mem.Apply(ctx, Write{kind: WriteKindHypothesis, intent: "x", id: "h9", sessionID: "s1", doc: []byte(`"sneaky"`)}))
	err = Compare(ctx, r.log, r.mem)
	var me *MismatchError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, `hypothesis 1 of session "s1"`, me.What)
	assert.Equal(t, "none", me.Log)
	assert.Contains(t, me.Backend, `"h9"`)

	// Evidence the backend lost: named with the entry that persisted it.
	lost := NewMemory()
	err = Compare(ctx, r.log, lost)
	require.ErrorAs(t, err, &me)
	assert.Equal(t, `evidence 0 of claim "c1"`, me.What)
	assert.Equal(t, rc.ID.String(), me.Log)
	assert.Equal(t, uint64(2), me.Entry)
	assert.Contains(t, err.Error(), "speculative: backend disagrees with the log: evidence 0")

	// A status set behind the Steward's back.
	other := newRig(t)
	require.NoError(t, other.mem.Apply(ctx, Write{kind: WriteKindStatus, intent: "y", claimID: "c1", to: StatusProven}))
	_, err = other.st.PersistEvidence(ctx, map[string]any{"claim_id": "c1", "success": true})
	require.NoError(t, err)
	require.ErrorAs(t, Compare(ctx, other.log, other.mem), &me)
	assert.Equal(t, `status of claim "c1"`, me.What)
}
