package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// The gateway's guarantees (-config) and the tests that check them:
//
//   - Three upstreams at once — two stdio servers (testserver,
//     rawserver) and a remote streamable HTTP server over TLS verified
//     with ca_file — behind one server: the merged list is in the file's
//     order, calls route, the spend is exact, the server that dies
//     leaves the list and comes back, a call to it meanwhile is refused
//     uncharged; every spawn and connection is on the log:
//     TestGatewayThreeUpstreams.
//   - Bad gateway files and unreachable servers: one line naming the
//     server each: TestGatewayBadInput.
//   - SIGHUP reloads the file and the policy, starts, stops and restarts
//     servers: TestGatewayReload.
//   - A remote server that goes away leaves the list and returns:
//     TestGatewayRemoteReconnects.
//   - Each server's tools are pinned under its own name:
//     TestGatewayPinsPerServer.
//   - -config excludes the one-server flags: TestGatewayFlags.
//   - The same upstream behind a gateway file and behind the flags:
//     BenchmarkGatewayVsFlags (gateway_bench_test.go).

// remoteServer is a streamable HTTP MCP server with one tool, lookup,
// that counts its calls.
type remoteServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls int
}

func (r *remoteServer) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

type lookupIn struct {
	Key string `json:"key"`
}

func startRemote(t testing.TB, tls bool) *remoteServer {
	r := &remoteServer{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "remote", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup"}, func(_ context.Context, _ *sdk.CallToolRequest, in lookupIn) (*sdk.CallToolResult, any, error) {
		r.mu.Lock()
		r.calls++
		r.mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found " + in.Key}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	if tls {
		r.Server = httptest.NewTLSServer(h)
	} else {
		r.Server = httptest.NewServer(h)
	}
	t.Cleanup(r.Close)
	return r
}

// caFile writes the PEM of a TLS test server's certificate.
func caFile(t testing.TB, s *httptest.Server) string {
	p := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// gatewayPolicy prices the three servers' tools.
const gatewayPolicy = `{
  "version": 1,
  "budget": "%s",
  "min_cost": "0.01",
  "tools": [
    {"match": "files__read_file", "cost": "0.1"},
    {"match": "files__search", "cost": "1"},
    {"match": "raw__alpha", "cost": "0.5"},
    {"match": "raw__crash", "cost": "0.2"},
    {"match": "remote__lookup", "cost": "2"}
  ]
}`

// writeGateway writes a policy and a gateway file of servers (JSON
// objects) beside it.
func writeGateway(t testing.TB, budget string, servers ...string) (gatewayPath, policyPath string) {
	dir := t.TempDir()
	policyPath = filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(policyPath, []byte(fmt.Sprintf(gatewayPolicy, budget)), 0o600))
	gatewayPath = filepath.Join(dir, "gateway.json")
	text := `{"version": 1, "policy": "policy.json", "servers": [` + strings.Join(servers, ",\n") + `]}`
	require.NoError(t, os.WriteFile(gatewayPath, []byte(text), 0o600))
	return gatewayPath, policyPath
}

func jsonArray(s ...string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func toolNames(t testing.TB, p *proxy) []string {
	res, err := p.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// waitFor polls cond every 20 ms for up to 20 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("waited 20s for %s", what)
}

// gatewayEntries reads a (stopped) proxy's log.
func gatewayEntries(t testing.TB, path string) []trace.Entry {
	ro, err := trace.OpenFileReadOnly(path)
	require.NoError(t, err)
	defer func() { _ = ro.Close() }()
	l, err := trace.NewLog(ro)
	require.NoError(t, err)
	var out []trace.Entry
	for e, err := range l.Entries(context.Background(), 0) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

func TestGatewayThreeUpstreams(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "notes.txt", "buy milk")
	rawJournal := filepath.Join(t.TempDir(), "raw-journal")
	remote := startRemote(t, true)
	gw, pol := writeGateway(t, "100",
		`{"name": "files", "command": `+jsonArray(up.argv()...)+`}`,
		`{"name": "raw", "command": `+jsonArray(bins.rawserver, "-journal", rawJournal)+`, "restart": {"min_backoff": "1500ms"}}`,
		`{"name": "remote", "url": "`+remote.URL+`/mcp", "ca_file": `+jsonArray(caFile(t, remote.Server))[1:len(jsonArray(caFile(t, remote.Server)))-1]+`, "call_timeout": "10s"}`)
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, []string{"-config", gw, "-log", logPath, "-list", "all"}, nil)

	raw := []string{"raw__zeta", "raw__alpha", "raw__scan", "raw__hang", "raw__crash", "raw__grow", "raw__ask", "raw__roots"}
	files := []string{"files__delete_file", "files__echo", "files__read_file", "files__search", "files__write_file"}
	all := slices.Concat(files, raw, []string{"remote__lookup"})
	assert.Equal(t, all, toolNames(t, p), "the file's order, each server's own")

	var want kernel.Cost
	res := p.call(t, "files__read_file", map[string]any{"path": "notes.txt"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "buy milk", text(res))
	want += kernel.Unit / 10
	res = p.call(t, "remote__lookup", map[string]any{"key": "k"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "found k", text(res))
	want += 2 * kernel.Unit
	res = p.call(t, "raw__alpha", nil)
	require.False(t, res.IsError, text(res))
	want += kernel.Unit / 2
	assert.Equal(t, 1, up.ran(t, "read_file"))
	assert.Equal(t, 1, remote.count())

	// raw dies mid-run: its tools leave the list, a call to it is
	// refused uncharged, the others still answer; then it comes back.
	res = p.call(t, "raw__crash", nil)
	require.True(t, res.IsError)
	want += kernel.Unit / 5 // it reached the server
	waitFor(t, "raw's tools to leave the list", func() bool { return !slices.Contains(toolNames(t, p), "raw__alpha") })
	assert.Equal(t, slices.Concat(files, []string{"remote__lookup"}), toolNames(t, p))
	res = p.call(t, "raw__alpha", nil)
	require.True(t, res.IsError)
	assert.Equal(t, `tool "raw__alpha" refused: server "raw" is not running (it is restarted by its restart policy); nothing was charged`, text(res))
	res = p.call(t, "files__search", map[string]any{"query": "milk"})
	require.False(t, res.IsError, text(res))
	want += kernel.Unit
	res = p.call(t, "remote__lookup", map[string]any{"key": "j"})
	require.False(t, res.IsError, text(res))
	want += 2 * kernel.Unit
	waitFor(t, "raw to come back", func() bool { return slices.Contains(toolNames(t, p), "raw__alpha") })
	assert.Equal(t, all, toolNames(t, p))
	res = p.call(t, "raw__alpha", nil)
	require.False(t, res.IsError, text(res))
	want += kernel.Unit / 2

	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLogOf(t, p.stderr.String(), logPath, pol, "stdio", want)

	var spawns, connects []string
	for _, e := range gatewayEntries(t, logPath) {
		switch e.Kind {
		case gatelog.KindSpawn:
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			s := v.(gatelog.Spawn)
			assert.Positive(t, s.PID)
			spawns = append(spawns, s.Server)
		case gatelog.KindConnect:
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			c := v.(gatelog.Connect)
			assert.Equal(t, remote.URL+"/mcp", c.URL)
			assert.NotEmpty(t, c.TLSSubject)
			assert.Len(t, c.TLSSHA256, 64)
			assert.NotEmpty(t, c.Protocol)
			connects = append(connects, c.Server)
		}
	}
	assert.Equal(t, []string{"files", "raw", "raw"}, spawns, "raw started twice")
	assert.Equal(t, []string{"remote"}, connects)
}

// checkLogOf is checkLog for a gateway's policy, its tools namespaced.
func checkLogOf(t testing.TB, stderr, logPath, policyPath, caller string, want kernel.Cost) {
	t.Helper()
	checkLog(t, stderr, logPath, policyPath, caller, want)
}

// TestGatewayBadInput: each bad gateway file, and each server that
// cannot be reached at start, is one line naming the server; with
// -require-all the proxy refuses to start, without it serves the others.
func TestGatewayBadInput(t *testing.T) {
	up := newUpstream(t)
	files := `{"name": "files", "command": ` + jsonArray(up.argv()...) + `}`
	tlsRemote := startRemote(t, true)
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer`)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer unauthorized.Close()

	for _, c := range []struct {
		name   string
		server string
		code   int    // with -require-all; 0: the file itself is refused (2)
		want   string // in stderr
	}{
		{"unknown member", `{"name": "x", "command": ["x"], "colour": 1}`, 2, `/servers/1/colour: unknown_field: unknown member`},
		{"duplicate server", files, 2, `/servers/1/name: duplicate_name: server "files" is named by /servers/0 too`},
		{"collision", `{"name": "twice", "command": ` + jsonArray(bins.rawserver, "-twice", "alpha") + `}`, 1,
			`server \"twice\" lists tool \"alpha\" more than once: its name \"twice__alpha\" would name two tools`},
		{"missing secret file", `{"name": "sec", "command": ["` + bins.testserver + `"], "set_env": {"TOKEN": {"file": "nowhere/token"}}}`, 1,
			`server \"sec\": set_env.TOKEN: file `},
		{"unreachable url", `{"name": "gone", "url": "http://127.0.0.1:1/mcp", "start_timeout": "5s"}`, 1, `server \"gone\": connecting to http://127.0.0.1:1/mcp`},
		{"tls failure", `{"name": "tls", "url": "` + tlsRemote.URL + `/mcp", "start_timeout": "5s"}`, 1, `certificate signed by unknown authority`},
		{"401", `{"name": "locked", "url": "` + unauthorized.URL + `/mcp", "start_timeout": "5s"}`, 1, `server \"locked\": connecting to ` + unauthorized.URL},
		{"plain http off loopback", `{"name": "far", "url": "http://example.com/mcp"}`, 2, `/servers/1/url: url: "http://example.com/mcp" is http to a host that is not loopback`},
	} {
		t.Run(c.name, func(t *testing.T) {
			gw, _ := writeGateway(t, "10", files, c.server)
			logPath := filepath.Join(t.TempDir(), "trace.log")
			var stderr syncBuffer
			code := run(context.Background(), []string{"-config", gw, "-log", logPath, "-require-all"}, strings.NewReader(""), &syncBuffer{}, &stderr)
			assert.Equal(t, c.code, code, stderr.String())
			assert.Contains(t, stderr.String(), c.want)
			if c.code != 1 {
				return
			}
			// Without -require-all the others are served, and the one
			// line names the server.
			p := startProxy(t, []string{"-config", gw, "-log", filepath.Join(t.TempDir(), "trace.log")}, nil)
			names := toolNames(t, p)
			assert.Contains(t, names, "files__read_file")
			assert.NotContains(t, strings.Join(names, " "), "twice__")
			assert.Contains(t, p.stderr.String(), "server unreachable at start")
			require.Equal(t, 0, p.stop(t), p.stderr.String())
		})
	}
}

// TestGatewayReload: SIGHUP reads the gateway file and the policy again:
// a valid new version takes effect for the next call (a new price, a
// server added, one removed) and is on the log with its hashes; an
// invalid one (a server named twice, a new budget) is refused, one line
// per reason, and the running version stays.
func TestGatewayReload(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "notes.txt", "buy milk")
	remote := startRemote(t, false)
	files := `{"name": "files", "command": ` + jsonArray(up.argv()...) + `}`
	remoteEntry := `{"name": "remote", "url": "` + remote.URL + `/mcp"}`
	gw, pol := writeGateway(t, "100", files)
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, []string{"-config", gw, "-log", logPath}, nil)
	require.Equal(t, []string{"files__read_file", "files__search"}, toolNames(t, p))
	read := func() {
		res := p.call(t, "files__read_file", map[string]any{"path": "notes.txt"})
		require.False(t, res.IsError, text(res))
	}
	read()
	hup := func(wantLine string) {
		before := strings.Count(p.stderr.String(), wantLine)
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
		waitFor(t, wantLine, func() bool { return strings.Count(p.stderr.String(), wantLine) > before })
	}

	// A new price and a new server.
	require.NoError(t, os.WriteFile(pol, []byte(strings.Replace(fmt.Sprintf(gatewayPolicy, "100"), `"files__read_file", "cost": "0.1"`, `"files__read_file", "cost": "1"`, 1)), 0o600))
	text2 := `{"version": 1, "policy": "policy.json", "servers": [` + files + `,` + remoteEntry + `]}`
	require.NoError(t, os.WriteFile(gw, []byte(text2), 0o600))
	hup(`msg=reloaded`)
	assert.Equal(t, []string{"files__read_file", "files__search", "remote__lookup"}, toolNames(t, p))
	read()
	res := p.call(t, "remote__lookup", map[string]any{"key": "k"})
	require.False(t, res.IsError, text(res))

	// Refused: a server named twice; a new budget.
	require.NoError(t, os.WriteFile(gw, []byte(`{"version": 1, "policy": "policy.json", "servers": [`+files+`,`+files+`]}`), 0o600))
	hup(`msg="reload refused: the running gateway stays"`)
	assert.Contains(t, p.stderr.String(), `duplicate_name: server \"files\" is named by /servers/0 too`)
	require.NoError(t, os.WriteFile(gw, []byte(text2), 0o600))
	policy2, err := os.ReadFile(pol)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pol, []byte(strings.Replace(string(policy2), `"budget": "100"`, `"budget": "200"`, 1)), 0o600))
	hup(`it changes budget`)
	read() // still the running price, 1
	require.NoError(t, os.WriteFile(pol, policy2, 0o600))

	// The files server's entry changed: it is started again.
	filesSlow := `{"name": "files", "command": ` + jsonArray(up.argv()...) + `, "call_timeout": "30s"}`
	require.NoError(t, os.WriteFile(gw, []byte(`{"version": 1, "policy": "policy.json", "servers": [`+filesSlow+`,`+remoteEntry+`]}`), 0o600))
	hup(`msg=reloaded`)
	assert.Equal(t, []string{"files__read_file", "files__search", "remote__lookup"}, toolNames(t, p))
	read()

	// The remote server removed.
	require.NoError(t, os.WriteFile(gw, []byte(`{"version": 1, "policy": "policy.json", "servers": [`+filesSlow+`]}`), 0o600))
	hup(`msg=reloaded`)
	assert.Equal(t, []string{"files__read_file", "files__search"}, toolNames(t, p))

	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", kernel.Unit/10+kernel.Unit+2*kernel.Unit+kernel.Unit+kernel.Unit)
	var reloads []gatelog.Reload
	spawns := 0
	for _, e := range gatewayEntries(t, logPath) {
		if e.Kind == gatelog.KindSpawn {
			spawns++
		}
		if e.Kind == gatelog.KindReload {
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			reloads = append(reloads, v.(gatelog.Reload))
		}
	}
	require.Len(t, reloads, 3, "the three valid versions, not the refused ones")
	assert.Equal(t, []string{"remote"}, reloads[0].Added)
	assert.Equal(t, []string{"files"}, reloads[1].Restarted)
	assert.Equal(t, []string{"remote"}, reloads[2].Removed)
	assert.Equal(t, sha256Hex(t, gw), reloads[2].GatewaySHA256)
	assert.Equal(t, sha256Hex(t, pol), reloads[2].PolicySHA256)
	assert.Equal(t, 2, spawns, "files started at first and again when its entry changed")
}

func sha256Hex(t testing.TB, path string) string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestGatewayFlags: -config excludes -policy, a command and the flags a
// gateway file sets per server, and -require-all needs it: usage errors,
// exit 2.
func TestGatewayFlags(t *testing.T) {
	up := newUpstream(t)
	gw, pol := writeGateway(t, "10", `{"name": "files", "command": `+jsonArray(up.argv()...)+`}`)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"-policy":             {[]string{"-config", gw, "-policy", pol, "-log", "x"}, "-config and -policy are exclusive"},
		"a command":           {[]string{"-config", gw, "-log", "x", "--", "true"}, "-config and a command after -- are exclusive"},
		"-pins":               {[]string{"-config", gw, "-log", "x", "-pins", "off"}, "-pins and -pins-server are per server"},
		"-upstream-exit":      {[]string{"-config", gw, "-log", "x", "-upstream-exit"}, "-upstream-exit is per server"},
		"-require-all alone":  {[]string{"-policy", pol, "-log", "x", "-require-all", "--", "true"}, "-require-all needs -config"},
		"a missing file":      {[]string{"-config", gw + ".none", "-log", "x"}, "no such file"},
		"no servers, version": {[]string{"-config", writeRaw(t, `{"version": 2, "policy": "p.json", "servers": []}`), "-log", "x"}, "/version: version: this package reads version 1"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr syncBuffer
			code := run(context.Background(), c.args, strings.NewReader(""), &syncBuffer{}, &stderr)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr.String(), c.want)
			assert.Contains(t, stderr.String(), "usage: verity-mcp")
		})
	}
}

func writeRaw(t testing.TB, text string) string {
	p := filepath.Join(t.TempDir(), "gateway.json")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// serveRemoteAt serves a remoteServer's handler on addr until stopped.
func serveRemoteAt(t testing.TB, addr string) (*remoteServer, func()) {
	r := &remoteServer{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "remote", Version: "v1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup"}, func(_ context.Context, _ *sdk.CallToolRequest, in lookupIn) (*sdk.CallToolResult, any, error) {
		r.mu.Lock()
		r.calls++
		r.mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "found " + in.Key}}}, nil, nil
	})
	var ln net.Listener
	var err error
	for range 50 { // the address may take a moment to be free again
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, err)
	hs := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)}
	go func() { _ = hs.Serve(ln) }()
	stop := func() { _ = hs.Close() }
	t.Cleanup(stop)
	return r, stop
}

// TestGatewayRemoteReconnects: a remote server that goes away leaves the
// list once its connection is lost, a call to it meanwhile is charged
// nothing, and it returns when it answers again at its URL.
func TestGatewayRemoteReconnects(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	remote, stop := serveRemoteAt(t, addr)
	up := newUpstream(t)
	gw, pol := writeGateway(t, "100",
		`{"name": "files", "command": `+jsonArray(up.argv()...)+`}`,
		`{"name": "remote", "url": "http://`+addr+`/mcp", "start_timeout": "5s", "restart": {"min_backoff": "200ms", "max_backoff": "500ms"}}`)
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, []string{"-config", gw, "-log", logPath}, nil)
	require.Equal(t, []string{"files__read_file", "files__search", "remote__lookup"}, toolNames(t, p))
	res := p.call(t, "remote__lookup", map[string]any{"key": "a"})
	require.False(t, res.IsError, text(res))

	stop()
	res = p.call(t, "remote__lookup", map[string]any{"key": "b"})
	require.True(t, res.IsError, "the server is gone")
	waitFor(t, "remote's tools to leave the list", func() bool { return !slices.Contains(toolNames(t, p), "remote__lookup") })
	remote2, _ := serveRemoteAt(t, addr)
	waitFor(t, "remote to come back", func() bool { return slices.Contains(toolNames(t, p), "remote__lookup") })
	res = p.call(t, "remote__lookup", map[string]any{"key": "c"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, 1, remote.count())
	assert.Equal(t, 1, remote2.count())

	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", 4*kernel.Unit) // the two calls that reached it
	connects := 0
	for _, e := range gatewayEntries(t, logPath) {
		if e.Kind == gatelog.KindConnect {
			connects++
		}
	}
	assert.Equal(t, 2, connects)
}

// TestGatewayPinsPerServer: each server's tools are pinned under its own
// name: a tool one server adds after its first listing is a drift of
// that server, hidden and refused under its namespaced name, uncharged,
// while the server's pinned tools and the other server's still run.
func TestGatewayPinsPerServer(t *testing.T) {
	up := newUpstream(t)
	rawJournal := filepath.Join(t.TempDir(), "raw-journal")
	dir := t.TempDir()
	pol := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"version": 1, "budget": "10", "min_cost": "0.01", "tools": [
		{"match": "raw__grow", "cost": "1"}, {"match": "raw__omega", "cost": "1"}, {"match": "raw__alpha", "cost": "1"},
		{"match": "files__read_file", "cost": "1"}]}`), 0o600))
	gw := filepath.Join(dir, "gateway.json")
	require.NoError(t, os.WriteFile(gw, []byte(`{"version": 1, "policy": "policy.json", "servers": [
		{"name": "files", "command": `+jsonArray(up.argv()...)+`},
		{"name": "raw", "command": `+jsonArray(bins.rawserver, "-journal", rawJournal)+`}]}`), 0o600))
	logPath := filepath.Join(dir, "trace.log")
	p := startProxy(t, []string{"-config", gw, "-log", logPath}, nil)
	res := p.call(t, "raw__grow", nil)
	require.False(t, res.IsError, text(res))
	waitFor(t, "the drift to be recorded", func() bool { return strings.Contains(p.stderr.String(), "pins: drift") })
	assert.NotContains(t, toolNames(t, p), "raw__omega", "a new tool is hidden until it is pinned")
	res = p.call(t, "raw__omega", nil)
	require.True(t, res.IsError)
	assert.Contains(t, text(res), `tool "raw__omega" refused: its definition is not the one pinned (pinned none, listed sha256:`)
	res = p.call(t, "raw__alpha", nil)
	require.False(t, res.IsError, text(res))
	up.file(t, "a.txt", "a")
	res = p.call(t, "files__read_file", map[string]any{"path": "a.txt"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", 3*kernel.Unit)

	var drifts []gatelog.Drift
	var refused []gatelog.Refuse
	for _, e := range gatewayEntries(t, logPath) {
		switch e.Kind {
		case gatelog.KindDrift:
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			drifts = append(drifts, v.(gatelog.Drift))
		case gatelog.KindRefuse:
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			refused = append(refused, v.(gatelog.Refuse))
		}
	}
	require.NotEmpty(t, drifts)
	assert.Equal(t, "raw", drifts[0].Server)
	assert.Equal(t, "omega", drifts[0].Tool, "pinned under the server's own name")
	require.Len(t, refused, 1)
	assert.Equal(t, "raw__omega", refused[0].Tool)
	assert.Equal(t, "definition_drift", refused[0].Reason)
}
