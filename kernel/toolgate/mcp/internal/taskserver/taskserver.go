// Package taskserver is an MCP server whose tools run as tasks (the MCP
// Tasks extension, io.modelcontextprotocol/tasks, protocol 2026-07-28):
// the upstream the tests of toolgate/mcp and verity-mcp put behind the
// proxy to check how a long call is reserved, polled, updated, settled
// and resumed.
//
// Its tool "render" answers a tools/call whose request declares the
// extension with a task handle (CreateTaskResult, resultType "task"),
// and one that does not with the result at once. The test drives each
// task through its states — Ask (input_required, with an elicitation
// under a key), Complete (with a cost in the result's _meta), Fail
// (a JSON-RPC error) — and the client through tasks/get, tasks/update
// and tasks/cancel, as the extension's specification
// (specification/2026-07-28/tasks.md of modelcontextprotocol/ext-tasks)
// words them: an unknown task is -32602 ("Failed to retrieve task: Task
// not found"), a cancelled task reports its cost so far in its _meta.
// A call with the arguments {"polls": k, "cost": "1.5"} makes a task
// that completes on its own at the k-th tasks/get, reporting that cost;
// SetStateFile keeps the tasks across restarts of the server (the
// command in cmd/taskserver runs it over stdio that way).
package taskserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension is the Tasks extension's identifier.
const Extension = "io.modelcontextprotocol/tasks"

// Tool is the name of the server's task-running tool.
const Tool = "render"

// Params are the params of tasks/get, tasks/update and tasks/cancel.
type Params struct {
	sdk.ParamsBase
	TaskID         string                     `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses,omitempty"`
}

// Raw is a result written as JSON.
type Raw struct {
	sdk.ResultBase
	JSON json.RawMessage
}

// MarshalJSON returns r.JSON.
func (r *Raw) MarshalJSON() ([]byte, error) { return r.JSON, nil }

// Task is one task's state as the server holds it.
type Task struct {
	ID        string
	Status    string // working, input_required, completed, failed, cancelled
	Args      json.RawMessage
	Asked     map[string]json.RawMessage // outstanding input requests by key
	Answers   map[string]json.RawMessage // input responses received, by key
	Result    json.RawMessage            // completed
	Error     json.RawMessage            // failed
	Cost      int64                      // reported with completed and cancelled
	CreatedAt time.Time
	TTL       time.Duration
	// Polls, when positive, is how many more tasks/get the task takes to
	// complete on its own, at cost PollCost (the call's arguments
	// "polls" and "cost").
	Polls    int
	PollCost string
}

// Server is the task-running server. Its methods are safe for concurrent
// use.
type Server struct {
	srv *sdk.Server

	mu    sync.Mutex
	tasks map[string]*Task
	next  int
	// Calls counts the tools/call requests that reached the server.
	calls int
	// CancelCost is the cost a task reports when cancelled (its _meta
	// "cost"); negative: it reports none.
	cancelCost int64
	ttl        time.Duration
	stateFile  string // SetStateFile: where the tasks are kept
}

// New returns a server whose tasks live ttl (0: unlimited).
func New(ttl time.Duration) *Server {
	s := &Server{tasks: map[string]*Task{}, cancelCost: -1, ttl: ttl}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "taskserver", Version: "v1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}, Extensions: map[string]any{Extension: map[string]any{}}},
	})
	sdk.AddTool(s.srv, &sdk.Tool{Name: Tool, Description: "renders pages, as a task when the client can poll"},
		func(_ context.Context, _ *sdk.CallToolRequest, in struct {
			Pages int `json:"pages"`
		}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("rendered %d pages", in.Pages)}}}, nil, nil
		})
	s.srv.AddReceivingMiddleware(s.middleware)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if err := sdk.AddReceivingCustomMethod(s.srv, m, func(ctx context.Context, _ *sdk.ServerSession, p *Params) (*Raw, error) {
			return s.handle(m, p)
		}); err != nil {
			panic(err) // a method name the SDK keeps: a bug of this package
		}
	}
	return s
}

// MCP returns the SDK server, to connect to a transport.
func (s *Server) MCP() *sdk.Server { return s.srv }

// SetCancelCost makes a cancelled task report cost in its _meta.
func (s *Server) SetCancelCost(cost int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelCost = cost
}

// Calls returns how many tools/call requests reached the server.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Get returns a copy of task id's state.
func (s *Server) Get(id string) (Task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return Task{}, false
	}
	return *t, true
}

// Ask puts task id in input_required, asking an elicitation under key.
func (s *Server) Ask(id, key, message string) error {
	return s.change(id, func(t *Task) {
		t.Status = "input_required"
		t.Asked[key] = json.RawMessage(fmt.Sprintf(`{"method":"elicitation/create","params":{"mode":"form","message":%q,"requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}`, message))
	})
}

// Complete ends task id with text as its tool result, reporting cost in
// the result's _meta ("cost", in the gate's units).
func (s *Server) Complete(id, text string, cost int64) error {
	return s.change(id, func(t *Task) {
		t.Status, t.Cost = "completed", cost
		t.Result = json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"isError":false,"_meta":{"cost":%d}}`, text, cost))
	})
}

// Fail ends task id with a JSON-RPC error.
func (s *Server) Fail(id, message string) error {
	return s.change(id, func(t *Task) {
		t.Status = "failed"
		t.Error = json.RawMessage(fmt.Sprintf(`{"code":-32603,"message":%q}`, message))
	})
}

func (s *Server) change(id string, f func(*Task)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[id]
	if !ok {
		return fmt.Errorf("taskserver: no task %q", id)
	}
	if terminal(t.Status) {
		return fmt.Errorf("taskserver: task %q is %s already", id, t.Status)
	}
	f(t)
	return nil
}

func terminal(status string) bool {
	return status == "completed" || status == "failed" || status == "cancelled"
}

// middleware answers a tools/call of Tool with a task when its request
// declares the extension (a server "MUST NOT return CreateTaskResult to
// a client that did not include the extension capability on its
// request").
func (s *Server) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		s.calls++
		s.mu.Unlock()
		cr, ok := req.(*sdk.CallToolRequest)
		if !ok || cr.Params.Name != Tool {
			return next(ctx, method, req)
		}
		caps := cr.ClientCapabilities()
		if caps == nil || caps.Extensions[Extension] == nil {
			return next(ctx, method, req)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.next++
		t := &Task{ID: "task-" + strconv.Itoa(s.next), Status: "working", Args: cr.Params.Arguments,
			Asked: map[string]json.RawMessage{}, Answers: map[string]json.RawMessage{}, CreatedAt: time.Now().UTC(), TTL: s.ttl}
		var self struct {
			Polls int    `json:"polls"`
			Cost  string `json:"cost"`
		}
		if json.Unmarshal(cr.Params.Arguments, &self) == nil && self.Polls > 0 {
			t.Polls, t.PollCost = self.Polls, self.Cost
		}
		s.tasks[t.ID] = t
		if err := s.saveLocked(); err != nil {
			return nil, err
		}
		return &Raw{JSON: t.wire("task")}, nil
	}
}

// wire is the task as tasks/get returns it (a DetailedTask), with
// resultType rt.
func (t *Task) wire(rt string) json.RawMessage {
	m := map[string]any{"resultType": rt, "taskId": t.ID, "status": t.Status,
		"createdAt": t.CreatedAt.Format(time.RFC3339Nano), "lastUpdatedAt": time.Now().UTC().Format(time.RFC3339Nano), "pollIntervalMs": 10}
	if t.TTL > 0 {
		m["ttlMs"] = t.TTL.Milliseconds()
	} else {
		m["ttlMs"] = nil
	}
	switch t.Status {
	case "input_required":
		m["inputRequests"] = t.Asked
	case "completed":
		m["result"] = t.Result
	case "failed":
		m["error"] = t.Error
		m["statusMessage"] = "the task failed"
	case "cancelled":
		if t.Cost >= 0 {
			m["_meta"] = map[string]any{"cost": t.Cost}
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// handle answers tasks/get, tasks/update and tasks/cancel.
func (s *Server) handle(method string, p *Params) (*Raw, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[p.TaskID]
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Failed to retrieve task: Task not found"}
	}
	defer func() { _ = s.saveLocked() }()
	switch method {
	case "tasks/get":
		if t.Polls > 0 && !terminal(t.Status) {
			if t.Polls--; t.Polls == 0 {
				t.Status = "completed"
				t.Result = json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":"done"}],"isError":false,"_meta":{"cost":%q}}`, t.PollCost))
			}
		}
		return &Raw{JSON: t.wire("complete")}, nil
	case "tasks/update":
		for k, v := range p.InputResponses {
			if _, asked := t.Asked[k]; !asked {
				continue // "SHOULD ignore any inputResponses … not currently outstanding"
			}
			delete(t.Asked, k)
			t.Answers[k] = v
		}
		if t.Status == "input_required" && len(t.Asked) == 0 {
			t.Status = "working"
		}
	case "tasks/cancel":
		if !terminal(t.Status) {
			t.Status, t.Cost = "cancelled", s.cancelCost
		}
	}
	return &Raw{JSON: json.RawMessage(`{"resultType":"complete"}`)}, nil
}

// state is what SetStateFile keeps.
type state struct {
	Next  int              `json:"next"`
	Tasks map[string]*Task `json:"tasks"`
}

// SetStateFile makes the server keep its tasks in path — read now when
// it exists, written after every change — so that a server restarted
// with the same file still knows them.
func (s *Server) SetStateFile(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stateFile = path
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("taskserver: %s: %w", path, err)
	}
	s.next, s.tasks = st.Next, st.Tasks
	if s.tasks == nil {
		s.tasks = map[string]*Task{}
	}
	return nil
}

func (s *Server) saveLocked() error {
	if s.stateFile == "" {
		return nil
	}
	b, err := json.Marshal(state{Next: s.next, Tasks: s.tasks})
	if err != nil {
		return err
	}
	tmp := s.stateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.stateFile)
}
