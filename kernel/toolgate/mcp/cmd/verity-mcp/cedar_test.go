package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
)

// TestLoadPolicyWithCedarConditions: verity-mcp loads a policy whose
// rules have conditions in Cedar, and they decide.
func TestLoadPolicyWithCedarConditions(t *testing.T) {
	data, err := os.ReadFile("../../../cedar/testdata/worked_cedar.json")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	_, compiled, err := loadPolicy(path)
	require.NoError(t, err)
	eng := toolgate.Principal{Issuer: "idp", Subject: "alice", Groups: []string{"eng"}}
	call := toolgate.Call{Tool: "github.create_pull_request", Arguments: []byte(`{"repo":"acme/api"}`), Principal: eng}
	ru := compiled.Decide(toolgate.Snapshot{}, call, time.Unix(0, 0))
	assert.Equal(t, toolgate.Allow, ru.Verdict, ru.Explanation)
	ru = compiled.Decide(toolgate.Snapshot{Labels: map[string]bool{"private_data": true}}, call, time.Unix(0, 0))
	assert.Equal(t, toolgate.Refuse, ru.Verdict)
	assert.Contains(t, ru.Explanation, "no-private-data")
}
