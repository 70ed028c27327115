package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

var taskBin struct {
	once sync.Once
	path string
	err  error
}

// taskServerBinary builds internal/taskserver's command.
func taskServerBinary(t testing.TB) string {
	taskBin.once.Do(func() {
		taskBin.path = filepath.Join(bins.dir, "taskserver")
		taskBin.err = goBuild(taskBin.path, "../../internal/taskserver/cmd/taskserver")
	})
	require.NoError(t, taskBin.err)
	return taskBin.path
}

// taskConn keeps the task id of the last CreateTaskResult the client
// read (the SDK's CallToolResult has no member for it).
type taskConn struct {
	sdk.Connection
	mu   sync.Mutex
	last string
}

func (c *taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && bytes.Contains(resp.Result, []byte(`"resultType":"task"`)) {
		var w struct {
			TaskID string `json:"taskId"`
		}
		_ = json.Unmarshal(resp.Result, &w)
		c.mu.Lock()
		c.last = w.TaskID
		c.mu.Unlock()
	}
	return msg, err
}

type taskTransport struct {
	sdk.Transport
	conn *taskConn
}

func (t *taskTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &taskConn{Connection: c}
	return t.conn, nil
}

// startTaskProxy is startProxy with a client that declares the Tasks
// extension and can send its methods.
func startTaskProxy(t *testing.T, args []string) (*proxy, *taskTransport) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &proxy{stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		code := run(ctx, args, inR, outW, p.stderr)
		_ = outW.Close()
		_ = inR.Close()
		p.done <- code
	}()
	caps := &sdk.ClientCapabilities{}
	caps.AddExtension(gatemcp.TasksExtension, nil)
	c := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, &sdk.ClientOptions{Capabilities: caps})
	for _, m := range []string{gatemcp.MethodGetTask, gatemcp.MethodUpdateTask, gatemcp.MethodCancelTask} {
		require.NoError(t, sdk.AddSendingCustomMethod[*gatemcp.TaskParams, *gatemcp.TaskResult](c, m))
	}
	tr := &taskTransport{Transport: &sdk.IOTransport{Reader: outR, Writer: inW}}
	cs, err := c.Connect(ctx, tr, nil)
	if err != nil {
		cancel()
		t.Fatalf("connecting to the proxy: %v\nstderr:\n%s", err, p.stderr.String())
	}
	p.cs = cs
	t.Cleanup(func() {
		cancel()
		_ = cs.Close()
	})
	return p, tr
}

func taskGet(t *testing.T, p *proxy, id string) map[string]any {
	res, err := sdk.CallCustomMethod[*gatemcp.TaskParams, *gatemcp.TaskResult](context.Background(), p.cs, gatemcp.MethodGetTask, &gatemcp.TaskParams{TaskID: id})
	require.NoError(t, err, "stderr:\n%s", p.stderr.String())
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON, &m))
	return m
}

// TestProxyTaskSettlesAcrossRestart: verity-mcp in front of a server
// whose tool runs as a task charges the task's reservation when the
// server answers with its handle, takes the task up again when restarted
// (the upstream restarted with it), and settles it at the cost the
// completed task reports — one entry of each on the log, which replays
// to that spend.
func TestProxyTaskSettlesAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"version": 2, "budget": "20", "min_cost": "0.01", "unknown_tools": "refuse",
  "tools": [{"match": "render", "cost": "5", "reserve": true, "cost_from": "/_meta/cost"}]}`), 0o600))
	logPath := filepath.Join(dir, "trace.log")
	args := []string{"-policy", pol, "-log", logPath, "--", taskServerBinary(t), "-state", filepath.Join(dir, "tasks.json")}

	p, tr := startTaskProxy(t, args)
	assert.Contains(t, p.cs.InitializeResult().Capabilities.Extensions, gatemcp.TasksExtension, "the proxy advertises the extension")
	res, err := p.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "render", Arguments: map[string]any{"polls": 2, "cost": "1.5"}})
	require.NoError(t, err)
	tr.conn.mu.Lock()
	id := tr.conn.last
	tr.conn.mu.Unlock()
	require.NotEmpty(t, id, "a task handle: %v\nstderr:\n%s", res, p.stderr.String())
	require.Equal(t, 0, p.stop(t), p.stderr.String())

	p, _ = startTaskProxy(t, args)
	assert.Contains(t, p.stderr.String(), "tasks resumed")
	assert.Equal(t, "working", taskGet(t, p, id)["status"])
	got := taskGet(t, p, id)
	require.Equal(t, "completed", got["status"], "%v", got)
	_, err = sdk.CallCustomMethod[*gatemcp.TaskParams, *gatemcp.TaskResult](context.Background(), p.cs, gatemcp.MethodGetTask, &gatemcp.TaskParams{TaskID: "task-999"})
	require.ErrorContains(t, err, "Task not found")
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	assert.Equal(t, 1, strings.Count(p.stderr.String(), "task settled"), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", kernel.Unit*3/2)
}
