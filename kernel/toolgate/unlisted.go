package toolgate

import (
	"context"
	"fmt"
	"time"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// conditionNoSuchTool is the Condition (and the gatelog.KindRefuse
// entry's condition) of a call RefuseNoSuchTool refused.
const conditionNoSuchTool = "no_such_tool"

// RefuseNoSuchTool records that the host refused c without deciding it
// because the server it guards has no tool by that name (a proxy that
// knows its upstream's list): a gatelog.KindRefuse entry, reason
// "unknown_tool" and condition "no_such_tool", so that the log
// holds every call an agent made, the ones that never reached the gate's
// rules too. Nothing is charged and no caller's state changes; the
// Observer sees the decision as Before's.
func (g *Gate) RefuseNoSuchTool(ctx context.Context, c Call) (Decision, error) {
	start := time.Now()
	if c.ID == "" {
		c.ID = g.newID()
	}
	if c.Caller == "" {
		c.Caller = c.Principal.Key()
	}
	d := Decision{Call: c, Condition: conditionNoSuchTool}
	d, err := g.refuse(ctx, d, gatelog.ConditionUnknownTool, fmt.Sprintf("tool %q refused: the server has no such tool", c.Tool), "", trace.Normalize(g.clock()))
	g.observeDecision(ctx, d.Call, d, err, start)
	return d, err
}
