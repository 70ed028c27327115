package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/taskserver"
	"github.com/verity-go/verity/trace"
)

// principalMetaKey is where the tests' clients name their principal: a
// stand-in for the verified bearer token of an HTTP server (Options.Principal).
const principalMetaKey = "test/principal"

func metaPrincipal(_ context.Context, req *sdk.CallToolRequest) toolgate.Principal {
	if req == nil || req.Params == nil {
		return toolgate.Principal{}
	}
	s, _ := req.Params.Meta[principalMetaKey].(string)
	if s == "" {
		return toolgate.Principal{}
	}
	return toolgate.Principal{Subject: s, Issuer: "https://issuer.test"}
}

// taskPolicy: render reserves 5 units and is settled at the cost its
// result reports.
func taskPolicy(budget kernel.Cost) toolgate.Policy {
	return toolgate.Policy{Budget: budget, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: taskserver.Tool, Cost: 5 * kernel.Unit, Reserve: true, CostFrom: "/_meta/cost"},
	}}
}

// taskRig is a Guard and a Proxy, serving tasks, in front of a task
// server; a rig made again over the same log and server is the proxy
// restarted.
type taskRig struct {
	log   *trace.Log
	gate  *toolgate.Gate
	guard *gatemcp.Guard
	srv   *sdk.Server
	ts    *taskserver.Server
	rec   *records
	// resumed is how many tasks ResumeTasks took up.
	resumed int
}

func newTaskRig(t tb, log *trace.Log, ts *taskserver.Server, cfg toolgate.Policy) *taskRig {
	g, err := toolgate.New(ctx, log, mustCompile(cfg))
	require.NoError(t, err)
	p := gatemcp.NewProxy(nil)
	rec := &records{}
	gd, err := gatemcp.New(g, gatemcp.Options{Listed: p.Listed, Principal: metaPrincipal, Logger: slog.New(rec),
		Caller: func(ctx context.Context, req *sdk.CallToolRequest) string {
			return "caller:" + metaPrincipal(ctx, req).Subject
		}})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ServerOptions(nil))
	client := sdk.NewClient(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ClientOptions())
	client.AddReceivingMiddleware(p.RelayMiddleware())
	require.NoError(t, p.ServeTasks(srv, client))
	srv.AddReceivingMiddleware(gd.Middleware(), p.Middleware())
	st, ct := sdk.NewInMemoryTransports()
	_, err = ts.MCP().Connect(ctx, st, nil)
	require.NoError(t, err)
	up, err := client.Connect(ctx, p.Transport(ct), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = up.Close() })
	_, err = p.Attach(ctx, srv, up)
	require.NoError(t, err)
	n, err := gd.ResumeTasks(ctx)
	require.NoError(t, err)
	return &taskRig{log: log, gate: g, guard: gd, srv: srv, ts: ts, rec: rec, resumed: n}
}

// agent is a client of principal, declaring the tasks extension or not.
type agent struct {
	principal string
	cs        *sdk.ClientSession
	mu        sync.Mutex
	lastTask  string
}

// Read keeps the task id of the last CreateTaskResult received: the
// SDK's CallToolResult has no member for it.
type captureConn struct {
	sdk.Connection
	a *agent
}

func (c *captureConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && bytes.Contains(resp.Result, []byte(`"resultType":"task"`)) {
		var w struct {
			TaskID string `json:"taskId"`
		}
		_ = json.Unmarshal(resp.Result, &w)
		c.a.mu.Lock()
		c.a.lastTask = w.TaskID
		c.a.mu.Unlock()
	}
	return msg, err
}

type captureTransport struct {
	t sdk.Transport
	a *agent
}

func (t *captureTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &captureConn{Connection: c, a: t.a}, nil
}

func (r *taskRig) agent(t tb, principal string, tasks bool) *agent {
	caps := &sdk.ClientCapabilities{}
	if tasks {
		caps.AddExtension(gatemcp.TasksExtension, nil)
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "agent-" + principal, Version: "v1"}, &sdk.ClientOptions{Capabilities: caps})
	for _, m := range []string{gatemcp.MethodGetTask, gatemcp.MethodUpdateTask, gatemcp.MethodCancelTask} {
		require.NoError(t, sdk.AddSendingCustomMethod[*gatemcp.TaskParams, *gatemcp.TaskResult](c, m))
	}
	a := &agent{principal: principal}
	st, ct := sdk.NewInMemoryTransports()
	_, err := r.srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	a.cs, err = c.Connect(ctx, &captureTransport{t: ct, a: a}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.cs.Close() })
	return a
}

func (a *agent) meta() sdk.Meta { return sdk.Meta{principalMetaKey: a.principal} }

// call calls render and returns the task id ("" when the result came at
// once) and the result.
func (a *agent) call(t tb, pages int) (string, *sdk.CallToolResult) {
	a.mu.Lock()
	a.lastTask = ""
	a.mu.Unlock()
	res, err := a.cs.CallTool(ctx, &sdk.CallToolParams{Name: taskserver.Tool, Arguments: map[string]any{"pages": pages}, Meta: a.meta()})
	require.NoError(t, err)
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lastTask, res
}

func (a *agent) task(method, id string, responses map[string]json.RawMessage) (map[string]any, error) {
	res, err := sdk.CallCustomMethod[*gatemcp.TaskParams, *gatemcp.TaskResult](ctx, a.cs, method,
		&gatemcp.TaskParams{ParamsBase: sdk.ParamsBase{Meta: a.meta()}, TaskID: id, InputResponses: responses})
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(res.JSON, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func (a *agent) get(t tb, id string) map[string]any {
	m, err := a.task(gatemcp.MethodGetTask, id, nil)
	require.NoError(t, err)
	return m
}

func spent(t tb, g *toolgate.Gate, principal string) kernel.Cost {
	m, ok := g.Meter("caller:" + principal)
	require.True(t, ok)
	return m.Budget().Net()
}

// taskResults are the log's result entries of calls that were tasks.
func taskResults(t tb, log *trace.Log) (tasks []gatelog.Task, results []gatelog.Result) {
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		switch e.Kind {
		case gatelog.KindTask:
			d, err := gatelog.Decode(e)
			require.NoError(t, err)
			tasks = append(tasks, d.(gatelog.Task))
		case gatelog.KindResult:
			d, err := gatelog.Decode(e)
			require.NoError(t, err)
			results = append(results, d.(gatelog.Result))
		}
	}
	return tasks, results
}

func requireTaskError(t tb, err error, msg string) {
	var werr *jsonrpc.Error
	require.ErrorAs(t, err, &werr)
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), werr.Code)
	require.Equal(t, msg, werr.Message)
}

// TestTaskReservedPolledUpdatedCompletedSettled: a call the server turns
// into a task is charged its reservation at creation and recorded; its
// input requests are relayed and answered; once completed it is settled
// at the cost its result reports, once, however often it is polled.
func TestTaskReservedPolledUpdatedCompletedSettled(t *testing.T) {
	r := newTaskRig(t, trace.NewMemoryLog(), taskserver.New(0), taskPolicy(20*kernel.Unit))
	alice := r.agent(t, "alice", true)

	id, res := alice.call(t, 3)
	require.NotEmpty(t, id, "the server made a task: %s", text(res))
	assert.Equal(t, 5*kernel.Unit, spent(t, r.gate, "alice"), "the reservation is charged at creation")
	tasks, results := taskResults(t, r.log)
	require.Len(t, tasks, 1)
	assert.Equal(t, id, tasks[0].TaskID)
	assert.Equal(t, toolgate.Principal{Subject: "alice", Issuer: "https://issuer.test"}.Key(), tasks[0].Owner)
	assert.Empty(t, results, "the call is open")

	assert.Equal(t, "working", alice.get(t, id)["status"])
	require.NoError(t, r.ts.Ask(id, "name", "Which printer?"))
	got := alice.get(t, id)
	assert.Equal(t, "input_required", got["status"])
	assert.Equal(t, "complete", got["resultType"], "relayed as the server wrote it")

	// Input the task did not ask for, or the proxy's own key, is refused.
	_, err := alice.task(gatemcp.MethodUpdateTask, id, map[string]json.RawMessage{"other": json.RawMessage(`{"action":"accept"}`)})
	require.ErrorContains(t, err, `it answers "other", which the task did not ask`)
	_, err = alice.task(gatemcp.MethodUpdateTask, id, map[string]json.RawMessage{gatemcp.InputKey: json.RawMessage(`{"action":"accept"}`)})
	require.ErrorContains(t, err, "an approval is never given through a task")
	ack, err := alice.task(gatemcp.MethodUpdateTask, id, map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept","content":{"name":"lp0"}}`)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"resultType": "complete"}, ack)
	st, _ := r.ts.Get(id)
	assert.JSONEq(t, `{"action":"accept","content":{"name":"lp0"}}`, string(st.Answers["name"]))
	_, err = alice.task(gatemcp.MethodUpdateTask, id, map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept"}`)})
	require.ErrorContains(t, err, "did not ask (or was answered)", "an answer is given once")

	require.NoError(t, r.ts.Complete(id, "printed", 2))
	for range 3 {
		got = alice.get(t, id)
		assert.Equal(t, "completed", got["status"])
	}
	assert.Equal(t, 2*kernel.Unit, spent(t, r.gate, "alice"), "settled at the reported cost")
	_, results = taskResults(t, r.log)
	require.Len(t, results, 1, "settled once")
	assert.Equal(t, 2*kernel.Unit, results[0].Charged)
	assert.True(t, results[0].Measured)
	assert.Equal(t, "printed", results[0].OutputText)
	replays(t, r.log, r.gate, "caller:alice")
}

// TestTaskCancelledSettles: a cancelled task is settled at the cost the
// server reports for it, else at its reservation, without the client
// polling again.
func TestTaskCancelledSettles(t *testing.T) {
	for name, tc := range map[string]struct {
		report int64
		want   kernel.Cost
	}{"reported": {1, kernel.Unit}, "unreported": {-1, 5 * kernel.Unit}} {
		t.Run(name, func(t *testing.T) {
			ts := taskserver.New(0)
			ts.SetCancelCost(tc.report)
			r := newTaskRig(t, trace.NewMemoryLog(), ts, taskPolicy(20*kernel.Unit))
			alice := r.agent(t, "alice", true)
			id, _ := alice.call(t, 1)
			require.NotEmpty(t, id)
			ack, err := alice.task(gatemcp.MethodCancelTask, id, nil)
			require.NoError(t, err)
			assert.Equal(t, "complete", ack["resultType"])
			assert.Equal(t, tc.want, spent(t, r.gate, "alice"))
			_, results := taskResults(t, r.log)
			require.Len(t, results, 1)
			assert.False(t, results[0].OK)
			assert.Equal(t, "cancelled", alice.get(t, id)["status"])
			_, results = taskResults(t, r.log)
			assert.Len(t, results, 1, "settled once")
		})
	}
}

// TestTaskFailedSettlesAtReservation: a task that fails with a JSON-RPC
// error is settled at its reservation (its rule has no refund_on_error).
func TestTaskFailedSettlesAtReservation(t *testing.T) {
	r := newTaskRig(t, trace.NewMemoryLog(), taskserver.New(0), taskPolicy(20*kernel.Unit))
	alice := r.agent(t, "alice", true)
	id, _ := alice.call(t, 1)
	require.NoError(t, r.ts.Fail(id, "printer on fire"))
	assert.Equal(t, "failed", alice.get(t, id)["status"])
	assert.Equal(t, 5*kernel.Unit, spent(t, r.gate, "alice"))
	_, results := taskResults(t, r.log)
	require.Len(t, results, 1)
	assert.Contains(t, results[0].Error, "printer on fire")
}

// TestOtherPrincipalsTaskIsUnknown: another principal's tasks/get,
// tasks/update and tasks/cancel get the answer an unknown task gets,
// are logged, and change nothing.
func TestOtherPrincipalsTaskIsUnknown(t *testing.T) {
	r := newTaskRig(t, trace.NewMemoryLog(), taskserver.New(0), taskPolicy(20*kernel.Unit))
	alice, bob := r.agent(t, "alice", true), r.agent(t, "bob", true)
	id, _ := alice.call(t, 1)
	require.NoError(t, r.ts.Ask(id, "name", "?"))
	require.Equal(t, "input_required", alice.get(t, id)["status"])
	before := r.log.Head()

	for _, method := range []string{gatemcp.MethodGetTask, gatemcp.MethodUpdateTask, gatemcp.MethodCancelTask} {
		for _, tid := range []string{id, "task-999"} {
			_, err := bob.task(method, tid, map[string]json.RawMessage{"name": json.RawMessage(`{"action":"accept"}`)})
			requireTaskError(t, err, "Failed to retrieve task: Task not found")
		}
	}
	st, _ := r.ts.Get(id)
	assert.Equal(t, "input_required", st.Status, "bob reached nothing")
	assert.Empty(t, st.Answers)
	assert.Equal(t, before, r.log.Head(), "no budget changed, nothing recorded")
	assert.Len(t, r.rec.matching("refused: no such task of this caller"), 6)
	assert.Equal(t, 5*kernel.Unit, spent(t, r.gate, "alice"))
}

// TestTaskResumesAfterRestart: a proxy restarted over its log while a
// task runs takes the task up again — its owner, its open call — and
// settles it exactly as it would have.
func TestTaskResumesAfterRestart(t *testing.T) {
	log, ts := trace.NewMemoryLog(), taskserver.New(0)
	r := newTaskRig(t, log, ts, taskPolicy(20*kernel.Unit))
	alice := r.agent(t, "alice", true)
	id, _ := alice.call(t, 2)
	done, _ := alice.call(t, 1)
	require.NoError(t, ts.Complete(done, "ok", 1))
	alice.get(t, done)
	assert.Equal(t, 6*kernel.Unit, spent(t, r.gate, "alice"))

	r2 := newTaskRig(t, log, ts, taskPolicy(20*kernel.Unit))
	assert.Equal(t, 1, r2.resumed, "one task still open")
	alice2, bob := r2.agent(t, "alice", true), r2.agent(t, "bob", true)
	_, err := bob.task(gatemcp.MethodGetTask, id, nil)
	requireTaskError(t, err, "Failed to retrieve task: Task not found")
	_, err = alice2.task(gatemcp.MethodGetTask, done, nil)
	requireTaskError(t, err, "Failed to retrieve task: Task not found")
	assert.Equal(t, "working", alice2.get(t, id)["status"])
	assert.Equal(t, 6*kernel.Unit, spent(t, r2.gate, "alice"), "the reservation still charged")

	require.NoError(t, ts.Complete(id, "done", 3))
	assert.Equal(t, "completed", alice2.get(t, id)["status"])
	assert.Equal(t, 4*kernel.Unit, spent(t, r2.gate, "alice"), "settled at 3 after the restart, 1 before it")
	replays(t, log, r2.gate, "caller:alice")

	r3 := newTaskRig(t, log, ts, taskPolicy(20*kernel.Unit))
	assert.Zero(t, r3.resumed)
}

// TestExpiredTaskRefused: a task past createdAt + ttlMs is refused with
// the extension's error and its call settled at its reservation.
func TestExpiredTaskRefused(t *testing.T) {
	r := newTaskRig(t, trace.NewMemoryLog(), taskserver.New(time.Millisecond), taskPolicy(20*kernel.Unit))
	alice := r.agent(t, "alice", true)
	id, _ := alice.call(t, 1)
	require.NotEmpty(t, id)
	time.Sleep(5 * time.Millisecond)
	_, err := alice.task(gatemcp.MethodGetTask, id, nil)
	requireTaskError(t, err, "Failed to retrieve task: Task has expired")
	assert.Equal(t, 5*kernel.Unit, spent(t, r.gate, "alice"))
	_, results := taskResults(t, r.log)
	require.Len(t, results, 1)
	assert.Contains(t, results[0].Error, "expired")
	_, err = alice.task(gatemcp.MethodGetTask, id, nil)
	requireTaskError(t, err, "Failed to retrieve task: Task has expired")
	_, results = taskResults(t, r.log)
	assert.Len(t, results, 1, "settled once")
}

// TestForgottenTaskSettlesWhenItExpires: a task its owner never polls
// again is settled at its reservation once it expired, when the Guard
// next handles a task — anyone's.
func TestForgottenTaskSettlesWhenItExpires(t *testing.T) {
	r := newTaskRig(t, trace.NewMemoryLog(), taskserver.New(time.Millisecond), taskPolicy(20*kernel.Unit))
	alice, bob := r.agent(t, "alice", true), r.agent(t, "bob", true)
	id, _ := alice.call(t, 1)
	require.NotEmpty(t, id)
	time.Sleep(5 * time.Millisecond)
	_, err := bob.task(gatemcp.MethodGetTask, "task-unknown", nil)
	requireTaskError(t, err, "Failed to retrieve task: Task not found")
	_, results := taskResults(t, r.log)
	require.Len(t, results, 1, "settled by the sweep")
	assert.Equal(t, "alice", results[0].Caller[len("caller:"):])
	_, err = alice.task(gatemcp.MethodGetTask, id, nil)
	requireTaskError(t, err, "Failed to retrieve task: Task has expired")
}

// TestNoTaskForAClientThatCannotPoll: a client that does not declare the
// extension gets its result at once (the proxy does not declare it
// upstream for it), charged as any call.
func TestNoTaskForAClientThatCannotPoll(t *testing.T) {
	r := newTaskRig(t, trace.NewMemoryLog(), taskserver.New(0), taskPolicy(20*kernel.Unit))
	carol := r.agent(t, "carol", false)
	id, res := carol.call(t, 4)
	assert.Empty(t, id)
	assert.Equal(t, "rendered 4 pages", text(res))
	assert.Equal(t, 5*kernel.Unit, spent(t, r.gate, "carol"), "unmeasured: its reservation")
	tasks, _ := taskResults(t, r.log)
	assert.Empty(t, tasks)
}
