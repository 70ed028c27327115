package toolgate_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// periodPolicy is the policy the budget period tests drive: a fixed-cost
// tool refunded when it fails, a reserved one settled at what it
// measured, and approvers for grants.
func periodPolicy(budget int64, p *toolgate.BudgetPeriod) toolgate.Policy {
	return toolgate.Policy{Budget: units(budget), MinCost: units(1), BudgetPeriod: p,
		Approvers: map[claims.RiskTier][]string{claims.TierDelete: {"group:ops", "idp|carol"}},
		Tools: []toolgate.Rule{
			{Match: "fixed", Cost: units(2), RefundOnError: true},
			{Match: "scan", Cost: units(3), Reserve: true},
			{Match: "drop", Cost: units(2), Tier: claims.TierDelete},
		}}
}

// periodModel is the naive model of a caller's budget period: every
// charge and grant ever made, and a period computed with time.Date.
type periodModel struct {
	period *toolgate.BudgetPeriod
	budget kernel.Cost
	spends map[string][]modelSpend // by caller
	grants map[string][]modelGrant
	seen   map[string]bool
}

type modelSpend struct {
	at     time.Time
	call   string
	amount kernel.Cost
	open   bool // a reservation not settled
}

type modelGrant struct {
	at     time.Time
	amount kernel.Cost
}

func (m *periodModel) loc() *time.Location {
	if m.period.TimeZone == "" {
		return time.UTC
	}
	l, err := time.LoadLocation(m.period.TimeZone)
	if err != nil {
		panic(err)
	}
	return l
}

// periodStart is the first instant of the calendar period holding t.
func (m *periodModel) periodStart(t time.Time) time.Time {
	lt := t.In(m.loc())
	y, mo, d := lt.Date()
	switch m.period.Calendar {
	case "month":
		return time.Date(y, mo, 1, 0, 0, 0, 0, m.loc())
	case "week":
		for lt.Weekday() != time.Monday {
			lt = lt.AddDate(0, 0, -1)
		}
		y, mo, d = lt.Date()
	}
	return time.Date(y, mo, d, 0, 0, 0, 0, m.loc())
}

// inPeriod reports whether something at t is in the period of a call at now.
func (m *periodModel) inPeriod(t, now time.Time) bool {
	if m.period.Every != 0 {
		return t.After(now.Add(-m.period.Every)) && !t.After(now)
	}
	return m.periodStart(t).Equal(m.periodStart(now))
}

// status returns what caller spent in the period of now, and its limit.
func (m *periodModel) status(caller string, now time.Time) (spent, limit kernel.Cost) {
	limit = m.budget
	for _, g := range m.grants[caller] {
		if m.inPeriod(g.at, now) {
			limit += g.amount
		}
	}
	for _, s := range m.spends[caller] {
		if m.inPeriod(s.at, now) {
			spent += s.amount
		}
	}
	return spent, limit
}

// admits reports whether caller's call costing cost at now fits.
func (m *periodModel) admits(caller string, now time.Time, cost kernel.Cost) bool {
	limit := m.budget
	for _, g := range m.grants[caller] {
		if m.inPeriod(g.at, now) {
			limit += g.amount
		}
	}
	var spent kernel.Cost
	calls := 0
	for _, s := range m.spends[caller] {
		if m.inPeriod(s.at, now) {
			spent += s.amount
			calls++
		}
	}
	return calls < int(limit/units(1)) && spent+cost <= limit
}

func (m *periodModel) refund(caller, call string, amount kernel.Cost) {
	for i := range m.spends[caller] {
		if s := &m.spends[caller][i]; s.call == call {
			s.amount -= amount
		}
	}
}

func periodGen() *rapid.Generator[*toolgate.BudgetPeriod] {
	return rapid.Custom(func(t *rapid.T) *toolgate.BudgetPeriod {
		if rapid.Bool().Draw(t, "rolling") {
			return &toolgate.BudgetPeriod{Every: rapid.SampledFrom([]time.Duration{3 * time.Second, 10 * time.Second, time.Hour}).Draw(t, "every")}
		}
		return &toolgate.BudgetPeriod{Calendar: rapid.SampledFrom([]string{"day", "week", "month"}).Draw(t, "calendar"),
			TimeZone: rapid.SampledFrom([]string{"", "Europe/Paris", "America/New_York"}).Draw(t, "time_zone")}
	})
}

// periodTicks are how far the clock moves: within a rolling window,
// across one, across a night (a DST change, from the start below) and
// across a month.
var periodTicks = []time.Duration{0, 300 * time.Millisecond, time.Second, 2 * time.Second, 7 * time.Second,
	time.Hour, 5 * time.Hour, 25 * time.Hour, 8 * 24 * time.Hour, 31 * 24 * time.Hour}

// periodRun drives a gate whose budget renews against the model: calls
// of two callers (fixed-cost, failed and refunded, or reserved and
// settled later), time passing across period boundaries, grants and
// resets (when grants), restarts. Every decision must be the model's.
func periodRun(rt *rapid.T, grants bool) (*trace.Log, *periodModel, toolgate.Policy) {
	clock := &fakeClock{t: time.Date(2026, 3, 28, 20, 0, 0, 0, time.UTC)} // a DST change in Europe on the 29th
	log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(clock.now))
	require.NoError(rt, err)
	period := periodGen().Draw(rt, "period")
	pol := periodPolicy(rapid.Int64Range(2, 8).Draw(rt, "budget"), period)
	comp := mustCompile(pol)
	newGate := func() *toolgate.Gate {
		g, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clock.now), toolgate.WithCallerLimit(1))
		require.NoError(rt, err)
		return g
	}
	g := newGate()
	m := &periodModel{period: period, budget: pol.Budget, spends: map[string][]modelSpend{}, grants: map[string][]modelGrant{}, seen: map[string]bool{}}
	type open struct {
		call     toolgate.Call
		reserved kernel.Cost
	}
	var opens []open
	callers := []string{"alice", "bob"}
	n := 0
	actions := map[string]func(*rapid.T){
		"call": func(rt *rapid.T) {
			caller := rapid.SampledFrom(callers).Draw(rt, "caller")
			tool := rapid.SampledFrom([]string{"fixed", "scan"}).Draw(rt, "tool")
			cost := units(2)
			if tool == "scan" {
				cost = units(3)
			}
			n++
			c := toolgate.Call{ID: fmt.Sprint("c", n), Caller: caller, Tool: tool}
			d, err := g.Before(ctx, c)
			require.NoError(rt, err)
			m.seen[caller] = true
			want := m.admits(caller, clock.t, cost)
			if (d.Verdict == toolgate.Allow) != want {
				rt.Fatalf("%s %s at %s: gate %s (%s), model allows %v; spends %v grants %v", caller, tool, clock.t, d.Verdict, d.Explanation, want, m.spends[caller], m.grants[caller])
			}
			if !want {
				require.Contains(rt, d.Explanation, "budget period")
				return
			}
			m.spends[caller] = append(m.spends[caller], modelSpend{at: clock.t, call: c.ID, amount: cost, open: tool == "scan"})
			if tool == "scan" {
				opens = append(opens, open{call: d.Call, reserved: cost})
				return
			}
			var r toolgate.Result
			if rapid.Bool().Draw(rt, "fails") {
				r.Err = errors.New("the tool failed")
				m.refund(caller, c.ID, cost)
			} else if rapid.Bool().Draw(rt, "measured") {
				r.Measured, r.Actual = true, units(1)
				m.refund(caller, c.ID, cost-units(1))
			}
			_, err = g.After(ctx, d.Call, r)
			require.NoError(rt, err)
		},
		"settle": func(rt *rapid.T) {
			if len(opens) == 0 {
				rt.Skip("nothing open")
			}
			i := rapid.IntRange(0, len(opens)-1).Draw(rt, "open")
			o := opens[i]
			opens = slices.Delete(opens, i, i+1)
			actual := units(rapid.Int64Range(0, 4).Draw(rt, "actual"))
			_, err := g.After(ctx, o.call, toolgate.Result{Measured: true, Actual: actual})
			if err != nil && !errors.Is(err, kernel.ErrOverrun) {
				require.NoError(rt, err)
			}
			m.refund(o.call.Caller, o.call.ID, o.reserved-min(actual, o.reserved))
			for i := range m.spends[o.call.Caller] {
				if s := &m.spends[o.call.Caller][i]; s.call == o.call.ID {
					s.open = false
				}
			}
		},
		"tick": func(rt *rapid.T) {
			clock.advance(rapid.SampledFrom(periodTicks).Draw(rt, "tick"))
		},
		"restart": func(rt *rapid.T) {
			g = newGate()
			opens = nil // not open after a restart: charged at their reservation
		},
	}
	if grants {
		actions["grant"] = func(rt *rapid.T) {
			caller := rapid.SampledFrom(callers).Draw(rt, "caller")
			by := rapid.SampledFrom([]toolgate.Principal{{Issuer: "idp", Subject: "carol"}, {Issuer: "idp", Subject: "dan", Groups: []string{"ops"}},
				{Issuer: "idp", Subject: "mallory"}, {}}).Draw(rt, "approver")
			reset := rapid.IntRange(0, 3).Draw(rt, "reset") == 0
			amount := units(rapid.Int64Range(1, 3).Draw(rt, "amount"))
			if reset {
				amount = 0
			}
			err := g.Grant(ctx, toolgate.BudgetGrant{Caller: caller, By: &by, Amount: amount, Reset: reset, Reason: "more work today"})
			switch {
			case by.Subject == "mallory" || by.Subject == "":
				require.ErrorIs(rt, err, toolgate.ErrNotAnApprover)
			case !m.seen[caller]:
				require.ErrorIs(rt, err, toolgate.ErrUnknownCall)
			default:
				require.NoError(rt, err)
				if reset {
					m.spends[caller], m.grants[caller] = nil, nil
					// Whatever is open stays open in the gate, charged nowhere.
				} else {
					m.grants[caller] = append(m.grants[caller], modelGrant{at: clock.t, amount: amount})
				}
			}
		}
	}
	actions[""] = func(rt *rapid.T) { // after every action: Budgets reads the log as the model counts
		got, err := toolgate.Budgets(ctx, log, comp, clock.t)
		require.NoError(rt, err)
		for _, st := range got {
			spent, limit := m.status(st.Caller, clock.t)
			if st.Spent != spent || st.Limit != limit || st.Remaining != limit-spent {
				rt.Fatalf("Budgets says %s spent %s of %s, the model %s of %s", st.Caller, st.Spent, st.Limit, spent, limit)
			}
			opens, openSum := 0, kernel.Cost(0)
			for _, s := range m.spends[st.Caller] {
				if s.open && m.inPeriod(s.at, clock.t) {
					opens++
					openSum += s.amount
				}
			}
			if st.Open != opens || st.OpenAmount != openSum {
				rt.Fatalf("Budgets says %s has %d open (%s), the model %d (%s)", st.Caller, st.Open, st.OpenAmount, opens, openSum)
			}
		}
	}
	rt.Repeat(actions)
	_, err = log.Verify(ctx)
	require.NoError(rt, err)
	return log, m, pol
}

// TestRenewalAndReplayAgree: a gate whose budget renews decides every
// call as the naive model does — over calls, settlements, refunds, time
// crossing period boundaries (and a DST change), grants, resets and
// restarts, after which the gate rebuilds each caller's period from the
// log alone.
func TestRenewalAndReplayAgree(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) { periodRun(rt, true) })
}

// TestSpendWithinAnyPeriodNeverExceedsItsBudget: read back from the log
// alone — each execution's recorded time and charge, less its
// settlement's and refunds' — what a caller spent within any rolling
// window of the period's length (every window that starts at a charge:
// the windows of most spend), or within any calendar period, never
// exceeds the budget, and its calls never exceed budget/min_cost.
func TestSpendWithinAnyPeriodNeverExceedsItsBudget(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		log, m, pol := periodRun(rt, false)
		type charge struct {
			at     time.Time
			amount kernel.Cost
		}
		charges := map[string]map[string]*charge{} // session → exec → charge
		for e, err := range log.Entries(ctx, 0) {
			require.NoError(rt, err)
			if !strings.HasPrefix(e.Kind, "kernel.") || e.Kind == kernel.KindStart || e.Kind == kernel.KindReject {
				continue
			}
			d, err := kernel.DecodeEntry(e)
			require.NoError(rt, err)
			switch x := d.(type) {
			case kernel.ExecuteEntry:
				if charges[x.Session] == nil {
					charges[x.Session] = map[string]*charge{}
				}
				charges[x.Session][x.ExecID] = &charge{at: x.Time, amount: x.Action.Cost}
			case kernel.ReserveEntry:
				if charges[x.Session] == nil {
					charges[x.Session] = map[string]*charge{}
				}
				charges[x.Session][x.ExecID] = &charge{at: x.Time, amount: x.Action.Cost}
			case kernel.SettleEntry:
				charges[x.Session][x.ExecID].amount -= x.Refund
			case kernel.RefundEntry:
				charges[x.Session][x.ExecID].amount -= x.Amount
			}
		}
		for session, cs := range charges {
			var all []charge
			for _, c := range cs {
				all = append(all, *c)
			}
			for _, from := range all {
				var spent kernel.Cost
				calls := 0
				for _, c := range all {
					in := !c.at.Before(from.at) && c.at.Before(from.at.Add(m.period.Every))
					if m.period.Every == 0 {
						in = m.periodStart(c.at).Equal(m.periodStart(from.at))
					}
					if in {
						spent += c.amount
						calls++
					}
				}
				if spent > pol.Budget || calls > int(pol.Budget/pol.MinCost) {
					rt.Fatalf("%s spent %s in %d calls in the period from %s, budget %s", session, spent, calls, from.at, pol.Budget)
				}
			}
		}
	})
}

// TestBudgetComesBackNextPeriod: the plain story — a day's budget spent,
// refused with when it comes back, allowed again the next day (in the
// policy's time zone), and the same after a restart.
func TestBudgetComesBackNextPeriod(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 29, 21, 0, 0, 0, time.UTC)} // 22:00 in Paris
	log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(clock.now))
	require.NoError(t, err)
	comp := mustCompile(periodPolicy(4, &toolgate.BudgetPeriod{Calendar: "day", TimeZone: "Europe/Paris"}))
	g, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clock.now))
	require.NoError(t, err)
	call := func(g *toolgate.Gate, id string) toolgate.Decision {
		tool := "fixed"
		if id == "drop" {
			tool = "drop" // DELETE: needs a human
		}
		d, err := g.Before(ctx, toolgate.Call{ID: id, Caller: "alice", Tool: tool})
		require.NoError(t, err)
		if d.Verdict == toolgate.Allow {
			_, err = g.After(ctx, d.Call, toolgate.Result{})
			require.NoError(t, err)
		}
		return d
	}
	require.Equal(t, toolgate.Allow, call(g, "1").Verdict)
	require.Equal(t, toolgate.Allow, call(g, "2").Verdict)
	d := call(g, "3")
	require.Equal(t, toolgate.Refuse, d.Verdict)
	require.Contains(t, d.Explanation, "remaining 0 of 4 this budget period; the budget renews at 2026-11-30T00:00:00+01:00")
	g2, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clock.now))
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, call(g2, "4").Verdict, "a restart does not renew the budget")
	before := log.Head().Size
	d = call(g2, "drop")
	require.Equal(t, toolgate.Refuse, d.Verdict, "nobody is asked about a call the period cannot pay for")
	require.Contains(t, d.Explanation, "(rule #2, budget): cost 2, remaining 0 of 4")
	require.Equal(t, before+1, log.Head().Size, "the refusal only: no claims evaluation, no request")
	require.ErrorIs(t, g2.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", By: &toolgate.Principal{Issuer: "idp", Subject: "mallory"}, Amount: units(2), Reason: "please"}), toolgate.ErrNotAnApprover)
	require.ErrorIs(t, g2.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", Approver: "idp|carol", Amount: units(2)}), toolgate.ErrInvalidGrant, "no reason")
	require.ErrorIs(t, g2.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", Amount: units(2), Reason: "x"}), toolgate.ErrNotAnApprover, "no approver")
	require.NoError(t, g2.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", By: &toolgate.Principal{Issuer: "idp", Subject: "dan", Groups: []string{"ops"}}, Amount: units(2), Reason: "release night"}))
	require.Equal(t, toolgate.Allow, call(g2, "5").Verdict, "granted")
	require.Equal(t, toolgate.Refuse, call(g2, "6").Verdict)
	clock.advance(119 * time.Minute) // 23:59 in Paris
	require.Equal(t, toolgate.Refuse, call(g2, "7").Verdict)
	clock.advance(time.Minute) // midnight in Paris
	require.Equal(t, toolgate.Allow, call(g2, "8").Verdict)
	require.Equal(t, toolgate.AskApproval, call(g2, "drop").Verdict, "it fits: a human is asked")
	g3, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clock.now))
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, call(g3, "9").Verdict)
	require.Equal(t, toolgate.Refuse, call(g3, "10").Verdict, "the grant was for yesterday")
}

// TestConcurrentCallsNeverOverspendAPeriod: calls of one caller from many
// goroutines, with grants arriving among them, never spend more in a
// period than its budget and grants (run it with -race).
func TestConcurrentCallsNeverOverspendAPeriod(t *testing.T) {
	log, err := trace.NewLog(trace.NewMemory())
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, mustCompile(periodPolicy(10, &toolgate.BudgetPeriod{Calendar: "day"})))
	require.NoError(t, err)
	d, err := g.Before(ctx, toolgate.Call{Caller: "alice", Tool: "fixed"}) // the caller exists: grants may come
	require.NoError(t, err)
	_, err = g.After(ctx, d.Call, toolgate.Result{})
	require.NoError(t, err)
	var mu sync.Mutex
	allowed := 1
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				d, err := g.Before(ctx, toolgate.Call{Caller: "alice", Tool: "fixed"})
				if !assert.NoError(t, err) {
					return
				}
				if d.Verdict == toolgate.Allow {
					mu.Lock()
					allowed++
					mu.Unlock()
					_, err = g.After(ctx, d.Call, toolgate.Result{})
					assert.NoError(t, err)
				}
			}
		}()
	}
	for range 3 {
		require.NoError(t, g.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", Approver: "idp|carol", Amount: units(2), Reason: "more"}))
	}
	wg.Wait()
	for { // whatever the grants came after, spend what is left
		d, err := g.Before(ctx, toolgate.Call{Caller: "alice", Tool: "fixed"})
		require.NoError(t, err)
		if d.Verdict != toolgate.Allow {
			break
		}
		allowed++
		_, err = g.After(ctx, d.Call, toolgate.Result{})
		require.NoError(t, err)
	}
	assert.Equal(t, 8, allowed, "budget 10 and grants 3×2, at 2 a call")
}

// TestGrantRefusals: a grant needs a budget that renews, a reason, a
// positive amount (none for a reset), an approver of the policy and a
// caller the gate has seen; each refusal changes nothing on the log.
func TestGrantRefusals(t *testing.T) {
	log, err := trace.NewLog(trace.NewMemory())
	require.NoError(t, err)
	plain := periodPolicy(4, nil)
	g, err := toolgate.New(ctx, log, mustCompile(plain))
	require.NoError(t, err)
	_, err = g.Before(ctx, toolgate.Call{Caller: "alice", Tool: "fixed"})
	require.NoError(t, err)
	require.ErrorIs(t, g.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", Approver: "idp|carol", Amount: units(1), Reason: "r"}), toolgate.ErrInvalidGrant,
		"a budget that does not renew")

	log, err = trace.NewLog(trace.NewMemory())
	require.NoError(t, err)
	g, err = toolgate.New(ctx, log, mustCompile(periodPolicy(4, &toolgate.BudgetPeriod{Every: time.Hour})))
	require.NoError(t, err)
	_, err = g.Before(ctx, toolgate.Call{Caller: "alice", Tool: "fixed"})
	require.NoError(t, err)
	head := log.Head().Size
	carol := &toolgate.Principal{Issuer: "idp", Subject: "carol"}
	for _, c := range []struct {
		gr   toolgate.BudgetGrant
		want error
	}{
		{toolgate.BudgetGrant{Caller: "alice", By: carol, Amount: units(1), Reason: " "}, toolgate.ErrInvalidGrant},
		{toolgate.BudgetGrant{Caller: "alice", By: carol, Amount: 0, Reason: "r"}, toolgate.ErrInvalidGrant},
		{toolgate.BudgetGrant{Caller: "alice", By: carol, Amount: units(1), Reset: true, Reason: "r"}, toolgate.ErrInvalidGrant},
		{toolgate.BudgetGrant{Caller: "alice", Approver: "group:ops", By: carol, Amount: units(1), Reason: "r"}, toolgate.ErrNotAnApprover},
		{toolgate.BudgetGrant{Caller: "alice", Approver: "mallory", Amount: units(1), Reason: "r"}, toolgate.ErrNotAnApprover},
		{toolgate.BudgetGrant{Caller: "nobody", By: carol, Amount: units(1), Reason: "r"}, toolgate.ErrUnknownCall},
	} {
		require.ErrorIs(t, g.Grant(ctx, c.gr), c.want, "%+v", c.gr)
	}
	require.Equal(t, head, log.Head().Size, "no refused grant is on the log")
	require.NoError(t, g.Grant(ctx, toolgate.BudgetGrant{Caller: "alice", Approver: "idp|carol", By: carol, Amount: units(1), Reason: "r"}))
	require.Equal(t, head+1, log.Head().Size)
}
