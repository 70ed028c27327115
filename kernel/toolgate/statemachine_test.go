package toolgate_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// conditionRules is the catalogue TestConditionsMatchModel drives: a
// deny-list and an allow-list on paths, labels, a flow, principals, an
// argument schema and two rate windows.
var conditionRules = []toolgate.Rule{
	{Match: "read_file", Name: "no-secret", Effect: toolgate.EffectRefuse, Reason: "secret",
		Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/secret"}}}},
	{Match: "read_file", Name: "data", Cost: 1, Labels: []string{"private_data"},
		Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data"}}},
		Rate:  &toolgate.Rate{Calls: 3, Per: 10 * time.Second}},
	{Match: "get_issue", Cost: 1, Labels: []string{"untrusted_input"}},
	{Match: "sql", Cost: 1, Principals: &toolgate.PrincipalCondition{Groups: []string{"admin"}}},
	{Match: "sql", Cost: 1, Principals: &toolgate.PrincipalCondition{Scopes: []string{"db:read"}},
		Arguments: json.RawMessage(`{"properties": {"q": {"type": "string", "pattern": "^SELECT "}}, "required": ["q"]}`)},
	{Match: "post", Cost: 1, Labels: []string{"external_comm"},
		Flow: []toolgate.FlowRule{{After: []string{"untrusted_input", "private_data"}, Reason: "no leaks"}},
		Rate: &toolgate.Rate{Calls: 2, Per: 20 * time.Second, Scope: toolgate.RateScopeRule}},
}

// conditionModel is the naive model: each caller's labels and call
// times, and a table of what each path means.
type conditionModel struct {
	now    time.Time
	labels map[string]map[string]bool
	times  map[string][]time.Time // by caller + "/" + window
}

// modelPaths says, for each path the test sends, which rule decides:
// "secret" (the deny-list), "data" (the allow-list), "outside" (no rule
// admits it),
// or "unsafe@<rule>" (refused at that rule).
var modelPaths = map[string]string{
	"/srv/data/a":           "data",
	"/srv/data//b/":         "data",
	"/srv/secret/x":         "secret",
	"/srv/data/../secret/x": "secret",
	"/srv/data/../../etc":   "outside",
	"/etc/passwd":           "outside",
	"/srv/data/%2e%2e/x":    "unsafe@1", // the deny-list agrees on both forms; the allow-list does not
	"/srv/%73ecret/x":       "unsafe@0",
	"relative/x":            "unsafe@0",
	"/srv/data/\u2215x":     "unsafe@0",
}

func (m *conditionModel) count(key string, per time.Duration) int {
	n := 0
	for _, t := range m.times[key] {
		if t.After(m.now.Add(-per)) && !t.After(m.now) {
			n++
		}
	}
	return n
}

// decide returns the verdict, the rule index (-1 none) and the condition.
func (m *conditionModel) decide(caller string, p toolgate.Principal, tool string, args map[string]string, dup bool) (toolgate.Verdict, int, string) {
	seen := m.labels[caller]
	run := func(rule int, window string, per time.Duration, limit int, labels ...string) (toolgate.Verdict, int, string) {
		if window != "" && m.count(caller+"/"+window, per) >= limit {
			return toolgate.Refuse, rule, "rate"
		}
		if window != "" {
			m.times[caller+"/"+window] = append(m.times[caller+"/"+window], m.now)
		}
		if m.labels[caller] == nil {
			m.labels[caller] = map[string]bool{}
		}
		for _, l := range labels {
			m.labels[caller][l] = true
		}
		return toolgate.Allow, rule, "match"
	}
	switch tool {
	case "read_file":
		if dup {
			return toolgate.Refuse, 0, "arguments"
		}
		switch c := modelPaths[args["path"]]; c {
		case "secret":
			return toolgate.Refuse, 0, "effect"
		case "data":
			return run(1, "rule:data|tool:read_file", 10*time.Second, 3, "private_data")
		case "unsafe@0":
			return toolgate.Refuse, 0, "paths/0"
		case "unsafe@1":
			return toolgate.Refuse, 1, "paths/0"
		}
		return toolgate.Refuse, -1, "no_rule" // rules match read_file, none admits the path
	case "get_issue":
		return run(2, "", 0, 0, "untrusted_input")
	case "sql":
		for _, g := range p.Groups {
			if g == "admin" {
				return run(3, "", 0, 0)
			}
		}
		for _, s := range p.Scopes {
			if s == "db:read" {
				if dup {
					return toolgate.Refuse, 4, "arguments"
				}
				if len(args["q"]) >= 7 && args["q"][:7] == "SELECT " {
					return run(4, "", 0, 0)
				}
			}
		}
		return toolgate.Refuse, -1, "no_rule"
	case "post":
		if seen["untrusted_input"] && seen["private_data"] {
			return toolgate.Refuse, 5, "flow/0"
		}
		return run(5, "rule:#5", 20*time.Second, 2, "external_comm")
	}
	return toolgate.Refuse, -1, "unknown_tool"
}

// TestConditionsMatchModel: a rapid state machine drives a Gate with calls
// of principals with and without groups and scopes, path and argument
// conditions (bypass attempts among them), rate windows under a fake
// clock and flow labels, restarting the gate over its log at random and
// holding one caller at a time (each call of another principal lets the
// last one go, to be resumed from the log), and checks every verdict,
// the rule and the condition that decided against conditionModel: a
// restarted gate, or a resumed caller, decides as the one before it
// would have (replay reproduces the labels and windows).
func TestConditionsMatchModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := newFakeClock()
		log, err := trace.NewLog(trace.NewMemory(), trace.WithClock(clock.now))
		require.NoError(rt, err)
		cfg := toolgate.Policy{Budget: units(1 << 20), MinCost: 1, Tools: conditionRules}
		g, err := toolgate.New(ctx, log, mustCompile(cfg), toolgate.WithClock(clock.now), toolgate.WithCallerLimit(1))
		require.NoError(rt, err)
		m := &conditionModel{now: clock.t, labels: map[string]map[string]bool{}, times: map[string][]time.Time{}}
		principals := []toolgate.Principal{
			{Issuer: "idp", Subject: "alice", Groups: []string{"admin"}},
			{Issuer: "idp", Subject: "bob", Scopes: []string{"db:read"}},
			{Issuer: "idp", Subject: "eve", Groups: []string{"guest"}},
		}
		paths := make([]string, 0, len(modelPaths))
		for p := range modelPaths {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		n := 0
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				p := rapid.SampledFrom(principals).Draw(rt, "principal")
				tool := rapid.SampledFrom([]string{"read_file", "get_issue", "sql", "post", "rm"}).Draw(rt, "tool")
				args := map[string]string{"path": rapid.SampledFrom(paths).Draw(rt, "path"),
					"q": rapid.SampledFrom([]string{"SELECT 1", "DROP t"}).Draw(rt, "q")}
				raw, _ := json.Marshal(args)
				dup := rapid.IntRange(0, 9).Draw(rt, "dup") == 0
				if dup { // the same member twice: read two ways
					raw = []byte(fmt.Sprintf(`{"path": %q, "q": %q, "path": "/srv/data/a", "q": "SELECT 1"}`, args["path"], args["q"]))
				}
				n++
				d, err := g.Before(ctx, toolgate.Call{Tool: tool, Principal: p, Arguments: raw, ID: fmt.Sprint(n)})
				require.NoError(rt, err)
				verdict, rule, cond := m.decide(p.Key(), p, tool, args, dup)
				if d.Verdict != verdict || d.Condition != cond || (rule >= 0) != d.Rule.Found || rule >= 0 && d.Rule.Index != rule {
					rt.Fatalf("%s by %s with %s: gate %s %s %s (%s), model %s rule %d %s",
						tool, p.Subject, raw, d.Verdict, d.Rule, d.Condition, d.Explanation, verdict, rule, cond)
				}
				if d.Verdict == toolgate.Allow {
					_, err := g.After(ctx, d.Call, toolgate.Result{})
					require.NoError(rt, err)
				}
			},
			"tick": func(rt *rapid.T) {
				clock.advance(time.Duration(rapid.IntRange(0, 12_000).Draw(rt, "ms")) * time.Millisecond)
				m.now = clock.t
			},
			"restart": func(rt *rapid.T) {
				g, err = toolgate.New(ctx, log, mustCompile(cfg), toolgate.WithClock(clock.now), toolgate.WithCallerLimit(1))
				require.NoError(rt, err)
			},
		})
		_, err = log.Verify(ctx)
		require.NoError(rt, err)
	})
}
