package toolgate_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// reloadPolicy prices search at cost, under a rule named "search" with
// a window of limit calls an hour.
func reloadPolicy(cost kernel.Cost, limit int) toolgate.Policy {
	return toolgate.Policy{
		Budget:  units(10),
		MinCost: kernel.Unit / 100,
		Tools: []toolgate.Rule{
			{Name: "search", Match: "search", Cost: cost, Rate: &toolgate.Rate{Calls: limit, Per: time.Hour}},
			{Match: "read_*", Cost: kernel.Unit / 10},
		},
	}
}

// reloadT is what the reload tests need of a *testing.T or *rapid.T.
type reloadT interface {
	require.TestingT
	Helper()
}

// runOnce decides c and, when allowed, reports it ran.
func runOnce(t reloadT, g *toolgate.Gate, c toolgate.Call) toolgate.Decision {
	t.Helper()
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	if d.Verdict == toolgate.Allow {
		_, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte("ok")})
		require.NoError(t, err)
	}
	return d
}

func spent(t reloadT, g *toolgate.Gate, caller string) kernel.Cost {
	m, ok := g.Meter(caller)
	require.True(t, ok)
	return m.Budget().Net()
}

// TestReloadKeepsSpendAndTakesTheNewRules: spend recorded before a
// reload stays, and the next call is priced and admitted by the new
// policy.
func TestReloadKeepsSpendAndTakesTheNewRules(t *testing.T) {
	g := newGate(t, trace.NewMemoryLog(), reloadPolicy(units(1), 10))
	c := toolgate.Call{Tool: "search", Arguments: []byte(`{}`), Caller: "a"}
	for range 3 {
		require.Equal(t, toolgate.Allow, runOnce(t, g, c).Verdict)
	}
	assert.Equal(t, units(3), spent(t, g, "a"))
	require.NoError(t, g.Reload(mustCompile(reloadPolicy(units(2), 10))))
	require.Equal(t, toolgate.Allow, runOnce(t, g, c).Verdict)
	assert.Equal(t, units(5), spent(t, g, "a"), "the old spend and the new price")
	assert.Equal(t, units(2), g.Compiled().Policy().Tools[0].Cost)
}

// TestReloadRefusesWhatNeedsARestart: a new budget, min_cost or
// approvers are refused, naming each, and the policy in force stays.
func TestReloadRefusesWhatNeedsARestart(t *testing.T) {
	g := newGate(t, trace.NewMemoryLog(), reloadPolicy(units(1), 10))
	next := reloadPolicy(units(2), 10)
	next.Budget = units(20)
	next.MinCost = kernel.Unit / 10
	err := g.Reload(mustCompile(next))
	require.ErrorIs(t, err, toolgate.ErrReload)
	assert.Equal(t, "toolgate: the new policy needs a restart: it changes budget, min_cost", err.Error())
	assert.Equal(t, units(1), g.Compiled().Policy().Tools[0].Cost, "the old policy stays")
	assert.True(t, errors.Is(g.Reload(nil), toolgate.ErrInvalidConfig))
}

// TestReloadKeepsWindowsByRuleName: a window's recorded calls count
// against the reloaded rule of the same name, at its new limit.
func TestReloadKeepsWindowsByRuleName(t *testing.T) {
	g := newGate(t, trace.NewMemoryLog(), reloadPolicy(units(1), 2))
	c := toolgate.Call{Tool: "search", Arguments: []byte(`{}`), Caller: "a"}
	runOnce(t, g, c)
	runOnce(t, g, c)
	require.Equal(t, toolgate.Refuse, runOnce(t, g, c).Verdict, "two an hour")
	require.NoError(t, g.Reload(mustCompile(reloadPolicy(units(1), 3))))
	require.Equal(t, toolgate.Allow, runOnce(t, g, c).Verdict, "three an hour, two recorded")
	require.Equal(t, toolgate.Refuse, runOnce(t, g, c).Verdict)
	require.NoError(t, g.Reload(mustCompile(reloadPolicy(units(1), 1))))
	require.Equal(t, toolgate.Refuse, runOnce(t, g, c).Verdict, "one an hour, three recorded")
	assert.Equal(t, units(3), spent(t, g, "a"))
}

// TestReloadNeverForgetsSpend: over calls of several callers and reloads
// between prices, each caller's spend is the sum of the prices in force
// when its allowed calls were decided, never above the budget; and the
// log replays to the same spend.
func TestReloadNeverForgetsSpend(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		log := trace.NewMemoryLog()
		g, err := toolgate.New(ctx, log, mustCompile(reloadPolicy(units(1), 1000)))
		require.NoError(rt, err)
		price := units(1)
		want := map[string]kernel.Cost{}
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				caller := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(rt, "caller")
				d := runOnce(rt, g, toolgate.Call{Tool: "search", Arguments: []byte(`{}`), Caller: caller})
				if want[caller]+price <= units(10) {
					require.Equal(rt, toolgate.Allow, d.Verdict, d.Explanation)
					want[caller] += price
				} else {
					require.Equal(rt, toolgate.Refuse, d.Verdict)
				}
			},
			"reload": func(rt *rapid.T) {
				price = kernel.Unit / 100 * kernel.Cost(rapid.IntRange(1, 400).Draw(rt, "price"))
				require.NoError(rt, g.Reload(mustCompile(reloadPolicy(price, 1000))))
			},
			"": func(rt *rapid.T) {
				for caller, w := range want {
					require.Equal(rt, w, spent(rt, g, caller), caller)
				}
			},
		})
		g2, err := toolgate.New(ctx, log, mustCompile(reloadPolicy(units(1), 1000)))
		require.NoError(rt, err)
		for caller, w := range want {
			require.Equal(rt, w, spent(rt, g2, caller), "replayed %s", caller)
		}
	})
}

// TestReloadWhileDeciding: reloads racing calls (run with -race) never
// lose a charge.
func TestReloadWhileDeciding(t *testing.T) {
	g := newGate(t, trace.NewMemoryLog(), reloadPolicy(kernel.Unit/100, 100000))
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				runOnce(t, g, toolgate.Call{Tool: "search", Arguments: []byte(`{}`), Caller: string(rune('a' + i))})
			}
		}()
	}
	for i := range 50 {
		require.NoError(t, g.Reload(mustCompile(reloadPolicy(kernel.Unit/100, 100000+i))))
	}
	wg.Wait()
	for i := range 4 {
		assert.Equal(t, kernel.Unit/100*50, spent(t, g, string(rune('a'+i))))
	}
}
