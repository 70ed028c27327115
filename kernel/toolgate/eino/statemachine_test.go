package eino_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/eino"
)

// TestApprovalRunsOncePerGrant is a state machine over a compose graph
// whose ToolsNode is gated: messages of parallel reads and DELETE-tier
// deletes are run, interrupted, answered one approval at a time and
// resumed (or resumed with no answer), in any order across checkpoints.
// Against a naive model: every read runs once; a delete runs exactly once
// when approved and never when denied or unanswered; a checkpoint waits
// for exactly its unanswered deletes; each finished message answers
// every call as the model says; the log verifies and replays.
func TestApprovalRunsOncePerGrant(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		g, log := newGate(rt, catalogue(1000*kernel.Unit))
		del, read := &fakeTool{name: "delete_file"}, &fakeTool{name: "read_file"}
		run := toolsGraph(rt, newToolsNode(rt, g, nil, read, del))
		ctx := context.Background()

		type checkpoint struct {
			msg     *schema.Message
			want    map[string]string // call id → the tool message once it finishes
			waiting map[string]string // call id → interrupt id, unanswered deletes
		}
		open := map[string]*checkpoint{}
		var reads, approved int64
		serial := 0

		// settle records how a run of checkpoint id ended.
		settle := func(rt *rapid.T, id string, c *checkpoint, out []*schema.Message, err error) {
			if err != nil {
				info, ok := compose.ExtractInterruptInfo(err)
				if !ok {
					rt.Fatalf("%s: %v", id, err)
				}
				got := map[string]string{}
				for _, p := range eino.PendingApprovals(info.InterruptContexts) {
					got[p.CallID] = p.InterruptID
				}
				if !slices.Equal(sortedKeys(got), sortedKeys(c.waiting)) {
					rt.Fatalf("%s waits for %v, want %v", id, sortedKeys(got), sortedKeys(c.waiting))
				}
				c.waiting = got
				open[id] = c
				return
			}
			if len(c.waiting) != 0 {
				rt.Fatalf("%s finished with %v unanswered", id, sortedKeys(c.waiting))
			}
			delete(open, id)
			for i, m := range out {
				callID := c.msg.ToolCalls[i].ID
				if want := c.want[callID]; !strings.Contains(m.Content, want) || want == "" {
					rt.Fatalf("%s: call %s answered %q, want %q", id, callID, m.Content, want)
				}
			}
		}

		rt.Repeat(map[string]func(*rapid.T){
			"propose": func(rt *rapid.T) {
				id := fmt.Sprintf("cp%d", serial)
				c := &checkpoint{want: map[string]string{}, waiting: map[string]string{}}
				var cs []schema.ToolCall
				for i := range rapid.IntRange(1, 4).Draw(rt, "calls") {
					callID := fmt.Sprintf("%s-%d", id, i)
					args := fmt.Sprintf(`{"path":"/tmp/%s"}`, callID) // unique: one request per call
					if rapid.Bool().Draw(rt, "delete") {
						cs = append(cs, call(callID, "delete_file", args))
						c.waiting[callID] = ""
					} else {
						cs = append(cs, call(callID, "read_file", args))
						c.want[callID] = "read_file done: " + args
						reads++
					}
				}
				serial++
				c.msg = calls(cs...)
				out, err := run.Invoke(ctx, c.msg, compose.WithCheckPointID(id))
				settle(rt, id, c, out, err)
			},
			"answer": func(rt *rapid.T) {
				if len(open) == 0 {
					rt.Skip("nothing waits")
				}
				id := rapid.SampledFrom(sortedKeys(open)).Draw(rt, "checkpoint")
				c := open[id]
				callID := rapid.SampledFrom(sortedKeys(c.waiting)).Draw(rt, "call")
				yes := rapid.Bool().Draw(rt, "approve")
				args := c.msg.ToolCalls[slices.IndexFunc(c.msg.ToolCalls, func(tc schema.ToolCall) bool { return tc.ID == callID })].Function.Arguments
				if yes {
					approved++
					c.want[callID] = "delete_file done: " + args
				} else {
					c.want[callID] = "denied by human: not " + callID
				}
				interruptID := c.waiting[callID]
				delete(c.waiting, callID)
				out, err := run.Invoke(compose.ResumeWithData(ctx, interruptID, eino.Answer{Approved: yes, Reason: "not " + callID}),
					c.msg, compose.WithCheckPointID(id))
				settle(rt, id, c, out, err)
			},
			"resume unanswered": func(rt *rapid.T) {
				if len(open) == 0 {
					rt.Skip("nothing waits")
				}
				id := rapid.SampledFrom(sortedKeys(open)).Draw(rt, "checkpoint")
				out, err := run.Invoke(ctx, open[id].msg, compose.WithCheckPointID(id))
				settle(rt, id, open[id], out, err)
			},
			"": func(rt *rapid.T) {
				if got := read.runs.Load(); got != reads {
					rt.Fatalf("reads ran %d times, want %d", got, reads)
				}
				if got := del.runs.Load(); got != approved {
					rt.Fatalf("deletes ran %d times, %d approved", got, approved)
				}
				waiting := 0
				for _, c := range open {
					waiting += len(c.waiting)
				}
				if got := len(g.Pending()); got != waiting {
					rt.Fatalf("the gate has %d pending requests, %d calls wait", got, waiting)
				}
			},
		})
		if serial > 0 {
			checkLog(rt, log, g, "")
		}
	})
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
