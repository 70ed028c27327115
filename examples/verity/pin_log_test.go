package main

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// pinnedGateLog writes a log file as a host that pins definitions does:
// the server listed (pinned on first use), a call against the pin, a
// changed definition (drift; the call refused by the host before the
// gate), a re-pin by an approver, the call again against the new pin,
// a gate refusal naming it. forged, when set, is a definition the last
// call claims instead of its pin.
func pinnedGateLog(t *testing.T, forged string) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pins.trace")
	f, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(f)
	require.NoError(t, err)
	comp, err := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "read_file", Cost: kernel.Unit / 10},
		{Match: "write_file", Effect: toolgate.EffectRefuse, Reason: "read-only"},
	}}.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, comp)
	require.NoError(t, err)
	var state pin.State
	apply := func(next pin.State, out pin.Outcome) {
		for _, e := range out.Entries {
			_, err := log.Append(ctx, e.Kind, e.Payload)
			require.NoError(t, err)
		}
		state = next
	}
	list := func(defs ...string) {
		tools, err := pin.ParseTools([]byte(`{"tools":[` + defs[0] + `,` + defs[1] + `]}`))
		require.NoError(t, err)
		apply(state.Listed(pin.Listing{Server: "files", Tools: tools}))
	}
	call := func(tool, def string) toolgate.Decision {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "agent", Arguments: []byte(`{}`), Definition: def})
		require.NoError(t, err)
		if d.Verdict == toolgate.Allow {
			_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)})
			require.NoError(t, err)
		}
		return d
	}
	list(readTool, writeTool)
	h, err := state.Check("files", "read_file")
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, call("read_file", h).Verdict)

	list(readPoisoned, writeTool)
	_, err = state.Check("files", "read_file")
	require.Error(t, err, "the host refuses the changed tool before the gate")
	// The host records its refusal naming the pin it refused against.
	refusal := gatelog.Refuse{Session: "toolgate:agent", Caller: "agent", CallID: "drifted", Tool: "read_file", Reason: "definition",
		Explanation: err.Error(), ArgumentsSHA256: "x", Definition: hashOf(t, readTool)}
	_, err = log.Append(ctx, gatelog.KindRefuse, refusal.AppendJSON(nil))
	require.NoError(t, err)
	next, out, err := state.Repin(pin.Approval{Server: "files", Tool: "read_file", Old: hashOf(t, readTool), New: hashOf(t, readPoisoned),
		Approver: "alice", RequestedBy: "agent", Reason: "reviewed the new description"})
	require.NoError(t, err)
	apply(next, out)
	h, err = state.Check("files", "read_file")
	require.NoError(t, err)
	if forged != "" {
		h = forged
	}
	require.Equal(t, toolgate.Allow, call("read_file", h).Verdict)
	w, err := state.Check("files", "write_file")
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, call("write_file", w).Verdict)
	require.NoError(t, f.Close())
	return path
}

// TestInspectAndReplayShowPins: verity inspect shows the pin, the drift,
// the re-pin and the definition each decision trusted; verity replay
// rebuilds the pins and checks each decision's definition against them.
func TestInspectAndReplayShowPins(t *testing.T) {
	path := pinnedGateLog(t, "")
	r := verity(t, "inspect", path)
	require.Equal(t, exitOK, r.code, r.stderr)
	old, new, w := hashOf(t, readTool), hashOf(t, readPoisoned), hashOf(t, writeTool)
	assert.Contains(t, r.stdout, "pinned 2 tools of server files (first_use)")
	assert.Contains(t, r.stdout, "drift: tool read_file of server files changed: listed "+new+", pinned "+old)
	assert.Contains(t, r.stdout, "re-pinned tool read_file of server files: "+old+" → "+new+`, approved by "alice" (asked by "agent")`)
	assert.Regexp(t, `executed read_file \(exec [^)]+\) cost 0\.1 .*, definition `+old+`\n`, r.stdout)
	assert.Regexp(t, `executed read_file \(exec [^)]+\) cost 0\.1 .*, definition `+new+`\n`, r.stdout)
	assert.Regexp(t, `read_file call [^ ]+ for "agent" ok, .*, definition `+new+`\n`, r.stdout)
	assert.Regexp(t, `refused write_file call [^ ]+ for "agent" .*, definition `+w+`\n`, r.stdout)

	r = verity(t, "replay", path)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "pins: 3 entries, servers [files]; 4 decisions named a definition pinned when they were made")
	assert.Contains(t, r.stdout, "files/read_file "+new+" (re_pin by alice)")

	// A decision that names a definition not pinned at that moment — the
	// old one, after the re-pin — is a replay disagreement.
	r = verity(t, "replay", pinnedGateLog(t, old))
	assert.Equal(t, exitReplay, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, `execution`)
	assert.Contains(t, r.stderr, `of tool "read_file" was decided against definition `+old+", which is not pinned there")
}

// TestViewToolCallsNameTheirDefinition: the page's tool calls table
// names the definition each call was decided against.
func TestViewToolCallsNameTheirDefinition(t *testing.T) {
	base, _ := startView(t, pinnedGateLog(t, ""))
	var page callsPage
	getJSON(t, base+"api/calls", &page)
	var defs []string
	for _, r := range page.Rows {
		defs = append(defs, r.Tool+" "+r.Verdict+" "+r.Definition)
	}
	assert.Equal(t, []string{
		"read_file allowed " + hashOf(t, readTool),
		"read_file refused " + hashOf(t, readTool),
		"read_file allowed " + hashOf(t, readPoisoned),
		"write_file refused " + hashOf(t, writeTool),
	}, defs)
}

// TestViewPinnedCallsInChromium: the page shows, under each call's tool,
// the definition it was decided against, and the pin, drift and re-pin
// entries in the timeline.
func TestViewPinnedCallsInChromium(t *testing.T) {
	bin := chromium(t)
	base, _ := startView(t, pinnedGateLog(t, ""))
	dom := browse(t, bin, base, "--dump-dom")
	require.Contains(t, dom, `data-ready="true"`, "the page's script finished loading its data")
	assert.Regexp(t, `<td class="tool">read_file<div class="why definition" title="`+hashOf(t, readPoisoned)+`">definition sha256:[0-9a-f]{12}…</div></td><td class="verdict"><span class="v v-allowed">allowed</span>`, dom)
	assert.Equal(t, 4, count(dom, `class="why definition"`))
	assert.Contains(t, dom, "re-pinned tool read_file of server files")
}
