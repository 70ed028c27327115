package mcp_test

// The Guard's guarantees and the tests that check them, all through the
// SDK's real client and server over in-memory transports:
//
//   - Allowed calls reach the tool and return its result: TestCallsPass.
//   - A refusal reaches the model as a tool result with IsError and the
//     gate's explanation, and the tool never runs: TestUnknownToolRefused,
//     TestBudgetRunsOutAndTheModelSeesWhy.
//   - A DELETE call is asked of the client's human, on the current protocol
//     (input-required results) and the last one before it (Elicit); it runs
//     once when approved and never when declined or cancelled:
//     TestDeleteRunsOnceWhenApproved, TestDeleteNeverRunsWhenRefused,
//     TestNoElicitationNoDelete; other approvers are still awaited:
//     TestOtherApproversStillAwaited; the human who approved is not asked
//     again while the others decide: TestHumanNotAskedAgainWhileOthersDecide;
//     of two identical calls put to the human at once, the one declined
//     after the other's answer decided the request is refused and never
//     runs on that approval: TestLateDeclineNeverRuns;
//     the input-required result on the wire and
//     its request state: TestInputRequiredResult, TestForgedStateRefused;
//     a state fits whatever the caller key, and one that would not is
//     never issued: TestLongCallerKeyApproves, TestOversizedStateRefused.
//   - Parallel calls never overspend: TestParallelCallsNeverOverspend (rapid).
//   - Every connection is its own caller: TestEachConnectionHasItsOwnBudget.
//   - The log verifies and each caller's kernel session replays from it:
//     replays(), called at the end of the tests above.

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

func TestCallsPass(t *testing.T) {
	r := newRig(t, catalogue(10*kernel.Unit))
	cs, caller := r.connect(t, currentProtocol, nil, nil)

	res := call(t, cs, "read_file", "notes.txt")
	assert.False(t, res.IsError, text(res))
	assert.Equal(t, "read_file notes.txt done", text(res))
	res = call(t, cs, "search", "x")
	assert.False(t, res.IsError, text(res))
	assert.Equal(t, 1, r.tools.count("read_file"))
	assert.Equal(t, 1, r.tools.count("search"))

	m, ok := r.gate.Meter(caller)
	require.True(t, ok)
	assert.Equal(t, kernel.Unit+kernel.Unit/10, m.Budget().Net(), "both calls charged to the connection's caller")

	// tools/list shows the tools the caller may call: the catalogue
	// refuses unknown tools, and format_disk is not in it.
	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"delete_file", "read_file", "search", "write_file"}, names)
	replays(t, r.log, r.gate, caller)
}

func TestUnknownToolRefused(t *testing.T) {
	r := newRig(t, catalogue(10*kernel.Unit))
	cs, caller := r.connect(t, currentProtocol, nil, nil)

	// format_disk is served, but not in the gate's catalogue.
	res := call(t, cs, "format_disk", "/")
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), `tool "format_disk" is not in the gate's catalogue`)
	assert.Zero(t, r.tools.count("format_disk"), "the tool never ran")

	// A tool the server does not have either is refused the same way,
	// as a tool result rather than a protocol error.
	res = call(t, cs, "rm_rf", "/")
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), `"rm_rf" is not in the gate's catalogue`)

	var refusals int
	for e, err := range r.log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindRefuse {
			refusals++
		}
	}
	assert.Equal(t, 2, refusals, "each refusal is on the log")
	_, err := r.log.Verify(ctx)
	require.NoError(t, err)
	_, started := r.gate.Meter(caller)
	assert.False(t, started, "no kernel session for a caller whose calls were all refused before the kernel")
}

func TestBudgetRunsOutAndTheModelSeesWhy(t *testing.T) {
	r := newRig(t, catalogue(2*kernel.Unit+kernel.Unit/2))
	cs, caller := r.connect(t, currentProtocol, nil, nil)

	for range 2 {
		res := call(t, cs, "search", "q")
		require.False(t, res.IsError, text(res))
	}
	res := call(t, cs, "search", "q")
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), `action "search" rejected: budget: cost 1, remaining 0.5`)
	assert.Equal(t, 2, r.tools.count("search"), "the third search never ran")

	// What still fits still runs.
	res = call(t, cs, "read_file", "a")
	assert.False(t, res.IsError, text(res))
	replays(t, r.log, r.gate, caller)
}

// protocols runs f on the current protocol and the last one before it.
func protocols(t *testing.T, f func(t *testing.T, version string)) {
	for _, v := range []string{currentProtocol, legacyProtocol} {
		name := v
		if name == "" {
			name = "current"
		}
		t.Run(name, func(t *testing.T) { f(t, v) })
	}
}

func TestDeleteRunsOnceWhenApproved(t *testing.T) {
	protocols(t, func(t *testing.T, version string) {
		r := newRig(t, catalogue(10*kernel.Unit))
		human := &answers{action: "accept"}
		cs, caller := r.connect(t, version, human, nil)

		res := call(t, cs, "delete_file", "old.log")
		require.False(t, res.IsError, text(res))
		assert.Equal(t, "delete_file old.log done", text(res))
		assert.Equal(t, 1, r.tools.count("delete_file"), "approved: it ran once")
		require.Len(t, human.questions(), 1, "the human was asked once")
		assertAskedVia(t, version, human, 1)
		assert.Contains(t, human.questions()[0], `Allow the DELETE tool call "delete_file" with arguments {"path":"old.log"}?`)
		assert.Empty(t, r.gate.Pending(), "the approval was used")

		// The next delete, even of the same file, is asked about again.
		res = call(t, cs, "delete_file", "old.log")
		require.False(t, res.IsError, text(res))
		assert.Equal(t, 2, r.tools.count("delete_file"))
		assert.Len(t, human.questions(), 2)
		replays(t, r.log, r.gate, caller)
	})
}

func TestDeleteNeverRunsWhenRefused(t *testing.T) {
	for _, action := range []string{"decline", "cancel"} {
		t.Run(action, func(t *testing.T) {
			protocols(t, func(t *testing.T, version string) {
				r := newRig(t, catalogue(10*kernel.Unit))
				human := &answers{action: action}
				cs, caller := r.connect(t, version, human, nil)

				res := call(t, cs, "delete_file", "prod.db")
				assert.True(t, res.IsError)
				assert.Contains(t, text(res), `approval): DELETE denied by human: `+action)
				assert.Zero(t, r.tools.count("delete_file"), "refused by the human: it never ran")
				assert.Len(t, human.questions(), 1)
				assertAskedVia(t, version, human, 1)
				assert.Empty(t, r.gate.Pending())

				// Other calls go on.
				res = call(t, cs, "read_file", "a")
				assert.False(t, res.IsError, text(res))
				replays(t, r.log, r.gate, caller)
			})
		})
	}
}

// assertAskedVia checks the way the human was asked n times: through
// input-required results on the current protocol, through
// elicitation/create requests before it.
func assertAskedVia(t *testing.T, version string, human *answers, n int) {
	t.Helper()
	if version == currentProtocol {
		assert.Zero(t, human.elicitRequests(), "the current protocol asks through input-required results")
	} else {
		assert.Equal(t, n, human.elicitRequests(), "the legacy protocol asks with elicitation/create")
	}
}

func TestNoElicitationNoDelete(t *testing.T) {
	protocols(t, func(t *testing.T, version string) {
		r := newRig(t, catalogue(10*kernel.Unit))
		cs, _ := r.connect(t, version, nil, nil)

		res := call(t, cs, "delete_file", "x")
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), `tool "delete_file" needs a human's approval (DELETE) and this client cannot ask for one`)
		assert.Zero(t, r.tools.count("delete_file"))
		// The request stays pending: a host may still approve it out of band.
		assert.Len(t, r.gate.Pending(), 1)
	})
}

// TestInputRequiredResult checks the current protocol's approval on the
// wire with the client's automatic retry turned off: the result needs
// input, asks the human the gate's question under InputKey, and the retry
// that echoes the request state with the answer runs the call once.
func TestInputRequiredResult(t *testing.T) {
	r := newRig(t, catalogue(10*kernel.Unit))
	cs, caller := r.connect(t, currentProtocol, &answers{action: "accept"},
		&sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})

	args := map[string]any{"path": "tmp/x"}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: args})
	require.NoError(t, err)
	require.True(t, res.NeedsInput(), "the result type is input_required")
	assert.False(t, res.IsError)
	assert.Empty(t, res.Content)
	ask, ok := res.InputRequests[gatemcp.InputKey].(*sdk.ElicitParams)
	require.True(t, ok, "the approval is an elicitation: %#v", res.InputRequests)
	assert.Equal(t, "form", ask.Mode)
	pending := r.gate.Pending()
	require.Len(t, pending, 1)
	assert.Equal(t, pending[0].Question, ask.Message)
	assert.NotEmpty(t, res.RequestState)
	assert.Zero(t, r.tools.count("delete_file"))

	// The wire form names the result type.
	wire, err := json.Marshal(res)
	require.NoError(t, err)
	assert.Contains(t, string(wire), `"resultType":"input_required"`)

	// Retry with the answer.
	retry := &sdk.CallToolParams{Name: "delete_file", Arguments: args, RequestState: res.RequestState,
		InputResponses: sdk.InputResponseMap{gatemcp.InputKey: &sdk.ElicitResult{Action: "accept"}}}
	res, err = cs.CallTool(ctx, retry)
	require.NoError(t, err)
	require.False(t, res.IsError, text(res))
	assert.False(t, res.NeedsInput())
	assert.Equal(t, 1, r.tools.count("delete_file"))

	// Replaying the same retry does not run it again: the state was
	// used, so the retry is refused as a replay (a JSON-RPC error,
	// -32602); the answer is recorded and refused, and asks nobody.
	_, err = cs.CallTool(ctx, retry)
	requireStateError(t, err, "used already")
	assert.Equal(t, 1, r.tools.count("delete_file"), "a replayed answer never runs a call twice")
	assert.Empty(t, r.gate.Pending(), "a replayed answer asks nobody")
	replays(t, r.log, r.gate, caller)
}

// TestForgedStateRefused: a request state the Guard did not issue, or
// issued for another call, refuses the call.
func TestForgedStateRefused(t *testing.T) {
	r := newRig(t, catalogue(10*kernel.Unit))
	cs, _ := r.connect(t, currentProtocol, &answers{action: "accept"},
		&sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "a"}})
	require.NoError(t, err)
	require.True(t, res.NeedsInput())
	yes := sdk.InputResponseMap{gatemcp.InputKey: &sdk.ElicitResult{Action: "accept"}}

	cases := map[string]*sdk.CallToolParams{
		"other arguments": {Name: "delete_file", Arguments: map[string]any{"path": "b"}, RequestState: res.RequestState, InputResponses: yes},
		"other tool":      {Name: "read_file", Arguments: map[string]any{"path": "a"}, RequestState: res.RequestState, InputResponses: yes},
		"tampered":        {Name: "delete_file", Arguments: map[string]any{"path": "a"}, RequestState: res.RequestState[:len(res.RequestState)-2] + "AA", InputResponses: yes},
		"made up":         {Name: "delete_file", Arguments: map[string]any{"path": "a"}, RequestState: "vg2.e30AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", InputResponses: yes},
		"old format":      {Name: "delete_file", Arguments: map[string]any{"path": "a"}, RequestState: "vg1.e30.AAAA", InputResponses: yes},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := cs.CallTool(ctx, p)
			requireStateError(t, err, "invalid request state")
		})
	}
	assert.Zero(t, r.tools.count("delete_file"))
	assert.Zero(t, r.tools.count("read_file"))

	// An answer without the state is no answer: the gate asks.
	got, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "a"}, InputResponses: yes})
	require.NoError(t, err)
	assert.True(t, got.NeedsInput())
	assert.Zero(t, r.tools.count("delete_file"))
}

// TestOtherApproversStillAwaited: when the policy names approvers besides
// the client's human, the human's approval is recorded and the call waits
// for the others; it does not run.
func TestOtherApproversStillAwaited(t *testing.T) {
	protocols(t, func(t *testing.T, version string) {
		cfg := catalogue(10 * kernel.Unit)
		cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {toolgate.DefaultApprover, "ops"}}
		r := newRig(t, cfg)
		cs, _ := r.connect(t, version, &answers{action: "accept"}, nil)

		res := call(t, cs, "delete_file", "x")
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), `tool "delete_file": approved here, still awaiting ops`)
		assert.Zero(t, r.tools.count("delete_file"))
		pending := r.gate.Pending()
		require.Len(t, pending, 1)
		assert.Equal(t, []string{"ops"}, pending[0].Awaiting)

		// Once ops approves out of band, the same call runs, once.
		granted, err := r.gate.Approve(ctx, pending[0].ID, "ops", "ok")
		require.NoError(t, err)
		require.True(t, granted)
		res = call(t, cs, "delete_file", "x")
		assert.False(t, res.IsError, text(res))
		assert.Equal(t, 1, r.tools.count("delete_file"))
	})
}

// TestHumanNotAskedAgainWhileOthersDecide: with approvers [human, bob],
// once the human has approved, the same call again is refused as
// awaiting bob, without asking the human a second time (whose second
// answer the gate could not take), and it runs once bob approves.
func TestHumanNotAskedAgainWhileOthersDecide(t *testing.T) {
	protocols(t, func(t *testing.T, version string) {
		cfg := catalogue(10 * kernel.Unit)
		cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {toolgate.DefaultApprover, "bob"}}
		r := newRig(t, cfg)
		human := &answers{action: "accept"}
		cs, caller := r.connect(t, version, human, nil)

		res := call(t, cs, "delete_file", "x")
		require.True(t, res.IsError)
		assert.Contains(t, text(res), "approved here, still awaiting bob")
		require.Len(t, human.questions(), 1)

		// The human would decline now, but has answered already: the call
		// waits for bob and the human is not asked.
		human.setAction("decline")
		for range 2 {
			res = call(t, cs, "delete_file", "x")
			assert.True(t, res.IsError)
			assert.Equal(t, `tool "delete_file": awaiting approval from bob`, text(res))
		}
		assert.Len(t, human.questions(), 1, "the human answered already: never asked again")
		assertAskedVia(t, version, human, 1)
		assert.Zero(t, r.tools.count("delete_file"))
		pending := r.gate.Pending()
		require.Len(t, pending, 1, "the request stays pending for bob")
		assert.Equal(t, []string{"bob"}, pending[0].Awaiting)

		granted, err := r.gate.Approve(ctx, pending[0].ID, "bob", "ok")
		require.NoError(t, err)
		require.True(t, granted)
		res = call(t, cs, "delete_file", "x")
		assert.False(t, res.IsError, text(res))
		assert.Equal(t, 1, r.tools.count("delete_file"))
		assert.Len(t, human.questions(), 1)
		replays(t, r.log, r.gate, caller)
	})
}

// twoPrompts makes two identical delete_file calls at once, both put to
// the client's human before either is answered. The first question is
// answered with first and its call runs to its end; then between(first
// call's result) runs, and the second question is answered with second
// (any further question too). It returns the two calls' results in the
// order they ended.
func twoPrompts(t *testing.T, r *rig, version, first, second string, between func(*sdk.CallToolResult)) (*answers, [2]*sdk.CallToolResult) {
	t.Helper()
	asked2, release := make(chan struct{}), make(chan struct{})
	human := &answers{script: func(n int) string {
		switch n {
		case 0:
			select { // both calls wait on the same request before either answer
			case <-asked2:
			case <-time.After(10 * time.Second):
				t.Error("the second call was never put to the human")
			}
			return first
		case 1:
			close(asked2)
			select {
			case <-release:
			case <-time.After(10 * time.Second):
				t.Error("the second answer was never released")
			}
		}
		return second
	}}
	cs, _ := r.connect(t, version, human, nil)
	results := make(chan *sdk.CallToolResult, 2)
	for range 2 {
		go func() {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "x"}})
			if err != nil {
				t.Error(err)
				res = &sdk.CallToolResult{IsError: true}
			}
			results <- res
		}()
	}
	var out [2]*sdk.CallToolResult
	out[0] = <-results
	between(out[0])
	close(release)
	out[1] = <-results
	return human, out
}

// TestLateDeclineNeverRuns: two identical calls at once share one
// approval request, and both are put to the human. An answer that comes
// after the request was decided, or after the human's own first answer,
// cannot be recorded: it is logged, and when it is a decline its call is
// refused — never run on the other answer's approval.
func TestLateDeclineNeverRuns(t *testing.T) {
	const late = `tool "delete_file" denied by human: declined (after another answer to the same request)`
	setup := func(t *testing.T, approvers ...string) (*rig, *records) {
		cfg := catalogue(10 * kernel.Unit)
		if len(approvers) > 0 {
			cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: approvers}
		}
		rec := &records{}
		return newRigWith(t, cfg, gatemcp.Options{Logger: slog.New(rec)}), rec
	}
	t.Run("after an approval", func(t *testing.T) {
		protocols(t, func(t *testing.T, version string) {
			r, rec := setup(t)
			human, res := twoPrompts(t, r, version, "accept", "decline", func(first *sdk.CallToolResult) {
				assert.False(t, first.IsError, "the approved call ran: %s", text(first))
			})
			assert.True(t, res[1].IsError)
			assert.Equal(t, late, text(res[1]))
			assert.Equal(t, 1, r.tools.count("delete_file"), "the approved call ran once, the declined one never")
			assert.Len(t, human.questions(), 2, "neither call was asked again")
			assert.Empty(t, r.gate.Pending())
			assert.Len(t, rec.matching("WARN", "answer refused: not recorded", "answer=decline"), 1)
		})
	})
	t.Run("after the others approved", func(t *testing.T) {
		protocols(t, func(t *testing.T, version string) {
			r, rec := setup(t, toolgate.DefaultApprover, "bob")
			_, res := twoPrompts(t, r, version, "accept", "decline", func(first *sdk.CallToolResult) {
				assert.Equal(t, `tool "delete_file": approved here, still awaiting bob`, text(first))
				pending := r.gate.Pending()
				require.Len(t, pending, 1)
				granted, err := r.gate.Approve(ctx, pending[0].ID, "bob", "ok")
				require.NoError(t, err)
				require.True(t, granted)
			})
			assert.Equal(t, late, text(res[1]))
			assert.Zero(t, r.tools.count("delete_file"), "the declined call never ran on the human's and bob's approval")
			assert.Len(t, rec.matching("WARN", "answer refused: not recorded", "answer=decline"), 1)
		})
	})
	t.Run("while the others are awaited", func(t *testing.T) {
		protocols(t, func(t *testing.T, version string) {
			r, rec := setup(t, toolgate.DefaultApprover, "bob")
			_, res := twoPrompts(t, r, version, "accept", "decline", func(first *sdk.CallToolResult) {
				assert.Equal(t, `tool "delete_file": approved here, still awaiting bob`, text(first))
			})
			assert.Equal(t, late, text(res[1]))
			assert.Zero(t, r.tools.count("delete_file"))
			assert.Len(t, rec.matching("WARN", "answer refused: not recorded", "answer=decline"), 1)
			pending := r.gate.Pending()
			require.Len(t, pending, 1, "the human's first answer stands; bob is awaited")
			assert.Equal(t, []string{"bob"}, pending[0].Awaiting)
		})
	})
}

// TestLongCallerKeyApproves: the request state binds the caller by its
// SHA-256, so however long the caller key (a custom Options.Caller), the
// state stays under the size a retry may echo, and the approval works.
func TestLongCallerKeyApproves(t *testing.T) {
	key := strings.Repeat("tenant/", 1000) + "alice"
	r := newRigWith(t, catalogue(10*kernel.Unit), gatemcp.Options{
		Caller: func(context.Context, *sdk.CallToolRequest) string { return key }})
	human := &answers{action: "accept"}
	cs, _ := r.connect(t, currentProtocol, human, nil)

	res := call(t, cs, "delete_file", "x")
	require.False(t, res.IsError, text(res))
	assert.Equal(t, 1, r.tools.count("delete_file"))
	assert.Len(t, human.questions(), 1)
	replays(t, r.log, r.gate, key)
}

// TestOversizedStateRefused: a request state over the size a retry may
// echo (here from the gate's ids) is never issued: the call is refused
// and says why, rather than asked about and refused on every retry.
func TestOversizedStateRefused(t *testing.T) {
	long := func() string { return strings.Repeat("i", 3000) + uuid.NewString() }
	r := newRigWith(t, catalogue(10*kernel.Unit), gatemcp.Options{}, toolgate.WithIDs(long))
	human := &answers{action: "accept"}
	cs, _ := r.connect(t, currentProtocol, human, nil)

	res := call(t, cs, "delete_file", "x")
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), `tool "delete_file" needs a human's approval (DELETE) and cannot ask for it: toolgate/mcp: request state of `)
	assert.Contains(t, text(res), "bytes, over the 4096 a retry may echo")
	assert.Empty(t, human.questions(), "never asked")
	assert.Zero(t, r.tools.count("delete_file"))
}

func TestEachConnectionHasItsOwnBudget(t *testing.T) {
	r := newRig(t, catalogue(kernel.Unit))
	a, ka := r.connect(t, currentProtocol, nil, nil)
	b, kb := r.connect(t, legacyProtocol, nil, nil)
	require.NotEqual(t, ka, kb)

	assert.False(t, call(t, a, "search", "q").IsError)
	assert.True(t, call(t, a, "search", "q").IsError, "a's budget is spent")
	assert.False(t, call(t, b, "search", "q").IsError, "b has its own")
	replays(t, r.log, r.gate, ka)
	replays(t, r.log, r.gate, kb)
}

// TestParallelCallsNeverOverspend (T1 through MCP): however many calls a
// client makes at once, with whatever costs, the calls that run never
// cost more than the budget, every call that ran was charged and every
// call charged ran, and the log replays to the same spend.
func TestParallelCallsNeverOverspend(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		budget := kernel.Cost(rapid.IntRange(1, 40).Draw(t, "budget_tenths")) * kernel.Unit / 10
		costs := map[string]kernel.Cost{}
		cfg := toolgate.Policy{Budget: budget, MinCost: kernel.Unit / 100}
		for _, name := range []string{"read_file", "write_file", "search"} {
			c := kernel.Cost(rapid.IntRange(1, 20).Draw(t, "cost_"+name)) * kernel.Unit / 10
			costs[name] = c
			cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: name, Cost: c})
		}
		r := newRig(t, cfg)
		cs, caller := r.connect(t, currentProtocol, nil, nil)

		calls := rapid.SliceOfN(rapid.SampledFrom([]string{"read_file", "write_file", "search"}), 1, 24).Draw(t, "calls")
		var wg sync.WaitGroup
		results := make([]*sdk.CallToolResult, len(calls))
		for i, name := range calls {
			wg.Go(func() {
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"path": "p"}})
				if err != nil {
					t.Errorf("call %d: %v", i, err)
					return
				}
				results[i] = res
			})
		}
		wg.Wait()

		var spent kernel.Cost
		ran := 0
		for i, res := range results {
			if res == nil {
				t.Fatalf("call %d has no result", i)
			}
			if !res.IsError {
				spent += costs[calls[i]]
				ran++
			} else if !assert.Contains(t, text(res), "budget") {
				t.Fatalf("call %d refused for another reason: %s", i, text(res))
			}
		}
		if spent > budget {
			t.Fatalf("overspent: %s of %s", spent, budget)
		}
		if got := r.tools.total(); got != ran {
			t.Fatalf("the tools ran %d times, %d calls were allowed", got, ran)
		}
		if m, ok := r.gate.Meter(caller); ok {
			if m.Budget().Net() != spent {
				t.Fatalf("the gate charged %s, the allowed calls cost %s", m.Budget().Net(), spent)
			}
			replays(t, r.log, r.gate, caller)
		} else if ran > 0 {
			t.Fatalf("calls ran without a kernel session")
		}
	})
}

func TestNewRefusesShortStateKey(t *testing.T) {
	g, err := toolgate.New(ctx, trace.NewMemoryLog(), mustCompile(catalogue(kernel.Unit)))
	require.NoError(t, err)
	_, err = gatemcp.New(g, gatemcp.Options{StateKey: []byte("short")})
	assert.ErrorContains(t, err, "state key of 5 bytes")
	_, err = gatemcp.New(nil, gatemcp.Options{})
	assert.Error(t, err)
}

// requireStateError checks that err is the JSON-RPC error a retry with a
// request state that fails verification gets: -32602, saying why.
func requireStateError(t tb, err error, why string) {
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
	require.Contains(t, werr.Message, why)
	require.NotContains(t, werr.Message, "\n", "one line")
}
