package toolgate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// caseFoldRules: a path rule that looks at the arguments, one that does
// not, and a DELETE rule whose question shows them to a human.
var caseFoldRules = []toolgate.Rule{
	{Match: "read_file", Name: "reads", Cost: 1, Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data"}}}},
	{Match: "search", Name: "search", Cost: 1, Arguments: json.RawMessage(`{"type": "object"}`)},
	{Match: "echo", Name: "echo", Cost: 1},
	{Match: "delete_file", Name: "delete", Cost: 1, Tier: claims.TierDelete},
}

// TestCaseFoldedMembersBypass: read_file {"path": "/srv/data/a", "Path":
// "/etc/passwd"}, which a Go tool decoding with encoding/json reads as
// /etc/passwd, is refused at the rule that looks at its path, naming both
// members — and so is such a pair at any depth, or spelled with the
// Kelvin sign or a long s, escaped or not; names that only look alike
// (dotted and dotless i) are not a pair.
func TestCaseFoldedMembersBypass(t *testing.T) {
	bypass := []byte(`{"path": "/srv/data/a", "Path": "/etc/passwd"}`)
	var upstream struct {
		Path string `json:"path"`
	}
	require.NoError(t, json.Unmarshal(bypass, &upstream))
	require.Equal(t, "/etc/passwd", upstream.Path, "what a Go upstream reads")

	comp := compile(t, toolgate.Policy{Budget: units(10), MinCost: 1, Tools: caseFoldRules})
	decide := func(tool, args string) toolgate.Ruling {
		return comp.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: tool, Arguments: []byte(args)}, time.Time{})
	}
	r := decide("read_file", string(bypass))
	assert.Equal(t, toolgate.Refuse, r.Verdict)
	assert.Equal(t, gatelog.ConditionArguments, r.Condition)
	assert.Equal(t, "reads", r.Rule.Name)
	assert.Equal(t, `tool "read_file" (rule #0 "reads", arguments): the arguments are not one JSON value every reader reads the same way: members "Path" and "path" differ only in case`, r.Explanation)

	for args, want := range map[string]string{
		`{"path": "/srv/data/a", "opts": {"mode": "r", "MODE": "w"}}`:           `members "MODE" and "mode" at /opts differ only in case`,
		`{"path": "/srv/data/a", "list": [{}, {"a/b": {"k": 1, "\u212a": 2}}]}`: `members "k" and "\u212a" at /list/1/a~1b differ only in case`,
		`{"path": "/srv/data/a", "\u017fize": 1, "SIZE": 2}`:                    `members "SIZE" and "\u017fize" differ only in case`,
		`{"\u0050ath": "/etc/passwd", "path": "/srv/data/a"}`:                   `members "Path" and "path" differ only in case`,
		`{"path": "/srv/data/a", "path": "/etc/passwd"}`:                        `duplicate`,
		`{"path": "/srv/data/a", "b": 1, "c": 2, "d": 3, "e": 4, "f": 5, "g": 6, "h": 7, ` + // more than smallObject
			`"i": 8, "j": 9, "k": 10, "l": 11, "m": 12, "n": 13, "o": 14, "p": 15, "q": 16, "Q": 17}`: `members "Q" and "q" differ only in case`,
	} {
		r := decide("read_file", args)
		assert.Equal(t, gatelog.ConditionArguments, r.Condition, args)
		assert.Contains(t, r.Explanation, want, args)
		r = decide("search", args)
		assert.Equal(t, gatelog.ConditionArguments, r.Condition, "an argument schema looks too: %s", args)
	}
	for _, args := range []string{
		`{"path": "/srv/data/a", "\u0130d": 1, "id": 2, "\u0131d": 3}`, // İ, i and ı fold apart
		`{"path": "/srv/data/a", "a": {"x": 1}, "b": {"X": 1}}`,        // different objects
		`{"path": "/srv/data/a", "list": ["Path", "path"]}`,            // values, not names
	} {
		assert.Equal(t, toolgate.Allow, decide("read_file", args).Verdict, args)
	}

	// A rule that looks at nothing but the tool's name admits every way
	// of reading the arguments: the call is allowed, as with exact
	// duplicates (see the package documentation).
	assert.Equal(t, toolgate.Allow, decide("echo", string(bypass)).Verdict)
}

// TestCaseFoldedMembersNotShownToAHuman: a call that needs a human's
// approval is refused rather than asked about when its arguments have
// two members that differ only in case: the human would approve one
// reading, the tool might run the other.
func TestCaseFoldedMembersNotShownToAHuman(t *testing.T) {
	g := newGate(t, newLog(t), toolgate.Policy{Budget: units(10), MinCost: 1, Tools: caseFoldRules})
	d, err := g.Before(ctx, toolgate.Call{Tool: "delete_file", Caller: "agent", Arguments: []byte(`{"path": "/tmp/x", "PATH": "/etc"}`)})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, "approval", d.Condition)
	assert.Contains(t, d.Explanation, `arguments a human cannot read one way: members "PATH" and "path" differ only in case`)
	assert.Empty(t, g.Pending())

	d, err = g.Before(ctx, toolgate.Call{Tool: "delete_file", Caller: "agent", Arguments: []byte(`{"path": "/tmp/x", "recursive": false}`)})
	require.NoError(t, err)
	assert.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.True(t, strings.Contains(d.Explanation, `{"path":"/tmp/x","recursive":false}`), d.Explanation)
}
