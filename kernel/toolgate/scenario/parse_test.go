package scenario

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
)

// TestParseRefuses: a cases file is refused with every problem it has,
// each at its JSON Pointer and with its rule.
func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []toolgate.Violation // path and rule
	}{
		{"not JSON", `{"cases": [`, []toolgate.Violation{{Path: "", Rule: "syntax"}}},
		{"a member twice", `{"cases": [], "cases": []}`, []toolgate.Violation{{Path: "", Rule: "duplicate_key"}}},
		{"a member twice in a step", `{"cases": [{"name": "x", "steps": [{"advance": "1s", "advance": "2s"}]}]}`,
			[]toolgate.Violation{{Path: "", Rule: "duplicate_key"}}},
		{"invalid UTF-8", "{\"cases\": [{\"name\": \"\xff\", \"tool\": \"t\", \"expect\": \"allow\"}]}", []toolgate.Violation{{Path: "", Rule: "syntax"}}},
		{"an integer a double rounds", `{"cases": [{"name": "x", "steps": [{"expire": {}, "expect": {"expired": 9007199254740993}}]}]}`,
			[]toolgate.Violation{{Path: "", Rule: "syntax"}}},
		{"no cases", `{"cases": []}`, []toolgate.Violation{{Path: "/cases", Rule: RuleEmpty}}},
		{"no cases member", `{}`, []toolgate.Violation{{Path: "/cases", Rule: "required"}}},
		{"unknown members", `{"cases": [{"name": "x", "tool": "t", "expect": "allow", "extra": 1}], "more": 2}`,
			[]toolgate.Violation{{Path: "/cases/0/extra", Rule: "unknown_field"}, {Path: "/more", Rule: "unknown_field"}}},
		{"what types say and what they cannot, together", `{"cases": [{"name": "x", "tool": "t", "expect": "maybe", "extra": 1}]}`,
			[]toolgate.Violation{{Path: "/cases/0/expect", Rule: RuleEnum}, {Path: "/cases/0/extra", Rule: "unknown_field"}}},
		{"a member that did not decode is reported once", `{"cases": [{"name": "x", "steps": {}}, 1, {"name": "y", "steps": [{"advance": 5}]}]}`,
			[]toolgate.Violation{{Path: "/cases/0/steps", Rule: "type"}, {Path: "/cases/1", Rule: "type"}, {Path: "/cases/2/steps/0/advance", Rule: "type"}}},
		{"member names are exact", `{"cases": [{"Name": "x", "tool": "t", "expect": "allow"}]}`,
			[]toolgate.Violation{{Path: "/cases/0/Name", Rule: "unknown_field"}, {Path: "/cases/0/name", Rule: "required"}}},
		{"a single-call case", `{"cases": [{"name": "", "expect": "maybe", "at": "noon", "before": [{"arguments": {}}]}]}`,
			[]toolgate.Violation{{Path: "/cases/0/at", Rule: RuleTime}, {Path: "/cases/0/before/0/tool", Rule: "required"},
				{Path: "/cases/0/expect", Rule: RuleEnum}, {Path: "/cases/0/name", Rule: "required"}, {Path: "/cases/0/tool", Rule: "required"}}},
		{"a single-call case with a scenario's settings", `{"cases": [{"name": "x", "tool": "t", "expect": "allow", "durable_approvals": true}]}`,
			[]toolgate.Violation{{Path: "/cases/0", Rule: RuleForm}}},
		{"a scenario with a call's members", `{"cases": [{"name": "x", "tool": "t", "steps": [{"restart": {}}]}]}`,
			[]toolgate.Violation{{Path: "/cases/0", Rule: RuleForm}}},
		{"given twice", `{"cases": [
			{"name": "x", "tool": "t", "arguments": {}, "arguments_text": "{}", "expect": "allow", "before": [{"tool": "u", "arguments": [], "arguments_text": ""}]},
			{"name": "y", "steps": [{"name": "c", "call": {"tool": "t", "arguments": {}, "arguments_text": "{}"}},
				{"approve": {"request": "c", "approver": "human", "by": {"subject": "s"}}},
				{"resume": {"call": {"tool": "t"}, "answer": {"approved": true, "approver": "human", "by": {"subject": "s"}}}}]}]}`,
			[]toolgate.Violation{{Path: "/cases/0", Rule: RuleForm}, {Path: "/cases/0/before/0", Rule: RuleForm},
				{Path: "/cases/1/steps/0/call", Rule: RuleForm}, {Path: "/cases/1/steps/1/approve", Rule: RuleForm},
				{Path: "/cases/1/steps/2/resume/answer", Rule: RuleForm}}},
		{"no steps", `{"cases": [{"name": "x", "steps": []}]}`, []toolgate.Violation{{Path: "/cases/0/steps", Rule: RuleEmpty}}},
		{"a step is one event", `{"cases": [{"name": "x", "steps": [{}, {"restart": {}, "expire": {}}, null]}]}`,
			[]toolgate.Violation{{Path: "/cases/0/steps/0", Rule: RuleForm}, {Path: "/cases/0/steps/1", Rule: RuleForm}, {Path: "/cases/0/steps/2", Rule: "type"}}},
		{"references", `{"cases": [{"name": "x", "steps": [
			{"approve": {"request": "later"}},
			{"name": "wait", "advance": "1s"},
			{"name": "later", "call": {"tool": "t"}},
			{"deny": {"request": "wait"}},
			{"result": {"call": "nobody"}},
			{"unanswered": {"call": "later", "waited": "1m"}},
			{"approve": {"request": "later", "request_id": "r"}},
			{"name": "later", "call": {"tool": "t"}, "expect": {"request": "wait"}},
			{"name": "own", "call": {"tool": "t"}, "expect": {"entries": [{"kind": "k", "a": "{request own}", "b": ["x{call later}y", {"c": "{call wait}"}], "d": "{request next}"}]}},
			{"name": "next", "call": {"tool": "t"}}]}]}`,
			[]toolgate.Violation{{Path: "/cases/0/steps/0/approve/request", Rule: RuleReference},
				{Path: "/cases/0/steps/3/deny/request", Rule: RuleReference},
				{Path: "/cases/0/steps/4/result/call", Rule: RuleReference},
				{Path: "/cases/0/steps/6/approve", Rule: RuleForm},
				{Path: "/cases/0/steps/7/expect/request", Rule: RuleReference},
				{Path: "/cases/0/steps/7/name", Rule: RuleReference},
				{Path: "/cases/0/steps/8/expect/entries/0/b", Rule: RuleReference},
				{Path: "/cases/0/steps/8/expect/entries/0/d", Rule: RuleReference}}},
		{"values", `{"cases": [{"name": "x", "start": "2026-13-01T00:00:00Z", "caller_limit": 0, "idle_callers": "0s", "steps": [
			{"advance": "0s"},
			{"advance": "soon"},
			{"name": "c", "call": {}},
			{"result": {"call": "c", "cost": "0.0005"}, "expect": {"charged": "-1", "unpaid": "x", "budget": "1e9999", "verdict": "maybe",
			  "expired": -1, "waiting": -2, "callers": {"live": -1, "evicted": -1}, "entries": [{}, {"kind": ""}, {"kind": 1}]}},
			{"unanswered": {"call": "c", "waited": "-1s"}}]}]}`,
			[]toolgate.Violation{
				{Path: "/cases/0/caller_limit", Rule: RuleRange},
				{Path: "/cases/0/idle_callers", Rule: RuleDuration},
				{Path: "/cases/0/start", Rule: RuleTime},
				{Path: "/cases/0/steps/0/advance", Rule: RuleDuration},
				{Path: "/cases/0/steps/1/advance", Rule: RuleDuration},
				{Path: "/cases/0/steps/2/call/tool", Rule: "required"},
				{Path: "/cases/0/steps/3/expect/budget", Rule: RuleCost},
				{Path: "/cases/0/steps/3/expect/callers/evicted", Rule: RuleRange},
				{Path: "/cases/0/steps/3/expect/callers/live", Rule: RuleRange},
				{Path: "/cases/0/steps/3/expect/charged", Rule: RuleCost},
				{Path: "/cases/0/steps/3/expect/entries/0", Rule: "required"},
				{Path: "/cases/0/steps/3/expect/entries/1/kind", Rule: "type"},
				{Path: "/cases/0/steps/3/expect/entries/2/kind", Rule: "type"},
				{Path: "/cases/0/steps/3/expect/expired", Rule: RuleRange},
				{Path: "/cases/0/steps/3/expect/unpaid", Rule: RuleCost},
				{Path: "/cases/0/steps/3/expect/verdict", Rule: RuleEnum},
				{Path: "/cases/0/steps/3/expect/waiting", Rule: RuleRange},
				{Path: "/cases/0/steps/3/result/cost", Rule: RuleCost},
				{Path: "/cases/0/steps/4/unanswered/waited", Rule: RuleDuration}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cases, err := Parse([]byte(tc.text))
			require.Error(t, err)
			assert.Nil(t, cases)
			assert.ErrorIs(t, err, ErrInvalid)
			var ve *toolgate.ValidationError
			require.True(t, errors.As(err, &ve), "%T", err)
			var got []toolgate.Violation
			for _, v := range ve.Violations {
				got = append(got, toolgate.Violation{Path: v.Path, Rule: v.Rule})
			}
			assert.Equal(t, tc.want, got, "%v", ve.Violations)
		})
	}
}

// TestParseReads: what a file says is what the runner plays; a byte
// order mark and $schema are allowed.
func TestParseReads(t *testing.T) {
	cases, err := Parse([]byte("\xef\xbb\xbf" + `{"$schema": "x", "cases": [
	  {"name": "one", "tool": "read_file", "arguments": {"path": "/srv/data/a"}, "expect": "allow"},
	  {"name": "two", "steps": [{"call": {"tool": "read_file", "arguments": {"path": "/srv/data/a"}}}]}]}`))
	require.NoError(t, err)
	require.Len(t, cases, 2)
	assert.Equal(t, "one", cases[0].Name())
	assert.False(t, cases[0].IsScenario())
	assert.True(t, cases[1].IsScenario())
	_, err = Parse(make([]byte, MaxSize+1))
	var ve *toolgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.True(t, ve.Has(RuleSize))
}

func TestLoad(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = Load(t.TempDir())
	assert.Error(t, err, "a directory is no cases file")
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"cases": []}`), 0o600))
	_, err = Load(bad)
	assert.ErrorContains(t, err, bad)
}

// TestFailuresNameTheStep: a failing step is named by its index, its
// name and its event, with what differed and what it did.
func TestFailuresNameTheStep(t *testing.T) {
	r := testRunner(t)
	cases, err := Parse([]byte(`{"cases": [
	  {"name": "wrong", "steps": [
	    {"name": "ask", "call": {"tool": "delete_file", "caller": "alice", "arguments": {"path": "/srv/data/a"}},
	     "expect": {"verdict": "allow", "entries": [{"kind": "kernel.start"}, {"kind": "claims.evaluate", "bundle": {"decision": "PUBLISH"}}, {"kind": "toolgate.ask"}]}},
	    {"advance": "1m", "expect": {"verdict": "allow"}},
	    {"approve": {"request": "ask"}, "expect": {"approved": true, "budget": "9"}},
	    {"result": {"call": "ask"}, "expect": {"charged": "1"}}]},
	  {"name": "single", "tool": "delete_file", "expect": "allow", "rule": "reads", "condition": "match", "reason": "x", "explanation": "nope"}]}`))
	require.NoError(t, err)
	res := r.Run(context.Background(), cases[0])
	require.False(t, res.Passed())
	require.Len(t, res.Failures, 4, "%+v", res.Failures)
	f := res.Failures[0]
	assert.Equal(t, `step 0 "ask" (call delete_file)`, f.Where())
	assert.Equal(t, []string{
		"verdict ask_approval, want allow",
		"2 entries [kernel.start claims.evaluate], want 3",
		`entries[1] (claims.evaluate): /bundle/decision "ESCALATE", want "PUBLISH"`,
	}, f.Problems)
	assert.Contains(t, f.Got, `got ask_approval by rule #4 "deletes", condition tier`)
	assert.Equal(t, "step 1 (advance 1m0s)", res.Failures[1].Where())
	assert.Equal(t, []string{"verdict: the step makes no decision"}, res.Failures[1].Problems)
	assert.Equal(t, []string{`budget left 10 for caller "alice", want 9`}, res.Failures[2].Problems, "an approval charges nothing")
	assert.Equal(t, "step 3 (result ask)", res.Failures[3].Where())
	assert.Contains(t, res.Failures[3].Problems[0], "no open call with this id")

	res = r.Run(context.Background(), cases[1])
	require.Len(t, res.Failures, 1)
	assert.Empty(t, res.Failures[0].Where())
	assert.Equal(t, []string{"verdict ask_approval, want allow", `rule rule #4 "deletes", want reads`,
		`condition "tier", want "match"`, `reason "", want "x"`,
		`explanation "" does not contain "nope"`}, res.Failures[0].Problems)
	assert.True(t, strings.HasPrefix(res.Failures[0].Got, "got ask_approval by "))
}

// TestPlaceholders: {request STEP} and {call STEP} in an expected entry
// stand for the ids the gate gave, and only those.
func TestPlaceholders(t *testing.T) {
	r := testRunner(t)
	run := func(want string) Result {
		cases, err := Parse([]byte(`{"cases": [{"name": "x", "steps": [
		  {"name": "first", "call": {"tool": "delete_file", "caller": "alice", "arguments": {"path": "/srv/data/a"}}, "expect": {"verdict": "ask_approval"}},
		  {"name": "second", "call": {"tool": "delete_file", "caller": "alice", "arguments": {"path": "/srv/data/b"}}, "expect": {"verdict": "ask_approval"}},
		  {"deny": {"request": "first"}},
		  {"call": {"tool": "delete_file", "caller": "alice", "arguments": {"path": "/srv/data/a"}},
		   "expect": {"entries": [{"kind": "toolgate.refuse", "approval": "` + want + `"}]}}]}]}`))
		require.NoError(t, err)
		return r.Run(context.Background(), cases[0])
	}
	assert.True(t, run("{request first}").Passed())
	res := run("{request second}")
	require.Len(t, res.Failures, 1)
	assert.Contains(t, res.Failures[0].Problems[0], "/approval")
	assert.False(t, run("{call first}").Passed(), "a call's id is not its request's")
}
