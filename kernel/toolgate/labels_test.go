package toolgate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// labelPolicy: an issue read leaves untrusted_input for issueTTL (0: for
// good), a private read private_data for dataTTL; a pull request is
// refused once both were seen.
func labelPolicy(issueTTL, dataTTL time.Duration) toolgate.Policy {
	return toolgate.Policy{Budget: units(1000), MinCost: kernel.Unit / 100, Labels: []string{"untrusted_input", "private_data"},
		Approvers: map[claims.RiskTier][]string{claims.TierDelete: {"group:sec"}},
		Tools: []toolgate.Rule{
			{Match: "get_issue", Cost: kernel.Unit / 100, Labels: []string{"untrusted_input"}, LabelTTL: issueTTL},
			{Match: "read_private", Cost: kernel.Unit / 100, Labels: []string{"private_data"}, LabelTTL: dataTTL},
			{Match: "create_pull_request", Cost: kernel.Unit / 100,
				Flow: []toolgate.FlowRule{{After: []string{"untrusted_input", "private_data"}, Reason: "no leaks"}}},
			{Match: "delete_file", Cost: kernel.Unit / 100, Tier: claims.TierDelete},
		}}
}

// TestLabelsExpireExactlyTTLAfterTheRecordedTime: a label attached with
// label_ttl is carried until exactly ttl after the recorded time of the
// last call that attached it (the kernel entry's time), then not; one
// attached without ttl for good; a declassified one no more. A naive
// model of label → end agrees on every pull request's verdict, and a
// gate restarted over the log agrees with both.
func TestLabelsExpireExactlyTTLAfterTheRecordedTime(t *testing.T) {
	checks := 0
	defer func() { t.Logf("%d checks", checks) }()
	rapid.Check(t, func(t *rapid.T) {
		ttl := func(label string) time.Duration {
			if rapid.Bool().Draw(t, label+"_forever") {
				return 0
			}
			return time.Duration(rapid.IntRange(1, 20).Draw(t, label)) * time.Second
		}
		issueTTL, dataTTL := ttl("issue_ttl"), ttl("data_ttl")
		cfg := labelPolicy(issueTTL, dataTTL)
		clock := &fakeClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
		log, err := trace.NewLog(trace.NewMemory())
		require.NoError(t, err)
		g, err := toolgate.New(ctx, log, mustCompile(cfg), toolgate.WithClock(clock.now))
		require.NoError(t, err)
		type end struct {
			until   time.Time
			forever bool
		}
		model := map[string]end{}
		carried := func(lb string) bool {
			e, ok := model[lb]
			return ok && (e.forever || clock.t.Before(e.until))
		}
		attach := func(tool, lb string, ttl time.Duration) {
			d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "agent", Arguments: []byte(`{}`)})
			require.NoError(t, err)
			require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
			_, err = g.After(ctx, d.Call, toolgate.Result{})
			require.NoError(t, err)
			var at time.Time
			for e, err := range log.Entries(ctx, d.Seq) {
				require.NoError(t, err)
				at = e.Time
				break
			}
			e := model[lb]
			if !carried(lb) {
				e = end{}
			}
			switch {
			case ttl == 0:
				e = end{forever: true}
			case e.forever && carried(lb):
			case at.Add(ttl).After(e.until):
				e.until = at.Add(ttl)
			}
			model[lb] = e
		}
		pr := func(g *toolgate.Gate) toolgate.Verdict {
			d, err := g.Before(ctx, toolgate.Call{Tool: "create_pull_request", Caller: "agent", Arguments: []byte(`{}`)})
			require.NoError(t, err)
			if d.Verdict == toolgate.Allow {
				_, err = g.After(ctx, d.Call, toolgate.Result{})
				require.NoError(t, err)
			}
			return d.Verdict
		}
		t.Repeat(map[string]func(*rapid.T){
			"issue":   func(t *rapid.T) { attach("get_issue", "untrusted_input", issueTTL) },
			"private": func(t *rapid.T) { attach("read_private", "private_data", dataTTL) },
			"advance": func(t *rapid.T) {
				// To an end exactly, or just before it, or anywhere.
				var ends []time.Time
				for _, e := range model {
					if !e.forever && e.until.After(clock.t) {
						ends = append(ends, e.until, e.until.Add(-time.Nanosecond))
					}
				}
				if len(ends) > 0 && rapid.Bool().Draw(t, "to_an_end") {
					clock.t = rapid.SampledFrom(ends).Draw(t, "end")
					return
				}
				clock.t = clock.t.Add(time.Duration(rapid.Int64Range(0, 25_000).Draw(t, "ms")) * time.Millisecond)
			},
			"declassify": func(t *rapid.T) {
				lb := rapid.SampledFrom([]string{"untrusted_input", "private_data"}).Draw(t, "label")
				err := g.Declassify(ctx, "agent", lb, "", &toolgate.Principal{Issuer: "idp", Subject: "sue", Groups: []string{"sec"}}, "reviewed")
				if !carried(lb) {
					require.Error(t, err)
					return
				}
				require.NoError(t, err)
				delete(model, lb)
			},
			"restart": func(t *rapid.T) {
				g, err = toolgate.New(ctx, log, mustCompile(cfg), toolgate.WithClock(clock.now))
				require.NoError(t, err)
			},
			"": func(t *rapid.T) {
				checks++
				want := toolgate.Allow
				if carried("untrusted_input") && carried("private_data") {
					want = toolgate.Refuse
				}
				require.Equal(t, want, pr(g), "at %v, model %v", clock.t, model)
				// The gate restarted over the log (it takes over: one
				// writer at a time) decides the same.
				g, err = toolgate.New(ctx, log, mustCompile(cfg), toolgate.WithClock(clock.now))
				require.NoError(t, err)
				require.Equal(t, want, pr(g), "replay at %v, model %v", clock.t, model)
			},
		})
	})
}

// TestDeclassifyOnlyByAnApprover: a label is cleared only by an approver
// of the policy, with a reason, and the log says who and why.
func TestDeclassifyOnlyByAnApprover(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, labelPolicy(0, 0))
	for _, tool := range []string{"get_issue", "read_private"} {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "agent", Arguments: []byte(`{}`)})
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict)
	}
	d, err := g.Before(ctx, toolgate.Call{Tool: "create_pull_request", Caller: "agent", Arguments: []byte(`{}`)})
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, d.Verdict)

	mallory := &toolgate.Principal{Issuer: "idp", Subject: "mallory"}
	sue := &toolgate.Principal{Issuer: "idp", Subject: "sue", Groups: []string{"sec"}}
	require.ErrorIs(t, g.Declassify(ctx, "agent", "untrusted_input", "", mallory, "trust me"), toolgate.ErrNotAnApprover)
	require.ErrorIs(t, g.Declassify(ctx, "agent", "untrusted_input", "human", nil, "trust me"), toolgate.ErrNotAnApprover)
	require.Error(t, g.Declassify(ctx, "agent", "untrusted_input", "", sue, " "), "a reason is required")
	require.Error(t, g.Declassify(ctx, "nobody", "untrusted_input", "", sue, "x"), "no such session")
	require.NoError(t, g.Declassify(ctx, "agent", "untrusted_input", "", sue, "the issue was written by a maintainer"))
	require.Error(t, g.Declassify(ctx, "agent", "untrusted_input", "", sue, "again"), "not carried any more")

	d, err = g.Before(ctx, toolgate.Call{Tool: "create_pull_request", Caller: "agent", Arguments: []byte(`{}`)})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	entries := entriesOf(t, log, gatelog.KindDeclassify)
	require.Len(t, entries, 1)
	assert.Equal(t, map[string]any{"session": "toolgate:agent", "caller": "agent", "label": "untrusted_input",
		"approver": "idp|sue", "reason": "the issue was written by a maintainer"}, entries[0])
}
