package toolgate

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// ErrReload: Reload was given a policy the running gate cannot take
// without a restart; the policy in force stays.
var ErrReload = errors.New("toolgate: the new policy needs a restart")

// comp is the compiled policy in force.
func (g *Gate) comp() *Compiled { return g.policy.Load() }

// Reload puts next (Policy.Compile) in force for every decision made
// after it returns, in place of the policy the gate was made or last
// reloaded with, without a restart. What an operator can count on:
//
//   - Nothing recorded is forgotten. Each caller's spend, counters,
//     labels, rate windows, open calls and requests stay as they are;
//     a call allowed before Reload is settled (After) by the rule it was
//     decided under when that rule is still there by name, otherwise as
//     a rule without cost_from or timeout is.
//   - Budget limits do not change. The budget, min_cost, budget_period,
//     shared_budget, the invariants and the approvers are what the
//     callers' kernel sessions, the shared budget's rows and the
//     approvals' claims session were built from: a next that changes any
//     of them is refused with ErrReload, naming each, and the policy in
//     force stays (restart the gate over its log to change them: the log
//     keeps every caller's spend). Go invariants are compared by name.
//   - Rate windows are keyed by rule name (an unnamed rule's by its
//     position, "#2": name the rules whose windows must carry over). A
//     rule kept under its name keeps its window's recorded calls,
//     counted against the new rate: a lower limit refuses until the
//     window holds fewer, and a longer per counts only the calls the old
//     one still held. A new name starts an empty window; a removed
//     rule's window is no longer read.
//   - Requests waiting for a human stay waiting, with the question they
//     were asked, and expire by the new approval_ttl. An approval given,
//     to a request made before or after Reload, is bound to its exact
//     call as always; the call, made again, is decided by the new
//     policy: approved under a rule that the new policy no longer lets
//     it reach (refused, or another tier), it runs only if the new
//     policy allows it.
//
// A nil next is an error wrapping ErrInvalidConfig. Reload is safe to
// call while calls are decided: each decision's ruling (Compiled.Decide)
// is made by one policy or the other, never a mix of their rules.
func (g *Gate) Reload(next *Compiled) error {
	if next == nil {
		return fmt.Errorf("%w: no compiled policy (Policy.Compile)", ErrInvalidConfig)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	cur := g.comp()
	if why := restartOnly(&cur.cfg, &next.cfg); len(why) > 0 {
		return fmt.Errorf("%w: it changes %s", ErrReload, strings.Join(why, ", "))
	}
	g.policy.Store(next)
	g.labelsOn.Store(g.labels != nil && next.usesLabels())
	return nil
}

// restartOnly names the members that differ between a and b among those
// a running gate was built from.
func restartOnly(a, b *Policy) []string {
	var why []string
	diff := func(name string, x, y any) {
		if !reflect.DeepEqual(x, y) {
			why = append(why, name)
		}
	}
	diff("budget", a.Budget, b.Budget)
	diff("min_cost", a.MinCost, b.MinCost)
	diff("budget_period", a.BudgetPeriod, b.BudgetPeriod)
	diff("shared_budget", a.Shared, b.Shared)
	diff("invariants", a.Invariants, b.Invariants)
	diff("approvers", a.Approvers, b.Approvers)
	names := func(p *Policy) []string {
		var out []string
		for _, inv := range p.GoInvariants {
			out = append(out, inv.Name)
		}
		return out
	}
	diff("Go invariants", names(a), names(b))
	return why
}
