package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// TestInspectAndReplayAGatewayLog: verity inspect words a gateway's
// spawn, connect and reload entries, and verity replay checks a call
// named server__tool against the definition its server pinned under the
// tool's own name.
func TestInspectAndReplayAGatewayLog(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gateway.trace")
	f, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(f)
	require.NoError(t, err)
	appendJSON := func(kind string, v any) {
		b, err := canon.Marshal(v)
		require.NoError(t, err)
		_, err = log.Append(ctx, kind, b)
		require.NoError(t, err)
	}
	digest := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	appendJSON(gatelog.KindSpawn, gatelog.Spawn{Server: "files", Command: "mcp-files", ArgumentsSHA256: digest, PID: 42, Protocol: "2025-11-25"})
	appendJSON(gatelog.KindConnect, gatelog.Connect{Server: "forge", URL: "https://forge.example/mcp", Protocol: "2026-07-28", TLSSubject: "CN=forge", TLSSHA256: digest})
	var state pin.State
	tools, err := pin.ParseTools([]byte(`{"tools":[` + readTool + `,` + writeTool + `]}`))
	require.NoError(t, err)
	state, out := state.Listed(pin.Listing{Server: "files", Tools: tools})
	for _, e := range out.Entries {
		_, err := log.Append(ctx, e.Kind, e.Payload)
		require.NoError(t, err)
	}
	h, err := state.Check("files", "read_file")
	require.NoError(t, err)
	comp, err := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "files__read_file", Cost: kernel.Unit / 10}}}.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, comp)
	require.NoError(t, err)
	d, err := g.Before(ctx, toolgate.Call{Tool: "files__read_file", Server: "files", Caller: "agent", Arguments: []byte(`{}`), Definition: h})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)})
	require.NoError(t, err)
	appendJSON(gatelog.KindReload, gatelog.Reload{GatewaySHA256: digest, PolicySHA256: digest, Added: []string{"mail"}})
	require.NoError(t, f.Close())

	r := verity(t, "inspect", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "started server files: mcp-files (arguments sha256 "+digest+"), pid 42, protocol 2025-11-25")
	assert.Contains(t, r.stdout, "connected to server forge at https://forge.example/mcp, protocol 2026-07-28, TLS peer CN=forge (sha256 "+digest+")")
	assert.Contains(t, r.stdout, "reloaded gateway sha256 "+digest+", policy sha256 "+digest+" (added [mail], removed [], restarted [])")
	r = verity(t, "replay", path)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "decisions named a definition pinned when they were made")
}
