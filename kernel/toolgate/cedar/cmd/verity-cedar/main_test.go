package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
	"github.com/verity-go/verity/trace"
)

// TestMain serves a small MCP server over stdio when the test binary is
// run as the upstream of verity-cedar schema.
func TestMain(m *testing.M) {
	if os.Getenv("VERITY_CEDAR_TEST_UPSTREAM") == "1" {
		s := mcp.NewServer(&mcp.Implementation{Name: "github", Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "github.create_pull_request", InputSchema: json.RawMessage(
			`{"type":"object","properties":{"repo":{"type":"string"},"title":{"type":"string"},"draft":{"type":"boolean"}},"required":["repo"]}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		s.AddTool(&mcp.Tool{Name: "read_private", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestSchemaThenCheck: the schema of a live upstream's tools lets Cedar's
// validator pass the worked example and refuse a policy naming an
// argument or a tool the upstream does not have, located.
func TestSchemaThenCheck(t *testing.T) {
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "github.cedarschema")
	t.Setenv("VERITY_CEDAR_TEST_UPSTREAM", "1")
	exe, err := os.Executable()
	require.NoError(t, err)
	code, _, stderr := runCmd(t, "schema", "-o", schemaPath, "--", exe)
	require.Equal(t, 0, code, stderr)
	text, err := os.ReadFile(schemaPath)
	require.NoError(t, err)
	assert.Contains(t, string(text), `action "github.create_pull_request" appliesTo`)
	assert.Contains(t, string(text), `"repo": String`)

	code, out, stderr := runCmd(t, "check", "-schema", schemaPath, "../../testdata/worked.cedar")
	assert.Equal(t, 0, code, out+stderr)
	code, out, stderr = runCmd(t, "check", "-schema", schemaPath, "../../testdata/worked_cedar.json")
	assert.Equal(t, 0, code, out+stderr)
	code, out, stderr = runCmd(t, "check", "-schema", schemaPath, "../../testdata/worked_cedar_file.json")
	assert.Equal(t, 0, code, out+stderr)

	bad := filepath.Join(dir, "bad.cedar")
	require.NoError(t, os.WriteFile(bad, []byte(`permit (principal, action == Action::"github.create_pull_request", resource)
when { context.arguments.repository like "acme/*" };

permit (principal, action == Action::"github.delete_repo", resource);
`), 0o600))
	code, out, _ = runCmd(t, "check", "-schema", schemaPath, bad)
	assert.Equal(t, 1, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Contains(t, lines[0], bad+":1:1: for policy `policy0`")
	assert.Contains(t, lines[0], "repository")
	assert.Contains(t, lines[1], bad+":4:1: for policy `policy1`, unrecognized action")

	code, _, stderr = runCmd(t, "check", "-schema", schemaPath)
	assert.Equal(t, 2, code, stderr)
}

// TestReplayCommand: verity-cedar replay passes a gate's log under the
// policy it enforced and fails under one whose Cedar answers otherwise.
func TestReplayCommand(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "gate.log")
	f, err := trace.OpenFile(logPath, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(f)
	require.NoError(t, err)
	p, err := toolgate.LoadPolicy("../../testdata/worked_cedar.json")
	require.NoError(t, err)
	p.Conditions = []toolgate.ConditionLanguage{cedar.Language{}}
	comp, err := p.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(context.Background(), log, comp)
	require.NoError(t, err)
	eng := toolgate.Principal{Issuer: "idp", Subject: "alice", Groups: []string{"eng"}}
	for _, c := range []toolgate.Call{
		{Tool: "github.create_pull_request", Arguments: []byte(`{"repo":"acme/api"}`), Principal: eng},
		{Tool: "github.create_pull_request", Arguments: []byte(`{"repo":"evil/api"}`), Principal: eng},
		{Tool: "read_private", Arguments: []byte(`{}`), Principal: eng},
		{Tool: "github.create_pull_request", Arguments: []byte(`{"repo":"acme/api"}`), Principal: eng},
	} {
		_, err := g.Before(context.Background(), c)
		require.NoError(t, err)
	}
	require.NoError(t, f.Close())

	code, out, stderr := runCmd(t, "replay", "-policy", "../../testdata/worked_cedar.json", logPath)
	require.Equal(t, 0, code, out+stderr)
	assert.Contains(t, out, "3 Cedar evaluations replayed")

	// The same rule with another Cedar text: its hash differs.
	other := strings.Replace(string(must(os.ReadFile("../../testdata/worked_cedar.json"))), `acme/*`, `evil/*`, 1)
	otherPath := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(otherPath, []byte(other), 0o600))
	code, out, _ = runCmd(t, "replay", "-policy", otherPath, logPath)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "a different text")
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
