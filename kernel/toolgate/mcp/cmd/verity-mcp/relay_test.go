package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// rootsBin builds internal/rootsserver once.
var rootsBin struct {
	once sync.Once
	path string
	err  error
}

func rootsServer(t testing.TB) string {
	rootsBin.once.Do(func() {
		rootsBin.path = filepath.Join(bins.dir, "rootsserver")
		rootsBin.err = goBuild(rootsBin.path, "../../internal/rootsserver")
	})
	if rootsBin.err != nil {
		t.Fatal(rootsBin.err)
	}
	return rootsBin.path
}

// relayPolicy lets the client call rootsserver's tools and "read"; any
// other tool is unknown, and refused.
const relayPolicy = `{"match": "list_allowed_directories", "cost": "0.01"}, {"match": "sample", "cost": "0.1"},
	{"match": "open", "cost": "0.1"}, {"match": "read", "cost": "0.1"}`

// relayProxy is verity-mcp in-process in front of an upstream, with a
// client on the protocol of 2025-11-25 (where an upstream's requests are
// relayed as requests).
type relayProxy struct {
	*proxy
	client  *sdk.Client
	journal string
	log     string
}

func startRelay(t testing.TB, flags []string, opts *sdk.ClientOptions, roots []string, upstream ...string) *relayProxy {
	t.Helper()
	dir := t.TempDir()
	rp := &relayProxy{journal: filepath.Join(dir, "journal"), log: filepath.Join(dir, "trace.log")}
	if len(upstream) == 0 {
		upstream = []string{rootsServer(t), "-journal", rp.journal}
	}
	args := append([]string{"-policy", rawPolicy(t, relayPolicy, ""), "-log", rp.log}, flags...)
	args = append(append(args, "--"), upstream...)
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
	if opts == nil {
		opts = &sdk.ClientOptions{}
	}
	rp.client = sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, opts)
	for _, r := range roots {
		//lint:ignore SA1019 the test plays a client on a protocol before 2026-07-28, whose roots the proxy must relay
		rp.client.AddRoots(&sdk.Root{URI: r})
	}
	cs, err := rp.client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, &sdk.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		cancel()
		t.Fatalf("connecting to the proxy: %v\nstderr:\n%s", err, p.stderr.String())
	}
	p.cs = cs
	rp.proxy = p
	t.Cleanup(func() {
		cancel()
		_ = cs.Close()
	})
	return rp
}

// events returns the upstream's journal lines.
func (rp *relayProxy) events(t testing.TB) []string {
	b, err := os.ReadFile(rp.journal)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// relays stops the proxy and returns its log's relay entries.
func (rp *relayProxy) relays(t testing.TB) []gatelog.Relay {
	t.Helper()
	require.Equal(t, 0, rp.stop(t), rp.stderr.String())
	f, err := trace.OpenFileReadOnly(rp.log)
	require.NoError(t, err)
	defer func() { _ = f.Close() }()
	l, err := trace.NewLog(f)
	require.NoError(t, err)
	var out []gatelog.Relay
	for e, err := range l.Entries(context.Background(), 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindRelay {
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			out = append(out, v.(gatelog.Relay))
		}
	}
	return out
}

func (rp *relayProxy) dirs(t testing.TB) string {
	res := rp.call(t, "list_allowed_directories", nil)
	require.False(t, res.IsError, text(res))
	return text(res)
}

// TestRootsReachAnUpstreamStartedBeforeTheClient: rootsserver, run as
// the filesystem server runs without directories, is started before the
// client connects (without roots: none was offered); when the client
// offering roots arrives it is started again, offered roots, and lists
// the client's; when the client's roots change the upstream is told and
// lists the new ones.
func TestRootsReachAnUpstreamStartedBeforeTheClient(t *testing.T) {
	rp := startRelay(t, nil, nil, []string{"file:///home/agent/project", "file:///srv/data"})
	assert.Equal(t, "Allowed directories:\n/home/agent/project\n/srv/data", rp.dirs(t))
	ev := rp.events(t)
	require.GreaterOrEqual(t, len(ev), 3, ev)
	assert.NotContains(t, ev[0], `"roots"`, "the upstream started before any client was not offered roots")
	assert.Equal(t, `initialize {"elicitation":{"form":{},"url":{}},"roots":{"listChanged":true},"sampling":{"tools":{}}}`, ev[1])
	assert.Equal(t, "roots 2", ev[2])

	//lint:ignore SA1019 the test plays a client on a protocol before 2026-07-28, whose roots the proxy must relay
	rp.client.AddRoots(&sdk.Root{URI: "file:///home/agent/other"})
	require.Eventually(t, func() bool {
		return strings.Contains(rp.dirs(t), "/home/agent/other\n")
	}, 10*time.Second, 100*time.Millisecond)
	assert.Contains(t, rp.events(t), "list_changed", rp.stderr.String())
	assert.NotContains(t, rp.stderr.String(), "no client connected to relay it to")
	assert.Empty(t, rp.relays(t), "roots are not logged")
}

// TestClientWithoutRootsOffersNone: a client that offers no roots has
// the upstream offered none, started once, and never answered roots on
// the client's behalf.
func TestClientWithoutRootsOffersNone(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
		opts  *sdk.ClientOptions
		roots []string
	}{
		{name: "client without roots", opts: &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}},
		{name: "-roots off", flags: []string{"-roots", "off"}, roots: []string{"file:///home/agent/project"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := startRelay(t, tc.flags, tc.opts, tc.roots)
			assert.Equal(t, "Allowed directories:\n", rp.dirs(t))
			ev := rp.events(t)
			require.Len(t, ev, 1, "started once: %v", ev)
			assert.Equal(t, `initialize {"elicitation":{"form":{},"url":{}},"sampling":{"tools":{}}}`, ev[0])
			rp.stop(t)
		})
	}
}

// samplingClient answers sampling requests and records the tools they
// offered.
type samplingClient struct {
	mu    sync.Mutex
	tools [][]string
}

func (sc *samplingClient) opts() *sdk.ClientOptions {
	//lint:ignore SA1019 the test plays a client and an upstream on protocols before 2026-07-28, where sampling is not deprecated
	return &sdk.ClientOptions{CreateMessageWithToolsHandler: func(_ context.Context, req *sdk.CreateMessageWithToolsRequest) (*sdk.CreateMessageWithToolsResult, error) {
		var names []string
		for _, tl := range req.Params.Tools {
			names = append(names, tl.Name)
		}
		sc.mu.Lock()
		sc.tools = append(sc.tools, names)
		sc.mu.Unlock()
		//lint:ignore SA1019 the test plays a client and an upstream on protocols before 2026-07-28, where sampling is not deprecated
		return &sdk.CreateMessageWithToolsResult{Model: "m", Role: "assistant", Content: []sdk.Content{&sdk.TextContent{Text: "hi"}}}, nil
	}}
}

func (sc *samplingClient) seen() [][]string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.tools
}

// TestSamplingToolsChecked: a sampling request that offers a tool the
// caller may not call is refused (by default) or relayed without it
// (-sampling-tools drop); one whose tools the caller may call is
// relayed; each is logged.
func TestSamplingToolsChecked(t *testing.T) {
	sample := func(t *testing.T, rp *relayProxy, tools ...string) *sdk.CallToolResult {
		return rp.call(t, "sample", map[string]any{"tools": tools})
	}
	t.Run("refuse", func(t *testing.T) {
		sc := &samplingClient{}
		rp := startRelay(t, nil, sc.opts(), nil)
		res := sample(t, rp, "read")
		require.False(t, res.IsError, text(res))
		res = sample(t, rp, "read", "delete")
		require.True(t, res.IsError, "the upstream's tool reports the error: %s", text(res))
		assert.Contains(t, text(res), `sampling error: toolgate/mcp: sampling/createMessage from the upstream refused: it offers the model tools the caller may not call (["delete"])`)
		res = sample(t, rp)
		require.False(t, res.IsError, text(res))
		assert.Equal(t, [][]string{{"read"}, nil}, sc.seen(), "the refused request never reached the client")
		rel := rp.relays(t)
		require.Len(t, rel, 2, "a request without tools is not logged")
		assert.Equal(t, gatelog.RelayRelayed, rel[0].Action)
		assert.Equal(t, gatelog.RelayRefused, rel[1].Action)
		assert.Equal(t, []string{"delete"}, rel[1].Tools)
		assert.Equal(t, "stdio", rel[1].Caller)
	})
	t.Run("drop", func(t *testing.T) {
		sc := &samplingClient{}
		rp := startRelay(t, []string{"-sampling-tools", "drop"}, sc.opts(), nil)
		res := sample(t, rp, "delete", "read", "shell")
		require.False(t, res.IsError, text(res))
		assert.Contains(t, text(res), "sampled:")
		assert.Equal(t, [][]string{{"read"}}, sc.seen())
		rel := rp.relays(t)
		require.Len(t, rel, 1)
		assert.Equal(t, gatelog.RelayDropped, rel[0].Action)
		assert.Equal(t, []string{"delete", "shell"}, rel[0].Tools)
	})
}

// TestURLElicitationAllowList: a URL-mode elicitation reaches the client
// only for an https URL of an allowed origin; everything else is
// refused with one line to the upstream; each is logged.
func TestURLElicitationAllowList(t *testing.T) {
	var asked []string
	var mu sync.Mutex
	opts := &sdk.ClientOptions{
		Capabilities: &sdk.ClientCapabilities{Elicitation: &sdk.ElicitationCapabilities{Form: &sdk.FormElicitationCapabilities{}, URL: &sdk.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.URL)
			mu.Unlock()
			return &sdk.ElicitResult{Action: "accept"}, nil
		},
	}
	rp := startRelay(t, []string{"-elicit-url-origin", "https://Login.Example.com", "-elicit-url-origin", "https://auth.example.org:8443"}, opts, nil)
	for _, tc := range []struct{ url, want string }{
		{"https://login.example.com/device?code=1", "action: accept"},
		{"HTTPS://LOGIN.EXAMPLE.COM:443/x", "action: accept"},
		{"https://auth.example.org:8443/", "action: accept"},
		{"http://login.example.com/", "only https URLs are relayed"},
		{"https://evil.example/", "origin https://evil.example is not on the proxy's allow-list"},
		{"https://auth.example.org/", "origin https://auth.example.org is not on the proxy's allow-list"},
		{"https://login.example.com@evil.example/", "user information"},
		{"https://login.example.com.evil.example/", "not on the proxy's allow-list"},
		{"javascript:alert(1)", "only https URLs are relayed"},
	} {
		res := rp.call(t, "open", map[string]any{"url": tc.url})
		assert.Contains(t, text(res), tc.want, tc.url)
	}
	assert.Equal(t, []string{"https://login.example.com/device?code=1", "HTTPS://LOGIN.EXAMPLE.COM:443/x", "https://auth.example.org:8443/"}, asked)
	rel := rp.relays(t)
	require.Len(t, rel, 9)
	for i, r := range rel {
		assert.Equal(t, "elicitation/create", r.Method)
		if i < 3 {
			assert.Equal(t, gatelog.RelayRelayed, r.Action)
		} else {
			assert.Equal(t, gatelog.RelayRefused, r.Action, r)
		}
	}
	assert.Equal(t, "https://login.example.com", rel[1].Origin)
}

// TestRelayFlagsChecked: a malformed allow-list origin or mode is a
// configuration error (exit 2).
func TestRelayFlagsChecked(t *testing.T) {
	for _, flags := range [][]string{
		{"-elicit-url-origin", "http://login.example.com"},
		{"-elicit-url-origin", "https://login.example.com/path"},
		{"-elicit-url-origin", "https://user@login.example.com"},
		{"-sampling-tools", "allow"},
		{"-roots", "on"},
	} {
		var stderr syncBuffer
		args := append([]string{"-policy", rawPolicy(t, relayPolicy, ""), "-log", filepath.Join(t.TempDir(), "log")}, flags...)
		code := run(context.Background(), append(args, "--", "true"), strings.NewReader(""), io.Discard, &stderr)
		assert.Equal(t, 2, code, "%v: %s", flags, stderr.String())
	}
}

// TestRealFilesystemServerListsClientRoots runs the reference
// filesystem server (@modelcontextprotocol/server-filesystem, through
// npx) without directory arguments behind the proxy: it lists the
// client's roots. Skipped when npx is not installed or cannot fetch it;
// TestRootsReachAnUpstreamStartedBeforeTheClient checks the same with
// rootsserver.
func TestRealFilesystemServerListsClientRoots(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed: skipping the test with @modelcontextprotocol/server-filesystem")
	}
	if testing.Short() {
		t.Skip("-short: skipping the test with @modelcontextprotocol/server-filesystem")
	}
	pctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	probe := exec.CommandContext(pctx, npx, "-y", "@modelcontextprotocol/server-filesystem", t.TempDir())
	probe.Stdin = strings.NewReader("")
	if out, err := probe.CombinedOutput(); err != nil {
		t.Skipf("npx cannot run @modelcontextprotocol/server-filesystem (%v): skipping\n%s", err, out)
	}
	a, b := t.TempDir(), t.TempDir()
	a, _ = filepath.EvalSymlinks(a)
	b, _ = filepath.EvalSymlinks(b)
	rp := startRelay(t, nil, nil, []string{"file://" + a, "file://" + b}, npx, "-y", "@modelcontextprotocol/server-filesystem")
	var got string
	require.Eventually(t, func() bool {
		res, err := rp.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_allowed_directories"})
		if err != nil || res.IsError {
			return false
		}
		got = text(res)
		return strings.Contains(got, a) && strings.Contains(got, b)
	}, 60*time.Second, 200*time.Millisecond, "last answer: %q\nstderr:\n%s", got, rp.stderr)
	raw, _ := json.Marshal(got)
	t.Logf("list_allowed_directories: %s", raw)
}

// TestUpstreamSeesTheFirstClientOfferingRoots: over streamable HTTP,
// with several clients, the upstream sees the roots of the first
// connected client that offers them; when it leaves, the upstream is
// told and sees the next one's.
func TestUpstreamSeesTheFirstClientOfferingRoots(t *testing.T) {
	rp := startRelay(t, []string{"-http", "127.0.0.1:0"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}, nil)
	addr := httpAddr(t, rp.proxy)
	connect := func(root string) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: "web-agent", Version: "v1"}, nil)
		//lint:ignore SA1019 the test plays a client on a protocol before 2026-07-28, whose roots the proxy must relay
		c.AddRoots(&sdk.Root{URI: root})
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + addr}, &sdk.ClientSessionOptions{ProtocolVersion: legacyProtocol})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	dirsOf := func(cs *sdk.ClientSession) string {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "list_allowed_directories"})
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
		return text(res)
	}
	assert.Equal(t, "Allowed directories:\n", rp.dirs(t), "the stdio client offers no roots")
	a := connect("file:///home/a")
	assert.Equal(t, "Allowed directories:\n/home/a", dirsOf(a))
	b := connect("file:///home/b")
	assert.Equal(t, "Allowed directories:\n/home/a", dirsOf(b), "one upstream sees the first client's roots")
	require.NoError(t, a.Close())
	require.Eventually(t, func() bool { return dirsOf(b) == "Allowed directories:\n/home/b" }, 10*time.Second, 50*time.Millisecond)
	ev := rp.events(t)
	assert.Equal(t, 2, strings.Count(strings.Join(ev, "\n"), "initialize "), "started once more, when the first client offering roots arrived: %v", ev)
	assert.Contains(t, ev, "list_changed")
}
