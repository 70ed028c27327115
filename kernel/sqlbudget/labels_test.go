// The shared flow labels' guarantees, each on PostgreSQL (when
// VERITY_PG_DSN is set) and on a SQLite file:
//
//   - Labels, Attach and Clear behave as the naive reference (refLabels
//     below) under random callers, conversations, labels, ttls,
//     declassifications and times (also out of order), through two
//     connection pools on one database: TestSharedLabelsMatchReference
//     (rapid state machine).
//   - Ends are exclusive, the later end wins, for good wins over any end,
//     conversations are apart, invalid input is refused and records
//     nothing: TestSharedLabelRules; pruning: TestPruneLabels.
//   - A toxic flow whose first call is allowed by one gate and whose last
//     comes to another gate, each with its own log and pool, is refused;
//     the second gate records the labels it relied on, so that a gate
//     restarted over its log alone decides as it did; a label's ttl and
//     a conversation's labels hold across gates; a declassification on
//     one gate clears the label on every gate, one that carried it too,
//     and a label attached after it stays: TestGatesShareSQLLabels.

package sqlbudget_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

var _ toolgate.SharedLabels = (*sqlbudget.Store)(nil)

// refLabels is the naive reference: every attached label's end and
// last start by caller, conversation and label (the zero end: for good),
// and each caller's label's last declassification.
type refLabels struct {
	mu     sync.Mutex
	ends   map[[3]string]time.Time
	starts map[[3]string]time.Time
	clears map[[2]string]toolgate.LabelClear
}

func (r *refLabels) attach(caller, conv string, labels []string, at time.Time, ttl time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ends == nil {
		r.ends, r.starts = map[[3]string]time.Time{}, map[[3]string]time.Time{}
	}
	for _, l := range labels {
		k := [3]string{caller, conv, l}
		if s, ok := r.starts[k]; !ok || at.After(s) {
			r.starts[k] = at
		}
		end, ok := r.ends[k]
		switch {
		case ttl == 0:
			r.ends[k] = time.Time{}
		case !ok:
			r.ends[k] = at.Add(ttl)
		case end.IsZero():
		case at.Add(ttl).After(end):
			r.ends[k] = at.Add(ttl)
		}
	}
}

func (r *refLabels) cleared(caller string) []toolgate.LabelClear {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []toolgate.LabelClear
	for k, c := range r.clears {
		if k[0] == caller {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b toolgate.LabelClear) int { return strings.Compare(a.Label, b.Label) })
	return out
}

func (r *refLabels) labels(caller, conv string, at time.Time) []gatelog.SharedLabel {
	r.mu.Lock()
	defer r.mu.Unlock()
	best := map[string]time.Time{}
	for k, end := range r.ends {
		if k[0] != caller || k[1] != "" && k[1] != conv || !end.IsZero() && !at.Before(end) {
			continue
		}
		if b, ok := best[k[2]]; !ok || !b.IsZero() && (end.IsZero() || end.After(b)) {
			best[k[2]] = end
		}
	}
	var out []gatelog.SharedLabel
	for _, l := range slices.Sorted(mapsKeys(best)) {
		out = append(out, gatelog.SharedLabel{Label: l, Until: best[l]})
	}
	return out
}

func (r *refLabels) clear(caller string, c toolgate.LabelClear) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.ends {
		if k[0] == caller && k[2] == c.Label && !r.starts[k].After(c.At) {
			delete(r.ends, k)
			delete(r.starts, k)
		}
	}
	if r.clears == nil {
		r.clears = map[[2]string]toolgate.LabelClear{}
	}
	if old, ok := r.clears[[2]string{caller, c.Label}]; !ok || c.At.After(old.At) {
		r.clears[[2]string{caller, c.Label}] = c
	}
}

// sameClears compares two declassification lists, times to the
// nanosecond.
func sameClears(a, b []toolgate.LabelClear) bool {
	return slices.EqualFunc(a, b, func(x, y toolgate.LabelClear) bool {
		return x.Label == y.Label && x.At.Equal(y.At) && x.Approver == y.Approver && x.Reason == y.Reason
	})
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// sameLabels compares two label lists, times to the nanosecond.
func sameLabels(a, b []gatelog.SharedLabel) bool {
	return slices.EqualFunc(a, b, func(x, y gatelog.SharedLabel) bool { return x.Label == y.Label && x.Until.Equal(y.Until) })
}

func TestSharedLabelsMatchReference(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		_, bs1 := budgets(t, b, dsn)
		_, bs2 := budgets(t, b, dsn)
		rapid.Check(t, func(rt *rapid.T) {
			run := uuid.NewString()
			ref := &refLabels{}
			callers := []string{run + "/alice", run + "/bob"}
			convs := []string{"", "c1", "c2"}
			names := []string{"untrusted", "secret", "pii"}
			ttls := []time.Duration{0, time.Second, 10 * time.Second, time.Minute}
			now := epoch
			pool := func(rt *rapid.T) *sqlbudget.Store {
				if rapid.Bool().Draw(rt, "second pool") {
					return bs2
				}
				return bs1
			}
			step := func(rt *rapid.T) {
				now = now.Add(time.Duration(rapid.Int64Range(-2000, 8000).Draw(rt, "step ms")) * time.Millisecond)
			}
			rt.Repeat(map[string]func(*rapid.T){
				"attach": func(rt *rapid.T) {
					step(rt)
					caller := rapid.SampledFrom(callers).Draw(rt, "caller")
					conv := rapid.SampledFrom(convs).Draw(rt, "conv")
					labels := rapid.SliceOfNDistinct(rapid.SampledFrom(names), 1, 3, rapid.ID[string]).Draw(rt, "labels")
					ttl := rapid.SampledFrom(ttls).Draw(rt, "ttl")
					if err := pool(rt).Attach(ctx, caller, conv, labels, now, ttl); err != nil {
						rt.Fatal(err)
					}
					ref.attach(caller, conv, labels, now, ttl)
				},
				"labels": func(rt *rapid.T) {
					step(rt)
					caller := rapid.SampledFrom(callers).Draw(rt, "caller")
					conv := rapid.SampledFrom(convs).Draw(rt, "conv")
					got, clears, err := pool(rt).Labels(ctx, caller, conv, now)
					if err != nil {
						rt.Fatal(err)
					}
					if want := ref.labels(caller, conv, now); !sameLabels(got, want) {
						rt.Fatalf("%s in %q at %s: %v, reference %v", caller, conv, now.Sub(epoch), got, want)
					}
					if want := ref.cleared(caller); !sameClears(clears, want) {
						rt.Fatalf("%s: declassifications %v, reference %v", caller, clears, want)
					}
				},
				"clear": func(rt *rapid.T) {
					step(rt)
					caller := rapid.SampledFrom(callers).Draw(rt, "caller")
					c := toolgate.LabelClear{Label: rapid.SampledFrom(names).Draw(rt, "label"), At: now,
						Approver: rapid.SampledFrom([]string{"sec", "ops"}).Draw(rt, "approver"), Reason: "reviewed"}
					if err := pool(rt).Clear(ctx, caller, c); err != nil {
						rt.Fatal(err)
					}
					ref.clear(caller, c)
				},
			})
		})
	})
}

func TestSharedLabelRules(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		read := func(caller, conv string, at time.Time) string {
			t.Helper()
			got, _, err := bs.Labels(ctx, caller, conv, at)
			require.NoError(t, err)
			var parts []string
			for _, l := range got {
				if l.Until.IsZero() {
					parts = append(parts, l.Label)
				} else {
					parts = append(parts, fmt.Sprintf("%s<%s", l.Label, l.Until.Sub(epoch)))
				}
			}
			return strings.Join(parts, ",")
		}
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"x"}, epoch, time.Minute))
		assert.Equal(t, "x<1m0s", read("a", "", epoch.Add(time.Minute-1)), "carried before its end")
		assert.Equal(t, "", read("a", "", epoch.Add(time.Minute)), "the end is exclusive")
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"x"}, epoch.Add(-time.Hour), time.Minute))
		assert.Equal(t, "x<1m0s", read("a", "", epoch), "an earlier end does not shorten a later one")
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"x"}, epoch, 0))
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"x"}, epoch, time.Hour))
		assert.Equal(t, "x", read("a", "", epoch.Add(24*time.Hour)), "for good wins")

		require.NoError(t, bs.Attach(ctx, "a", "c1", []string{"y", "x"}, epoch, time.Minute))
		assert.Equal(t, "x,y<1m0s", read("a", "c1", epoch), "conversation and caller-wide labels, each once")
		assert.Equal(t, "x", read("a", "c2", epoch), "another conversation sees the caller-wide ones only")
		assert.Equal(t, "x", read("a", "", epoch))
		assert.Equal(t, "", read("b", "c1", epoch), "callers are apart")

		require.NoError(t, bs.Clear(ctx, "a", toolgate.LabelClear{Label: "x", At: epoch, Approver: "sec", Reason: "ok"}))
		assert.Equal(t, "y<1m0s", read("a", "c1", epoch), "cleared caller-wide and in every conversation")
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"y"}, epoch.Add(time.Second), time.Minute))
		require.NoError(t, bs.Clear(ctx, "a", toolgate.LabelClear{Label: "y", At: epoch, Approver: "sec", Reason: "ok"}))
		assert.Equal(t, "y<1m1s", read("a", "c1", epoch), "a label attached after its declassification stays")
		_, clears, err := bs.Labels(ctx, "a", "", epoch)
		require.NoError(t, err)
		assert.Equal(t, []toolgate.LabelClear{{Label: "x", At: epoch, Approver: "sec", Reason: "ok"}, {Label: "y", At: epoch, Approver: "sec", Reason: "ok"}}, clears)
		require.NoError(t, bs.Clear(ctx, "a", toolgate.LabelClear{Label: "y", At: epoch.Add(2 * time.Second), Approver: "ops", Reason: "again"}))
		assert.Equal(t, "", read("a", "c1", epoch))

		for _, tc := range []struct {
			name              string
			caller, conv, lab string
			at                time.Time
			ttl               time.Duration
		}{
			{"EmptyCaller", "", "", "l", epoch, 0},
			{"EmptyLabel", "a", "", "", epoch, 0},
			{"NULLabel", "a", "", "l\x00", epoch, 0},
			{"InvalidUTF8Conversation", "a", "\xff", "l", epoch, 0},
			{"LongCaller", strings.Repeat("c", sqlbudget.MaxIDLen+1), "", "l", epoch, 0},
			{"NegativeTTL", "a", "", "l", epoch, -time.Second},
			{"TimeOutOfRange", "a", "", "l", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), 0},
			{"EndOutOfRange", "a", "", "l", time.Unix(0, 1<<63-10), time.Hour},
		} {
			t.Run(tc.name, func(t *testing.T) {
				require.ErrorIs(t, bs.Attach(ctx, tc.caller, tc.conv, []string{tc.lab}, tc.at, tc.ttl), sqlbudget.ErrInvalidLabel)
			})
		}
		require.NoError(t, bs.Attach(ctx, "a", "c1", []string{"z"}, epoch, 0))
		_, _, err = bs.Labels(ctx, "", "", epoch)
		require.ErrorIs(t, err, sqlbudget.ErrInvalidLabel)
		require.ErrorIs(t, bs.Clear(ctx, "a", toolgate.LabelClear{At: epoch, Approver: "sec"}), sqlbudget.ErrInvalidLabel)
		require.ErrorIs(t, bs.Clear(ctx, "a", toolgate.LabelClear{Label: "z", At: epoch.Add(time.Hour)}), sqlbudget.ErrInvalidLabel, "no approver")
		assert.Equal(t, "z", read("a", "c1", epoch), "nothing invalid was recorded")
	})
}

func TestPruneLabels(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		_, bs := budgets(t, b, b.NewDSN(t))
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"short"}, epoch, time.Second))
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"long"}, epoch, time.Hour))
		require.NoError(t, bs.Attach(ctx, "a", "", []string{"good"}, epoch, 0))
		n, err := bs.PruneLabels(ctx, epoch.Add(time.Minute))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n)
		n, err = bs.PruneLabels(ctx, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC))
		require.NoError(t, err)
		assert.EqualValues(t, 1, n, "labels for good stay")
		got, _, err := bs.Labels(ctx, "a", "", epoch.Add(48*time.Hour))
		require.NoError(t, err)
		assert.Equal(t, []gatelog.SharedLabel{{Label: "good"}}, got)
	})
}

// toxicPolicy: reading the inbox labels the caller "untrusted" (for ttl,
// 0: for good), and sending mail after that is refused.
func toxicPolicy(t *testing.T, ttl time.Duration, conversations bool) *toolgate.Compiled {
	t.Helper()
	cfg := toolgate.Policy{Budget: 100 * kernel.Unit, MinCost: kernel.Unit / 100, ConversationLabels: conversations, Tools: []toolgate.Rule{
		{Name: "inbox", Match: "read_inbox", Cost: kernel.Unit / 10, Labels: []string{"untrusted"}, LabelTTL: ttl},
		{Name: "send", Match: "send_mail", Cost: kernel.Unit / 10, Flow: []toolgate.FlowRule{{After: []string{"untrusted"}}}},
		{Name: "search", Match: "search", Cost: kernel.Unit / 10},
	}}
	comp, err := cfg.Compile()
	require.NoError(t, err)
	return comp
}

func TestGatesShareSQLLabels(t *testing.T) {
	sqltest.ForEach(t, func(t *testing.T, b sqltest.Backend) {
		dsn := b.NewDSN(t)
		var now time.Time
		clock := func() time.Time { return now }
		type replica struct {
			g   *toolgate.Gate
			log *trace.Log
			st  *sqlbudget.Store
		}
		start := func(t *testing.T, comp *toolgate.Compiled, log *trace.Log, st *sqlbudget.Store) replica {
			if log == nil {
				log = trace.NewMemoryLog()
			}
			if st == nil {
				_, st = budgets(t, b, dsn)
			}
			g, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clock), toolgate.WithSharedLabels(st))
			require.NoError(t, err)
			return replica{g, log, st}
		}
		call := func(t *testing.T, r replica, caller, tool, conv string) toolgate.Decision {
			t.Helper()
			d, err := r.g.Before(ctx, toolgate.Call{Tool: tool, Caller: caller, Conversation: conv})
			require.NoError(t, err)
			if d.Verdict == toolgate.Allow {
				_, err := r.g.After(ctx, d.Call, toolgate.Result{})
				require.NoError(t, err)
			}
			now = now.Add(time.Second)
			return d
		}

		t.Run("ToxicFlowAcrossGates", func(t *testing.T) {
			now = epoch
			comp := toxicPolicy(t, 0, false)
			r1, r2, r3 := start(t, comp, nil, nil), start(t, comp, nil, nil), start(t, comp, nil, nil)
			caller := "tenant-" + uuid.NewString()
			assert.Equal(t, toolgate.Allow, call(t, r2, caller, "search", "").Verdict, "r2 knows the caller before the label")
			assert.Equal(t, toolgate.Allow, call(t, r1, caller, "read_inbox", "").Verdict)
			for _, r := range []replica{r3, r2} {
				d := call(t, r, caller, "send_mail", "")
				assert.Equal(t, toolgate.Refuse, d.Verdict, "a label attached on another gate refuses the flow")
				assert.Equal(t, "flow/0", d.Condition, d.Explanation)
			}
			assert.Equal(t, toolgate.Allow, call(t, r3, "other-"+uuid.NewString(), "send_mail", "").Verdict, "another caller carries nothing")

			// The gate recorded what it relied on: restarted over its log
			// alone, with a store that holds nothing for the caller, it
			// still refuses.
			var kinds []string
			for e, err := range r3.log.Entries(ctx, 0) {
				require.NoError(t, err)
				kinds = append(kinds, e.Kind)
			}
			assert.Contains(t, kinds, gatelog.KindSharedLabels)
			_, empty := budgets(t, b, b.NewDSN(t))
			again := start(t, comp, r3.log, empty)
			d := call(t, again, caller, "send_mail", "")
			assert.Equal(t, toolgate.Refuse, d.Verdict, "replayed from the replica's own log")
			assert.Equal(t, "flow/0", d.Condition)
		})

		t.Run("LabelTTLAcrossGates", func(t *testing.T) {
			now = epoch
			comp := toxicPolicy(t, time.Minute, false)
			r1, r2 := start(t, comp, nil, nil), start(t, comp, nil, nil)
			caller := "tenant-" + uuid.NewString()
			assert.Equal(t, toolgate.Allow, call(t, r1, caller, "read_inbox", "").Verdict)
			assert.Equal(t, toolgate.Refuse, call(t, r2, caller, "send_mail", "").Verdict)
			now = epoch.Add(time.Minute) // the label ends exactly ttl after the read
			assert.Equal(t, toolgate.Allow, call(t, r2, caller, "send_mail", "").Verdict, "the label ended on every gate")
		})

		t.Run("ConversationLabelsAcrossGates", func(t *testing.T) {
			now = epoch
			comp := toxicPolicy(t, 0, true)
			r1, r2 := start(t, comp, nil, nil), start(t, comp, nil, nil)
			caller := "tenant-" + uuid.NewString()
			assert.Equal(t, toolgate.Allow, call(t, r1, caller, "read_inbox", "conv-a").Verdict)
			assert.Equal(t, toolgate.Allow, call(t, r2, caller, "send_mail", "conv-b").Verdict, "another conversation is clean")
			assert.Equal(t, toolgate.Refuse, call(t, r2, caller, "send_mail", "conv-a").Verdict, "the labelled conversation, on another gate")
		})

		t.Run("DeclassifyClearsEveryGate", func(t *testing.T) {
			now = epoch
			comp := toxicPolicy(t, 0, false)
			r1, r2 := start(t, comp, nil, nil), start(t, comp, nil, nil)
			caller := "tenant-" + uuid.NewString()
			assert.Equal(t, toolgate.Allow, call(t, r1, caller, "read_inbox", "").Verdict)
			assert.Equal(t, toolgate.Allow, call(t, r2, caller, "search", "").Verdict, "r2 knows the caller")
			assert.Equal(t, toolgate.Refuse, call(t, r2, caller, "send_mail", "").Verdict, "r2 carries the label now")
			require.NoError(t, r1.g.Declassify(ctx, caller, "untrusted", toolgate.DefaultApprover, nil, "reviewed"))
			got, _, err := r2.st.Labels(ctx, caller, "", now)
			require.NoError(t, err)
			assert.Empty(t, got, "the shared label is cleared")
			d := call(t, r2, caller, "send_mail", "")
			assert.Equal(t, toolgate.Allow, d.Verdict, "a gate that carried it sees it cleared: %s", d.Explanation)
			r3 := start(t, comp, nil, nil)
			assert.Equal(t, toolgate.Allow, call(t, r3, caller, "send_mail", "").Verdict, "a gate that never carried it sees it cleared")
			// r2 recorded the declassification it applied.
			var reasons []string
			for e, err := range r2.log.Entries(ctx, 0) {
				require.NoError(t, err)
				if e.Kind == gatelog.KindDeclassify {
					reasons = append(reasons, string(e.Payload))
				}
			}
			require.Len(t, reasons, 1)
			assert.Contains(t, reasons[0], "cleared by another gate: reviewed")
			// A later read attaches it again, everywhere.
			assert.Equal(t, toolgate.Allow, call(t, r3, caller, "read_inbox", "").Verdict)
			assert.Equal(t, toolgate.Refuse, call(t, r2, caller, "send_mail", "").Verdict)
		})
	})
}
