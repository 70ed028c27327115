package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/kernel/toolgate/pin"
	"github.com/verity-go/verity/trace"
)

// toolDef is a tool definition as a server would list it.
func toolDef(name, description string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object"}}`, name, description))
}

// page is a tools/list result of defs.
func page(defs ...json.RawMessage) json.RawMessage {
	parts := make([]string, len(defs))
	for i, d := range defs {
		parts[i] = string(d)
	}
	return json.RawMessage(`{"tools":[` + strings.Join(parts, ",") + `]}`)
}

func hashOf(t require.TestingT, def json.RawMessage) string {
	_, h, err := pin.HashDefinition(def)
	require.NoError(t, err)
	return h
}

// TestCallRunsOnlyAgainstAPinnedDefinition is the property of the
// issue, as a state machine against a naive model: for any sequence of
// listings (definitions changed, tools added and removed, pages read by
// clients), re-pins (right, stale, or by a principal whose call asked)
// and restarts over the same log, a call is let through exactly when the
// definition its tool was last listed with is the one pinned at that
// moment — and it is given that hash (Call.Definition) — and tools/list
// shows exactly those tools. The log verifies throughout.
func TestCallRunsOnlyAgainstAPinnedDefinition(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		log := trace.NewMemoryLog()
		ps, err := NewPins(ctx, log, PinOptions{Server: "s"})
		require.NoError(rt, err)
		names := []string{"a", "b", "c"}
		variants := []string{"one", "two", "three\u200b"}

		// The model: what is pinned, what was last listed (nil before
		// any listing), who asked for each drifted tool.
		var pinned map[string]string
		listed := map[string]string{}
		listedDefs := map[string]json.RawMessage{}
		asked := map[string][]string{}
		principals := []string{"", "alice", "bob"}

		allowed := func(tool string) (string, bool) {
			h, ok := pinned[tool]
			return h, ok && listed[tool] == h
		}
		check := func(rt *rapid.T) {
			for _, n := range append(names, "zz") {
				_, want := allowed(n)
				assert.Equal(rt, want, ps.Visible(n), "visible %s", n)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"list": func(rt *rapid.T) {
				var defs []json.RawMessage
				next := map[string]string{}
				nextDefs := map[string]json.RawMessage{}
				for _, n := range names {
					if rapid.Bool().Draw(rt, "listed "+n) {
						d := toolDef(n, rapid.SampledFrom(variants).Draw(rt, "variant "+n))
						defs = append(defs, d)
						next[n], nextDefs[n] = hashOf(rt, d), d
					}
				}
				require.NoError(rt, ps.Observe(ctx, []json.RawMessage{page(defs...)}, "", false, true))
				if pinned == nil {
					pinned = maps.Clone(next) // trusted on first use
				}
				for n := range asked {
					if next[n] != listed[n] {
						delete(asked, n)
					}
				}
				listed, listedDefs = next, nextDefs
			},
			"client page": func(rt *rapid.T) {
				if pinned == nil {
					rt.Skip("no listing yet")
				}
				// One client reads the first page of a paged listing, with
				// one tool: the rest as last listed.
				n := rapid.SampledFrom(names).Draw(rt, "tool")
				d := toolDef(n, rapid.SampledFrom(variants).Draw(rt, "variant"))
				first := json.RawMessage(`{"tools":[` + string(d) + `],"nextCursor":"2"}`)
				res, err := ps.listed(ctx, first, "", "", false)
				require.NoError(rt, err)
				if listed[n] != hashOf(rt, d) {
					delete(asked, n)
				}
				listed[n], listedDefs[n] = hashOf(rt, d), d
				_, want := allowed(n)
				assert.Equal(rt, want, strings.Contains(string(res.JSON), `"name":"`+n+`"`), "the page shows %s", n)
			},
			"call": func(rt *rapid.T) {
				n := rapid.SampledFrom(append(names, "zz")).Draw(rt, "tool")
				who := rapid.SampledFrom(principals).Draw(rt, "principal")
				h, err := ps.Definition(ctx, toolgate.Call{Tool: n, Caller: "c", Principal: toolgate.Principal{Subject: who}})
				want, ok := allowed(n)
				if ok {
					require.NoError(rt, err)
					assert.Equal(rt, want, h, "the call names the pinned definition")
					return
				}
				require.Error(rt, err)
				assert.Contains(rt, err.Error(), fmt.Sprintf("tool %q refused", n))
				if !contains(asked[n], toolgate.Principal{Subject: who}.Key()) {
					asked[n] = append(asked[n], toolgate.Principal{Subject: who}.Key())
				}
			},
			"repin": func(rt *rapid.T) {
				n := rapid.SampledFrom(names).Draw(rt, "tool")
				approver := rapid.SampledFrom([]string{"human", toolgate.Principal{Subject: "alice"}.Key()}).Draw(rt, "approver")
				stale := rapid.Bool().Draw(rt, "stale")
				old, seen := pinned[n], listed[n]
				if stale {
					seen = hashOf(rt, toolDef(n, "never listed"))
				}
				err := ps.Repin(ctx, n, old, seen, approver, "ok")
				_, ok := allowed(n)
				good := pinned != nil && !ok && listed[n] != "" && !stale && !contains(asked[n], approver)
				if !good {
					assert.Error(rt, err, "re-pin of %s refused", n)
					return
				}
				require.NoError(rt, err)
				pinned[n] = listed[n]
				delete(asked, n)
			},
			"restart": func(rt *rapid.T) {
				// A new process over the same log: the same pins and drift.
				var err error
				ps, err = NewPins(ctx, log, PinOptions{Server: "s"})
				require.NoError(rt, err)
				asked = map[string][]string{}
				if pinned != nil {
					// It lists the server again, as Attach does.
					var defs []json.RawMessage
					for _, n := range names {
						if d, ok := listedDefs[n]; ok {
							defs = append(defs, d)
						}
					}
					require.NoError(rt, ps.Observe(ctx, []json.RawMessage{page(defs...)}, "", false, true))
				}
			},
			"": check,
		})
		_, err = log.Verify(ctx)
		require.NoError(rt, err)
		for e, err := range log.Entries(ctx, 0) {
			require.NoError(rt, err)
			if strings.HasPrefix(e.Kind, "toolgate.") {
				_, derr := gatelog.Decode(e)
				require.NoError(rt, derr, "entry %d (%s) decodes", e.Seq, e.Kind)
			}
		}
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestUnreadableListingHidesEverything: a listing Pins cannot check (a
// tool listed twice, a definition that is not an object) hides and
// refuses every tool until a good one is read.
func TestUnreadableListingHidesEverything(t *testing.T) {
	ctx := context.Background()
	ps, err := NewPins(ctx, trace.NewMemoryLog(), PinOptions{Server: "s"})
	require.NoError(t, err)
	good := page(toolDef("a", "x"), toolDef("b", "y"))
	require.NoError(t, ps.Observe(ctx, []json.RawMessage{good}, "", false, true))
	require.True(t, ps.Visible("a"))
	for _, bad := range []json.RawMessage{page(toolDef("a", "x"), toolDef("a", "x")), json.RawMessage(`{"tools":[1]}`), json.RawMessage(`{`)} {
		require.Error(t, ps.Observe(ctx, []json.RawMessage{bad}, "", false, true), "%s", bad)
		assert.False(t, ps.Visible("a"))
		_, err := ps.Definition(ctx, toolgate.Call{Tool: "b"})
		assert.ErrorContains(t, err, "cannot be checked")
		require.NoError(t, ps.Observe(ctx, []json.RawMessage{good}, "", false, true))
		assert.True(t, ps.Visible("a"))
	}
}

// FuzzPinsListing: any tools/list page a client is given through Pins is
// either refused with an error or holds only tools whose definitions are
// pinned; nothing panics.
func FuzzPinsListing(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","description":"x","inputSchema":{"type":"object"}}]}`))
	f.Add([]byte(`{"tools":[{"name":"a","description":"changed","inputSchema":{"type":"object"}},{"name":"new"}],"nextCursor":"2"}`))
	f.Add([]byte(`{"tools":[{"name":"a"},{"name":"a"}]}`))
	f.Add([]byte(`{"tools":[{"name":"\udc00"}]}`))
	f.Add([]byte(`{"tools":{}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ctx := context.Background()
		ps, err := NewPins(ctx, trace.NewMemoryLog(), PinOptions{Server: "s"})
		require.NoError(t, err)
		require.NoError(t, ps.Observe(ctx, []json.RawMessage{page(toolDef("a", "x"), toolDef("b", "y"))}, "", false, true))
		pinnedA := hashOf(t, toolDef("a", "x"))
		res, err := ps.listed(ctx, raw, "", "", false)
		if err != nil {
			return
		}
		var out struct {
			Tools []json.RawMessage `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(res.JSON, &out))
		for _, d := range out.Tools {
			name, h, err := pin.HashDefinition(d)
			require.NoError(t, err, "a shown tool is a definition: %s", d)
			if name == "a" {
				assert.Equal(t, pinnedA, h, "a is shown only at its pin")
			} else {
				assert.Equal(t, "b", name, "only pinned tools are shown")
			}
		}
	})
}

// TestLockRepinsSurviveARestartWithTheSameLock: a proxy started again
// with the lock file its log last loaded keeps the re-pins made since;
// another lock file replaces them.
func TestLockRepinsSurviveARestartWithTheSameLock(t *testing.T) {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	a1, a2, b := toolDef("a", "one"), toolDef("a", "two"), toolDef("b", "x")
	lock := pin.Lock{Version: pin.LockVersion, Servers: map[string]pin.ServerLock{"s": {Tools: map[string]string{"a": hashOf(t, a1), "b": hashOf(t, b)}}}}
	open := func(l pin.Lock) *Pins {
		ps, err := NewPins(ctx, log, PinOptions{Server: "s", Lock: &l})
		require.NoError(t, err)
		require.NoError(t, ps.Observe(ctx, []json.RawMessage{page(a2, b)}, "", false, true))
		return ps
	}
	ps := open(lock)
	assert.False(t, ps.Visible("a"), "a changed from the lock")
	assert.True(t, ps.Visible("b"))
	require.NoError(t, ps.Repin(ctx, "a", hashOf(t, a1), hashOf(t, a2), "human", "ok"))
	assert.True(t, ps.Visible("a"))

	ps = open(lock)
	assert.True(t, ps.Visible("a"), "the same lock: the re-pin stands")
	locks := 0
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindPin {
			locks++
		}
	}
	assert.Equal(t, 1, locks, "the same lock is not recorded twice")

	other := pin.Lock{Version: pin.LockVersion, Servers: map[string]pin.ServerLock{"s": {Tools: map[string]string{"a": hashOf(t, a1)}}}}
	ps = open(other)
	assert.False(t, ps.Visible("a"), "another lock replaces the re-pin")
	assert.False(t, ps.Visible("b"), "and pins only what it names")

	_, err := NewPins(ctx, log, PinOptions{Server: "t", Lock: &other})
	assert.ErrorContains(t, err, `no server "t"`)
}

// TestHintedTierComesFromThePinnedDefinition: the tier a pinned hash's
// annotations imply is read from the definition with that hash, and
// Pins knows none for a hash it does not hold; a definition it cannot
// read, or one without hints, is DELETE (MCP's defaults).
func TestHintedTierComesFromThePinnedDefinition(t *testing.T) {
	ctx := context.Background()
	ps, err := NewPins(ctx, trace.NewMemoryLog(), PinOptions{Server: "s"})
	require.NoError(t, err)
	ro := json.RawMessage(`{"name":"read","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}`)
	mod := json.RawMessage(`{"name":"write","annotations":{"destructiveHint":false},"inputSchema":{"type":"object"}}`)
	plain := toolDef("plain", "x")
	require.NoError(t, ps.Observe(ctx, []json.RawMessage{page(ro, mod, plain)}, "", false, true))
	for _, tc := range []struct {
		tool string
		want string
	}{{"read", "READ_ONLY"}, {"write", "MODIFY"}, {"plain", "DELETE"}} {
		h, err := ps.Definition(ctx, toolgate.Call{Tool: tc.tool})
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(ps.HintedTier(h)), tc.tool)
		assert.Equal(t, tc.want, string(ps.HintedTier(h)), "cached: %s", tc.tool)
	}
	// The server now says "write" is read-only: a drift, refused, and its
	// new hint is never what a call is given.
	ro2 := json.RawMessage(`{"name":"write","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}}`)
	require.NoError(t, ps.Observe(ctx, []json.RawMessage{page(ro, ro2, plain)}, "", false, true))
	_, err = ps.Definition(ctx, toolgate.Call{Tool: "write"})
	require.Error(t, err)
	assert.Equal(t, "", string(ps.HintedTier("sha256:"+strings.Repeat("0", 64))), "a hash Pins does not hold")

	for def, want := range map[string]string{
		`{"annotations":{"readOnlyHint":false,"destructiveHint":false}}`: "MODIFY",
		`{"annotations":{"readOnlyHint":true,"destructiveHint":true}}`:   "READ_ONLY",
		`{"annotations":{"destructiveHint":true}}`:                       "DELETE",
		`{"annotations":{"readOnlyHint":"yes"}}`:                         "DELETE",
		`{"annotations":null}`:                                           "DELETE",
		`[]`:                                                             "DELETE",
	} {
		assert.Equal(t, want, string(tierOfAnnotations(json.RawMessage(def))), def)
	}
}
