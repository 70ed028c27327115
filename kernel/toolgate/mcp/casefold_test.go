package mcp_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
)

// TestCaseFoldedMembersNeverReachTheTool: through the Guard, a tools/call
// whose arguments hold "path" and "Path" (a Go tool decoding them with
// encoding/json reads the last) is refused by a path rule, naming both
// members, and a call needing a human is refused rather than asked
// about; neither tool runs.
func TestCaseFoldedMembersNeverReachTheTool(t *testing.T) {
	cfg := catalogue(10 * kernel.Unit)
	cfg.Tools[0].Paths = []toolgate.PathCondition{{Argument: "/path", Under: []string{"/srv/data"}}}
	r := newRig(t, cfg)
	cs, _ := r.connect(t, currentProtocol, &answers{action: "accept"}, nil)

	for tool, want := range map[string]string{
		"read_file":   `the arguments are not one JSON value every reader reads the same way: members "Path" and "path" differ only in case`,
		"delete_file": `arguments a human cannot read one way: members "Path" and "path" differ only in case`,
	} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"path": "/srv/data/a", "Path": "/etc/passwd"}})
		require.NoError(t, err)
		assert.True(t, res.IsError, tool)
		assert.Contains(t, text(res), want)
		assert.Zero(t, r.tools.count(tool), "%s never ran", tool)
	}
	assert.False(t, call(t, cs, "read_file", "/srv/data/a").IsError)
	assert.Equal(t, 1, r.tools.count("read_file"))
}
