package toolgate_test

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
)

// TestPolicyServerMember: "server" is a version 2 member read into
// Rule.Server, written back, and refused when empty, not a pattern, or in
// a version 1 file.
func TestPolicyServerMember(t *testing.T) {
	file := func(version int, server string) []byte {
		return fmt.Appendf(nil, `{"version": %d, "budget": "1", "min_cost": "0.001", "tools": [
		  {"match": "github__*", "server": %s, "cost": "0.001"}, {"match": "files__*", "cost": "0.002"}]}`, version, server)
	}
	p, err := toolgate.ParsePolicy(file(2, `"git*"`))
	require.NoError(t, err)
	assert.Equal(t, "git*", p.Tools[0].Server)
	assert.Empty(t, p.Tools[1].Server)
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"server":"git*"`)
	q, err := toolgate.ParsePolicy(b)
	require.NoError(t, err)
	assert.Equal(t, p.Tools, q.Tools)

	for _, tc := range []struct {
		data []byte
		want []pathRule
	}{
		{file(1, `"github"`), []pathRule{{"/tools/0/server", "unknown_field"}}},
		{file(2, `""`), []pathRule{{"/tools/0/server", "required"}}},
		{file(2, `"[a"`), []pathRule{{"/tools/0/server", "glob"}}},
		{file(2, `7`), []pathRule{{"/tools/0/server", "type"}}},
	} {
		_, err := toolgate.ParsePolicy(tc.data)
		assert.Equal(t, tc.want, violationsOf(t, err), "%s", tc.data)
	}

	_, err = toolgate.Policy{Version: 2, Budget: 1000, MinCost: 1, Tools: []toolgate.Rule{{Match: "a", Cost: 1, Server: "[x"}}}.Compile()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/tools/0/server: glob")
}

// TestRuleServerMatchesOnlyItsServers: a rule naming a server applies to
// calls on a matching server only; a call on no named server never
// matches it; a rule naming a server does not shadow a later rule for the
// same tools; the refusal names why.
func TestRuleServerMatchesOnlyItsServers(t *testing.T) {
	p := toolgate.Policy{Version: 2, Budget: 1000, MinCost: 1, Tools: []toolgate.Rule{
		{Name: "gh", Match: "*__create", Server: "github", Cost: 5},
		{Name: "team", Match: "*__create", Server: "team-*", Cost: 7},
		{Name: "rest", Match: "files__*", Cost: 1},
	}}
	c, err := p.Compile()
	require.NoError(t, err)
	at := time.Unix(0, 0)
	for _, tc := range []struct {
		tool, server, rule string
	}{
		{"github__create", "github", "gh"},
		{"x__create", "team-a", "team"},
		{"x__create", "", ""},
		{"x__create", "gitlab", ""},
		{"files__read", "", "rest"},
		{"files__read", "files", "rest"},
	} {
		r := c.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: tc.tool, Server: tc.server}, at)
		if tc.rule == "" {
			assert.Equal(t, toolgate.Refuse, r.Verdict, "%+v", tc)
			assert.Equal(t, "no_rule", r.Reason, "%+v", tc)
			continue
		}
		assert.Equal(t, toolgate.Allow, r.Verdict, "%+v", tc)
		assert.Equal(t, tc.rule, r.Rule.Name, "%+v", tc)
	}
	r := c.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: "x__create", Server: "gitlab"}, at)
	assert.Contains(t, r.Explanation, `server "gitlab" is not "github"`)
	r = c.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: "x__create"}, at)
	assert.Contains(t, r.Explanation, "the call is on no named server")

	cov := c.Coverage([]string{"github__create", "files__read"})
	assert.Equal(t, []string{"github__create"}, cov[1].Tools, "a rule naming a server takes no tool from later rules")
}

// TestServerRuleDecidesAsTheNaiveModel: for random rules with and
// without server patterns and random calls, the rule that decides is the
// first whose match covers the tool and whose server pattern, if any,
// covers the call's server (never the empty one).
func TestServerRuleDecidesAsTheNaiveModel(t *testing.T) {
	servers := []string{"", "github", "gitlab", "team-a", "team-b", "files"}
	patterns := []string{"", "", "github", "git*", "team-?", "files", "*"}
	tools := []string{"a", "b", "c"}
	rapid.Check(t, func(t *rapid.T) {
		var p = toolgate.Policy{Version: 2, Budget: 1 << 40, MinCost: 1}
		n := rapid.IntRange(1, 6).Draw(t, "rules")
		seen := map[string]bool{}
		for i := range n {
			r := toolgate.Rule{Name: fmt.Sprintf("r%d", i), Match: rapid.SampledFrom([]string{"a", "b", "c", "*"}).Draw(t, "match"),
				Server: rapid.SampledFrom(patterns).Draw(t, "server"), Cost: 1}
			if seen[r.Match] || seen["*"] {
				continue // an earlier rule without a server takes every call of the tool: Compile refuses this one
			}
			if r.Server == "" {
				seen[r.Match] = true
			}
			p.Tools = append(p.Tools, r)
		}
		c, err := p.Compile()
		require.NoError(t, err)
		call := toolgate.Call{Tool: rapid.SampledFrom(tools).Draw(t, "tool"), Server: rapid.SampledFrom(servers).Draw(t, "call_server")}
		want := ""
		for _, r := range p.Tools {
			if ok, _ := path.Match(r.Match, call.Tool); !ok {
				continue
			}
			if r.Server != "" {
				if ok, _ := path.Match(r.Server, call.Server); !ok || call.Server == "" {
					continue
				}
			}
			want = r.Name
			break
		}
		got := c.Decide(toolgate.Snapshot{}, call, time.Unix(0, 0))
		if want == "" {
			require.Equal(t, toolgate.Refuse, got.Verdict)
			return
		}
		require.Equal(t, toolgate.Allow, got.Verdict, got.Explanation)
		require.Equal(t, want, got.Rule.Name)
	})
}
