package main

// verity policy test, end to end: single-call cases and scenarios, exit 0
// when every case passes and 1 naming each failing case and step.

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const fsScenarios = "testdata/policy/filesystem.scenarios.json"

func TestPolicyTestCases(t *testing.T) {
	r := verity(t, "policy", "test", fsPolicy, fsCases)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "PASS a move waits for the human\n")
	assert.Contains(t, r.stdout, "6/6 cases passed")

	wrong := writeCases(t, `{"cases": [
	  {"name": "moves run at once", "tool": "move_file", "arguments": {"source": "/a", "destination": "/b"}, "expect": "allow"},
	  {"name": "reads by the wrong rule", "tool": "read_text_file", "expect": "allow", "rule": "#1", "condition": "match"},
	  {"name": "an unknown tool", "tool": "rm", "expect": "refuse", "reason": "unknown_tool", "explanation": "catalogue"}
	]}`)
	r = verity(t, "policy", "test", fsPolicy, wrong)
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "FAIL moves run at once: verdict ask_approval, want allow\n     got ask_approval by rule #8, condition tier")
	assert.Contains(t, r.stdout, "FAIL reads by the wrong rule: rule rule #0, want #1")
	assert.Contains(t, r.stdout, "PASS an unknown tool")
	assert.Contains(t, r.stdout, "1/3 cases passed")

	bad := writeCases(t, `{"cases": [{"name": "x", "tool": "t", "expect": "maybe", "extra": 1}]}`)
	r = verity(t, "policy", "test", fsPolicy, bad)
	assert.Equal(t, exitUsage, r.code, "a cases file that cannot be used: the test could not run")
	assert.Contains(t, r.stderr, bad)
	assert.Contains(t, r.stderr, `/cases/0/expect: enum: expect "maybe" is not allow, refuse or ask_approval`)
	assert.Contains(t, r.stderr, "/cases/0/extra: unknown_field")
	assert.Empty(t, r.stdout, "a refused file runs no case")

	dup := writeCases(t, `{"cases": [{"name": "x", "tool": "read_text_file", "tool": "move_file", "expect": "allow"}]}`)
	r = verity(t, "policy", "test", fsPolicy, dup)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "duplicate_key", "read strictly: a member twice is refused, not the last one taken")
}

// TestPolicyTestScenarios: a cases file holding both kinds runs both; a
// failing scenario names each failing step, what differed and what it did.
func TestPolicyTestScenarios(t *testing.T) {
	r := verity(t, "policy", "test", fsPolicy, fsScenarios)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "PASS a move waits for the human\nPASS a move is asked about, approved and run once\n")
	assert.Contains(t, r.stdout, "3/3 cases passed")

	wrong := writeCases(t, `{"cases": [
	  {"name": "a move runs at once", "steps": [
	    {"name": "move", "call": {"tool": "move_file", "caller": "me", "arguments": {"source": "/a", "destination": "/b"}},
	     "expect": {"verdict": "allow", "entries": [{"kind": "kernel.start"}, {"kind": "kernel.execute"}]}},
	    {"advance": "1m"},
	    {"result": {"call": "move"}, "expect": {"charged": "0.2"}}]},
	  {"name": "a read", "tool": "read_text_file", "arguments": {"path": "/a"}, "expect": "allow"}]}`)
	r = verity(t, "policy", "test", fsPolicy, wrong)
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "FAIL a move runs at once\n"+
		`     step 0 "move" (call move_file): verdict ask_approval, want allow; entries[1]: kind claims.evaluate, want kernel.execute`+"\n"+
		`       got ask_approval by rule #8, condition tier: Allow the DELETE tool call "move_file" with arguments {"source":"/a","destination":"/b"}?; entries [kernel.start claims.evaluate]`+"\n"+
		`     step 2 (result move): error "toolgate: no open call with this id`)
	assert.NotContains(t, r.stdout, "step 1", "the step that did what it should is not named")
	assert.Contains(t, r.stdout, "PASS a read\n1/2 cases passed\n")
}

// TestPolicyCasesHistory: a case's before calls build the session its
// call is decided in: the labels of the calls allowed, and their rate
// windows.
func TestPolicyCasesHistory(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(policy, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01",
	  "tools": [
	    {"name": "issues", "match": "get_issue", "cost": "1", "labels": ["untrusted_input"], "rate": {"calls": 2, "per": "1m"}},
	    {"name": "secrets", "match": "get_secret", "cost": "1", "labels": ["private_data"]},
	    {"name": "pr", "match": "open_pr", "cost": "1", "flow": [{"after": ["untrusted_input", "private_data"], "effect": "refuse"}]}]}`), 0o600))
	cases := writeCases(t, `{"cases": [
	  {"name": "after both", "tool": "open_pr", "before": [{"tool": "get_issue"}, {"tool": "get_secret"}], "expect": "refuse", "condition": "flow/0"},
	  {"name": "a label given", "tool": "open_pr", "before": [{"tool": "get_secret"}], "labels": ["untrusted_input"], "expect": "refuse", "condition": "flow/0"},
	  {"name": "after one", "tool": "open_pr", "before": [{"tool": "get_issue"}], "expect": "allow"},
	  {"name": "the window", "tool": "get_issue", "before": [{"tool": "get_issue"}, {"tool": "get_issue"}], "expect": "refuse", "condition": "rate"},
	  {"name": "the window, wrong", "tool": "get_issue", "before": [{"tool": "get_issue"}, {"tool": "get_issue"}], "expect": "allow"}]}`)
	r := verity(t, "policy", "test", policy, cases)
	assert.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "PASS after both\nPASS a label given\nPASS after one\nPASS the window\n")
	assert.Contains(t, r.stdout, "FAIL the window, wrong: verdict refuse, want allow")
	assert.Contains(t, r.stdout, "4/5 cases passed")
}

func writeCases(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cases.json")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// TestPolicyTestReferenceExample runs REFERENCE.md's example of a cases
// file against its policy: it passes as written, and with the budget it
// says to change, prints what REFERENCE.md says it prints.
func TestPolicyTestReferenceExample(t *testing.T) {
	doc, err := os.ReadFile("../../REFERENCE.md")
	require.NoError(t, err)
	text := string(doc)
	start := strings.Index(text, "## `verity policy test`: cases and scenarios")
	require.GreaterOrEqual(t, start, 0)
	section := text[start:]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	blocks := regexp.MustCompile("(?s)```(json)?\n(.*?)```").FindAllStringSubmatch(section, -1)
	require.Len(t, blocks, 3, "the policy, the cases and the output")
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(policy, []byte(blocks[0][2]), 0o600))
	cases := filepath.Join(dir, "cases.json")
	require.NoError(t, os.WriteFile(cases, []byte(blocks[1][2]), 0o600))
	r := verity(t, "policy", "test", policy, cases)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)

	changed := strings.Replace(blocks[1][2], `"budget": "9.8"`, `"budget": "9.9"`, 1)
	require.NotEqual(t, blocks[1][2], changed)
	require.NoError(t, os.WriteFile(cases, []byte(changed), 0o600))
	r = verity(t, "policy", "test", policy, cases)
	assert.Equal(t, exitError, r.code)
	assert.Equal(t, blocks[2][2], r.stdout)
}
