package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// This file is the Guard's and the Proxy's side of the MCP Tasks
// extension (io.modelcontextprotocol/tasks, protocol 2026-07-28; its
// specification is specification/2026-07-28/tasks.md of
// github.com/modelcontextprotocol/ext-tasks, quoted below as "the
// extension"). The SDK (v1.8.0) has no Tasks support: its server refuses
// a method it does not know before any middleware runs (mcp/shared.go's
// handleReceive calls checkRequest, which fails "%q unsupported" for a
// method not in the session's receivingMethodInfos, and
// mcp/streamable.go refuses it before that with 404 and -32601 on
// 2026-07-28), so ServeTasks registers tasks/get, tasks/update and
// tasks/cancel as custom methods:
//
//	func AddReceivingCustomMethod[P paramsPtr[T], R Result, T any](s *Server, method string,
//		handler func(ctx context.Context, ss *ServerSession, params P) (R, error)) error   // mcp/server.go
//	func AddSendingCustomMethod[P paramsPtr[PT], R Result, PT any](c *Client, method string) error // mcp/client.go
//	func CallCustomMethod[P paramsPtr[PT], R Result, PT any](ctx context.Context, cs *ClientSession,
//		method string, params P) (R, error)                                               // mcp/client.go
//
// "Custom methods go through the server's middleware chain just like
// standard MCP methods", so the Guard's Middleware sees them first.
//
// What the Guard does:
//
//   - A tools/call the upstream answers with a task ("A server returns
//     CreateTaskResult in lieu of the standard result shape …";
//     resultType "task") stays open: the gate's decision charged it (its
//     reservation under a rule with reserve, else its fixed cost), and
//     Gate.RecordTask puts the task on the log before the handle reaches
//     the client — the extension's "MUST NOT return CreateTaskResult
//     until the task is durably created" holds for the proxy's record
//     too.
//   - The task is its creator's: a tasks/get, tasks/update or
//     tasks/cancel by another principal (or, without one, another caller)
//     gets exactly the answer an unknown task gets: -32602, "Failed to
//     retrieve task: Task not found" (the extension: "Invalid or
//     nonexistent taskId: -32602 (Invalid params)").
//   - A task past its expiry (createdAt + ttlMs, as the upstream wrote
//     them) is refused with -32602, "Failed to retrieve task: Task has
//     expired" ("servers MAY mark a task as failed at any point after
//     the TTL elapses"), and its call settled at its reservation.
//   - A tasks/update's input passes the policy: it may answer only input
//     requests the upstream made of this task and the proxy relayed
//     (tasks/get), never the Guard's own InputKey, and the task's
//     principal must still be allowed its tool (Compiled.MayCall) — the
//     update is a new instruction to the tool, under the same rule.
//   - The call is settled once, when the proxy first sees the task
//     terminal (a tasks/get the client polls, or the one the proxy makes
//     after a tasks/cancel): completed at the cost its result reports
//     (the rule's cost_from, read from the result, as for a call that
//     returned at once), failed at its reservation (nothing under
//     refund_on_error), cancelled at the cost the cancelled task
//     reports (cost_from read from the task object), else at the
//     reservation. A cancelled task the upstream does not report
//     terminal is settled at once at its reservation ("Eventual
//     transition to cancelled is not guaranteed").
//   - After a restart, ResumeTasks reads the log (Gate.OpenTasks): each
//     task not settled is the Guard's again, owned as before, and its
//     call open, so that its settlement is exactly the one it would
//     have had.

// TasksExtension is the identifier of the MCP Tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// The methods of the Tasks extension.
const (
	MethodGetTask    = "tasks/get"
	MethodUpdateTask = "tasks/update"
	MethodCancelTask = "tasks/cancel"
)

// maxTasks bounds the tasks a Guard follows at once; a call whose task
// would be one more is settled at its reservation and refused (its
// upstream task is cancelled).
const maxTasks = 1 << 16

// TaskParams are the params of tasks/get, tasks/update and tasks/cancel
// (GetTaskRequest, UpdateTaskRequest, CancelTaskRequest of the
// extension): the task's id, and for tasks/update the input responses as
// the client wrote them.
type TaskParams struct {
	sdk.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// TaskResult is a tasks/* result as its producer wrote it, passed on
// unchanged.
type TaskResult struct {
	sdk.ResultBase
	JSON json.RawMessage
}

// MarshalJSON returns r.JSON.
func (r *TaskResult) MarshalJSON() ([]byte, error) {
	if len(r.JSON) == 0 {
		return []byte(`{"resultType":"complete"}`), nil
	}
	return r.JSON, nil
}

// UnmarshalJSON keeps data as it came.
func (r *TaskResult) UnmarshalJSON(data []byte) error {
	r.JSON = append(json.RawMessage(nil), data...)
	return nil
}

// ServeTasks makes srv answer the Tasks extension's methods by relaying
// them to the upstream (through client, whose sessions the Proxy is
// attached to), and lets Proxy.call declare the extension upstream for a
// client that declared it. Call it before connecting either, and again
// with each new client of a restarted upstream: srv's side is added on
// the first call only, since srv is serving by the next (the SDK's
// method table is not safe to change while requests are read).
func (p *Proxy) ServeTasks(srv *sdk.Server, client *sdk.Client) error {
	p.mu.Lock()
	served := p.tasks
	p.mu.Unlock()
	for _, m := range []string{MethodGetTask, MethodUpdateTask, MethodCancelTask} {
		if err := sdk.AddSendingCustomMethod[*TaskParams, *TaskResult](client, m); err != nil {
			return err
		}
		if served {
			continue
		}
		if err := sdk.AddReceivingCustomMethod(srv, m, func(ctx context.Context, _ *sdk.ServerSession, params *TaskParams) (*TaskResult, error) {
			up := p.session()
			if up == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ErrUpstreamDown.Error()}
			}
			fwd := &TaskParams{TaskID: params.TaskID, InputResponses: params.InputResponses}
			return sdk.CallCustomMethod[*TaskParams, *TaskResult](ctx, up, m, fwd)
		}); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.tasks = true
	p.mu.Unlock()
	return nil
}

// taskMeta is the _meta of a tools/call forwarded upstream: nil, unless
// the Proxy serves tasks and the client declared the extension on its
// request, when it declares the proxy's client capabilities with the
// extension added ("A server MUST NOT return CreateTaskResult to a
// client that did not include the extension capability on its request,
// regardless of prior declarations"). The SDK's client keeps a _meta
// member the params carry (injectRequestMeta in mcp/client.go: "Keys
// already present in params.Meta are not overwritten").
func (p *Proxy) taskMeta(req *sdk.CallToolRequest) sdk.Meta {
	p.mu.Lock()
	on := p.tasks
	p.mu.Unlock()
	if !on || !declaresTasks(req.ClientCapabilities()) {
		return nil
	}
	caps := *p.ClientOptions().Capabilities
	caps.Extensions = maps.Clone(caps.Extensions)
	caps.AddExtension(TasksExtension, nil)
	b, err := json.Marshal(&caps)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	// The per-request form (clientCapabilitiesV2 in mcp/protocol.go)
	// writes roots from RootsV2, which the proxy's client sets when it
	// relays roots.
	//lint:ignore SA1019 the proxy relays roots to clients on protocols before 2026-07-28, where they are not deprecated
	if r := caps.RootsV2; r != nil {
		m["roots"] = map[string]any{"listChanged": r.ListChanged}
	}
	return sdk.Meta{sdk.MetaKeyClientCapabilities: m}
}

// declaresTasks reports whether capabilities declare the extension.
func declaresTasks(c *sdk.ClientCapabilities) bool {
	if c == nil {
		return false
	}
	_, ok := c.Extensions[TasksExtension]
	return ok
}

// task is a task the Guard follows: the call it continues, who owns it,
// until when, and what it asked.
type task struct {
	call     toolgate.Call // Caller, ID, Tool, Principal (the owner's)
	owner    string        // the owner's principal key, "" for none
	rule     toolgate.Rule // the rule that allowed the call: cost_from, refund_on_error
	reserved bool
	expires  time.Time       // zero: never
	asked    map[string]bool // input request keys relayed and not yet answered
	settled  bool
}

// taskTable is the tasks a Guard follows, by task id.
type taskTable struct {
	mu    sync.Mutex
	tasks map[string]*task
	swept time.Time // the last expireTasks
}

// expireTasks settles at their reservation the tasks past their expiry
// that no one polled since — their owner's tasks/get would have — so
// that a task its client forgot does not stay open for good. It walks
// the table each time while it is small, at most once a second beyond
// 1024 tasks. The entry stays, so that its owner is told it expired,
// until the table needs the room (sweepLocked).
func (gd *Guard) expireTasks(ctx context.Context, now time.Time) {
	gd.tasks.mu.Lock()
	if len(gd.tasks.tasks) > 1024 && now.Sub(gd.tasks.swept) < time.Second {
		gd.tasks.mu.Unlock()
		return
	}
	gd.tasks.swept = now
	var due []string
	for id, t := range gd.tasks.tasks {
		if !t.settled && !t.expires.IsZero() && !now.Before(t.expires) {
			due = append(due, id)
		}
	}
	gd.tasks.mu.Unlock()
	for _, id := range due {
		gd.settleTask(ctx, id, toolgate.Result{Output: []byte("expired"), Err: errors.New("the task expired")}, "expired", gd.logger.With("task", id))
	}
}

// ownedBy reports whether call's principal (or, without one, its caller)
// made t.
func (t *task) ownedBy(c toolgate.Call) bool {
	if t.owner != "" {
		return c.Principal.Key() == t.owner
	}
	return c.Principal.Key() == "" && c.Caller == t.call.Caller
}

// errTaskNotFound is the extension's answer for an unknown task — and
// for another principal's.
func errTaskNotFound() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
}

// taskCreated reads an upstream's result: its task id and expiry when
// it is a CreateTaskResult (resultType "task"; "Servers MUST set
// resultType to "task" when returning a CreateTaskResult").
func taskCreated(res sdk.Result) (id string, expires time.Time, ok bool) {
	raw, isRaw := res.(*RawResult)
	if !isRaw || !bytes.Contains(raw.JSON, []byte(`"taskId"`)) {
		// Not a task: a CreateTaskResult names its task. (A scan, not a
		// decoding, on every call's path.)
		return "", time.Time{}, false
	}
	var w struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		CreatedAt  string `json:"createdAt"`
		TTLMs      *int64 `json:"ttlMs"`
	}
	if json.Unmarshal(raw.JSON, &w) != nil || w.ResultType != "task" {
		return "", time.Time{}, false
	}
	return w.TaskID, taskExpiry(w.CreatedAt, w.TTLMs), true
}

// taskExpiry is createdAt + ttlMs; zero for an unlimited task ("null
// for unlimited") or one whose times do not read.
func taskExpiry(createdAt string, ttlMs *int64) time.Time {
	if ttlMs == nil || *ttlMs <= 0 {
		return time.Time{}
	}
	at, err := time.Parse(time.RFC3339Nano, createdAt)
	if err != nil {
		return time.Time{}
	}
	return at.Add(time.Duration(*ttlMs) * time.Millisecond)
}

// startTask is run's path for a call the upstream answered with a task:
// the task is recorded on the log (Gate.RecordTask) and followed, and
// the call stays open, its cost charged, until the task ends. A task
// the Guard cannot follow — no id, the client did not declare the
// extension, a log that failed, too many tasks — is refused, and the
// call settled at once as failed.
func (gd *Guard) startTask(ctx context.Context, req *sdk.CallToolRequest, d toolgate.Decision, rule toolgate.Rule, res sdk.Result,
	id string, expires time.Time, log *slog.Logger) (sdk.Result, error) {
	fail := func(why string) (sdk.Result, error) {
		log.Warn("task refused", "call", d.Call.ID, "task", id, "why", why)
		o, err := gd.gate.After(context.WithoutCancel(ctx), d.Call, toolgate.Result{Output: []byte(why), Err: errors.New(why)})
		if err != nil {
			log.Error("recording the result", "call", d.Call.ID, "err", err)
		}
		log.Info("ran", "call", d.Call.ID, "exec", d.ExecID, "ok", false, "charged", o.Charged)
		return refusal(fmt.Sprintf("tool %q: %s", d.Call.Tool, why)), nil
	}
	switch {
	case id == "":
		return fail("the server answered with a task without an id")
	case !declaresTasks(req.ClientCapabilities()):
		return fail("the server answered with a task, and this client did not declare the tasks extension")
	}
	gd.expireTasks(ctx, time.Now())
	gd.tasks.mu.Lock()
	_, dup := gd.tasks.tasks[id]
	full := len(gd.tasks.tasks) >= maxTasks && !gd.tasks.sweepLocked(time.Now())
	gd.tasks.mu.Unlock()
	switch {
	case dup:
		return fail(fmt.Sprintf("the server answered with task %q, which it made for another call", id))
	case full:
		return fail(fmt.Sprintf("%d tasks are followed already, the most this proxy keeps", maxTasks))
	}
	if _, err := gd.gate.RecordTask(context.WithoutCancel(ctx), d.Call, id, d.Call.Principal.Key(), expires); err != nil {
		return fail("the task could not be recorded: " + err.Error())
	}
	t := &task{call: d.Call, owner: d.Call.Principal.Key(), rule: rule, reserved: d.Reserved, expires: expires, asked: map[string]bool{}}
	gd.tasks.mu.Lock()
	gd.tasks.tasks[id] = t
	gd.tasks.mu.Unlock()
	log.Info("task started", "call", d.Call.ID, "exec", d.ExecID, "task", id, "expires", expires)
	return res, nil
}

// sweepLocked forgets settled tasks past their expiry, and reports
// whether there is room for one more.
func (tt *taskTable) sweepLocked(now time.Time) bool {
	for id, t := range tt.tasks {
		if t.settled && !t.expires.IsZero() && !now.Before(t.expires) {
			delete(tt.tasks, id)
		}
	}
	return len(tt.tasks) < maxTasks
}

// taskMethod is the Guard's path for tasks/get, tasks/update and
// tasks/cancel: the task must be the caller's and not expired; an
// update's input must pass the policy; the upstream's answer is passed
// on unchanged, and a terminal task settles its call.
func (gd *Guard) taskMethod(ctx context.Context, method string, req sdk.Request, next sdk.MethodHandler) (sdk.Result, error) {
	sr, ok := req.(*sdk.ServerRequest[*TaskParams])
	if !ok || sr.Params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: params that do not read", method)}
	}
	// Who asks: the principal and caller key a call of this request
	// would have.
	who := &sdk.CallToolRequest{Session: sr.Session, Extra: sr.Extra, Params: &sdk.CallToolParamsRaw{Meta: sr.Params.Meta}}
	asker := toolgate.Call{Caller: gd.Caller(ctx, who), Principal: gd.principal(ctx, who)}
	id := sr.Params.TaskID
	log := gd.logger.With("method", method, "task", id, "caller", asker.Caller)
	gd.expireTasks(ctx, time.Now())

	gd.tasks.mu.Lock()
	t, known := gd.tasks.tasks[id]
	var tc task
	if known {
		tc = *t
		tc.asked = maps.Clone(t.asked) // read below, unlocked
	}
	gd.tasks.mu.Unlock()
	if !known || !tc.ownedBy(asker) {
		log.Warn("refused: no such task of this caller", "known", known)
		return nil, errTaskNotFound()
	}
	now := time.Now()
	if !tc.expires.IsZero() && !now.Before(tc.expires) {
		log.Warn("refused: the task expired", "expired", tc.expires)
		gd.settleTask(ctx, id, toolgate.Result{Output: []byte("expired"), Err: errors.New("the task expired")}, "expired", log)
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task has expired"}
	}
	if method == MethodUpdateTask {
		if why := gd.updateRefused(tc, sr.Params.InputResponses); why != "" {
			log.Warn("refused update", "why", why)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("tasks/update of task %q refused: %s", id, why)}
		}
	}

	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	switch method {
	case MethodGetTask:
		gd.observeTask(ctx, id, res, log)
	case MethodUpdateTask:
		gd.tasks.mu.Lock()
		for k := range sr.Params.InputResponses {
			delete(t.asked, k)
		}
		gd.tasks.mu.Unlock()
		log.Info("task updated", "keys", slices.Sorted(maps.Keys(sr.Params.InputResponses)))
	case MethodCancelTask:
		log.Info("task cancel acknowledged")
		// The client need not poll again ("The client does not need to
		// poll tasks/get again to wait for the task to reach the
		// cancelled state"): the proxy asks once, and settles.
		getReq := &sdk.ServerRequest[*TaskParams]{Session: sr.Session, Extra: sr.Extra, Params: &TaskParams{TaskID: id}}
		got, gerr := next(context.WithoutCancel(ctx), MethodGetTask, getReq)
		if gerr != nil || !gd.observeTask(ctx, id, got, log) {
			gd.settleTask(ctx, id, toolgate.Result{Output: []byte("cancelled"), Err: errors.New("the task was cancelled")}, "cancelled", log)
		}
	}
	return res, nil
}

// updateRefused says why a tasks/update's input does not pass, "" when
// it does.
func (gd *Guard) updateRefused(t task, responses map[string]json.RawMessage) string {
	if len(responses) == 0 {
		return "it answers nothing"
	}
	for _, k := range slices.Sorted(maps.Keys(responses)) {
		switch {
		case k == InputKey:
			return fmt.Sprintf("%q is this proxy's own input key: an approval is never given through a task", InputKey)
		case !t.asked[k]:
			return fmt.Sprintf("it answers %q, which the task did not ask (or was answered)", k)
		}
	}
	if !gd.gate.Compiled().MayCall(t.call.Tool, t.call.Principal) {
		return fmt.Sprintf("the policy no longer lets this principal call %q", t.call.Tool)
	}
	return ""
}

// observeTask reads a tasks/get result: the input requests it relays
// are noted, and a terminal status settles the call. It reports whether
// the task is terminal.
func (gd *Guard) observeTask(ctx context.Context, id string, res sdk.Result, log *slog.Logger) bool {
	raw, ok := res.(*TaskResult)
	if !ok {
		return false
	}
	w, ok := readTask(raw.JSON)
	if !ok {
		return false
	}
	gd.tasks.mu.Lock()
	t := gd.tasks.tasks[id]
	var tc task
	if t != nil {
		tc = *t
		if w.Status == "input_required" {
			for k := range w.InputRequests {
				t.asked[k] = true
			}
		}
	}
	gd.tasks.mu.Unlock()
	if t == nil {
		return false
	}
	var r toolgate.Result
	switch w.Status {
	case "completed":
		res := &RawResult{JSON: w.Result}
		r.Output, r.Err = outcome(res, nil)
		if tc.reserved && tc.rule.CostFrom != "" && r.Err == nil {
			var m string
			r.Actual, m = measured(tc.rule.CostFrom, res)
			r.Measured = m == "measured"
		}
	case "failed":
		msg := "the task failed"
		if w.Error != nil {
			msg = fmt.Sprintf("the task failed: %s (%d)", w.Error.Message, w.Error.Code)
		}
		r.Output, r.Err = []byte(msg), errors.New(msg)
	case "cancelled":
		r.Output, r.Err = []byte("cancelled"), errors.New("the task was cancelled")
		if tc.reserved && tc.rule.CostFrom != "" {
			var m string
			r.Actual, m = measured(tc.rule.CostFrom, &RawResult{JSON: raw.JSON})
			r.Measured = m == "measured"
		}
	default:
		return false
	}
	gd.settleTask(ctx, id, r, w.Status, log)
	return true
}

// taskState is what the Guard reads of a task the upstream reports
// (DetailedTask: tasks/get's result).
type taskState struct {
	Status        string                     `json:"status"`
	InputRequests map[string]json.RawMessage `json:"inputRequests"`
	Result        json.RawMessage            `json:"result"`
	Error         *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readTask reads a tasks/get result; false when it is not an object of
// that shape (the Guard then acts on nothing, and relays it).
func readTask(raw []byte) (taskState, bool) {
	var w taskState
	if json.Unmarshal(raw, &w) != nil {
		return taskState{}, false
	}
	return w, true
}

// settleTask ends task id's call with r (Gate.After), once.
func (gd *Guard) settleTask(ctx context.Context, id string, r toolgate.Result, status string, log *slog.Logger) {
	gd.tasks.mu.Lock()
	t := gd.tasks.tasks[id]
	if t == nil || t.settled {
		gd.tasks.mu.Unlock()
		return
	}
	t.settled = true
	c := t.call
	gd.tasks.mu.Unlock()
	o, err := gd.gate.After(context.WithoutCancel(ctx), c, r)
	switch {
	case err == nil:
	case errors.Is(err, kernel.ErrOverrun):
		log.Warn("overrun", "call", c.ID, "unpaid", o.Unpaid)
	case errors.Is(err, trace.ErrBroken), errors.Is(err, toolgate.ErrUnknownCall):
		log.Error("the task's settlement is not recorded", "call", c.ID, "err", err)
	default:
		log.Error("recording the task's result", "call", c.ID, "err", err)
	}
	log.Info("task settled", "call", c.ID, "status", status, "charged", o.Charged, "measured", r.Measured, "seq", o.Seq)
}

// ResumeTasks makes the Guard follow the tasks on its gate's log that
// have not ended (Gate.OpenTasks: a restart, a Guard made anew): each is
// owned by the principal that made it, and its call is open again, so
// that the task's end settles it as it would have. It returns how many
// it follows. Call it before serving.
func (gd *Guard) ResumeTasks(ctx context.Context) (int, error) {
	open, err := gd.gate.OpenTasks(ctx)
	policy := gd.gate.Compiled().Policy()
	gd.tasks.mu.Lock()
	defer gd.tasks.mu.Unlock()
	for _, e := range open {
		t := &task{call: toolgate.Call{Caller: e.Caller, ID: e.CallID, Tool: e.Tool}, owner: e.Owner, reserved: e.Reserved, asked: map[string]bool{}}
		if r, ok := ruleByID(policy, e.Rule); ok {
			t.rule = r
		}
		if e.Expires != nil {
			t.expires = *e.Expires
		}
		gd.tasks.tasks[e.TaskID] = t
	}
	return len(open), err
}

// ruleByID is the policy's rule of id — its name, "#" and its index, or
// "default" — as gatelog.Task names it.
func ruleByID(p toolgate.Policy, id string) (toolgate.Rule, bool) {
	if id == "default" && p.DefaultRule != nil {
		return *p.DefaultRule, true
	}
	for i, r := range p.Tools {
		if r.Name == id || (r.Name == "" && id == "#"+strconv.Itoa(i)) {
			return r, true
		}
	}
	return toolgate.Rule{}, false
}
