package toolgate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// The shell of budgets that renew (budget_period.go is the core): which
// kernel session a caller runs, the ledger each life keeps, the check
// before the kernel, and the grants an approver makes.

// kernelSession returns the id of caller key's kernel session: SessionID,
// and renewingSuffix after it when the budget renews.
func (g *Gate) kernelSession(key string) string {
	if g.comp().period != nil {
		return SessionPrefix + key + renewingSuffix
	}
	return SessionPrefix + key
}

// lifeSession returns the session a kernel session's entries apply to:
// the caller's SessionID.
func (g *Gate) lifeSession(s string) string {
	if g.comp().period != nil {
		return strings.TrimSuffix(s, renewingSuffix)
	}
	return s
}

// newLife returns an empty life, with a ledger when the budget renews.
func (g *Gate) newLife() life {
	l := newLife()
	if p := g.comp().period; p != nil {
		l.budget = newLedger(p, g.comp().cfg.Budget, g.comp().cfg.MinCost)
	}
	return l
}

// kernelBudget is the kernel's budget for comp: the policy's, or
// renewingKernelBudget when it renews (the ledger bounds each period).
func kernelBudget(comp *Compiled) kernel.Cost {
	if comp.period != nil {
		return renewingKernelBudget
	}
	return comp.cfg.Budget
}

// overBudget refuses a call that does not fit its caller's budget
// period (cl.turn held), recording the refusal; refused is false when it
// fits or the budget does not renew.
func (g *Gate) overBudget(ctx context.Context, cl *caller, d *Decision, cost kernel.Cost, at time.Time) (refused bool, err error) {
	cl.mu.Lock()
	var why string
	if cl.budget != nil {
		why = cl.budget.admit(at, cost)
	}
	cl.mu.Unlock()
	if why == "" {
		return false, nil
	}
	check, rest, _ := strings.Cut(why, ": ")
	d.Condition = "kernel"
	return true, g.refuseIn(ctx, d, check, fmt.Sprintf("tool %q (%s, %s): %s", d.Call.Tool, d.Rule, check, rest), "", at)
}

// spentBack applies a recorded settlement (settled) or refund of
// execution exec to the caller's ledger.
func (cl *caller) spentBack(exec string, amount kernel.Cost, settled bool) {
	cl.mu.Lock()
	if cl.budget != nil {
		cl.budget.refund(exec, amount, settled)
	}
	cl.mu.Unlock()
}

// replayBudgetEntry applies a settlement, a refund or a gatelog.KindBudget
// entry to the ledger of its session's life, when it keeps one.
func replayBudgetEntry(e trace.Entry, get func(string) *life) error {
	if e.Kind == gatelog.KindBudget {
		d, err := gatelog.Decode(e)
		if err != nil {
			return err
		}
		b := d.(gatelog.Budget)
		if l := get(b.Session); l != nil && l.budget != nil {
			l.budget.apply(b, e.Time)
		}
		return nil
	}
	d, err := kernel.DecodeEntry(e)
	if err != nil {
		return err
	}
	switch x := d.(type) {
	case kernel.SettleEntry:
		if l := get(x.Session); l != nil && l.budget != nil {
			l.budget.refund(x.ExecID, x.Refund, true)
		}
	case kernel.RefundEntry:
		if l := get(x.Session); l != nil && l.budget != nil {
			l.budget.refund(x.ExecID, x.Amount, false)
		}
	}
	return nil
}

// apply is a grant or reset recorded at at.
func (b *budgetLedger) apply(e gatelog.Budget, at time.Time) {
	if e.Action == "reset" {
		b.reset()
		return
	}
	b.grant(at, e.Amount)
}

// ErrInvalidGrant: Grant was given no reason, an amount it cannot add,
// or a budget that does not renew (the policy has no budget_period).
var ErrInvalidGrant = errors.New("toolgate: invalid budget grant")

// BudgetGrant is an approver's change to one caller's budget that
// renews (Gate.Grant): a grant of Amount for the current period, or a
// Reset, for Reason.
type BudgetGrant struct {
	Caller string
	// Approver is the approver (a name of Policy.Approvers, of any tier)
	// the change is made as. With By, the principal making it, it may be
	// empty: By must answer for one of the policy's approvers, by key or
	// through a "group:" name (as ApproveAs), and the entry names By.
	Approver string
	By       *Principal
	Amount   kernel.Cost // positive for a grant; 0 for a reset
	Reset    bool
	Reason   string // required: the log says why
}

// Grant records gr: a grant adds Amount to the caller's budget for the
// current period (the calendar period, or the rolling windows, holding
// the gate's now); a reset gives the caller its whole budget back,
// forgiving what it spent and was granted. The gatelog.KindBudget entry
// names who and why, and is applied to the caller's ledger as a
// restarted gate applies it, in order with the caller's decisions. It
// is refused with ErrNotAnApprover unless made as one of the policy's
// approvers, with ErrInvalidGrant without a reason, for an amount it
// cannot add or when the budget does not renew (no budget_period), and
// with ErrUnknownCall for a caller the gate has never seen.
func (g *Gate) Grant(ctx context.Context, gr BudgetGrant) error {
	if g.comp().period == nil {
		return fmt.Errorf("%w: the policy's budget does not renew; give it a budget_period", ErrInvalidGrant)
	}
	who, err := g.grantable(gr)
	if err != nil {
		return err
	}
	if !g.known(gr.Caller) {
		return fmt.Errorf("%w: caller %q has made no call: nothing to grant", ErrUnknownCall, gr.Caller)
	}
	cl, err := g.caller(ctx, gr.Caller)
	if err != nil {
		return err
	}
	defer g.release(cl)
	cl.turn.Lock() // ordered with the caller's decisions
	defer cl.turn.Unlock()
	at := trace.Normalize(g.clock())
	e := gatelog.Budget{Session: g.SessionID(gr.Caller), Caller: gr.Caller, Action: "grant", Amount: gr.Amount,
		Approver: who, Reason: OneLine(gr.Reason), Period: g.comp().period.describe(at)}
	if gr.Reset {
		e.Action = "reset"
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, err := g.log.Append(ctx, gatelog.KindBudget, b, trace.At(at)); err != nil {
		return fmt.Errorf("toolgate: recording the budget %s for %q: %w", e.Action, gr.Caller, err)
	}
	if cl.budget != nil {
		cl.budget.apply(e, at)
	}
	return nil
}

// grantable checks a grant and returns who makes it, as the log names
// them.
func (g *Gate) grantable(gr BudgetGrant) (string, error) {
	switch {
	case strings.TrimSpace(gr.Reason) == "":
		return "", fmt.Errorf("%w: a budget grant or reset needs a reason, recorded on the log", ErrInvalidGrant)
	case gr.Reset && gr.Amount != 0:
		return "", fmt.Errorf("%w: a reset gives the whole budget back and takes no amount (got %s)", ErrInvalidGrant, gr.Amount)
	case !gr.Reset && gr.Amount <= 0:
		return "", fmt.Errorf("%w: a grant adds a positive amount (got %s)", ErrInvalidGrant, gr.Amount)
	}
	var names []string
	for _, ns := range g.comp().cfg.Approvers {
		names = append(names, ns...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	if p := gr.By; p != nil {
		key := p.Key()
		for _, name := range names {
			if gr.Approver != "" && name != gr.Approver {
				continue
			}
			if key != "" && name == key {
				return key, nil
			}
			if group, ok := strings.CutPrefix(name, GroupPrefix); ok && key != "" && slices.Contains(p.Groups, group) {
				return key, nil
			}
		}
		return "", fmt.Errorf("%w: %q is none of the policy's approvers (%s)", ErrNotAnApprover, key, strings.Join(names, ", "))
	}
	if gr.Approver != "" && slices.Contains(names, gr.Approver) {
		return gr.Approver, nil
	}
	if gr.Approver == "" {
		return "", fmt.Errorf("%w: a budget grant or reset needs an approver (one of %s)", ErrNotAnApprover, strings.Join(names, ", "))
	}
	return "", fmt.Errorf("%w: %q is none of the policy's approvers (%s)", ErrNotAnApprover, gr.Approver, strings.Join(names, ", "))
}

// describe names the period holding at, for the log and a refusal:
// "month 2026-11 (Europe/Paris)", or "rolling 24h0m0s".
func (p *budgetPeriod) describe(at time.Time) string {
	if p.rolling() {
		return "rolling " + p.every.String()
	}
	return p.cal + " " + p.key(at) + " (" + p.loc.String() + ")"
}

// periodBudget returns the caller's budget in the current period, when
// it renews: what an Observer reports.
func (g *Gate) periodBudget(cl *caller) (kernel.Budget, bool) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.budget == nil {
		return kernel.Budget{}, false
	}
	st := cl.budget.status(trace.Normalize(g.clock()))
	return kernel.PeriodBudget(st.limit, st.spent), true
}
