package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
)

// policyFile is the policy the files of testdata/scenarios run against,
// but for a file with a policy of its own, testdata/policies/NAME.json
// (policyFor).
const policyFile = "testdata/policy.json"

func testRunner(t testing.TB) *Runner { return runnerFor(t, "") }

// policyFor is the policy the scenarios file runs against: its own in
// testdata/policies when it has one (a budget that renews), else
// policyFile.
func policyFor(file string) string {
	own := filepath.Join("testdata/policies", filepath.Base(file))
	if _, err := os.Stat(own); file != "" && err == nil {
		return own
	}
	return policyFile
}

// runnerFor runs the scenarios file (testRunner: "") against its policy.
func runnerFor(t testing.TB, file string) *Runner {
	t.Helper()
	p, err := toolgate.LoadPolicy(policyFor(file))
	require.NoError(t, err)
	r, err := NewRunner(p)
	require.NoError(t, err)
	return r
}

// TestScenarioFiles runs every file in testdata/scenarios: the gate's
// lifecycle, step by step, with the entries each step appends.
func TestScenarioFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			r := runnerFor(t, file)
			cases, err := Load(file)
			require.NoError(t, err)
			for _, c := range cases {
				res := r.Run(context.Background(), c)
				for _, f := range res.Failures {
					t.Errorf("%s: %s: %s\n\t%s", c.Name(), f.Where(), strings.Join(f.Problems, "; "), f.Got)
				}
			}
		})
	}
}

// mutants returns copies of c, each with one expectation of step i
// changed so that it no longer holds; names say which.
func mutants(c Case, i int) map[string]Case {
	out := map[string]Case{}
	st := c.w.Steps[i]
	e := st.Expect
	if e == nil {
		return out
	}
	with := func(name string, change func(e *expectWire)) {
		m := c
		m.w.Steps = append([]*stepWire(nil), c.w.Steps...)
		s := *st
		ex := *e
		ex.Entries = append([]map[string]json.RawMessage(nil), e.Entries...)
		change(&ex)
		s.Expect = &ex
		m.w.Steps[i] = &s
		out[name] = m
	}
	if e.Verdict != nil {
		with("verdict", func(e *expectWire) {
			other := "refuse"
			if *e.Verdict == other {
				other = "allow"
			}
			e.Verdict = &other
		})
	}
	if e.Rule != nil {
		with("rule", func(e *expectWire) { r := "#99"; e.Rule = &r })
	}
	if e.Condition != nil {
		with("condition", func(e *expectWire) { c := *e.Condition + "x"; e.Condition = &c })
	}
	if e.Reason != nil {
		with("reason", func(e *expectWire) { r := *e.Reason + "x"; e.Reason = &r })
	}
	if e.Explanation != nil {
		with("explanation", func(e *expectWire) { x := *e.Explanation + "\x00"; e.Explanation = &x })
	}
	if e.Approved != nil {
		with("approved", func(e *expectWire) { a := !*e.Approved; e.Approved = &a })
	}
	if e.Error != nil {
		with("error", func(e *expectWire) { e.Error = nil })
	}
	if e.Charged != nil {
		with("charged", func(e *expectWire) { e.charged++ })
	}
	if e.Unpaid != nil {
		with("unpaid", func(e *expectWire) { e.unpaid++ })
	}
	if e.Budget != nil {
		with("budget", func(e *expectWire) { e.budget++ })
	}
	if e.Expired != nil {
		with("expired", func(e *expectWire) { n := *e.Expired + 1; e.Expired = &n })
	}
	if e.Waiting != nil {
		with("waiting", func(e *expectWire) { n := *e.Waiting + 1; e.Waiting = &n })
	}
	if e.Request != nil {
		with("request", func(e *expectWire) { none := "no such step"; e.Request = &none })
	}
	if e.Callers != nil {
		with("callers", func(e *expectWire) {
			c := *e.Callers
			if c.Live != nil {
				n := *c.Live + 1
				c.Live = &n
			}
			if c.Evicted != nil {
				n := *c.Evicted + 1
				c.Evicted = &n
			}
			e.Callers = &c
		})
	}
	if e.Entries != nil {
		with("entries/one more", func(e *expectWire) {
			e.Entries = append(e.Entries, map[string]json.RawMessage{"kind": json.RawMessage(`"x.mutant"`)})
		})
		for j, m := range e.Entries {
			with(fmt.Sprintf("entries/%d/kind", j), func(e *expectWire) {
				e.Entries[j] = map[string]json.RawMessage{"kind": json.RawMessage(`"x.mutant"`)}
			})
			for k, v := range m {
				if k == "kind" {
					continue
				}
				with(fmt.Sprintf("entries/%d/%s", j, k), func(e *expectWire) {
					n := maps.Clone(m)
					n[k] = mutate(v)
					e.Entries[j] = n
				})
			}
		}
	}
	return out
}

// mutate returns a JSON value unlike v: an object with one member
// changed, anything else replaced by a string v is not.
func mutate(v json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) == nil && len(obj) > 0 {
		for k, w := range obj {
			obj[k] = mutate(w)
			break
		}
		out, _ := json.Marshal(obj)
		return out
	}
	return json.RawMessage(`"x.mutant"`)
}

// TestScenarioFilesCanFail: every expectation of every step in
// testdata/scenarios bites. Each is changed, one at a time, so that it no
// longer holds, and the run must then fail at that step and name it.
func TestScenarioFilesCanFail(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.json")
	require.NoError(t, err)
	mutated := 0
	for _, file := range files {
		r := runnerFor(t, file)
		cases, err := Load(file)
		require.NoError(t, err)
		for _, c := range cases {
			for i := range c.w.Steps {
				for name, m := range mutants(c, i) {
					mutated++
					res := r.Run(context.Background(), m)
					if !slices.ContainsFunc(res.Failures, func(f Failure) bool { return f.Step == i }) {
						t.Errorf("%s: %q step %d: %s changed, and the step still passes", file, c.Name(), i, name)
					}
				}
			}
		}
	}
	t.Logf("%d mutants, each failing", mutated)
}

// TestScenarioFilesPinTheGate: the files fail when the gate behaves
// otherwise, here when the policy they run against changes: a wider rate
// window, a longer approval_ttl, no flow, another budget.
func TestScenarioFilesPinTheGate(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.json")
	require.NoError(t, err)
	pinned := map[string]bool{}
	for _, tc := range []struct{ from, to, file string }{
		{`"calls": 2, "per": "1m"`, `"calls": 3, "per": "1m"`, "rate_restart"},
		{`"approval_ttl": "10m"`, `"approval_ttl": "11m"`, "expiry"},
		{`"approval_ttl": "10m"`, `"approval_ttl": "11m"`, "durable_approval"},
		{`"flow": [{"after": ["untrusted_input", "private_data"], "effect": "refuse"}]`, `"flow": [{"after": ["untrusted_input", "private_data"], "effect": "ask"}]`, "flow_restart"},
		{`"budget": "10"`, `"budget": "11"`, "overrun"},
		{`"tier": "DELETE"`, `"tier": "MODIFY"`, "approve"},
		{`"tier": "DELETE"`, `"tier": "MODIFY"`, "deny"},
		{`"tier": "DELETE"`, `"tier": "MODIFY"`, "forged_answer"},
		{`"tier": "DELETE"`, `"tier": "MODIFY"`, "unanswered"},
		{`,
     "paths": [{"argument": "/path", "under": ["/srv/data"]}]`, ``, "arguments"},
		{`"PRIVILEGE": ["group:security"]`, `"PRIVILEGE": ["group:security", "human"]`, "approvers"},
		{`"reserve": true`, `"reserve": false`, "duplicate_call_id"},
		{`"match": "open_pr", "cost": "0.5"`, `"match": "open_pr", "cost": "0.4"`, "eviction"},
		{`"every": "5s"`, `"every": "6s"`, "budget_period"},
		{`"every": "5s"`, `"calendar": "day"`, "budget_period"},
		{`"DELETE": {"group": "ops", "count": 2}`, `"DELETE": {"group": "ops", "count": 1}`, "k_of_n"},
		{`"label_ttl": "10m"`, `"label_ttl": "11m"`, "labels"},
	} {
		pinned[tc.file] = true
		t.Run(tc.file, func(t *testing.T) {
			base, err := os.ReadFile(policyFor(tc.file + ".json"))
			require.NoError(t, err)
			changed := strings.Replace(string(base), tc.from, tc.to, 1)
			require.NotEqual(t, string(base), changed, "the policy changed")
			p, err := toolgate.ParsePolicy([]byte(changed))
			require.NoError(t, err)
			r, err := NewRunner(p)
			require.NoError(t, err)
			cases, err := Load("testdata/scenarios/" + tc.file + ".json")
			require.NoError(t, err)
			failed := 0
			for _, c := range cases {
				if !r.Run(context.Background(), c).Passed() {
					failed++
				}
			}
			assert.Positive(t, failed, "%s passes under a changed policy: %s", tc.file, tc.to)
		})
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		assert.True(t, pinned[name], "%s: no change of the policy shows it failing", name)
	}
}
