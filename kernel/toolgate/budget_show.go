package toolgate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// BudgetStatus is one caller's budget as its gate's log records it, at
// an instant (Budgets).
type BudgetStatus struct {
	Caller string
	// Period names the period now falls in ("day 2026-11-30
	// (Europe/Paris)", "rolling 24h0m0s"), "" when the budget does not
	// renew; Renews is when a calendar period's budget comes back whole
	// (zero otherwise).
	Period string
	Renews time.Time
	// Spent is what the period's calls were charged, less refunds, with
	// open reservations at their upper bound; Limit is the policy's
	// budget plus the period's grants; Remaining is Limit − Spent.
	Spent, Limit, Remaining kernel.Cost
	Granted                 kernel.Cost // the period's grants
	// Calls are the period's calls; MaxCalls = Limit / min_cost.
	Calls, MaxCalls uint64
	// Open reservations of the period, not settled: how many, and their
	// upper bounds (in Spent).
	Open       int
	OpenAmount kernel.Cost
}

// Budgets reads log and returns every caller's budget at now under
// comp, by caller: what a gate over log would allow, computed by the
// same ledger the gate keeps, from the times and amounts the log
// recorded. For a budget that does not renew, it is the caller's whole
// life on the log.
func Budgets(ctx context.Context, log *trace.Log, comp *Compiled, now time.Time) ([]BudgetStatus, error) {
	if log == nil || comp == nil {
		return nil, fmt.Errorf("%w: Budgets needs a log and a compiled policy", ErrInvalidConfig)
	}
	g := &Gate{}
	g.policy.Store(comp)
	ledgers := map[string]*life{}
	get := func(s string) *life {
		s = g.lifeSession(s)
		if !strings.HasPrefix(s, SessionPrefix) {
			return nil
		}
		l := ledgers[s]
		if l == nil {
			l = &life{budget: newLedger(comp.period, comp.cfg.Budget, comp.cfg.MinCost)}
			ledgers[s] = l
		}
		return l
	}
	for e, err := range log.Entries(ctx, 0) {
		if err != nil {
			return nil, fmt.Errorf("toolgate: reading the log: %w", err)
		}
		switch e.Kind {
		case kernel.KindExecute, kernel.KindReserve:
			d, err := kernel.DecodeEntry(e)
			if err != nil {
				return nil, fmt.Errorf("toolgate: entry %d: %w", e.Seq, err)
			}
			var rec kernel.Record
			var session string
			switch x := d.(type) {
			case kernel.ExecuteEntry:
				rec, session = x.Record, x.Session
			case kernel.ReserveEntry:
				rec, session = x.Record, x.Session
			}
			if l := get(session); l != nil {
				l.budget.add(rec.Time, rec.ExecID, rec.Action.Cost, e.Kind == kernel.KindReserve)
			}
		case kernel.KindSettle, kernel.KindRefund, gatelog.KindBudget:
			if err := replayBudgetEntry(e, get); err != nil {
				return nil, fmt.Errorf("toolgate: entry %d: %w", e.Seq, err)
			}
		}
	}
	now = trace.Normalize(now)
	out := make([]BudgetStatus, 0, len(ledgers))
	for session, l := range ledgers {
		b := l.budget
		st := b.status(now)
		s := BudgetStatus{Caller: strings.TrimPrefix(session, SessionPrefix), Spent: st.spent, Limit: st.limit,
			Remaining: st.limit - st.spent, Granted: st.limit - b.limit, Calls: st.calls, MaxCalls: st.maxCalls,
			Open: st.opens, OpenAmount: st.open}
		if p := b.period; p != nil {
			s.Period = p.describe(now)
			if !p.rolling() {
				s.Renews = p.end(p.start(now))
			}
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b BudgetStatus) int { return strings.Compare(a.Caller, b.Caller) })
	return out, nil
}
