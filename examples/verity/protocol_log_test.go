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
	"github.com/verity-go/verity/trace"
)

// TestInspectShowsProtocolRefusals: a request an MCP host refused for
// its headers (gatelog.KindProtocol) is one line of verity inspect, and
// a gate restarted over the log, and verity replay, read past it.
func TestInspectShowsProtocolRefusals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "eras.trace")
	f, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(f)
	require.NoError(t, err)
	comp, err := toolgate.Policy{Budget: kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{{Match: "search", Cost: kernel.Unit / 10}}}.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, comp)
	require.NoError(t, err)
	d, err := g.Before(ctx, toolgate.Call{Tool: "search", Caller: "web", Arguments: []byte(`{}`), Trace: "4bf92f3577b34da6a3ce929d0e0e4736"})
	require.NoError(t, err)
	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)})
	require.NoError(t, err)
	payload, err := canon.Marshal(gatelog.Protocol{Caller: "web", Method: "tools/call", Name: "search", Reason: "header_mismatch",
		Header: "Mcp-Name", Code: -32020, Explanation: `header mismatch: Mcp-Name "read_file" does not match the body's "search"`})
	require.NoError(t, err)
	_, err = log.Append(ctx, gatelog.KindProtocol, payload)
	require.NoError(t, err)
	_, err = toolgate.New(ctx, log, comp)
	require.NoError(t, err, "a gate restarted over the log reads past it")
	require.NoError(t, f.Close())

	r := verity(t, "inspect", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, `refused tools/call "search" for "web" before any decision (header_mismatch Mcp-Name, -32020): header mismatch: Mcp-Name "read_file" does not match the body's "search"`)
	r = verity(t, "replay", path)
	assert.Equal(t, exitOK, r.code, r.stdout+r.stderr)
}
