package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/trace"
)

// syncBuffer is a log sink safe for the server goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the server in the background and returns its base URL and a
// stop function that shuts it down gracefully and returns run's error.
func start(t *testing.T, args ...string) (string, func() error, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), logs, func(a string) { addrc <- a })
	}()
	select {
	case a := <-addrc:
		return "http://" + a, func() error { cancel(); return <-done }, logs
	case err := <-done:
		cancel()
		t.Fatalf("server did not start: %v\n%s", err, logs.String())
	case <-time.After(10 * time.Second):
		cancel()
		t.Fatal("server did not start in time")
	}
	return "", nil, nil
}

func call(t *testing.T, method, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

const declare = `{"ontology":{"hypothesis_space_id":"hs","hypothesis_version":"v1","causal_graph_ref":"g","causal_graph_version":"v1"},"hypotheses":["a","b","c"]}`

func TestServeRestartWithData(t *testing.T) {
	dir := t.TempDir()
	base, stop, logs := start(t, "-data", dir)
	code, created := call(t, "POST", base+"/v1/sessions", declare)
	require.Equal(t, 201, code)
	id := created["session_id"].(string)
	code, _ = call(t, "POST", base+"/v1/sessions/"+id+"/eliminate", `{"source_id":"s","observation_id":"o","eliminated":["a"]}`)
	require.Equal(t, 200, code)
	_, before := call(t, "GET", base+"/v1/sessions/"+id, "")
	code, forced := call(t, "POST", base+"/v1/sessions/"+id+"/terminate", `{"context":{"force":true}}`)
	require.Equal(t, 200, code)
	assert.Equal(t, false, forced["approved"], "force is off without -allow-force")
	require.NoError(t, stop())
	assert.Contains(t, logs.String(), `"msg":"listening"`)
	assert.Contains(t, logs.String(), `"msg":"request"`)
	assert.Contains(t, logs.String(), `"msg":"stopped"`)

	base, stop, logs = start(t, "-data", dir, "-allow-force")
	assert.Contains(t, logs.String(), `"sessions_recovered":1`)
	_, after := call(t, "GET", base+"/v1/sessions/"+id, "")
	before["audit_head_event_id"] = after["audit_head_event_id"] // the refused termination moved the head
	assert.Equal(t, before, after)
	code, forced = call(t, "POST", base+"/v1/sessions/"+id+"/terminate", `{"context":{"force":true}}`)
	require.Equal(t, 200, code)
	assert.Equal(t, true, forced["approved"])
	require.NoError(t, stop())
}

func TestServeMemory(t *testing.T) {
	base, stop, _ := start(t)
	code, created := call(t, "POST", base+"/v1/sessions", declare)
	require.Equal(t, 201, code)
	code, body := call(t, "GET", base+"/v1/sessions/"+created["session_id"].(string)+"/audit", "")
	require.Equal(t, 200, code)
	assert.Len(t, body["events"], 1)
	require.NoError(t, stop())
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	assert.Error(t, run(context.Background(), []string{"-nope"}, &out, nil))
	assert.Error(t, run(context.Background(), []string{"extra"}, &out, nil))
	assert.Error(t, run(context.Background(), []string{"-addr", "256.0.0.1:bad"}, &out, nil))
}

// TestServeSharedDB: two servers on one database serve the same session,
// and a server started afterwards recovers it (SQLite file always;
// PostgreSQL when VERITY_PG_DSN is set).
func TestServeSharedDB(t *testing.T) {
	specs := map[string]string{"sqlite": "sqlite:" + filepath.Join(t.TempDir(), "beliefs.db")}
	if dsn := os.Getenv("VERITY_PG_DSN"); dsn != "" {
		specs["postgres"] = dsn
	} else {
		t.Log("PostgreSQL variant skipped: VERITY_PG_DSN is not set")
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			a, stopA, _ := start(t, "-db", spec)
			b, stopB, _ := start(t, "-db", spec)
			code, created := call(t, "POST", a+"/v1/sessions", declare)
			require.Equal(t, 201, code)
			id := created["session_id"].(string)
			code, _ = call(t, "POST", b+"/v1/sessions/"+id+"/eliminate", `{"source_id":"s","observation_id":"o","eliminated":["a"]}`)
			require.Equal(t, 200, code)
			_, fromA := call(t, "GET", a+"/v1/sessions/"+id, "")
			assert.Equal(t, []any{"b", "c"}, fromA["survivors"], "a sees b's elimination")
			require.NoError(t, stopA())
			require.NoError(t, stopB())

			c, stopC, logs := start(t, "-db", spec)
			assert.Contains(t, logs.String(), `"sessions_recovered"`)
			_, fromC := call(t, "GET", c+"/v1/sessions/"+id, "")
			assert.Equal(t, fromA, fromC, "the session survived the restart")
			require.NoError(t, stopC())
		})
	}
	var out bytes.Buffer
	assert.Error(t, run(context.Background(), []string{"-db", "mysql://x"}, &out, nil))
	assert.Error(t, run(context.Background(), []string{"-db", "sqlite:"}, &out, nil))
	assert.Error(t, run(context.Background(), []string{"-db", "sqlite:x.db", "-data", t.TempDir()}, &out, nil))
}

// TestMain lets the tests run the command itself in a child process: the
// test binary, started with BELIEFSERVER_MAIN=1, is the beliefserver.
func TestMain(m *testing.M) {
	if os.Getenv("BELIEFSERVER_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// command returns the beliefserver command run in a child process.
func command(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BELIEFSERVER_MAIN=1")
	return cmd
}

// TestSecondServerOnOneDirRefused: a beliefserver process serving -data
// DIR holds it; a second process on the same DIR exits at once with
// status 1 and an error naming the directory and the holder, and the
// first keeps serving. After the first stops, every acknowledged write is
// still there and the logs verify.
func TestSecondServerOnOneDirRefused(t *testing.T) {
	dir := t.TempDir()
	first := command("-addr", "127.0.0.1:0", "-data", dir)
	stderr, err := first.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, first.Start())
	t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
	lines := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && lines.Scan() {
		var l struct{ Msg, Addr string }
		if json.Unmarshal(lines.Bytes(), &l) == nil && l.Msg == "listening" {
			addr = l.Addr
		}
	}
	require.NotEmpty(t, addr, "the first server starts")
	go func() { // keep draining its log
		for lines.Scan() {
		}
	}()
	base := "http://" + addr
	code, created := call(t, "POST", base+"/v1/sessions", declare)
	require.Equal(t, 201, code)
	id := created["session_id"].(string)

	var out bytes.Buffer
	second := command("-addr", "127.0.0.1:0", "-data", dir)
	second.Stderr = &out
	err = second.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the second server must not run: %s", out.String())
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, out.String(), "data directory "+dir+" is in use")
	if runtime.GOOS == "linux" {
		assert.Contains(t, out.String(), fmt.Sprintf("by process %d", first.Process.Pid))
	}

	code, _ = call(t, "POST", base+"/v1/sessions/"+id+"/eliminate",
		`{"source_id":"s","observation_id":"o","eliminated":["a"]}`)
	require.Equal(t, 200, code, "the first server still serves")
	require.NoError(t, first.Process.Signal(syscall.SIGTERM))
	require.NoError(t, first.Wait())

	base2, stop, _ := start(t, "-data", dir)
	code, audit := call(t, "GET", base2+"/v1/sessions/"+id+"/audit", "")
	require.Equal(t, 200, code)
	assert.Len(t, audit["events"], 2, "the declaration and the elimination")
	require.NoError(t, stop())
	paths, err := filepath.Glob(filepath.Join(dir, "*.trace"))
	require.NoError(t, err)
	require.Len(t, paths, 1)
	ro, err := trace.OpenFileReadOnly(paths[0])
	require.NoError(t, err)
	defer ro.Close()
	h, err := trace.VerifyStore(context.Background(), ro)
	require.NoError(t, err)
	assert.Positive(t, h.Size)
}

// TestUsageErrorsExit2: every configuration mistake exits 2, -h exits 0
// and lists the exit statuses, a runtime failure exits 1.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"extra"},
		{"-addr", "127.0.0.1:bad"},
		{"-addr", "no-port"},
		{"-db", "mysql://x"},
		{"-db", "sqlite:"},
		{"-db", "sqlite:x.db", "-data", t.TempDir()},
		{"-max-body", "x"},
		{"-max-body", "0"},
		{"-cache-size", "-1"},
		{"-cache-size", "0"},
		{"-checkpoint-every", "-1"},
	} {
		var out bytes.Buffer
		cmd := command(args...)
		cmd.Stderr = &out
		require.NoError(t, cmd.Start())
		// A value the command accepts would have it serve: kill it then.
		kill := time.AfterFunc(20*time.Second, func() { _ = cmd.Process.Kill() })
		err := cmd.Wait()
		kill.Stop()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%q", args)
		assert.Equal(t, 2, ee.ExitCode(), "%q: %s", args, out.String())
	}
	var out bytes.Buffer
	cmd := command("-h")
	cmd.Stderr = &out
	require.NoError(t, cmd.Run())
	assert.Contains(t, out.String(), "exit status: 0")
	assert.Contains(t, out.String(), "2 usage error")

	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	cmd = command("-addr", "127.0.0.1:0", "-data", notDir)
	err := cmd.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 1, ee.ExitCode(), "a -data that is a file is a runtime error")
}
