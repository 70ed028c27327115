package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/taskserver"
	"github.com/verity-go/verity/trace"
)

// The proxy process TestKillNineLosesNothingAcknowledged kills: this
// test binary run again with these set.
const (
	proxyLogEnv = "VERITY_TASKS_PROXY_LOG"
	proxyUpEnv  = "VERITY_TASKS_PROXY_UPSTREAM"
)

// TestTaskProxyProcess is the proxy process of
// TestKillNineLosesNothingAcknowledged: a Guard and a Proxy serving
// tasks over stdio, its log a file, its upstream the task server the
// parent serves over streamable HTTP. It is skipped in a normal run.
func TestTaskProxyProcess(t *testing.T) {
	logPath, url := os.Getenv(proxyLogEnv), os.Getenv(proxyUpEnv)
	if logPath == "" || url == "" {
		t.Skip("the proxy process of TestKillNineLosesNothingAcknowledged")
	}
	store, err := trace.OpenFile(logPath, trace.FileOptions{Sync: trace.SyncGroup})
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, mustCompile(taskPolicy(20*kernel.Unit)))
	require.NoError(t, err)
	p := gatemcp.NewProxy(nil)
	gd, err := gatemcp.New(g, gatemcp.Options{Listed: p.Listed, Principal: metaPrincipal,
		Caller: func(ctx context.Context, req *sdk.CallToolRequest) string {
			return "caller:" + metaPrincipal(ctx, req).Subject
		}})
	require.NoError(t, err)
	srv := sdk.NewServer(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ServerOptions(nil))
	client := sdk.NewClient(&sdk.Implementation{Name: "proxy", Version: "v1"}, p.ClientOptions())
	require.NoError(t, p.ServeTasks(srv, client))
	srv.AddReceivingMiddleware(gd.Middleware(), p.Middleware())
	up, err := client.Connect(ctx, p.Transport(&sdk.StreamableClientTransport{Endpoint: url}), nil)
	require.NoError(t, err)
	_, err = p.Attach(ctx, srv, up)
	require.NoError(t, err)
	_, err = gd.ResumeTasks(ctx)
	require.NoError(t, err)
	_ = srv.Run(ctx, &sdk.StdioTransport{})
	os.Exit(0)
}

// startProxyProcess starts the proxy process over the log at logPath
// and connects alice to it.
func startProxyProcess(t *testing.T, logPath, url string) (*exec.Cmd, *agent) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestTaskProxyProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), proxyLogEnv+"="+logPath, proxyUpEnv+"="+url)
	cmd.Stderr = os.Stderr
	caps := &sdk.ClientCapabilities{}
	caps.AddExtension(gatemcp.TasksExtension, nil)
	c := sdk.NewClient(&sdk.Implementation{Name: "agent-alice", Version: "v1"}, &sdk.ClientOptions{Capabilities: caps})
	for _, m := range []string{gatemcp.MethodGetTask, gatemcp.MethodUpdateTask, gatemcp.MethodCancelTask} {
		require.NoError(t, sdk.AddSendingCustomMethod[*gatemcp.TaskParams, *gatemcp.TaskResult](c, m))
	}
	a := &agent{principal: "alice"}
	var err error
	a.cs, err = c.Connect(ctx, &captureTransport{t: &sdk.CommandTransport{Command: cmd}, a: a}, nil)
	require.NoError(t, err)
	return cmd, a
}

// kill9 kills the proxy process with SIGKILL and waits for it to end.
func kill9(t *testing.T, cmd *exec.Cmd, a *agent) {
	require.NoError(t, cmd.Process.Kill()) // SIGKILL on Unix
	_ = a.cs.Close()
	deadline := time.Now().Add(10 * time.Second)
	for cmd.ProcessState == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKillNineLosesNothingAcknowledged: a proxy killed with SIGKILL
// while a task runs loses nothing it acknowledged — the task it
// answered with a handle is resumed by the next process over the same
// log, owned by the same principal, its reservation charged, and settled
// when it ends; the task it settled before stays settled, once.
func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs the proxy as a process and kills it")
	}
	ts := taskserver.New(0)
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return ts.MCP() }, nil))
	defer hs.Close()
	logPath := filepath.Join(t.TempDir(), "gate.log")

	cmd, alice := startProxyProcess(t, logPath, hs.URL)
	running, _ := alice.call(t, 1)
	require.NotEmpty(t, running, "a task handle acknowledged")
	done, _ := alice.call(t, 1)
	require.NotEmpty(t, done)
	require.NoError(t, ts.Complete(done, "ok", 2))
	require.Equal(t, "completed", alice.get(t, done)["status"], "a settlement acknowledged")
	kill9(t, cmd, alice)

	cmd, alice = startProxyProcess(t, logPath, hs.URL)
	assert.Equal(t, "working", alice.get(t, running)["status"], "the task is resumed, alice's")
	_, err := alice.task(gatemcp.MethodGetTask, done, nil)
	requireTaskError(t, err, "Failed to retrieve task: Task not found")
	require.NoError(t, ts.Complete(running, "ok", 3))
	require.Equal(t, "completed", alice.get(t, running)["status"])
	kill9(t, cmd, alice)

	store, err := trace.OpenFileReadOnly(logPath)
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	_, err = log.Verify(ctx)
	require.NoError(t, err, "the log verifies after two SIGKILLs")
	tasks, results := taskResults(t, log)
	assert.Len(t, tasks, 2)
	var charged kernel.Cost
	for _, r := range results {
		charged += r.Charged
	}
	assert.Len(t, results, 2, "each task settled once")
	assert.Equal(t, 5*kernel.Unit, charged, "2 and 3: each at what it reported")
	g, err := toolgate.New(ctx, log, mustCompile(taskPolicy(20*kernel.Unit)))
	require.NoError(t, err)
	m, ok := g.Meter("caller:alice")
	require.True(t, ok)
	assert.Equal(t, 5*kernel.Unit, m.Budget().Net())
}
