package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
