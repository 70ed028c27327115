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
	if g.comp.period != nil {
		return SessionPrefix + key + renewingSuffix
	}
	return SessionPrefix + key
}

// lifeSession returns the session a kernel session's entries apply to:
// the caller's SessionID.
func (g *Gate) lifeSession(s string) string {
	if g.comp.period != nil {
		return strings.TrimSuffix(s, renewingSuffix)
	}
	return s
}

// newLife returns an empty life, with a ledger when the budget renews.
func (g *Gate) newLife() life {
	l := newLife()
	if p := g.comp.period; p != nil {
		l.budget = newLedger(p, g.comp.cfg.Budget, g.comp.cfg.MinCost)
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

// Grant records that approver adds amount to caller's budget for the
// current period (reset false), or gives caller its whole budget back,
// forgiving what it spent and was granted (reset true, amount 0), for
// reason: a gatelog.KindBudget entry naming who and why, applied to the
// caller's ledger as a restarted gate applies it. It is refused
// (ErrNotAnApprover) unless approver is one of the policy's approvers
// (by key, or through a "group:" name), and with ErrInvalidGrant without
// a reason, for an amount it cannot add or a budget that does not renew; a caller the gate has never seen has
// nothing to grant to (ErrUnknownCall).
func (g *Gate) Grant(ctx context.Context, caller string, approver Principal, amount kernel.Cost, reset bool, reason string) error {
	if g.comp.period == nil {
		return fmt.Errorf("%w: the policy's budget does not renew; give it a budget_period", ErrInvalidGrant)
	}
	if err := g.grantable(approver, amount, reset, reason); err != nil {
		return err
	}
	if !g.known(caller) {
		return fmt.Errorf("%w: caller %q has made no call: nothing to grant", ErrUnknownCall, caller)
	}
	cl, err := g.caller(ctx, caller)
	if err != nil {
		return err
	}
	defer g.release(cl)
	cl.turn.Lock() // ordered with the caller's decisions
	defer cl.turn.Unlock()
	at := trace.Normalize(g.clock())
	e := gatelog.Budget{Session: g.SessionID(caller), Caller: caller, Action: "grant", Amount: amount,
		Approver: approver.Key(), Reason: OneLine(reason), Period: g.comp.period.describe(at)}
	if reset {
		e.Action, e.Amount = "reset", 0
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if _, err := g.log.Append(ctx, gatelog.KindBudget, b, trace.At(at)); err != nil {
		return fmt.Errorf("toolgate: recording the budget %s for %q: %w", e.Action, caller, err)
	}
	if cl.budget != nil {
		cl.budget.apply(e, at)
	}
	return nil
}

// grantable checks a Grant's approver and amount.
func (g *Gate) grantable(p Principal, amount kernel.Cost, reset bool, reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return fmt.Errorf("%w: a budget grant or reset needs a reason, recorded on the log", ErrInvalidGrant)
	case reset && amount != 0:
		return fmt.Errorf("%w: a reset gives the whole budget back and takes no amount (got %s)", ErrInvalidGrant, amount)
	case !reset && amount <= 0:
		return fmt.Errorf("%w: a grant adds a positive amount (got %s)", ErrInvalidGrant, amount)
	}
	key := p.Key()
	var names []string
	for _, ns := range g.comp.cfg.Approvers {
		names = append(names, ns...)
	}
	slices.Sort(names)
	for _, name := range names {
		if key != "" && name == key {
			return nil
		}
		if group, ok := strings.CutPrefix(name, GroupPrefix); ok && slices.Contains(p.Groups, group) {
			return nil
		}
	}
	if key == "" {
		return fmt.Errorf("%w: a budget grant or reset needs an approver (one of %s)", ErrNotAnApprover, strings.Join(slices.Compact(names), ", "))
	}
	return fmt.Errorf("%w: %q is not one of the policy's approvers (%s)", ErrNotAnApprover, key, strings.Join(slices.Compact(names), ", "))
}

// describe names the period holding at, for the log and a refusal:
// "month 2026-11 (Europe/Paris)", or "rolling 24h0m0s".
func (p *budgetPeriod) describe(at time.Time) string {
	if p.rolling() {
		return "rolling " + p.every.String()
	}
	return p.cal + " " + p.key(at) + " (" + p.loc.String() + ")"
}
