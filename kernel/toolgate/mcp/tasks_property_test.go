package mcp_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/taskserver"
	"github.com/verity-go/verity/trace"
)

// TestTaskSpendIsTheSumOfSettledCosts: whatever tasks and plain calls
// several principals interleave — tasks completed at any cost up to their
// reservation, failed, cancelled with or without a reported cost, polled
// by strangers, across restarts of the proxy — each principal's spend is
// at every step the sum of its settled costs plus the reservations of
// its open tasks, never above its budget, and the log's results sum to
// the settled costs. A naive model (per principal: the settled sum and
// the open tasks) predicts every decision.
func TestTaskSpendIsTheSumOfSettledCosts(t *testing.T) {
	const reserve = 5 * kernel.Unit
	budget := 12 * kernel.Unit
	principals := []string{"alice", "bob", "carol"}
	rapid.Check(t, func(rt *rapid.T) {
		log, ts := trace.NewMemoryLog(), taskserver.New(0)
		r := newTaskRig(rt, log, ts, taskPolicy(budget))
		agents := map[string]*agent{}
		agentOf := func(p string, tasks bool) *agent {
			k := p
			if !tasks {
				k += "/sync"
			}
			if agents[k] == nil {
				agents[k] = r.agent(rt, p, tasks)
			}
			return agents[k]
		}
		settled := map[string]kernel.Cost{}
		open := map[string]map[string]bool{} // principal → its open task ids
		owner := map[string]string{}         // task id → principal
		for _, p := range principals {
			open[p] = map[string]bool{}
		}
		pickOpen := func(rt *rapid.T) (string, string) {
			var ids []string
			for _, p := range principals {
				ids = append(ids, slices.Sorted(maps.Keys(open[p]))...)
			}
			if len(ids) == 0 {
				rt.Skip("no open task")
			}
			id := rapid.SampledFrom(ids).Draw(rt, "task")
			return id, owner[id]
		}
		end := func(p, id string, cost kernel.Cost) {
			delete(open[p], id)
			settled[p] += cost
		}
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				p := rapid.SampledFrom(principals).Draw(rt, "principal")
				tasks := rapid.Bool().Draw(rt, "tasks")
				id, res := agentOf(p, tasks).call(rt, 1)
				fits := settled[p]+reserve*kernel.Cost(len(open[p]))+reserve <= budget
				switch {
				case !fits:
					require.True(rt, res.IsError, "over the budget: refused")
					require.Empty(rt, id)
				case tasks:
					require.NotEmpty(rt, id, text(res))
					open[p][id], owner[id] = true, p
				default:
					require.Empty(rt, id)
					require.False(rt, res.IsError, text(res))
					settled[p] += reserve // unmeasured: its reservation
				}
			},
			"complete": func(rt *rapid.T) {
				id, p := pickOpen(rt)
				cost := rapid.Int64Range(0, 5).Draw(rt, "cost")
				require.NoError(rt, ts.Complete(id, "ok", cost))
				require.Equal(rt, "completed", agentOf(p, true).get(rt, id)["status"])
				end(p, id, kernel.Cost(cost)*kernel.Unit)
			},
			"fail": func(rt *rapid.T) {
				id, p := pickOpen(rt)
				require.NoError(rt, ts.Fail(id, "broken"))
				require.Equal(rt, "failed", agentOf(p, true).get(rt, id)["status"])
				end(p, id, reserve)
			},
			"cancel": func(rt *rapid.T) {
				id, p := pickOpen(rt)
				report := rapid.Int64Range(-1, 5).Draw(rt, "reported")
				ts.SetCancelCost(report)
				_, err := agentOf(p, true).task(gatemcp.MethodCancelTask, id, nil)
				require.NoError(rt, err)
				if report < 0 {
					end(p, id, reserve)
				} else {
					end(p, id, kernel.Cost(report)*kernel.Unit)
				}
			},
			"stranger polls": func(rt *rapid.T) {
				id, p := pickOpen(rt)
				other := rapid.SampledFrom(slices.DeleteFunc(slices.Clone(principals), func(s string) bool { return s == p })).Draw(rt, "stranger")
				_, err := agentOf(other, true).task(gatemcp.MethodGetTask, id, nil)
				requireTaskError(rt, err, "Failed to retrieve task: Task not found")
			},
			"restart": func(rt *rapid.T) {
				r = newTaskRig(rt, log, ts, taskPolicy(budget))
				clear(agents)
				n := 0
				for _, p := range principals {
					n += len(open[p])
				}
				require.Equal(rt, n, r.resumed, "every open task is taken up again")
			},
			"": func(rt *rapid.T) {
				_, results := taskResults(rt, log)
				charged := map[string]kernel.Cost{}
				for _, res := range results {
					charged[res.Caller] += res.Charged
				}
				for _, p := range principals {
					var s kernel.Cost
					if m, ok := r.gate.Meter("caller:" + p); ok {
						s = m.Budget().Net()
					}
					require.Equal(rt, settled[p]+reserve*kernel.Cost(len(open[p])), s, "%s: settled plus open reservations", p)
					require.LessOrEqual(rt, s, budget, "%s: never above the budget", p)
					require.Equal(rt, settled[p], charged["caller:"+p], "%s: the log's results sum to the settled costs", p)
				}
			},
		})
	})
}
