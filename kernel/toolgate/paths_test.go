package toolgate_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// TestRootsAreTakenAsWritten: a directory of "under" that path.Clean
// would change — "/srv/data/../etc", which would load as "/srv/etc", a
// trailing "/", "//", "/./" — is refused by the policy loader and by
// Config.Compile, naming the root and its clean form; a clean root loads.
func TestRootsAreTakenAsWritten(t *testing.T) {
	for root, clean := range map[string]string{
		"/srv/data/../etc": "/srv/etc",
		"/srv/data/":       "/srv/data",
		"/srv//data":       "/srv/data",
		"/srv/./data":      "/srv/data",
		"/..":              "/",
	} {
		file := filepath.Join(t.TempDir(), "policy.json")
		require.NoError(t, os.WriteFile(file, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [
			{"match": "read_file", "cost": "0.01", "paths": [{"argument": "/path", "under": ["`+root+`"]}]}]}`), 0o600))
		_, err := toolgate.LoadPolicy(file)
		assert.Equal(t, []pathRule{{"/tools/0/paths/0/under/0", "path"}}, violationsOf(t, err), root)
		assert.ErrorContains(t, err, `"`+root+`" is not a clean path`)
		assert.ErrorContains(t, err, `write it as "`+clean+`"`)

		_, err = toolgate.Policy{Budget: 10, MinCost: 1, Tools: []toolgate.Rule{{Match: "read_file", Cost: 1,
			Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{root}}}}}}.Compile()
		assert.ErrorIs(t, err, toolgate.ErrInvalidPolicy, root)
		assert.ErrorContains(t, err, `"`+root+`" is not a clean path`)
	}
	_, err := toolgate.Policy{Budget: 10, MinCost: 1, Tools: []toolgate.Rule{{Match: "read_file", Cost: 1,
		Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/", "/srv/data", "/srv/data.d/x..y"}}}}}}.Compile()
	assert.NoError(t, err)
}

// TestPathConditionOverAnArray: a path condition naming an array (the
// filesystem server's read_multiple_files {"paths": [...]}) holds for an
// allowing rule when every path is under a root and for a refusing rule
// when any is, so that a path never slips past a deny-list in company;
// an empty array, an element that is not a string, or one the gate
// cannot read one way refuses the call at the rule.
func TestPathConditionOverAnArray(t *testing.T) {
	comp := compile(t, toolgate.Policy{Budget: units(10), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "read_multiple_files", Name: "no-secret", Effect: toolgate.EffectRefuse, Reason: "secret",
			Paths: []toolgate.PathCondition{{Argument: "/paths", Under: []string{"/srv/data/secret"}}}},
		{Match: "read_multiple_files", Name: "data", Cost: 1, Paths: []toolgate.PathCondition{{Argument: "/paths", Under: []string{"/srv/data"}}}},
		{Match: "read_*", Name: "tmp", Cost: 1, Paths: []toolgate.PathCondition{{Argument: "/paths", Under: []string{"/tmp"}}}},
		{Match: "stat_many", Name: "anything", Cost: 1},
	}})
	decide := func(tool, args string) toolgate.Ruling {
		return comp.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: tool, Arguments: []byte(args)}, time.Time{})
	}
	for _, tc := range []struct {
		args      string
		verdict   toolgate.Verdict
		rule      string
		condition string
		why       string
	}{
		{`{"paths": ["/srv/data/a", "/srv/data/b/../c"]}`, toolgate.Allow, "data", gatelog.ConditionMatch, ""},
		{`{"paths": ["/srv/data/a"]}`, toolgate.Allow, "data", gatelog.ConditionMatch, ""},
		{`{"paths": ["/tmp/a", "/tmp/b"]}`, toolgate.Allow, "tmp", gatelog.ConditionMatch, ""},
		{`{"paths": ["/srv/data/a", "/etc/passwd"]}`, toolgate.Refuse, "", gatelog.ConditionNoRule,
			`tool "read_multiple_files": no rule admits the call: rule #1 "data" (paths/0: "/etc/passwd" (/paths/1) is not under /srv/data); rule #2 "tmp" (paths/0: "/srv/data/a" (/paths/0) is not under /tmp)`},
		{`{"paths": ["/srv/data/a", "/tmp/b"]}`, toolgate.Refuse, "", gatelog.ConditionNoRule, `"/tmp/b" (/paths/1) is not under /srv/data`},
		{`{"paths": ["/srv/data/a", "/srv/data/secret/k"]}`, toolgate.Refuse, "no-secret", gatelog.ConditionEffect, "secret"},
		{`{"paths": ["/srv/data/a", "/srv/data/../data/secret/k"]}`, toolgate.Refuse, "no-secret", gatelog.ConditionEffect, "secret"},
		{`{"paths": []}`, toolgate.Refuse, "no-secret", "paths/0", "argument /paths is an empty array: it names no path the gate can check"},
		{`{"paths": ["/srv/data/a", 7]}`, toolgate.Refuse, "no-secret", "paths/0", "argument /paths/1 is not a string"},
		{`{"paths": ["/srv/data/a", ["/srv/data/b"]]}`, toolgate.Refuse, "no-secret", "paths/0", "argument /paths/1 is not a string"},
		{`{"paths": ["/srv/data/a", "relative"]}`, toolgate.Refuse, "no-secret", "paths/0", `argument /paths/1: unsafe path: "relative" is not absolute`},
		{`{"paths": ["/srv/data/a", "/srv/data/%2e%2e/x"]}`, toolgate.Refuse, "data", "paths/0", `argument /paths/1: unsafe path: "/srv/data/%2e%2e/x" reads "/srv/x" once percent-decoded`},
		{`{"paths": "/srv/data/a"}`, toolgate.Allow, "data", gatelog.ConditionMatch, ""},
		{`{"paths": {"0": "/srv/data/a"}}`, toolgate.Refuse, "", gatelog.ConditionNoRule, "argument /paths is not a string or an array of strings"},
	} {
		r := decide("read_multiple_files", tc.args)
		assert.Equal(t, tc.verdict, r.Verdict, tc.args)
		assert.Equal(t, tc.rule, r.Rule.Name, tc.args)
		assert.Equal(t, tc.condition, r.Condition, tc.args)
		assert.Contains(t, r.Explanation, tc.why, tc.args)
	}

	// A deny-list is not escaped by company, whatever rule comes after.
	comp = compile(t, toolgate.Policy{Budget: units(10), MinCost: 1, Tools: []toolgate.Rule{
		{Match: "*", Name: "no-secret", Effect: toolgate.EffectRefuse, Paths: []toolgate.PathCondition{{Argument: "/paths", Under: []string{"/srv/secret"}}}},
		{Match: "*", Name: "anything", Cost: 1},
	}})
	r := decide("read_multiple_files", `{"paths": ["/tmp/a", "/srv/secret/key", "/tmp/b"]}`)
	assert.Equal(t, toolgate.Refuse, r.Verdict)
	assert.Equal(t, "no-secret", r.Rule.Name)
	assert.Equal(t, toolgate.Allow, decide("read_multiple_files", `{"paths": ["/tmp/a", "/tmp/b"]}`).Verdict)
}
