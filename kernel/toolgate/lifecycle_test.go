package toolgate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// lifeClock is a clock the tests move by hand.
type lifeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *lifeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *lifeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

const (
	lifeTTL  = 30 * time.Second
	lifeRate = 10 * time.Second
)

// lifeConfig is the policy the lifecycle tests run: reads counted in a
// window of 2 calls per 10 s and labelled, posts refused once a read was
// seen, deletes approved by "ops" and a principal of the group "sec"
// within 30 s.
func lifeConfig() *Compiled {
	p := Policy{Budget: 1 << 40, MinCost: 1, ApprovalTTL: lifeTTL,
		Approvers: map[claims.RiskTier][]string{claims.TierDelete: {"ops", "group:sec"}},
		Tools: []Rule{
			{Match: "read", Cost: 1, Labels: []string{"seen"}, Rate: &Rate{Calls: 2, Per: lifeRate}},
			{Match: "post", Cost: 1, Flow: []FlowRule{{After: []string{"seen"}, Reason: "no leaks"}}},
			{Match: "del", Cost: 1, Tier: claims.TierDelete},
		}}
	c, err := p.Compile()
	if err != nil {
		panic(err) // the tests' own policy
	}
	return c
}

// lifeRig drives a Gate over one log, restarted at will, with at most
// one caller held at a time (every other call lets one go), and keeps
// the naive model of what every caller's life should be.
type lifeRig struct {
	ctx   context.Context
	clock *lifeClock
	log   *trace.Log
	g     *Gate
	n     int
	// durable: WithDurableApprovals, so that requests, approvals and
	// denials survive a restart; without it they are lost to it.
	durable bool

	// The model.
	seen     map[string]bool        // by caller: a read ran
	reads    map[string][]time.Time // by caller: when reads ran
	open     map[string]Call        // by call id: allowed, not yet reported
	requests []*lifeRequest
}

// lifeRequest is a request as the model sees it: state is "waiting",
// "approved", "denied" or "gone" (used, expired or reported).
type lifeRequest struct {
	id, caller, args string
	asked            time.Time
	state            string
	answered         map[string]bool // the approvers who approved it
}

func newLifeRig(t *rapid.T) *lifeRig {
	r := &lifeRig{ctx: context.Background(), clock: &lifeClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)},
		seen: map[string]bool{}, reads: map[string][]time.Time{}, open: map[string]Call{}}
	log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(r.clock.now))
	require.NoError(t, err)
	r.log = log
	r.durable = rapid.Bool().Draw(t, "durable")
	r.restart(t)
	return r
}

// restart makes a new Gate over the same log: calls allowed before it
// are no longer open; requests, approvals and denials are restored when
// durable, lost otherwise (the calls ask again).
func (r *lifeRig) restart(t *rapid.T) {
	opts := []Option{WithClock(r.clock.now), WithCallerLimit(1), WithIdleCallers(5 * time.Second)}
	if r.durable {
		opts = append(opts, WithDurableApprovals())
	} else {
		for _, q := range r.requests {
			q.state = "gone"
		}
	}
	g, err := New(r.ctx, r.log, lifeConfig(), opts...)
	require.NoError(t, err)
	r.g = g
	clear(r.open)
}

// expired lets go in the model of what expired at now, for one call
// (caller, args) or, when caller is "", for every caller.
func (r *lifeRig) expired(caller, args string) int {
	now, n := r.clock.now(), 0
	for _, q := range r.requests {
		if q.state != "gone" && !now.Before(q.asked.Add(lifeTTL)) && (caller == "" || q.caller == caller && q.args == args) {
			q.state, n = "gone", n+1
		}
	}
	return n
}

func (r *lifeRig) find(caller, args, state string) *lifeRequest {
	for _, q := range r.requests {
		if q.caller == caller && q.args == args && q.state == state {
			return q
		}
	}
	return nil
}

// want is the model's decision for a call.
func (r *lifeRig) want(c Call) (Verdict, string, *lifeRequest) {
	switch c.Tool {
	case "read":
		now := r.clock.now()
		n := 0
		for _, at := range r.reads[c.Caller] {
			if at.After(now.Add(-lifeRate)) {
				n++
			}
		}
		if n >= 2 {
			return Refuse, gatelog.ConditionRate, nil
		}
		r.reads[c.Caller] = append(r.reads[c.Caller], now)
		r.seen[c.Caller] = true
		return Allow, gatelog.ConditionMatch, nil
	case "post":
		if r.seen[c.Caller] {
			return Refuse, "flow/0", nil
		}
		return Allow, gatelog.ConditionMatch, nil
	}
	args := string(c.Arguments)
	r.expired(c.Caller, args)
	if q := r.find(c.Caller, args, "denied"); q != nil {
		q.state = "gone"
		return Refuse, "approval", q
	}
	if q := r.find(c.Caller, args, "approved"); q != nil {
		q.state = "gone"
		return Allow, gatelog.ConditionTier, q
	}
	if q := r.find(c.Caller, args, "waiting"); q != nil {
		return AskApproval, gatelog.ConditionTier, q
	}
	return AskApproval, gatelog.ConditionTier, nil
}

func (r *lifeRig) call(t *rapid.T) {
	r.n++
	c := Call{ID: fmt.Sprint("call-", r.n), Caller: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "caller"),
		Tool:      rapid.SampledFrom([]string{"read", "post", "del"}).Draw(t, "tool"),
		Arguments: []byte(rapid.SampledFrom([]string{`{"x":1}`, `{"x":2}`}).Draw(t, "args"))}
	verdict, condition, q := r.want(c)
	d, err := r.g.Before(r.ctx, c)
	require.NoError(t, err)
	if d.Verdict != verdict || d.Condition != condition {
		t.Fatalf("%s of %s: gate %s (%s: %s), model %s (%s)", c.Tool, c.Caller, d.Verdict, d.Condition, d.Explanation, verdict, condition)
	}
	switch d.Verdict {
	case Allow:
		r.open[c.ID] = d.Call
		if q != nil && d.ApprovalID != q.id {
			t.Fatalf("%s of %s ran on approval %q, model %q", c.Tool, c.Caller, d.ApprovalID, q.id)
		}
	case AskApproval:
		if q == nil {
			r.requests = append(r.requests, &lifeRequest{id: d.Approval.ID, caller: c.Caller, args: string(c.Arguments),
				asked: trace.Normalize(r.clock.now()), state: "waiting"})
		} else if d.Approval.ID != q.id {
			t.Fatalf("%s of %s waits on %q, model %q", c.Tool, c.Caller, d.Approval.ID, q.id)
		}
	}
}

// lifeSam answers for the approvers "group:sec".
var lifeSam = Principal{Issuer: "idp", Subject: "sam", Groups: []string{"sec"}}

// answer approves or denies a request the model knows of, waiting or
// not, as "ops" (by name: Approve, Deny) or as a principal of the group
// "sec" (ApproveAs, DenyAs), or brings the answer back with its call
// (Resume). A request waits for both.
func (r *lifeRig) answer(t *rapid.T) {
	if len(r.requests) == 0 {
		t.Skip("no request")
	}
	q := rapid.SampledFrom(r.requests).Draw(t, "request")
	approve := rapid.Bool().Draw(t, "approve")
	who := rapid.SampledFrom([]string{"ops", "group:sec"}).Draw(t, "approver")
	again := q.answered[who] // an approver answers once
	// The model's answer to a waiting request it counts.
	counted := func() {
		if q.answered == nil {
			q.answered = map[string]bool{}
		}
		q.answered[who] = true
		switch {
		case !approve:
			q.state = "denied"
		case len(q.answered) == 2:
			q.state = "approved"
		}
	}
	if rapid.Bool().Draw(t, "resume") {
		r.n++
		c := Call{ID: fmt.Sprint("call-", r.n), Caller: q.caller, Tool: "del", Arguments: []byte(q.args)}
		r.expired(q.caller, q.args)
		var verdict Verdict
		var condition string
		switch {
		case q.state == "waiting" && again:
			verdict, condition = Refuse, gatelog.ConditionAnswer
		case q.state == "waiting":
			counted()
			switch q.state {
			case "approved": // the last approver: it runs on it
				verdict, condition, q.state = Allow, gatelog.ConditionTier, "gone"
			case "denied":
				verdict, condition, q.state = Refuse, "approval", "gone"
			default: // the other approver still to answer
				verdict, condition = AskApproval, gatelog.ConditionTier
			}
		case q.state == "approved" && approve: // approved meanwhile: it runs on it
			verdict, condition, q.state = Allow, gatelog.ConditionTier, "gone"
		case q.state == "denied": // denied meanwhile: refused with it, whatever the answer
			verdict, condition, q.state = Refuse, "approval", "gone"
		default: // a denial after an approval, or an answer to no waiting question
			verdict, condition = Refuse, gatelog.ConditionAnswer
		}
		ans := &Answer{Approved: approve, Approver: "ops"}
		if who != "ops" {
			ans = &Answer{Approved: approve, By: &lifeSam}
		}
		d, err := r.g.Resume(r.ctx, c, q.id, ans)
		require.NoError(t, err)
		if d.Verdict != verdict || d.Condition != condition {
			t.Fatalf("resume of %s (%s) approved %v by %s: gate %s (%s: %s), model %s (%s)", q.id, q.state, approve, who, d.Verdict, d.Condition, d.Explanation, verdict, condition)
		}
		if d.Verdict == Allow {
			r.open[c.ID] = d.Call
		}
		return
	}
	var err error
	switch {
	case who == "ops" && approve:
		_, err = r.g.Approve(r.ctx, q.id, "ops", "")
	case who == "ops":
		err = r.g.Deny(r.ctx, q.id, "ops", "")
	case approve:
		_, err = r.g.ApproveAs(r.ctx, q.id, lifeSam, "")
	default:
		err = r.g.DenyAs(r.ctx, q.id, lifeSam, "")
	}
	switch {
	case q.state != "waiting":
		require.ErrorIs(t, err, ErrUnknownApproval)
	case again:
		require.Error(t, err)
		require.True(t, isAnswerRefusal(err), "%v", err)
	default:
		require.NoError(t, err)
		counted()
	}
}

func (r *lifeRig) after(t *rapid.T) {
	ids := slices.Sorted(maps.Keys(r.open))
	if len(ids) == 0 {
		t.Skip("no open call")
	}
	id := rapid.SampledFrom(ids).Draw(t, "call")
	_, err := r.g.After(r.ctx, r.open[id], Result{Output: []byte(`"ok"`)})
	require.NoError(t, err)
	delete(r.open, id)
}

func (r *lifeRig) sweep(t *rapid.T) {
	n, err := r.g.ExpireApprovals(r.ctx)
	require.NoError(t, err)
	if want := r.expired("", ""); n != want {
		t.Fatalf("ExpireApprovals let go of %d, model %d", n, want)
	}
}

// checkPending: the gate's waiting requests are the model's.
func (r *lifeRig) checkPending(t *rapid.T) {
	var want, got []string
	for _, q := range r.requests {
		if q.state == "waiting" {
			want = append(want, q.id)
		}
	}
	for _, p := range r.g.Pending() {
		got = append(got, p.ID)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("pending %v, model %v", got, want)
	}
}

func (r *lifeRig) actions() map[string]func(*rapid.T) {
	return map[string]func(*rapid.T){
		"call":   r.call,
		"answer": r.answer,
		"after":  r.after,
		"sweep":  r.sweep,
		"tick": func(t *rapid.T) {
			r.clock.advance(time.Duration(rapid.IntRange(0, 15_000).Draw(t, "ms")) * time.Millisecond)
		},
		"restart": r.restart,
	}
}

// TestLifecycleMatchesModel: a rapid state machine drives a Gate with
// calls that are counted in a rate window, carry a label a flow refuses
// after, and need a human's approval, with answers given through
// Approve, ApproveAs, Deny, DenyAs and Resume, the clock moving past
// the approvals' ttl, sweeps, restarts over the same log (with
// WithDurableApprovals or without it, when requests are lost to a
// restart), and at most one caller held (the other let go and resumed
// from the log at every turn), and checks every verdict, condition,
// request and approval used, and Pending, against a naive model of each
// caller's life.
func TestLifecycleMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newLifeRig(t)
		acts := r.actions()
		acts[""] = r.checkPending
		t.Repeat(acts)
		_, err := r.log.Verify(r.ctx)
		require.NoError(t, err)
	})
}

// TestReplayYieldsTheLiveState: after every step of the same state
// machine, the life replay reads from the log for each caller the gate
// holds is the one the live gate holds — labels, windows, and with
// WithDurableApprovals waiting requests, approvals and denials not yet
// used, expiries — but for its open calls, which a restart does not
// keep; and neither keeps the
// expiry of a request it no longer holds.
func TestReplayYieldsTheLiveState(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := newLifeRig(t)
		acts := r.actions()
		acts[""] = func(t *rapid.T) {
			r.checkPending(t)
			r.g.mu.Lock()
			held := slices.Collect(maps.Values(r.g.callers))
			r.g.mu.Unlock()
			for _, cl := range held {
				lives, err := r.g.replay(r.ctx, r.g.SessionID(cl.key))
				require.NoError(t, err)
				replayed := lives[r.g.SessionID(cl.key)]
				if replayed == nil {
					nl := newLife()
					replayed = &nl
				}
				cl.mu.Lock()
				diff := lifeDiff(&cl.life, replayed, r.durable)
				for id := range cl.expires {
					if !holdsRequest(&cl.life, id) {
						diff += fmt.Sprintf("; an expiry of %q, which it no longer holds", id)
					}
				}
				cl.mu.Unlock()
				if diff != "" {
					t.Fatalf("caller %q: replay differs from the live gate: %s", cl.key, diff)
				}
			}
		}
		t.Repeat(acts)
	})
}

// lifeDiff says how two lives differ, but for their open calls; and but
// for their requests, approvals and denials when not durable (a replay
// then restores none).
func lifeDiff(live, replayed *life, durable bool) string {
	if !maps.Equal(live.labels, replayed.labels) {
		return fmt.Sprintf("labels %v, replayed %v", live.labels, replayed.labels)
	}
	timesEqual := func(a, b []time.Time) bool {
		return slices.EqualFunc(a, b, func(x, y time.Time) bool { return x.Equal(y) })
	}
	if !maps.EqualFunc(live.windows, replayed.windows, timesEqual) {
		return fmt.Sprintf("windows %v, replayed %v", live.windows, replayed.windows)
	}
	if !durable {
		if replayed.holds() || len(replayed.expires) != 0 {
			return "requests replayed without WithDurableApprovals"
		}
		return ""
	}
	if !maps.EqualFunc(live.expires, replayed.expires, time.Time.Equal) {
		return fmt.Sprintf("expiries %v, replayed %v", live.expires, replayed.expires)
	}
	if !reflect.DeepEqual(live.granted, replayed.granted) || !reflect.DeepEqual(live.denied, replayed.denied) {
		return fmt.Sprintf("granted %v denied %v, replayed %v and %v", live.granted, live.denied, replayed.granted, replayed.denied)
	}
	if len(live.evals) != 0 || len(replayed.evals) != 0 {
		return fmt.Sprintf("evaluations no request names: %d, replayed %d", len(live.evals), len(replayed.evals))
	}
	same := func(a, b *approval) bool {
		ra, rb := a.req, b.req
		if !ra.Asked.Equal(rb.Asked) || !ra.Expires.Equal(rb.Expires) {
			return false
		}
		ra.Asked, rb.Asked, ra.Expires, rb.Expires = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		return reflect.DeepEqual(ra, rb) && a.key == b.key && a.seq == b.seq && maps.Equal(a.by, b.by) &&
			a.bundle.ID == b.bundle.ID && a.bundle.Decision == b.bundle.Decision
	}
	if !maps.EqualFunc(live.waiting, replayed.waiting, same) {
		return fmt.Sprintf("waiting %v, replayed %v", requestsOf(live), requestsOf(replayed))
	}
	return ""
}

// holdsRequest reports whether l holds the request id, or its approval
// or denial.
func holdsRequest(l *life, id string) bool {
	for _, ap := range l.waiting {
		if ap.req.ID == id {
			return true
		}
	}
	for _, ids := range l.granted {
		if slices.Contains(ids, id) {
			return true
		}
	}
	for _, ds := range l.denied {
		if slices.ContainsFunc(ds, func(d denial) bool { return d.id == id }) {
			return true
		}
	}
	return false
}

func requestsOf(l *life) []ApprovalRequest {
	var out []ApprovalRequest
	for _, ap := range l.waiting {
		out = append(out, ap.req)
	}
	return out
}

// TestLifeArriveIsDeterministic: arrive, given equal lives and the same
// arrival, plans the same step and leaves equal lives — it reads nothing
// else.
func TestLifeArriveIsDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := callKey{tool: "del", digest: "d", tier: claims.TierDelete}
		granted, denied, open := rapid.Bool().Draw(t, "granted"), rapid.Bool().Draw(t, "denied"), rapid.Bool().Draw(t, "open")
		a := arrival{call: Call{ID: "c1", Tool: "del", Arguments: []byte(`{}`)},
			verdict: rapid.SampledFrom([]Verdict{Allow, AskApproval}).Draw(t, "verdict"), key: key}
		var lives [2]life
		var plans [2]plan
		for i := range lives {
			lives[i] = newLife()
			if granted {
				lives[i].granted[key] = []string{"g1"}
			}
			if denied {
				lives[i].denied[key] = []denial{{id: "d1", approver: "ops"}}
			}
			if open {
				lives[i].open["c1"] = openCall{execID: "e1"}
			}
			plans[i] = lives[i].arrive(a)
		}
		require.Equal(t, plans[0], plans[1])
		require.Equal(t, lives[0], lives[1])
	})
}

// TestLifeRejectedGivesBackWhatArriveTook: a call that arrive reserved
// and that did not run (the kernel or a shared window refused it) leaves
// the life as it found it.
func TestLifeRejectedGivesBackWhatArriveTook(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		key := callKey{tool: "del", digest: "d", tier: claims.TierDelete}
		l := newLife()
		for i := range rapid.IntRange(0, 3).Draw(t, "grants") {
			l.granted[key] = append(l.granted[key], fmt.Sprint("g", i))
		}
		before := newLife()
		before.granted = maps.Clone(l.granted)
		for k, ids := range l.granted {
			before.granted[k] = slices.Clone(ids)
		}
		verdict := rapid.SampledFrom([]Verdict{Allow, AskApproval}).Draw(t, "verdict")
		p := l.arrive(arrival{call: Call{ID: "c1", Tool: "del"}, verdict: verdict, key: key})
		if p.step != stepRun {
			require.Equal(t, stepAsk, p.step) // no grant: it asks, and takes nothing
			require.Equal(t, before, l)
			return
		}
		l.rejected("c1", key, p.approval)
		require.Equal(t, before, l)
	})
}

// TestEndedNeverRefundsMoreThanCharged: what After has the kernel record
// for a call that ended refunds a fixed-cost call at most what it was
// charged, and all of it only when it failed under RefundOnError or was
// measured at nothing; a reservation is settled at the measured cost,
// its reservation when not measured, nothing when it failed under
// RefundOnError.
func TestEndedNeverRefundsMoreThanCharged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		oc := openCall{execID: "e", cost: kernel.Cost(rapid.Int64Range(1, 1e9).Draw(t, "cost")),
			reserved: rapid.Bool().Draw(t, "reserved")}
		refundOnError := rapid.Bool().Draw(t, "refund_on_error")
		var r Result
		if rapid.Bool().Draw(t, "failed") {
			r.Err = errors.New("failed")
		}
		if r.Measured = rapid.Bool().Draw(t, "measured"); r.Measured {
			r.Actual = kernel.Cost(rapid.Int64Range(0, 2e9).Draw(t, "actual"))
		}
		e := ended(oc, r, refundOnError)
		zero := r.Err != nil && refundOnError
		if oc.reserved {
			want := oc.cost
			if r.Measured {
				want = r.Actual
			}
			if zero {
				want = 0
			}
			require.Equal(t, ending{settle: true, actual: want}, e)
			return
		}
		require.False(t, e.settle)
		require.GreaterOrEqual(t, e.refund, kernel.Cost(0))
		require.LessOrEqual(t, e.refund, oc.cost)
		full := zero || r.Measured && r.Actual == 0
		require.Equal(t, full, e.refund == oc.cost, "refund %s of %s", e.refund, oc.cost)
		require.Equal(t, e.refund > 0, e.why != "")
	})
}
