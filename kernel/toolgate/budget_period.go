package toolgate

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // every replica reads a time zone the same way, whatever the machine has installed

	"github.com/verity-go/verity/kernel"
)

// Budgets that renew.
//
// With Policy.BudgetPeriod, a caller's budget is per period: what the
// caller's calls were charged (reservations at their upper bound until
// settled, less what was refunded), counted by the times the log
// recorded their decisions at, never exceeds Budget plus the grants of
// that period. The gate keeps each caller's spend of the periods still
// counted as part of its life (budgetLedger) and checks a call against
// it before the kernel runs it; the kernel session, whose own budget then
// never binds, records every charge as before. A gate restarted over its
// log, or a caller let go and back, rebuilds the ledger from the same
// entries (kernel executions, reservations, settlements and refunds,
// gatelog.KindBudget grants and resets), so that replay and the live gate
// agree. The gate's clock is only the time a decision is made at; the
// ledger reads the times given to it.

// BudgetPeriod is when a budget comes back: exactly one of Every (a
// rolling window) and Calendar.
//
// With Every ("every", a Go duration in [1s, 366 days]), the calls
// decided within any window of that length spend at most the budget: a
// call at t is allowed when what the calls since t − Every spent, plus
// its cost, fits. Spend comes back bit by bit, as the calls that made it
// leave the window.
//
// A reservation counts at its upper bound until settled, then at what it
// was settled at, but never above its reservation: an overrun beyond it
// is the kernel's to record (kernel.SettleRecord.Overrun), not the
// period's spend.
//
// With Calendar ("calendar": "day", "week" — from Monday — or
// "month"), the calls decided within one calendar period of TimeZone
// ("time_zone", an IANA name such as "Europe/Paris"; "" is UTC) spend at
// most the budget, and the whole budget comes back at the period's
// first instant (local midnight, so a day may have 23 or 25 hours).
type BudgetPeriod struct {
	Every    time.Duration
	Calendar string
	TimeZone string
}

// periodWire is a BudgetPeriod's file form.
type periodWire struct {
	Every    policyDuration           `json:"every,omitzero"`
	Calendar policyEnum[calendarEnum] `json:"calendar,omitzero"`
	TimeZone string                   `json:"time_zone,omitempty"`
}

type calendarEnum struct{}

var policyCalendars = []string{"day", "week", "month"}

func (calendarEnum) values() []string { return policyCalendars }

// periodOf returns the BudgetPeriod read, nil when absent.
func periodOf(w present[periodWire]) *BudgetPeriod {
	if !w.Set {
		return nil
	}
	return &BudgetPeriod{Every: w.V.Every.d, Calendar: w.V.Calendar.s, TimeZone: w.V.TimeZone}
}

func periodWireOf(p *BudgetPeriod) present[periodWire] {
	if p == nil {
		return present[periodWire]{}
	}
	w := periodWire{Every: policyDuration{p.Every}, TimeZone: p.TimeZone}
	if p.Calendar != "" {
		w.Calendar = policyEnum[calendarEnum]{s: p.Calendar, set: true}
	}
	return present[periodWire]{V: w, Set: true}
}

// policyRuleBudgetPeriod is the rule of a budget period that is not
// exactly one of every and calendar, names a time zone this package
// cannot read, or is rolling on a shared budget.
const policyRuleBudgetPeriod = "budget_period"

// budgetPeriods checks budget_period and shared_budget's period.
func (c *policyCheck) budgetPeriods() {
	if p := c.p.BudgetPeriod; p != nil {
		c.period("/budget_period", p, false)
	}
	if s := c.p.Shared; s != nil && s.Period != nil {
		c.period("/shared_budget/period", s.Period, true)
		if len(s.ID) > maxSharedIDLen-len("@2006-01-02") && len(s.ID) <= maxSharedIDLen {
			c.add("/shared_budget/id", policyRuleIDLength, "the id is %d bytes; a shared budget that renews has an id of at most %d (its periods' rows are id@2006-01-02)",
				len(s.ID), maxSharedIDLen-len("@2006-01-02"))
		}
	}
}

func (c *policyCheck) period(at string, p *BudgetPeriod, shared bool) {
	if c.bad(at) {
		return
	}
	_, err := compilePeriod(p)
	switch {
	case err != nil:
		c.add(at, policyRuleBudgetPeriod, "%v", err)
	case shared && p.Every != 0:
		c.add(at+"/every", policyRuleBudgetPeriod, "a shared budget renews by calendar period only (a database row per period); use calendar")
	}
}

// budgetPeriod is a compiled BudgetPeriod.
type budgetPeriod struct {
	every time.Duration
	cal   string // "day", "week", "month"; "" when rolling
	loc   *time.Location
}

// compilePeriod checks p and returns it compiled; the error says what
// to fix, in one line.
func compilePeriod(p *BudgetPeriod) (*budgetPeriod, error) {
	switch {
	case p.Every != 0 && p.Calendar != "":
		return nil, fmt.Errorf("give either every (a rolling window) or calendar, not both")
	case p.Every != 0:
		if p.TimeZone != "" {
			return nil, fmt.Errorf("time_zone applies to a calendar period; a rolling window of every %s needs none", p.Every)
		}
		if p.Every < time.Second || p.Every > maxRatePer {
			return nil, fmt.Errorf("every %s is outside [1s, %s]", p.Every, maxRatePer)
		}
		return &budgetPeriod{every: p.Every}, nil
	case p.Calendar == "":
		return nil, fmt.Errorf(`give every (a rolling window such as "24h") or calendar ("day", "week" or "month")`)
	case !slices.Contains(policyCalendars, p.Calendar):
		return nil, fmt.Errorf("calendar %q is not day, week or month", p.Calendar)
	}
	loc := time.UTC
	if p.TimeZone != "" {
		l, err := time.LoadLocation(p.TimeZone)
		if err != nil || p.TimeZone == "Local" || strings.HasPrefix(p.TimeZone, "/") {
			return nil, fmt.Errorf("time_zone %q is not an IANA time zone name such as \"Europe/Paris\"", p.TimeZone)
		}
		loc = l
	}
	return &budgetPeriod{cal: p.Calendar, loc: loc}, nil
}

// rolling reports whether the period is a rolling window.
func (p *budgetPeriod) rolling() bool { return p.every != 0 }

// start returns the first instant of the calendar period holding at.
func (p *budgetPeriod) start(at time.Time) time.Time {
	t := at.In(p.loc)
	y, m, d := t.Date()
	switch p.cal {
	case "month":
		d = 1
	case "week":
		d -= (int(t.Weekday()) + 6) % 7 // back to Monday
	}
	return time.Date(y, m, d, 0, 0, 0, 0, p.loc)
}

// end returns the first instant after the calendar period that starts
// at start.
func (p *budgetPeriod) end(start time.Time) time.Time {
	switch p.cal {
	case "month":
		return start.AddDate(0, 1, 0)
	case "week":
		return start.AddDate(0, 0, 7)
	}
	return start.AddDate(0, 0, 1)
}

// key names the calendar period holding at: its first day in the
// period's time zone ("2026-11-30" for a day or a week, "2026-11" for a
// month).
func (p *budgetPeriod) key(at time.Time) string {
	s := p.start(at)
	if p.cal == "month" {
		return s.Format("2006-01")
	}
	return s.Format("2006-01-02")
}

// counts reports whether spend at t still counts against a call at now:
// rolling, when t is after now − every (spend recorded after now, when
// the clock stepped back, counts too); calendar, when t is not before
// the first instant of now's period.
func (p *budgetPeriod) counts(t, now time.Time) bool {
	if p.rolling() {
		return t.After(now.Add(-p.every))
	}
	return !t.Before(p.start(now))
}

// grantCounts reports whether a grant at t adds to the budget of a call
// at now: within the window (rolling), or in the same calendar period.
func (p *budgetPeriod) grantCounts(t, now time.Time) bool {
	if p.rolling() {
		return t.After(now.Add(-p.every)) && !t.After(now)
	}
	return p.start(t).Equal(p.start(now))
}

// renewingKernelBudget is the kernel budget of a gate whose budget
// renews: the kernel session records every charge, and the gate's
// ledger, not the session's lifetime total, bounds them.
const renewingKernelBudget = kernel.Cost(math.MaxInt64 / 4)

// renewingSuffix ends the kernel session id of a caller whose budget
// renews (a kernel configuration of its own: renewingKernelBudget), so
// that a session recorded before the policy renewed, under the policy's
// budget, is never resumed with another.
const renewingSuffix = "#renewing"

// spend is one execution's charge in a ledger: amount is what it was
// charged less what was refunded; a reservation counts at its upper
// bound until settled (open).
type spend struct {
	at     time.Time
	exec   string
	amount kernel.Cost
	open   bool
}

type grant struct {
	at     time.Time
	amount kernel.Cost
}

// budgetLedger is a caller's spend of the periods still counted, for a
// budget that renews (period not nil), or of its whole life (period nil,
// for reading a log: Budgets). spends are by time, ascending; sum and
// calls are over all of them.
type budgetLedger struct {
	period  *budgetPeriod
	limit   kernel.Cost // the policy's budget
	minCost kernel.Cost
	spends  []spend
	grants  []grant
	sum     kernel.Cost
	opens   int         // of spends, the open ones
	openSum kernel.Cost // and their amounts
	resets  int
	granted kernel.Cost // everything ever granted, for Budgets
}

func newLedger(p *budgetPeriod, limit, minCost kernel.Cost) *budgetLedger {
	return &budgetLedger{period: p, limit: limit, minCost: minCost}
}

// periodStatus is a ledger's view at one instant.
type periodStatus struct {
	spent, limit, open kernel.Cost
	calls, maxCalls    uint64
	opens              int
}

// status returns what counts at now: spend, the limit with the grants
// of the period, the calls made and allowed, the open reservations.
func (b *budgetLedger) status(now time.Time) periodStatus {
	st := periodStatus{spent: b.sum, limit: b.limit, calls: uint64(len(b.spends)), opens: b.opens, open: b.openSum}
	if b.period != nil {
		// The oldest entries may no longer count: those are few (the
		// ledger drops them as later calls are recorded).
		for i := 0; i < len(b.spends) && !b.period.counts(b.spends[i].at, now); i++ {
			s := &b.spends[i]
			st.spent -= s.amount
			st.calls--
			if s.open {
				st.opens--
				st.open -= s.amount
			}
		}
	}
	for _, g := range b.grants {
		if b.period == nil || b.period.grantCounts(g.at, now) {
			st.limit = addCost(st.limit, g.amount)
		}
	}
	if b.minCost > 0 {
		st.maxCalls = uint64(st.limit / b.minCost)
	}
	return st
}

// admit reports why a call costing cost at now does not fit the
// period, "" when it does; the reason starts with "budget" or
// "step_limit", the kernel's checks it stands for.
func (b *budgetLedger) admit(now time.Time, cost kernel.Cost) string {
	st := b.status(now)
	if st.calls >= st.maxCalls {
		return fmt.Sprintf("step_limit: %d of %d calls this budget period (budget %s / min_cost %s); %s",
			st.calls, st.maxCalls, st.limit, b.minCost, b.renews(now))
	}
	if cost > st.limit-st.spent {
		return fmt.Sprintf("budget: cost %s, remaining %s of %s this budget period; %s",
			cost, st.limit-st.spent, st.limit, b.renews(now))
	}
	return ""
}

// renews says when the budget comes back, for a refusal: a calendar
// period's end; a rolling window's length (each call's spend comes back
// that long after it was made).
func (b *budgetLedger) renews(now time.Time) string {
	p := b.period
	if p.rolling() {
		return fmt.Sprintf("spend comes back as its calls leave the %s window", p.every)
	}
	return fmt.Sprintf("the budget renews at %s", p.end(p.start(now)).Format(time.RFC3339))
}

// add records an execution (or reservation, open) at at, and drops what
// no longer counts from at on.
func (b *budgetLedger) add(at time.Time, exec string, amount kernel.Cost, open bool) {
	b.prune(at)
	i := len(b.spends)
	for i > 0 && b.spends[i-1].at.After(at) {
		i-- // in time order even when the clock stepped back
	}
	b.spends = slices.Insert(b.spends, i, spend{at: at, exec: exec, amount: amount, open: open})
	b.sum += amount
	if open {
		b.opens++
		b.openSum += amount
	}
}

// prune drops the spend and grants that count for no call at or after at.
func (b *budgetLedger) prune(at time.Time) {
	if b.period == nil {
		return
	}
	k := 0
	for k < len(b.spends) && !b.period.counts(b.spends[k].at, at) {
		s := &b.spends[k]
		b.sum -= s.amount
		if s.open {
			b.opens--
			b.openSum -= s.amount
		}
		k++
	}
	if k > 0 {
		// Resliced, not moved: the array is given up when append next
		// grows it, copying only what still counts.
		clear(b.spends[:k])
		b.spends = b.spends[k:]
	}
	b.grants = slices.DeleteFunc(b.grants, func(g grant) bool {
		return g.at.Before(at) && !b.period.grantCounts(g.at, at)
	})
}

// refund lowers execution exec's charge by amount and, when settled,
// closes it; an execution no longer counted (or reset) is left alone.
// A settlement above the reservation counts at the reservation: the
// excess is the kernel's overrun, recorded on the log, not this
// period's spend.
func (b *budgetLedger) refund(exec string, amount kernel.Cost, settled bool) {
	for i := len(b.spends) - 1; i >= 0; i-- {
		s := &b.spends[i]
		if s.exec != exec {
			continue
		}
		amount = min(max(amount, 0), s.amount)
		s.amount -= amount
		b.sum -= amount
		if s.open {
			b.openSum -= amount
			if settled {
				s.open = false
				b.opens--
				b.openSum -= s.amount
			}
		}
		return
	}
}

// grant adds amount to the budget of the period holding at (rolling: of
// the windows holding at).
func (b *budgetLedger) grant(at time.Time, amount kernel.Cost) {
	b.prune(at)
	b.grants = append(b.grants, grant{at: at, amount: amount})
	b.granted = addCost(b.granted, amount)
}

// reset forgives everything spent and granted before: the caller has
// its whole budget again.
func (b *budgetLedger) reset() {
	b.spends, b.grants, b.sum, b.opens, b.openSum = nil, nil, 0, 0, 0
	b.resets++
}

// addCost is a + b, saturating rather than overflowing.
func addCost(a, b kernel.Cost) kernel.Cost {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// clonePeriods returns copies of a policy's periods (and of its shared
// budget, which holds one) for Policy.normalized.
func clonePeriods(p *BudgetPeriod, s *SharedBudgetSpec) (*BudgetPeriod, *SharedBudgetSpec) {
	if p != nil {
		c := *p
		p = &c
	}
	if s != nil {
		c := *s
		if c.Period != nil {
			cp := *c.Period
			c.Period = &cp
		}
		s = &c
	}
	return p, s
}

// compiledPeriods returns the policy's periods compiled (checked
// already by Compile).
func (p Policy) compiledPeriods() (period, shared *budgetPeriod) {
	if p.BudgetPeriod != nil {
		period, _ = compilePeriod(p.BudgetPeriod)
	}
	if p.Shared != nil && p.Shared.Period != nil {
		shared, _ = compilePeriod(p.Shared.Period)
	}
	return period, shared
}
