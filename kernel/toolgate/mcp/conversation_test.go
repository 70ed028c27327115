package mcp_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// TestConversationFromMeta: under conversation_labels, the handle a
// client puts in a call's _meta (ConversationMetaKey) is the call's
// conversation: labels attached in one conversation refuse a flow there
// and not in another, and a handle that is not a string names none.
func TestConversationFromMeta(t *testing.T) {
	cfg := toolgate.Policy{Version: 2, Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, ConversationLabels: true,
		Labels: []string{"untrusted_input", "private_data"},
		Tools: []toolgate.Rule{
			{Match: "read_file", Cost: kernel.Unit / 10, Labels: []string{"private_data"}},
			{Match: "search", Cost: kernel.Unit / 10, Labels: []string{"untrusted_input"}},
			{Match: "write_file", Cost: kernel.Unit / 10,
				Flow: []toolgate.FlowRule{{After: []string{"untrusted_input", "private_data"}, Reason: "no leaks"}}},
		}}
	r := newRig(t, cfg)
	cs, caller := r.connect(t, currentProtocol, nil, nil)
	in := func(conv any, tool string) *sdk.CallToolResult {
		p := &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"path": "x"}}
		if conv != nil {
			p.Meta = sdk.Meta{gatemcp.ConversationMetaKey: conv}
		}
		res, err := cs.CallTool(ctx, p)
		require.NoError(t, err)
		return res
	}
	require.False(t, in("A", "read_file").IsError)
	require.False(t, in("A", "search").IsError)
	res := in("A", "write_file")
	assert.True(t, res.IsError, "both labels in conversation A")
	assert.Contains(t, text(res), "no leaks")
	assert.False(t, in("B", "write_file").IsError, "conversation B is clean")
	assert.False(t, in(nil, "write_file").IsError, "no conversation: only labels attached with none")
	assert.False(t, in(42, "write_file").IsError, "a handle that is not a string names no conversation")
	assert.Equal(t, 3, r.tools.count("write_file"))
	replays(t, r.log, r.gate, caller)
}
