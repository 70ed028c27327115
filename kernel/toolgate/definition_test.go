package toolgate_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// TestDecisionsNameTheirDefinition: a call's Definition (the pinned hash
// of the tool's definition it is made against) is on its decision — the
// refusal entry, the kernel execution's tag definition:<hash>, the
// result entry — and a call without one writes none.
func TestDecisionsNameTheirDefinition(t *testing.T) {
	const def = "sha256:5555555555555555555555555555555555555555555555555555555555555555"
	log := newLog(t)
	g := newGate(t, log, testConfig())

	c := call("read_file", `{"path":"a"}`)
	c.Definition = def
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	assert.Equal(t, def, d.Call.Definition)
	x, err := kernel.DecodeEntry(entryAt(t, log, d.Seq))
	require.NoError(t, err)
	assert.True(t, slices.Contains(x.(kernel.ExecuteEntry).Action.Tags, "definition:"+def), "execution tags: %v", x.(kernel.ExecuteEntry).Action.Tags)
	out, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"x"`)})
	require.NoError(t, err)
	v, err := gatelog.Decode(entryAt(t, log, out.Seq))
	require.NoError(t, err)
	assert.Equal(t, def, v.(gatelog.Result).Definition)

	c = call("format_disk", `{}`)
	c.Definition = def
	d, err = g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, d.Verdict)
	v, err = gatelog.Decode(entryAt(t, log, d.Seq))
	require.NoError(t, err)
	assert.Equal(t, def, v.(gatelog.Refuse).Definition)

	d, err = g.Before(ctx, call("read_file", `{"path":"b"}`))
	require.NoError(t, err)
	x, err = kernel.DecodeEntry(entryAt(t, log, d.Seq))
	require.NoError(t, err)
	for _, tag := range x.(kernel.ExecuteEntry).Action.Tags {
		assert.NotContains(t, tag, "definition:")
	}
	out, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"x"`)})
	require.NoError(t, err)
	assert.NotContains(t, string(entryAt(t, log, out.Seq).Payload), "definition")
}
