package toolgate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// This file keeps a call open across restarts while it runs as a task
// of its server (the MCP Tasks extension, kernel/toolgate/mcp): the
// server answered the call with a task handle, and the call's cost is
// known only when the task ends, perhaps hours and restarts later.
//
// The call was allowed by Before as any other: its execution (a
// reservation under a rule with Reserve, else its fixed cost) is on the
// log and charged. RecordTask adds a gatelog.KindTask entry naming the
// call, its execution, its rule and the task; After settles it when the
// task ends, as it settles any call, and its result entry closes it. A
// gate restarted over the log replays the caller's kernel session (its
// open reservations with it) but opens no call (lifecycle.go);
// OpenTasks reads the task entries without a result and opens their
// calls again, so that the same After settles them.

// RecordTask records that the open call c — allowed by Before, not yet
// ended by After — continues as task taskID of its server, owned by the
// principal whose key is owner and discardable by its server after
// expires (zero: never). It returns the entry's sequence number; a call
// that is not open is ErrUnknownCall and records nothing.
func (g *Gate) RecordTask(ctx context.Context, c Call, taskID, owner string, expires time.Time) (uint64, error) {
	if taskID == "" {
		return 0, fmt.Errorf("toolgate: recording a task of %q: empty task id", c.Tool)
	}
	cl := g.acquire(c.Caller)
	if cl == nil {
		return 0, fmt.Errorf("%w: %q", ErrUnknownCall, c.ID)
	}
	defer g.release(cl)
	<-cl.ready
	cl.mu.Lock()
	oc, ok := cl.open[c.ID]
	cl.mu.Unlock()
	if !ok || oc.execID == "" || oc.rule == nil {
		return 0, fmt.Errorf("%w: %q", ErrUnknownCall, c.ID)
	}
	e := gatelog.Task{Session: g.SessionID(c.Caller), Caller: c.Caller, CallID: c.ID, ExecID: oc.execID, Tool: oc.tool,
		Rule: oc.rule.id, Reserved: oc.reserved, Cost: oc.cost, TaskID: taskID, Owner: owner}
	if !expires.IsZero() {
		at := expires.UTC()
		e.Expires = &at
	}
	b, err := canon.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("toolgate: recording task %q: %w", taskID, err)
	}
	entry, err := g.log.Append(ctx, gatelog.KindTask, b, trace.At(g.clock()))
	if err != nil {
		return 0, fmt.Errorf("toolgate: recording task %q: %w", taskID, err)
	}
	return entry.Seq, nil
}

// OpenTasks returns the tasks on the log whose calls have not ended (a
// gatelog.KindTask entry and no gatelog.KindResult for the same caller
// and call), oldest first, and makes each call open again where it is
// not — after a restart, or once its caller was let go — so that After
// settles it: at Result.Actual when measured, else at its reservation,
// exactly as had the gate never stopped — except that a fixed-cost call
// (a rule without Reserve) opened again after a restart ends at its cost:
// its charge can no longer be refunded (neither under RefundOnError nor
// for a measured cost below it). A task whose rule the policy no
// longer has, or whose reservation the caller's kernel session no longer
// holds, is an error naming it; the others are opened all the same.
func (g *Gate) OpenTasks(ctx context.Context) ([]gatelog.Task, error) {
	type key struct{ caller, call string }
	var order []key
	open := map[key]gatelog.Task{}
	for e, err := range g.log.Entries(ctx, 0) {
		if err != nil {
			return nil, err
		}
		switch e.Kind {
		case gatelog.KindTask:
			d, err := gatelog.Decode(e)
			if err != nil {
				return nil, fmt.Errorf("toolgate: entry %d: %w", e.Seq, err)
			}
			t := d.(gatelog.Task)
			k := key{t.Caller, t.CallID}
			if _, seen := open[k]; !seen {
				order = append(order, k)
			}
			open[k] = t
		case gatelog.KindResult:
			var r struct {
				Caller string `json:"caller"`
				CallID string `json:"call_id"`
			}
			if err := json.Unmarshal(e.Payload, &r); err != nil {
				return nil, fmt.Errorf("toolgate: entry %d: %w", e.Seq, err)
			}
			delete(open, key{r.Caller, r.CallID})
		}
	}
	var out []gatelog.Task
	var errs []error
	for _, k := range order {
		t, ok := open[k]
		if !ok {
			continue
		}
		if err := g.reopenTask(ctx, t); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("toolgate: %d tasks not reopened: %w", len(errs), errs[0])
	}
	return out, nil
}

// reopenTask opens t's call again in its caller's life unless it is
// open already.
func (g *Gate) reopenTask(ctx context.Context, t gatelog.Task) error {
	r := g.comp().ruleByID(t.Rule)
	if r == nil {
		return fmt.Errorf("task %q of call %q: the policy has no rule %q any more", t.TaskID, t.CallID, t.Rule)
	}
	cl, err := g.caller(ctx, t.Caller)
	if err != nil {
		return fmt.Errorf("task %q of call %q: %w", t.TaskID, t.CallID, err)
	}
	defer g.release(cl)
	if t.Reserved {
		held := false
		for _, res := range cl.sess.Meter().Reservations() {
			held = held || res.ExecID == t.ExecID
		}
		if !held {
			return fmt.Errorf("task %q of call %q: execution %q is not an open reservation of its caller", t.TaskID, t.CallID, t.ExecID)
		}
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if oc, ok := cl.open[t.CallID]; ok && oc.execID != "" {
		return nil
	}
	if !t.Reserved && r.RefundOnError {
		// A fixed-cost call's charge is beyond its replayed session's
		// horizon (WithHorizon(0)): it can no longer be refunded, so it
		// ends at its cost rather than stay open on a refund that fails.
		rc := *r
		rc.RefundOnError = false
		r = &rc
	}
	cl.open[t.CallID] = openCall{execID: t.ExecID, tool: t.Tool, rule: r, cost: t.Cost, reserved: t.Reserved}
	return nil
}

// ruleByID is the compiled rule whose id (its name, or "#" and its
// index; defaultRuleID for the default rule) is id, nil for none.
func (c *Compiled) ruleByID(id string) *compiledRule {
	if id == defaultRuleID {
		return c.def
	}
	for i := range c.rules {
		if c.rules[i].id == id {
			return &c.rules[i]
		}
	}
	return nil
}
