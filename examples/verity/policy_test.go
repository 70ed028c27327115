package main

// verity policy, end to end against real files:
//
//	check, exit 0  TestPolicyCheckFilesystemServer (the README's policy against
//	               the reference filesystem server's real tools/list),
//	               TestPolicyCheckUpstream (a server over stdio, two pages)
//	check, exit 1  TestPolicyCheckFindsProblems
//	test           policy_cases_test.go
//	exit 2         TestPolicyUsageErrors, TestPolicyCheckUpstreamTimeout,
//	               TestPolicyExitCodes (every code, from the built command)

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
)

const (
	fsPolicy = "testdata/policy/filesystem.json"
	fsTools  = "testdata/policy/filesystem.tools.json"
	fsCases  = "testdata/policy/filesystem.cases.json"
)

func TestPolicyCheckFilesystemServer(t *testing.T) {
	r := verity(t, "policy", "check", fsPolicy, "-tools", fsTools)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "9 rules, 14 tools upstream")
	assert.Contains(t, r.stdout, "  ok\n")

	// The policy's approval can happen: move_file is one of the server's
	// tools, and the gate asks a human for it.
	data, err := os.ReadFile(fsTools)
	require.NoError(t, err)
	names, err := parseToolsList(data)
	require.NoError(t, err)
	assert.Contains(t, names, "move_file")
	_, compiled, err := loadPolicyConfig(fsPolicy)
	require.NoError(t, err)
	ru := compiled.Decide(toolgate.Snapshot{}, toolgate.Call{Tool: "move_file", Arguments: []byte(`{"source":"/a","destination":"/b"}`)}, time.Now())
	assert.Equal(t, toolgate.AskApproval, ru.Verdict)
	assert.Equal(t, claims.TierDelete, ru.Tier)
}

// TestPolicyCheckFindsProblems: the policy that tiers delete_* and
// set_permissions, shown with a server that has neither tool, gets both
// rules named, and the approvers who would never be asked; a rule whose
// tools an earlier pattern takes is named as shadowed.
func TestPolicyCheckFindsProblems(t *testing.T) {
	r := verity(t, "policy", "check", "../../kernel/toolgate/testdata/policy/example.json", "-tools", fsTools)
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	for _, want := range []string{
		"rule #9 (delete_*) matches no tool the upstream lists",
		"rule #10 (set_permissions) matches no tool the upstream lists",
		"approvers for DELETE (human) approve nothing",
		"approvers for PRIVILEGE (human, admin) approve nothing",
	} {
		assert.Contains(t, r.stdout, want)
	}
	assert.Contains(t, r.stderr, "the policy has problems")

	var pol map[string]any
	data, err := os.ReadFile(fsPolicy)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &pol))
	rules := pol["tools"].([]any)
	pol["tools"] = append(rules, map[string]any{"match": "read_?ext_file", "cost": "0.01"}, map[string]any{"match": "list_d*", "cost": "0.01"})
	shadowed := filepath.Join(t.TempDir(), "shadowed.json")
	data, err = json.Marshal(pol)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(shadowed, data, 0o600))
	r = verity(t, "policy", "check", shadowed, "-tools", fsTools)
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "rule #9 (read_?ext_file) is shadowed: earlier rules take every call of read_text_file (rule #0)")
	assert.Contains(t, r.stdout, "rule #10 (list_d*) is shadowed: earlier rules take every call of list_directory (rule #1), list_directory_with_sizes (rule #1)")
	assert.Equal(t, 2, strings.Count(r.stdout, "\n  rule"), r.stdout)

	// A policy file with a problem: every violation, exit 2 (the check
	// could not run).
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"version": 1, "budget": "1", "min_cost": "0", "tools": [{"match": "x"}]}`), 0o600))
	r = verity(t, "policy", "check", bad, "-tools", fsTools)
	require.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "/min_cost")
	assert.Contains(t, r.stderr, "/tools/0")
}

// TestLintLabelsWindowsAndTiers: labels no flow reads, flows reading
// labels no live rule attaches, rate windows of rules that match no tool,
// and approvers of a tier only a dead rule needs.
func TestLintLabelsWindowsAndTiers(t *testing.T) {
	cfg := toolgate.Policy{
		Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100,
		Approvers: map[claims.RiskTier][]string{claims.TierDelete: {"human"}, claims.TierPrivilege: {"admin"}},
		Tools: []toolgate.Rule{
			{Match: "get_issue", Cost: kernel.Unit, Labels: []string{"untrusted_input"}},
			{Match: "get_secret", Cost: kernel.Unit, Labels: []string{"private_data"}, Tier: claims.TierDelete},
			{Match: "send_mail", Cost: kernel.Unit, Labels: []string{"external_comm"},
				Flow: []toolgate.FlowRule{{After: []string{"untrusted_input", "private_data"}, Ask: true}}},
			{Match: "burst_*", Cost: kernel.Unit, Rate: &toolgate.Rate{Calls: 2, Per: time.Minute}},
		},
	}
	compiled, err := cfg.Compile()
	require.NoError(t, err)
	findings, notes := lintPolicy(cfg, compiled, []string{"untrusted_input", "unused"}, []string{"get_issue", "send_mail", "list"})
	assert.Equal(t, []string{
		"rule #1 (get_secret) matches no tool the upstream lists",
		"rule #3 (burst_*) matches no tool the upstream lists",
		"rule #3 (burst_*): its rate window (2 per 1m0s) never counts a call",
		`label "private_data" is read by a flow (rule #2) but no rule that matches an upstream tool attaches it`,
		`label "unused" is declared but no rule that matches an upstream tool attaches it and no flow reads it`,
		// The approvers for DELETE approve no call here, but a flow reads
		// labels, which they may clear (Gate.Declassify): not idle.
	}, findings)
	assert.Equal(t, []string{
		`label "external_comm" is attached (rule #2) but no flow reads it: it is only recorded`,
		"no rule matches list (refused as unknown tools)",
	}, notes)

	findings, _ = lintPolicy(cfg, compiled, nil, []string{"get_issue", "get_secret", "send_mail", "burst_a"})
	assert.Empty(t, findings)
}

// fakeServer is an MCP server over stdio in sh: it sends a notification
// and a request of its own before answering initialize, and lists its
// tools in two pages; a second page asked without the cursor is an
// error.
const fakeServer = `read -r init
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}'
printf '%s\n' '{"jsonrpc":"2.0","id":"s1","method":"roots/list"}'
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}}'
read -r reply
case "$reply" in *'"id":"s1"'*'-32601'*) ;; *) echo "no reply to roots/list: $reply" >&2; exit 1;; esac
read -r initialized
read -r list1
printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"read_text_file","inputSchema":{"type":"object"}}],"nextCursor":"page-2"}}'
read -r list2
case "$list2" in *'"cursor":"page-2"'*) ;; *) printf '%s\n' '{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad cursor"}}'; exit 0;; esac
printf '%s\n' '{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"move_file","inputSchema":{"type":"object"}},{"name":"write_file","inputSchema":{"type":"object"}}]}}'
read -r eof
`

func TestPolicyCheckUpstream(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	script := filepath.Join(t.TempDir(), "server.sh")
	require.NoError(t, os.WriteFile(script, []byte(fakeServer), 0o600))
	r := verity(t, "policy", "check", fsPolicy, "--", "sh", script)
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "9 rules, 3 tools upstream", "both pages were read")
	assert.Contains(t, r.stdout, `rule #1 (list_*) matches no tool the upstream lists`)
	assert.NotContains(t, r.stdout, "move_file)", "move_file, on the second page, was seen")
	assert.NotContains(t, r.stderr, "no reply to roots/list")
}

func TestPolicyCheckUpstreamTimeout(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	start := time.Now()
	r := verity(t, "policy", "check", fsPolicy, "-timeout", "300ms", "--", "sh", "-c", "sleep 30")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "no answer in time")
	assert.Less(t, time.Since(start), 10*time.Second, "the server was stopped")

	r = verity(t, "policy", "check", fsPolicy, "--", "sh", "-c", "echo not json; read -r x")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "not JSON-RPC")
	r = verity(t, "policy", "check", fsPolicy, "--", filepath.Join(t.TempDir(), "no-such-server"))
	assert.Equal(t, exitUsage, r.code)
}

// TestPolicyCheckRealFilesystemServer runs check against the reference
// filesystem server when VERITY_FILESYSTEM_MCP names its command (for
// example node_modules/.bin/mcp-server-filesystem after npm install
// @modelcontextprotocol/server-filesystem).
func TestPolicyCheckRealFilesystemServer(t *testing.T) {
	cmd := os.Getenv("VERITY_FILESYSTEM_MCP")
	if cmd == "" {
		t.Skip("VERITY_FILESYSTEM_MCP is not set")
	}
	r := verity(t, "policy", "check", fsPolicy, "--", cmd, t.TempDir())
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "9 rules, 14 tools upstream")
}

func TestPolicyUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"policy"},
		{"policy", "lint", fsPolicy},
		{"policy", "check", fsPolicy},
		{"policy", "check", fsPolicy, "-tools", fsTools, "--", "sh"},
		{"policy", "check", fsPolicy, "--"},
		{"policy", "check", "-tools", fsTools},
		{"policy", "check", fsPolicy, fsPolicy, "-tools", fsTools},
		{"policy", "check", fsPolicy, "-nope", "-tools", fsTools},
		{"policy", "check", fsPolicy, "-timeout", "0s", "--", "sh"},
		{"policy", "test", fsPolicy},
		{"policy", "test", fsPolicy, fsCases, "extra"},
	} {
		r := verity(t, args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", args, r.stderr)
	}
	r := verity(t, "policy", "-h")
	assert.Equal(t, exitOK, r.code)
	assert.Contains(t, r.stdout, "verity policy check POLICY")
}

// TestPolicyToxicFlow: the toxic-flow example's version 2 policy (labels,
// an argument condition, a flow, a rate window) passes check against its
// server's tools and its cases.
func TestPolicyToxicFlow(t *testing.T) {
	const dir = "../toxicflow/"
	r := verity(t, "policy", "check", dir+"policy.json", "-tools", dir+"testdata/tools.json")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "4 rules, 4 tools upstream")
	assert.Contains(t, r.stdout, `note: label "external_comm" is attached (rule #3) but no flow reads it`)
	r = verity(t, "policy", "test", dir+"policy.json", dir+"testdata/cases.json")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "7/7 cases passed")
}

// TestPolicyCheckRefusesUncleanRoots: `verity policy check` of a policy
// whose path condition is under "/srv/data/../etc" (which would load as
// /srv/etc) fails (exit 2: the policy does not load), naming the root
// and its clean form; it does not say ok.
func TestPolicyCheckRefusesUncleanRoots(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "roots.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [
		{"match": "read_text_file", "cost": "0.01", "paths": [{"argument": "/path", "under": ["/srv/data/../etc"]}]}]}`), 0o600))
	r := verity(t, "policy", "check", bad, "-tools", fsTools)
	require.Equal(t, exitUsage, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, `/tools/0/paths/0/under/0`)
	assert.Contains(t, r.stderr, `"/srv/data/../etc" is not a clean path`)
	assert.Contains(t, r.stderr, `write it as "/srv/etc"`)
	assert.NotContains(t, r.stdout, "  ok\n")
}
