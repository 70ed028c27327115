package toolgate_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// memLabels is a SharedLabels in memory (kernel/sqlbudget's Store is the
// real one): every label's end and last start by caller, conversation and
// label, and the last declassification of each caller's label.
type memLabels struct {
	mu     sync.Mutex
	ends   map[[3]string]time.Time // zero: for good
	starts map[[3]string]time.Time
	clears map[[2]string]toolgate.LabelClear
	fail   error // when set, every call fails with it
}

func (m *memLabels) Labels(_ context.Context, caller, conv string, at time.Time) ([]gatelog.SharedLabel, []toolgate.LabelClear, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return nil, nil, m.fail
	}
	best := map[string]time.Time{}
	for k, end := range m.ends {
		if k[0] != caller || k[1] != "" && k[1] != conv || !end.IsZero() && !at.Before(end) {
			continue
		}
		if b, ok := best[k[2]]; !ok || !b.IsZero() && (end.IsZero() || end.After(b)) {
			best[k[2]] = end
		}
	}
	var out []gatelog.SharedLabel
	for l, end := range best {
		out = append(out, gatelog.SharedLabel{Label: l, Until: end})
	}
	slices.SortFunc(out, func(a, b gatelog.SharedLabel) int { return strings.Compare(a.Label, b.Label) })
	var clears []toolgate.LabelClear
	for k, c := range m.clears {
		if k[0] == caller {
			clears = append(clears, c)
		}
	}
	return out, clears, nil
}

func (m *memLabels) Attach(_ context.Context, caller, conv string, labels []string, at time.Time, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	if m.ends == nil {
		m.ends, m.starts = map[[3]string]time.Time{}, map[[3]string]time.Time{}
	}
	for _, l := range labels {
		k := [3]string{caller, conv, l}
		if s, ok := m.starts[k]; !ok || at.After(s) {
			m.starts[k] = at
		}
		end, ok := m.ends[k]
		switch {
		case ttl == 0:
			m.ends[k] = time.Time{}
		case !ok || !end.IsZero() && at.Add(ttl).After(end):
			m.ends[k] = at.Add(ttl)
		}
	}
	return nil
}

func (m *memLabels) Clear(_ context.Context, caller string, c toolgate.LabelClear) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	for k := range m.ends {
		if k[0] == caller && k[2] == c.Label && !m.starts[k].After(c.At) {
			delete(m.ends, k)
			delete(m.starts, k)
		}
	}
	if m.clears == nil {
		m.clears = map[[2]string]toolgate.LabelClear{}
	}
	if old, ok := m.clears[[2]string{caller, c.Label}]; !ok || c.At.After(old.At) {
		m.clears[[2]string{caller, c.Label}] = c
	}
	return nil
}

// sharedFlowPolicy: fetch attaches "untrusted" (for ttl, 0: for good),
// send is refused after it.
func sharedFlowPolicy(t require.TestingT, ttl time.Duration) *toolgate.Compiled {
	cfg := toolgate.Policy{Budget: 1000 * kernel.Unit, MinCost: kernel.Unit / 100, ConversationLabels: true, Tools: []toolgate.Rule{
		{Name: "fetch", Match: "fetch", Cost: kernel.Unit / 100, Labels: []string{"untrusted"}, LabelTTL: ttl},
		{Name: "send", Match: "send", Cost: kernel.Unit / 100, Flow: []toolgate.FlowRule{{After: []string{"untrusted"}}}},
	}}
	comp, err := cfg.Compile()
	require.NoError(t, err)
	return comp
}

// TestSharedLabelsSeenByEveryGate is a rapid state machine: three gates,
// each with its own log, share one label store; random fetches, sends and
// declassifications of two callers, in and out of two conversations, land
// on random gates at times that move forward. A send is refused exactly
// when the naive model — every fetch allowed on any gate and not
// declassified since, its label carried for the rule's ttl from its
// recorded time, caller-wide or in its conversation — says the caller
// carries "untrusted" there and then; and each gate,
// restarted over its own log with an empty store, decides every probe as
// the live gates decide it (replay is faithful).
func TestSharedLabelsSeenByEveryGate(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ttl := rapid.SampledFrom([]time.Duration{0, 5 * time.Second, time.Minute}).Draw(rt, "ttl")
		comp := sharedFlowPolicy(rt, ttl)
		now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		store := &memLabels{}
		logs := make([]*trace.Log, 3)
		gates := make([]*toolgate.Gate, 3)
		for i := range gates {
			logs[i] = trace.NewMemoryLog()
			g, err := toolgate.New(ctx, logs[i], comp, toolgate.WithClock(clock), toolgate.WithSharedLabels(store))
			require.NoError(rt, err)
			gates[i] = g
		}
		type fetch struct {
			caller, conv string
			at           time.Time
		}
		var fetches []fetch
		carries := func(caller, conv string, at time.Time) bool {
			for _, f := range fetches {
				if f.caller == caller && (f.conv == "" || f.conv == conv) && (ttl == 0 || at.Before(f.at.Add(ttl))) {
					return true
				}
			}
			return false
		}
		callers, convs := []string{"alice", "bob"}, []string{"", "c1", "c2"}
		rt.Repeat(map[string]func(*rapid.T){
			"fetch": func(rt *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 4000).Draw(rt, "ms")) * time.Millisecond)
				g := rapid.IntRange(0, 2).Draw(rt, "gate")
				c := toolgate.Call{Tool: "fetch", Caller: rapid.SampledFrom(callers).Draw(rt, "caller"), Conversation: rapid.SampledFrom(convs).Draw(rt, "conv")}
				d, err := gates[g].Before(ctx, c)
				require.NoError(rt, err)
				require.Equal(rt, toolgate.Allow, d.Verdict, d.Explanation)
				_, err = gates[g].After(ctx, d.Call, toolgate.Result{})
				require.NoError(rt, err)
				fetches = append(fetches, fetch{c.Caller, c.Conversation, now})
			},
			"declassify": func(rt *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 4000).Draw(rt, "ms")) * time.Millisecond)
				g := rapid.IntRange(0, 2).Draw(rt, "gate")
				caller := rapid.SampledFrom(callers).Draw(rt, "caller")
				err := gates[g].Declassify(ctx, caller, "untrusted", toolgate.DefaultApprover, nil, "reviewed")
				if errors.Is(err, toolgate.ErrNotCarried) {
					return // the gate and the store's caller-wide labels do not carry it: nothing changes
				}
				require.NoError(rt, err)
				kept := fetches[:0]
				for _, f := range fetches {
					if f.caller != caller || f.at.After(now) {
						kept = append(kept, f)
					}
				}
				fetches = kept
			},
			"send": func(rt *rapid.T) {
				now = now.Add(time.Duration(rapid.IntRange(0, 4000).Draw(rt, "ms")) * time.Millisecond)
				g := rapid.IntRange(0, 2).Draw(rt, "gate")
				c := toolgate.Call{Tool: "send", Caller: rapid.SampledFrom(callers).Draw(rt, "caller"), Conversation: rapid.SampledFrom(convs).Draw(rt, "conv")}
				d, err := gates[g].Before(ctx, c)
				require.NoError(rt, err)
				want := carries(c.Caller, c.Conversation, now)
				if (d.Verdict == toolgate.Refuse) != want {
					rt.Fatalf("send of %s in %q on gate %d: %s (%s), the model says carried=%v", c.Caller, c.Conversation, g, d.Verdict, d.Explanation, want)
				}
				if d.Verdict == toolgate.Allow {
					_, err = gates[g].After(ctx, d.Call, toolgate.Result{})
					require.NoError(rt, err)
				}
			},
		})
		// Replay is faithful: with the store emptied, each gate decides
		// from its caller's life alone, and a gate started over a copy of
		// its log (with an empty store too) decides every probe as it does.
		store.mu.Lock()
		store.ends, store.starts, store.clears = nil, nil, nil
		store.mu.Unlock()
		for i, log := range logs {
			clone := trace.NewMemoryLog()
			for e, err := range log.Entries(ctx, 0) {
				require.NoError(rt, err)
				_, err = clone.Append(ctx, e.Kind, e.Payload, trace.At(e.Time))
				require.NoError(rt, err)
			}
			again, err := toolgate.New(ctx, clone, comp, toolgate.WithClock(clock), toolgate.WithSharedLabels(&memLabels{}))
			require.NoError(rt, err)
			for _, caller := range callers {
				for _, conv := range convs {
					live, err := gates[i].Before(ctx, toolgate.Call{Tool: "send", Caller: caller, Conversation: conv})
					require.NoError(rt, err)
					replayed, err := again.Before(ctx, toolgate.Call{Tool: "send", Caller: caller, Conversation: conv})
					require.NoError(rt, err)
					if live.Verdict != replayed.Verdict {
						rt.Fatalf("gate %d: send of %s in %q is %s live (%s), %s replayed (%s)", i, caller, conv,
							live.Verdict, live.Explanation, replayed.Verdict, replayed.Explanation)
					}
				}
			}
		}
	})
}

// TestSharedLabelsFailClosed: a store that cannot be read or written
// makes the call an error — nothing runs — and a read error refuses even
// a call no label would refuse.
func TestSharedLabelsFailClosed(t *testing.T) {
	comp := sharedFlowPolicy(t, 0)
	store := &memLabels{fail: errors.New("connection refused")}
	g, err := toolgate.New(ctx, trace.NewMemoryLog(), comp, toolgate.WithSharedLabels(store))
	require.NoError(t, err)
	for _, tool := range []string{"send", "fetch"} {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "alice"})
		require.Error(t, err, tool)
		assert.Contains(t, err.Error(), "connection refused")
		assert.NotEqual(t, toolgate.Allow, d.Verdict)
	}
	// Readable but not writable: the labelling call's execution is
	// recorded, and the error keeps its tool from running.
	store.fail = nil
	w := &writeFails{memLabels: store}
	g, err = toolgate.New(ctx, trace.NewMemoryLog(), comp, toolgate.WithSharedLabels(w))
	require.NoError(t, err)
	_, err = g.Before(ctx, toolgate.Call{Tool: "fetch", Caller: "alice"})
	require.ErrorContains(t, err, "sharing the flow labels")
	d, err := g.Before(ctx, toolgate.Call{Tool: "send", Caller: "alice"})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict, "the gate's own session carries the label it recorded")
}

type writeFails struct{ *memLabels }

func (w *writeFails) Attach(context.Context, string, string, []string, time.Time, time.Duration) error {
	return errors.New("read-only replica")
}

// TestSharedLabelsUnusedCostNothing: a policy that attaches, follows and
// reads no label never asks the store (it would fail every call here).
func TestSharedLabelsUnusedCostNothing(t *testing.T) {
	cfg := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{{Match: "read", Cost: kernel.Unit / 100}}}
	comp, err := cfg.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, trace.NewMemoryLog(), comp, toolgate.WithSharedLabels(&memLabels{fail: errors.New("never asked")}))
	require.NoError(t, err)
	d, err := g.Before(ctx, toolgate.Call{Tool: "read", Caller: "alice"})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict)
}
