package adk_test

// The adapter's guarantees and the tests that check them, each driving the
// real ADK runner with a scripted fake model:
//
//   - An allowed call runs once, its result reaches the model and the gate
//     records it: TestAllowedCallRuns.
//   - A refusal is the tool's result the model reads next: TestBudgetRefusalReachesModel,
//     TestUnknownToolRefused, TestGateErrorRefuses; it is no tool failure
//     to ADK's OnToolError callbacks: TestRefusalSkipsOnToolErrorCallbacks.
//   - A DELETE-tier call waits for ADK's confirmation, runs once when
//     confirmed and never when rejected: TestDeleteRunsOnceWhenConfirmed,
//     TestDeleteNeverRunsWhenRejected, also across a restart:
//     TestConfirmationAfterRestart; with two approvers, the second
//     approves through the gate: TestSecondApproverThroughTheGate.
//   - The plugin guards every agent of a runner; plugin and callbacks
//     together decide a call once: TestPluginGuardsEveryAgent,
//     TestPluginAndCallbacksDecideOnce.
//   - Concurrent calls of one model turn never overspend and never fork
//     the log: TestConcurrentToolCallsNeverOverspend (rapid).
//   - The log verifies and replays, also after a restart over a file:
//     TestLogVerifiesAndReplays (and checkLog in every test).
//   - The decision is on ADK's tool span: TestDecisionOnToolSpan.
//   - A tool's own confirmation request is not charged:
//     TestToolsOwnConfirmationNotCharged.
//   - The guard never panics nor answers ADK with an error, whatever the
//     call: FuzzGuard.

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/plugin"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/adk"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

func TestAllowedCallRuns(t *testing.T) {
	w := newWorld(t, setup{}, []*genai.FunctionCall{call("c1", "read_file", map[string]any{"path": "/etc/motd"})})
	events := w.say(t, "read the motd")

	assert.EqualValues(t, 1, w.tools.reads.Load(), "the tool ran once")
	resp := functionResponses(events, "read_file")
	require.Len(t, resp, 1)
	assert.Equal(t, "read", resp[0]["done"])
	reqs := w.model.requests()
	require.Len(t, reqs, 2)
	assert.Equal(t, `read_file={"done":"read","path":"/etc/motd"}`, reqs[1], "the model read the tool's result")

	es := entries(t, w.log)
	k := kinds(es)
	assert.Equal(t, 1, k["kernel.execute"])
	assert.Equal(t, 1, k[gatelog.KindResult])
	var res gatelog.Result
	for _, e := range es {
		if e.Kind == gatelog.KindResult {
			require.NoError(t, jsonUnmarshal(e.Payload, &res))
		}
	}
	assert.Equal(t, "c1", res.CallID)
	assert.True(t, res.OK)
	assert.Equal(t, `{"done":"read","path":"/etc/motd"}`, res.OutputText, "the output is the result map's JSON")
	assert.Equal(t, w.caller(), res.Caller, "the caller is the ADK session")
	checkLog(t, w.log, w.gate, w.caller())
}

func TestBudgetRefusalReachesModel(t *testing.T) {
	cfg := testConfig()
	cfg.Budget = units(5) // one send (3 units) fits, the second does not
	w := newWorld(t, setup{cfg: cfg},
		[]*genai.FunctionCall{call("s1", "send", map[string]any{"path": "bob"})},
		[]*genai.FunctionCall{call("s2", "send", map[string]any{"path": "carol"})})
	w.say(t, "send to bob")
	events := w.say(t, "send to carol")

	assert.EqualValues(t, 1, w.tools.sends.Load(), "the refused call never ran")
	resp := functionResponses(events, "send")
	require.Len(t, resp, 1)
	explanation, _ := resp[0]["error"].(string)
	assert.Contains(t, explanation, "budget", "the refusal names the budget")
	assert.Contains(t, explanation, `action "send" rejected`)
	reqs := w.model.requests()
	assert.Equal(t, `send={"error":`+quoteJSON(explanation)+`}`, reqs[len(reqs)-1],
		"the model's next input holds the gate's explanation")
	assert.Equal(t, 1, kinds(entries(t, w.log))["kernel.reject"])
	checkLog(t, w.log, w.gate, w.caller())
}

func TestUnknownToolRefused(t *testing.T) {
	cfg := testConfig()
	cfg.Tools = cfg.Tools[:1] // only read_file is known
	w := newWorld(t, setup{cfg: cfg}, []*genai.FunctionCall{call("x", "send", map[string]any{"path": "bob"})})
	events := w.say(t, "send")
	assert.Zero(t, w.tools.sends.Load())
	resp := functionResponses(events, "send")
	require.Len(t, resp, 1)
	assert.Equal(t, `tool "send" is not in the gate's catalogue`, resp[0]["error"])
	assert.Equal(t, 1, kinds(entries(t, w.log))[gatelog.KindRefuse])
}

func TestGateErrorRefuses(t *testing.T) {
	store := &failingStore{Memory: trace.NewMemory()}
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	w := newWorld(t, setup{log: log}, []*genai.FunctionCall{call("c1", "read_file", map[string]any{"path": "/x"})})
	store.fail.Store(true)
	events := w.say(t, "read")
	assert.Zero(t, w.tools.reads.Load(), "nothing runs that the log does not hold")
	resp := functionResponses(events, "read_file")
	require.Len(t, resp, 1)
	assert.Contains(t, resp[0]["error"], "disk full")
	assert.Contains(t, resp[0]["error"], `tool "read_file" was not run`)
}

func TestDeleteRunsOnceWhenConfirmed(t *testing.T) {
	del := map[string]any{"path": "/tmp/old"}
	w := newWorld(t, setup{},
		[]*genai.FunctionCall{call("d1", "delete_file", del)},
		[]*genai.FunctionCall{call("d2", "delete_file", del)})
	events := w.say(t, "delete /tmp/old")

	assert.Zero(t, w.tools.deletes.Load(), "nothing ran before the human answered")
	reqs := confirmationRequests(events)
	require.Len(t, reqs, 1, "ADK asks for confirmation")
	pending := w.gate.Pending()
	require.Len(t, pending, 1)
	tc, ok := reqs[0].Args["toolConfirmation"]
	require.True(t, ok)
	hint, payload := confirmationFields(t, tc)
	assert.Equal(t, pending[0].Question, hint, "the hint is the gate's question")
	assert.Equal(t, pending[0].ID, payload["approval_id"])
	assert.Equal(t, string(claims.TierDelete), payload["tier"])
	assert.Len(t, w.model.requests(), 1, "the turn stopped at the question")
	ss := toolSpans(w.caller())
	require.NotEmpty(t, ss)
	v, _ := spanAttr(ss[0], string(adk.AttrVerdict))
	assert.Equal(t, "ask_approval", v)
	seq, ok := spanAttr(ss[0], string(adk.AttrSeq))
	require.True(t, ok)
	assert.Equal(t, claims.KindEvaluate, entries(t, w.log)[atoi(t, seq)].Kind, "the span names the request's claims entry")

	events = w.confirm(t, reqs[0].ID, true)
	assert.EqualValues(t, 1, w.tools.deletes.Load(), "a confirmed call runs once")
	resp := functionResponses(events, "delete_file")
	require.Len(t, resp, 1)
	assert.Equal(t, "deleted", resp[0]["done"])
	assert.Empty(t, w.gate.Pending())

	// The approval was used: the same call asks again.
	events = w.say(t, "and again")
	assert.EqualValues(t, 1, w.tools.deletes.Load())
	assert.Len(t, confirmationRequests(events), 1)

	es := entries(t, w.log)
	var execs []kernel.Record
	for _, e := range es {
		if e.Kind == "kernel.execute" {
			r, err := kernel.DecodeEntry(e)
			require.NoError(t, err)
			execs = append(execs, r.(kernel.ExecuteEntry).Record)
		}
	}
	require.Len(t, execs, 1)
	assert.Contains(t, strings.Join(execs[0].Action.Tags, " "), "approval:"+pending[0].ID, "the execution names the approval")
	assert.Contains(t, strings.Join(execs[0].Action.Tags, " "), "call:d1", "under ADK's function call id")
	assert.Equal(t, 1, kinds(es)["claims.approve"], "the confirmation is the claims approval")
	checkLog(t, w.log, w.gate, w.caller())
}

func TestDeleteNeverRunsWhenRejected(t *testing.T) {
	w := newWorld(t, setup{}, []*genai.FunctionCall{call("d1", "delete_file", map[string]any{"path": "/"})})
	events := w.say(t, "delete everything")
	reqs := confirmationRequests(events)
	require.Len(t, reqs, 1)

	events = w.confirm(t, reqs[0].ID, false)
	assert.Zero(t, w.tools.deletes.Load(), "a rejected call never runs")
	resp := functionResponses(events, "delete_file")
	require.Len(t, resp, 1)
	explanation, _ := resp[0]["error"].(string)
	assert.Contains(t, explanation, "denied by "+toolgate.DefaultApprover)
	last := w.model.requests()
	assert.Contains(t, last[len(last)-1], "denied by human", "the model reads the denial")
	assert.Empty(t, w.gate.Pending())
	assert.Equal(t, 1, kinds(entries(t, w.log))[gatelog.KindRefuse])
	checkLog(t, w.log, w.gate, w.caller())
}

func TestPluginGuardsEveryAgent(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	guard, err := adk.New(g)
	require.NoError(t, err)
	ts := &tools{}

	workerModel := newScript("worker-model", []*genai.FunctionCall{
		call("w1", "read_file", map[string]any{"path": "/w"}),
		call("w2", "send", map[string]any{"path": "dave"}),
	})
	worker, err := llmagent.New(llmagent.Config{Name: "worker", Description: "does the work", Model: workerModel, Tools: ts.list(t)})
	require.NoError(t, err)
	rootModel := newScript("root-model", []*genai.FunctionCall{
		call("r1", "read_file", map[string]any{"path": "/r"}),
		call("r2", "transfer_to_agent", map[string]any{"agent_name": "worker"}),
	})
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: rootModel, Tools: ts.list(t), SubAgents: []agent.Agent{worker}})
	require.NoError(t, err)
	p, err := guard.Plugin()
	require.NoError(t, err)
	r, err := runner.New(runner.Config{AppName: appName, Agent: root, SessionService: session.InMemoryService(),
		AutoCreateSession: true, PluginConfig: runner.PluginConfig{Plugins: []*plugin.Plugin{p}}})
	require.NoError(t, err)

	sess := sessionName(t)
	for _, err := range r.Run(context.Background(), userID, sess, genai.NewContentFromText("go", genai.RoleUser), agent.RunConfig{}) {
		require.NoError(t, err)
	}
	assert.EqualValues(t, 2, ts.reads.Load(), "both agents read")
	assert.EqualValues(t, 1, ts.sends.Load(), "the worker sent")

	caller := adk.SessionCaller(appName, userID, sess)
	var gated []string
	for _, e := range entries(t, log) {
		if e.Kind == gatelog.KindResult {
			var res gatelog.Result
			require.NoError(t, jsonUnmarshal(e.Payload, &res))
			assert.Equal(t, caller, res.Caller, "one session, one caller")
			gated = append(gated, res.CallID)
		}
	}
	assert.ElementsMatch(t, []string{"r1", "r2", "w1", "w2"}, gated, "every call of every agent went through the gate")
	m, ok := g.Meter(caller)
	require.True(t, ok)
	assert.Equal(t, kernel.Unit/10*2+kernel.Unit/100+units(3), m.Budget().Net(), "one budget for the runner's agents")
	checkLog(t, log, g, caller)
}

func TestPluginAndCallbacksDecideOnce(t *testing.T) {
	w := newWorld(t, setup{both: true}, []*genai.FunctionCall{
		call("a", "read_file", map[string]any{"path": "/a"}),
		call("b", "read_file", map[string]any{"path": "/b"}),
	})
	w.say(t, "read both")
	assert.EqualValues(t, 2, w.tools.reads.Load())
	k := kinds(entries(t, w.log))
	assert.Equal(t, 2, k["kernel.execute"], "each call decided once")
	assert.Equal(t, 2, k[gatelog.KindResult], "each result recorded once")
	assert.Zero(t, k[gatelog.KindRefuse])
	checkLog(t, w.log, w.gate, w.caller())
}

func TestLogVerifiesAndReplays(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.log")
	open := func() *trace.Log {
		f, err := trace.OpenFile(path, trace.FileOptions{})
		require.NoError(t, err)
		log, err := trace.NewLog(f)
		require.NoError(t, err)
		return log
	}
	cfg := testConfig()
	cfg.Budget = units(4)
	log := open()
	w := newWorld(t, setup{cfg: cfg, log: log}, []*genai.FunctionCall{
		call("s1", "send", map[string]any{"path": "bob"}),
		call("r1", "read_file", map[string]any{"path": "/a"}),
	})
	w.say(t, "send and read")
	checkLog(t, log, w.gate, w.caller())
	spent, _ := w.gate.Meter(w.caller())
	require.NoError(t, log.Close())

	// A restarted process: the file verifies as it opens, each caller's
	// session replays, and the gate resumes the spend.
	log = open()
	defer log.Close()
	_, err := trace.VerifyStore(context.Background(), mustStore(t, path))
	require.NoError(t, err)
	g := newGate(t, log, cfg)
	s, err := kernel.Replay(context.Background(), log, g.Kernel(), g.SessionID(w.caller()))
	require.NoError(t, err)
	assert.Equal(t, spent.Budget().Net(), s.Meter().Budget().Net())

	guard, err := adk.New(g)
	require.NoError(t, err)
	m := newScript("again", []*genai.FunctionCall{call("s2", "send", map[string]any{"path": "carol"})})
	cfgA := llmagent.Config{Name: "assistant", Model: m, Tools: w.tools.list(t)}
	guard.Install(&cfgA)
	a, err := llmagent.New(cfgA)
	require.NoError(t, err)
	r, err := runner.New(runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	var events []*session.Event
	for ev, err := range r.Run(context.Background(), userID, w.session, genai.NewContentFromText("send", genai.RoleUser), agent.RunConfig{}) {
		require.NoError(t, err)
		events = append(events, ev)
	}
	assert.EqualValues(t, 1, w.tools.sends.Load(), "the resumed budget refuses the second send")
	resp := functionResponses(events, "send")
	require.Len(t, resp, 1)
	assert.Contains(t, resp[0]["error"], "budget")
	checkLog(t, log, g, w.caller())
}

func mustStore(t *testing.T, path string) *trace.File {
	t.Helper()
	f, err := trace.OpenFileReadOnly(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestDecisionOnToolSpan(t *testing.T) {
	cfg := testConfig()
	cfg.Budget = units(3)
	w := newWorld(t, setup{plugin: true}, []*genai.FunctionCall{call("ok", "read_file", map[string]any{"path": "/a"})})
	w.say(t, "read")
	w2 := newWorld(t, setup{cfg: cfg}, []*genai.FunctionCall{call("no", "send", map[string]any{"path": "x"}), call("no2", "send", map[string]any{"path": "y"})})
	w2.say(t, "send twice")

	ss := toolSpans(w.caller())
	require.Len(t, ss, 1)
	s := ss[0]
	assert.Equal(t, "execute_tool read_file", s.Name())
	v, _ := spanAttr(s, string(adk.AttrVerdict))
	assert.Equal(t, "allow", v)
	exec, ok := spanAttr(s, string(adk.AttrExecID))
	require.True(t, ok)
	seq, ok := spanAttr(s, string(adk.AttrSeq))
	require.True(t, ok)
	resultSeq, ok := spanAttr(s, string(adk.AttrResultSeq))
	require.True(t, ok)
	es := entries(t, w.log)
	assert.Equal(t, "kernel.execute", es[atoi(t, seq)].Kind, "the span names the execution's entry")
	assert.Contains(t, string(es[atoi(t, seq)].Payload), exec)
	assert.Equal(t, gatelog.KindResult, es[atoi(t, resultSeq)].Kind)
	charged, _ := spanAttr(s, string(adk.AttrCharged))
	assert.Equal(t, "100", charged)

	// Two sends, one fits: one span allows, one refuses with the
	// explanation.
	var verdicts []string
	for _, s := range toolSpans(w2.caller()) {
		v, _ := spanAttr(s, string(adk.AttrVerdict))
		verdicts = append(verdicts, v)
		if v == "refuse" {
			e, _ := spanAttr(s, string(adk.AttrExplanation))
			assert.Contains(t, e, "budget")
			seq, ok := spanAttr(s, string(adk.AttrSeq))
			require.True(t, ok)
			assert.Equal(t, "kernel.reject", entries(t, w2.log)[atoi(t, seq)].Kind)
		}
	}
	assert.ElementsMatch(t, []string{"allow", "refuse"}, verdicts)
}

func TestToolsOwnConfirmationNotCharged(t *testing.T) {
	ran := 0
	confirmTool, err := functiontool.New(functiontool.Config{Name: "publish", Description: "publishes", RequireConfirmation: true},
		func(_ agent.Context, _ pathArgs) (pathResult, error) {
			ran++
			return pathResult{Done: "published"}, nil
		})
	require.NoError(t, err)
	cfg := testConfig()
	cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "publish", Cost: units(2)})
	w := newWorld(t, setup{cfg: cfg, extraTool: []tool.Tool{confirmTool}},
		[]*genai.FunctionCall{call("p1", "publish", map[string]any{"path": "post"})})
	events := w.say(t, "publish")
	reqs := confirmationRequests(events)
	require.Len(t, reqs, 1, "the tool asked for its own confirmation")
	m, _ := w.gate.Meter(w.caller())
	assert.Zero(t, m.Budget().Net(), "asking did nothing and costs nothing")

	w.confirm(t, reqs[0].ID, true)
	assert.Equal(t, 1, ran)
	m, _ = w.gate.Meter(w.caller())
	assert.Equal(t, units(2), m.Budget().Net(), "the run is charged once")
	checkLog(t, w.log, w.gate, w.caller())
}

// TestRefusalSkipsOnToolErrorCallbacks pins why a refusal is a result and
// not an error: ADK hands errors of before callbacks to the OnToolError
// callbacks (Flow.callTool), which are for tools that failed.
func TestRefusalSkipsOnToolErrorCallbacks(t *testing.T) {
	log := newLog(t)
	cfg := testConfig()
	cfg.Tools = cfg.Tools[:1]
	g := newGate(t, log, cfg)
	guard, err := adk.New(g)
	require.NoError(t, err)
	onErr := 0
	ts := &tools{}
	m := newScript("m", []*genai.FunctionCall{call("x", "send", map[string]any{"path": "bob"})})
	ac := llmagent.Config{Name: "assistant", Model: m, Tools: ts.list(t),
		OnToolErrorCallbacks: []llmagent.OnToolErrorCallback{func(agent.Context, tool.Tool, map[string]any, error) (map[string]any, error) {
			onErr++
			return map[string]any{"error": "retry it"}, nil
		}}}
	guard.Install(&ac)
	a, err := llmagent.New(ac)
	require.NoError(t, err)
	r, err := runner.New(runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)
	for _, err := range r.Run(context.Background(), userID, sessionName(t), genai.NewContentFromText("send", genai.RoleUser), agent.RunConfig{}) {
		require.NoError(t, err)
	}
	assert.Zero(t, onErr, "a refusal is not a tool failure")
	reqs := m.requests()
	assert.Equal(t, `send={"error":"tool \"send\" is not in the gate's catalogue"}`, reqs[len(reqs)-1])
}

// TestConfirmationAfterRestart: the process restarts while a call waits
// for its confirmation. Waiting requests and the guard's record of the
// questions it put live in memory; the answer that comes back to the new
// process answers no question it asked, so it is ignored and nothing
// runs (fail closed, as the gate's own rule for an approval it does not
// hold). The model makes the call again; the human is asked again and
// the call runs once.
func TestConfirmationAfterRestart(t *testing.T) {
	log := newLog(t)
	sessions := session.InMemoryService() // the client's session outlives the process
	ts := &tools{}
	sess := sessionName(t)
	newRunner := func(m *script) (*toolgate.Gate, *runner.Runner) {
		g := newGate(t, log, testConfig())
		guard, err := adk.New(g)
		require.NoError(t, err)
		ac := llmagent.Config{Name: "assistant", Model: m, Tools: ts.list(t)}
		guard.Install(&ac)
		a, err := llmagent.New(ac)
		require.NoError(t, err)
		r, err := runner.New(runner.Config{AppName: appName, Agent: a, SessionService: sessions, AutoCreateSession: true})
		require.NoError(t, err)
		return g, r
	}
	run := func(r *runner.Runner, msg *genai.Content) []*session.Event {
		var out []*session.Event
		for ev, err := range r.Run(context.Background(), userID, sess, msg, agent.RunConfig{}) {
			require.NoError(t, err)
			out = append(out, ev)
		}
		return out
	}
	confirm := func(r *runner.Runner, id string) []*session.Event {
		return run(r, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID: id, Name: "adk_request_confirmation", Response: map[string]any{"confirmed": true}}}}})
	}
	del := map[string]any{"path": "/old"}
	m := newScript("m", []*genai.FunctionCall{call("d1", "delete_file", del)})
	_, r := newRunner(m)
	reqs := confirmationRequests(run(r, genai.NewContentFromText("delete", genai.RoleUser)))
	require.Len(t, reqs, 1)

	g2, r2 := newRunner(m)
	require.Empty(t, g2.Pending(), "the waiting request did not survive the restart")
	events := confirm(r2, reqs[0].ID)
	assert.Zero(t, ts.deletes.Load(), "an answer to a question the new process never put runs nothing")
	resp := functionResponses(events, "delete_file")
	require.Len(t, resp, 1)
	assert.Contains(t, resp[0]["error"], "make the call again to ask")

	m.then([]*genai.FunctionCall{call("d2", "delete_file", del)})
	reqs = confirmationRequests(run(r2, genai.NewContentFromText("delete it", genai.RoleUser)))
	require.Len(t, reqs, 1, "asked again")
	events = confirm(r2, reqs[0].ID)
	assert.EqualValues(t, 1, ts.deletes.Load())
	require.Len(t, functionResponses(events, "delete_file"), 1)
	k := kinds(entries(t, log))
	assert.Equal(t, 2, k["claims.evaluate"], "asked once in each process")
	assert.Equal(t, 1, k["claims.approve"])
	checkLog(t, log, g2, adk.SessionCaller(appName, userID, sess))
}
