package sqlapproval_test

// The store's guarantees and the tests that check them, on SQLite and,
// with VERITY_PG_DSN, PostgreSQL:
//
//   - At most one answer decides a request, answers are taken only for
//     pending, unexpired requests, and each principal answers once —
//     against a naive model, over random publishes, answers, closes,
//     reopens and time: TestStoreAgainstModel (a rapid state machine).
//   - Of answers racing for one request from several pools (standing
//     in for several replicas), exactly one is taken, and a k-of-n
//     request counts k distinct principals: TestOneAnswerWinsTheRace,
//     TestQuorumCountsDistinctPrincipals.
//   - A second answer is refused naming who decided and where:
//     TestSecondAnswerSaysWhoDecided.
//   - The store takes exactly the answers the holding gate takes, and a
//     request is approved (denied) in the store exactly when the gate
//     grants (refuses) the call: TestStoreAgreesWithTheGate (rapid, a
//     real toolgate.Gate).
//   - Columns the store did not write are refused, never a panic:
//     FuzzDecodeNames (fuzz_test.go).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // registers "sqlite"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate/sqlapproval"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

var ctx = context.Background()

var t0 = time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)

func openStores(t *testing.T, be sqltest.Backend, n int) []*sqlapproval.Store {
	dsn := be.NewDSN(t)
	out := make([]*sqlapproval.Store, n)
	for i := range out {
		s, err := sqlapproval.Open(ctx, be.Open(t, dsn), be.Dialect)
		require.NoError(t, err)
		out[i] = s
	}
	return out
}

func request(id, replica string, tier claims.RiskTier, approvers ...string) sqlapproval.Request {
	return sqlapproval.Request{ID: id, Replica: replica, Caller: "agent", Tool: "delete_file", Tier: tier,
		ArgumentsSHA256: "sha256:00", Arguments: `{"path":"a.txt"}`, Question: "Delete a.txt?", Principal: "iss|agent",
		Approvers: approvers, Awaiting: slices.Clone(approvers), Asked: t0, Expires: t0.Add(time.Hour), State: sqlapproval.Pending}
}

func principal(sub string, groups ...string) sqlapproval.Answer {
	return sqlapproval.Answer{By: "iss|" + sub, Issuer: "iss", Subject: sub, Groups: groups}
}

func answer(who sqlapproval.Answer, id, replica string, approve bool) sqlapproval.Answer {
	who.Request, who.Replica, who.Approve, who.Reason = id, replica, approve, "checked"
	return who
}

func TestOneAnswerWinsTheRace(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, be sqltest.Backend) {
		stores := openStores(t, be, 4)
		for round := range 5 {
			id := fmt.Sprintf("race-%d", round)
			_, err := stores[0].Publish(ctx, request(id, "r1", claims.TierDelete, "group:ops"))
			require.NoError(t, err)
			var wg sync.WaitGroup
			var mu sync.Mutex
			var won, decided int
			for i, s := range stores {
				for j := range 2 {
					wg.Go(func() {
						_, _, err := s.Give(ctx, answer(principal(fmt.Sprintf("p%d-%d", i, j), "ops"), id, fmt.Sprintf("r%d", i), j == 0), t0)
						mu.Lock()
						defer mu.Unlock()
						switch {
						case err == nil:
							won++
						case errors.Is(err, sqlapproval.ErrDecided):
							decided++
						default:
							t.Errorf("unexpected refusal: %v", err)
						}
					})
				}
			}
			wg.Wait()
			assert.Equal(t, 1, won, "exactly one answer decides a one-approver request")
			assert.Equal(t, 7, decided)
			answers, err := stores[0].Answers(ctx, id)
			require.NoError(t, err)
			assert.Len(t, answers, 1)
		}
	})
}

func TestQuorumCountsDistinctPrincipals(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, be sqltest.Backend) {
		stores := openStores(t, be, 3)
		_, err := stores[0].Publish(ctx, request("q", "r1", claims.TierPrivilege, "group:ops", "group:ops"))
		require.NoError(t, err)
		olga := principal("olga", "ops")
		r, a, err := stores[1].Give(ctx, answer(olga, "q", "r2", true), t0)
		require.NoError(t, err)
		assert.Equal(t, sqlapproval.Pending, r.State)
		assert.Equal(t, []string{"group:ops"}, r.Awaiting)
		assert.Equal(t, "group:ops", a.Name)
		_, _, err = stores[2].Give(ctx, answer(olga, "q", "r3", true), t0)
		assert.ErrorIs(t, err, sqlapproval.ErrAnsweredAlready, "the same principal on another replica is one approver")
		assert.Contains(t, err.Error(), `"iss|olga" answered request "q" already`)
		r, _, err = stores[2].Give(ctx, answer(principal("oscar", "ops"), "q", "r3", true), t0)
		require.NoError(t, err)
		assert.Equal(t, sqlapproval.Approved, r.State)
		assert.Empty(t, r.Awaiting)
		unapplied, err := stores[0].Unapplied(ctx, "r1")
		require.NoError(t, err)
		require.Len(t, unapplied, 2, "the holder has two answers to apply, in order")
		assert.Equal(t, []int64{1, 2}, []int64{unapplied[0].Seq, unapplied[1].Seq})
		p, ok := unapplied[1].Principal()
		require.True(t, ok)
		assert.Equal(t, "oscar", p.Subject)
		assert.Equal(t, []string{"ops"}, p.Groups)
		require.NoError(t, stores[0].MarkApplied(ctx, "q", 1, "applied"))
		unapplied, err = stores[0].Unapplied(ctx, "r1")
		require.NoError(t, err)
		assert.Len(t, unapplied, 1)
	})
}

func TestSecondAnswerSaysWhoDecided(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, be sqltest.Backend) {
		s := openStores(t, be, 1)[0]
		_, err := s.Publish(ctx, request("d", "r1", claims.TierDelete, "human"))
		require.NoError(t, err)
		human := sqlapproval.Answer{By: "human"}
		_, _, err = s.Give(ctx, answer(human, "d", "r3", false), t0)
		require.NoError(t, err)
		_, _, err = s.Give(ctx, answer(human, "d", "r2", true), t0)
		require.ErrorIs(t, err, sqlapproval.ErrDecided)
		assert.Equal(t, `sqlapproval: the request was decided already: request "d" was denied already, by human at replica r3`, err.Error())
		_, _, err = s.Give(ctx, answer(human, "nope", "r2", true), t0)
		assert.ErrorIs(t, err, sqlapproval.ErrUnknown)
		fresh, err := s.Publish(ctx, request("d", "r1", claims.TierDelete, "human"))
		require.NoError(t, err)
		assert.False(t, fresh, "publishing again changes nothing")
		got, err := s.Get(ctx, "d")
		require.NoError(t, err)
		assert.Equal(t, sqlapproval.Denied, got.State)
	})
}

// model is the naive model of the store: requests by id, each with the
// answers it took.
type modelRequest struct {
	r        sqlapproval.Request
	awaiting []string
	answered map[string]bool
	state    sqlapproval.State
	answers  int
	lastSeq  int64
	reopens  int // Reopen puts a decided request back (its gate refused the deciding answer)
}

// answerers are the people of the state machine: three principals and an
// approver name.
var answerers = []sqlapproval.Answer{
	principal("alice", "ops"), principal("bob", "ops", "security"), principal("carol", "security"),
	principal("agent"), {By: "human"},
}

var shapes = [][]string{{"human"}, {"group:ops"}, {"group:ops", "group:ops"}, {"group:ops", "group:security"}, {"iss|carol"}}

// expect is the model's answer: the error it expects (nil when taken).
func (m *modelRequest) expect(a sqlapproval.Answer, now time.Time) (name string, sentinel error) {
	if !m.r.Expires.IsZero() && !now.Before(m.r.Expires) {
		return "", sqlapproval.ErrExpired
	}
	if m.state != sqlapproval.Pending {
		return "", sqlapproval.ErrDecided
	}
	if m.answered[a.By] {
		return "", sqlapproval.ErrAnsweredAlready
	}
	for _, n := range m.awaiting {
		if n == a.By || (a.Subject != "" && strings.HasPrefix(n, "group:") && slices.Contains(a.Groups, n[len("group:"):])) {
			name = n
			break
		}
	}
	if name == "" {
		return "", sqlapproval.ErrNotAnApprover
	}
	if a.Approve && m.r.Tier == claims.TierPrivilege && !m.r.SelfApproval && (a.By == m.r.Principal || a.By == m.r.Caller) {
		return "", sqlapproval.ErrSelfApproval
	}
	return name, nil
}

func TestStoreAgainstModel(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, be sqltest.Backend) {
		stores := openStores(t, be, 2)
		run := 0
		rapid.Check(t, func(rt *rapid.T) {
			run++
			prefix := fmt.Sprintf("m%d-", run)
			now := t0
			model := map[string]*modelRequest{}
			ids := func() []string { return slices.Sorted(maps.Keys(model)) }
			pick := func(rt *rapid.T) string {
				if len(model) == 0 || rapid.IntRange(0, 9).Draw(rt, "unknown") == 0 {
					return prefix + "unknown"
				}
				return rapid.SampledFrom(ids()).Draw(rt, "id")
			}
			rt.Repeat(map[string]func(*rapid.T){
				"publish": func(rt *rapid.T) {
					id := prefix + fmt.Sprint(rapid.IntRange(0, 6).Draw(rt, "n"))
					tier := rapid.SampledFrom([]claims.RiskTier{claims.TierDelete, claims.TierPrivilege}).Draw(rt, "tier")
					r := request(id, rapid.SampledFrom([]string{"r1", "r2"}).Draw(rt, "replica"), tier, rapid.SampledFrom(shapes).Draw(rt, "approvers")...)
					r.Principal = rapid.SampledFrom([]string{"", "iss|agent", "iss|bob"}).Draw(rt, "principal")
					r.SelfApproval = rapid.Bool().Draw(rt, "self")
					r.Asked, r.Expires = now, time.Time{}
					if ttl := rapid.IntRange(0, 5).Draw(rt, "ttl"); ttl > 0 {
						r.Expires = now.Add(time.Duration(ttl) * time.Minute)
					}
					fresh, err := stores[0].Publish(ctx, r)
					require.NoError(rt, err)
					_, known := model[id]
					assert.Equal(rt, !known, fresh)
					if !known {
						model[id] = &modelRequest{r: r, awaiting: slices.Clone(r.Awaiting), answered: map[string]bool{}, state: sqlapproval.Pending}
					}
				},
				"give": func(rt *rapid.T) {
					id := pick(rt)
					a := answer(rapid.SampledFrom(answerers).Draw(rt, "who"), id, "r2", rapid.Bool().Draw(rt, "approve"))
					s := stores[rapid.IntRange(0, len(stores)-1).Draw(rt, "store")]
					r, rec, err := s.Give(ctx, a, now)
					m := model[id]
					if m == nil {
						assert.ErrorIs(rt, err, sqlapproval.ErrUnknown)
						return
					}
					name, want := m.expect(a, now)
					if want != nil {
						require.ErrorIs(rt, err, want)
						return
					}
					require.NoError(rt, err)
					assert.Equal(rt, name, rec.Name)
					m.answered[a.By] = true
					m.answers++
					if !a.Approve {
						m.state = sqlapproval.Denied
					} else {
						i := slices.Index(m.awaiting, name)
						m.awaiting = slices.Delete(m.awaiting, i, i+1)
						if len(m.awaiting) == 0 {
							m.state = sqlapproval.Approved
						}
					}
					assert.Equal(rt, m.state, r.State)
					assert.Greater(rt, rec.Seq, m.lastSeq, "answers are numbered in order")
					m.lastSeq = rec.Seq
				},
				"close": func(rt *rapid.T) {
					id := pick(rt)
					replica := rapid.SampledFrom([]string{"r1", "r2"}).Draw(rt, "replica")
					require.NoError(rt, stores[1].Close(ctx, replica, id))
					if m := model[id]; m != nil && m.r.Replica == replica {
						m.state = sqlapproval.Closed
					}
				},
				"reopen": func(rt *rapid.T) {
					id := pick(rt)
					m := model[id]
					if m == nil {
						return
					}
					awaiting := m.r.Approvers[:1]
					require.NoError(rt, stores[0].Reopen(ctx, m.r.Replica, id, awaiting))
					if m.state != sqlapproval.Closed {
						m.state, m.awaiting = sqlapproval.Pending, slices.Clone(awaiting)
						m.reopens++
					}
				},
				"time": func(rt *rapid.T) {
					now = now.Add(time.Duration(rapid.IntRange(1, 3).Draw(rt, "minutes")) * time.Minute)
				},
				"": func(rt *rapid.T) {
					all, err := stores[1].Pending(ctx, now)
					require.NoError(rt, err)
					var got, want []string
					for _, r := range all {
						if strings.HasPrefix(r.ID, prefix) {
							got = append(got, r.ID)
							assert.Equal(rt, model[r.ID].awaiting, r.Awaiting, r.ID)
						}
					}
					for _, id := range ids() {
						m := model[id]
						if m.state == sqlapproval.Pending && (m.r.Expires.IsZero() || now.Before(m.r.Expires)) {
							want = append(want, id)
						}
					}
					assert.Equal(rt, want, got, "Pending lists exactly the pending, unexpired requests")
					for _, id := range ids() {
						answers, err := stores[0].Answers(ctx, id)
						require.NoError(rt, err)
						assert.Len(rt, answers, model[id].answers)
						deciding := 0
						for _, a := range answers {
							if !a.Approve {
								deciding++
							}
						}
						assert.LessOrEqual(rt, deciding, 1+model[id].reopens, "at most one denial decides a request (once more after each reopen)")
					}
				},
			})
		})
	})
}
