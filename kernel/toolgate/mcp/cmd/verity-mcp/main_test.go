package main

// The proxy's guarantees and the tests that check them. Each test runs
// the command (run) in-process, its stdio on pipes to the SDK's real
// client, in front of a real upstream MCP server process
// (internal/testserver, built once by the tests), which journals every
// execution — so "ran once" and "never ran" are checked on the
// upstream's side.
//
//   - The upstream's tools are served and calls pass: TestProxyForwardsCalls.
//   - An unknown tool is refused and never reaches the upstream:
//     TestProxyRefusesUnknownTool.
//   - A DELETE call asks the client's human; it runs once when approved,
//     never when declined: TestProxyDeleteAsksTheHuman (stdio, current
//     protocol), TestProxyServesStreamableHTTP (HTTP sessions, Elicit).
//   - The budget runs out and the model sees why: TestProxyBudgetRunsOut.
//   - Parallel calls never overspend: TestProxyParallelCallsNeverOverspend;
//     nor with -sync-while-running, where every answered call is on the
//     log: TestSyncWhileRunningFlag.
//   - Several proxies on one database share one budget:
//     TestProxiesShareOneBudget (SQLite always, PostgreSQL with
//     VERITY_PG_DSN).
//   - The log verifies, its head is printed on exit, and the kernel
//     session replays from it: checkLog, called by the tests above;
//     a restart resumes the caller's spend: TestProxyRestartResumesSpend.
//   - With -http-caller, every HTTP session is one caller, and a new
//     session does not reset the budget: TestHTTPCallerSharesOneBudget;
//     bearer tokens, loopback-only and one caller without them:
//     auth_test.go.
//   - Usage errors exit 2: TestUsage; an -approver the policy does not
//     expect: TestApproverMustBeThePolicys,
//     TestApproverCheckRefusesOnlyAnApproverOfNothing (rapid); the -db flag: FuzzParseDB,
//     TestParseDB.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

var bins struct {
	dir        string
	testserver string
	rawserver  string
	proxy      string
	once       sync.Once
	err        error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "verity-mcp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.dir = dir
	bins.testserver = filepath.Join(dir, "testserver")
	bins.rawserver = filepath.Join(dir, "rawserver")
	for out, pkg := range map[string]string{bins.testserver: "../../internal/testserver", bins.rawserver: "../../internal/rawserver"} {
		if err := goBuild(out, pkg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func goBuild(out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w", pkg, err)
	}
	return nil
}

// proxyBinary builds the verity-mcp command itself (for the benchmarks,
// which run it as a process as a real client would).
func proxyBinary(tb testing.TB) string {
	bins.once.Do(func() {
		bins.proxy = filepath.Join(bins.dir, "verity-mcp")
		bins.err = goBuild(bins.proxy, ".")
	})
	if bins.err != nil {
		tb.Fatal(bins.err)
	}
	return bins.proxy
}

// policyJSON is the tests' policy: reads are cheap, search costs a unit,
// writes are MODIFY, deletes need a human; echo is not in the catalogue.
const policyJSON = `{
  "version": 1,
  "budget": %q,
  "min_cost": "0.01",
  "tools": [
    {"match": "read_file", "cost": "0.1"},
    {"match": "write_file", "cost": "0.5", "tier": "MODIFY"},
    {"match": "delete_file", "cost": "1", "tier": "DELETE"},
    {"match": "search", "cost": "1"}
  ]%s
}`

func writePolicy(t testing.TB, budget, extra string) string {
	p := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(policyJSON, budget, extra)), 0o600))
	return p
}

// upstream is a sandbox for one testserver: its files and its journal.
type upstream struct {
	root, journal string
}

func newUpstream(t testing.TB) upstream {
	dir := t.TempDir()
	u := upstream{root: filepath.Join(dir, "root"), journal: filepath.Join(dir, "journal")}
	require.NoError(t, os.Mkdir(u.root, 0o700))
	return u
}

func (u upstream) argv() []string {
	return []string{bins.testserver, "-root", u.root, "-journal", u.journal}
}

func (u upstream) file(t testing.TB, name, content string) {
	require.NoError(t, os.WriteFile(filepath.Join(u.root, name), []byte(content), 0o600))
}

func (u upstream) exists(name string) bool {
	_, err := os.Stat(filepath.Join(u.root, name))
	return err == nil
}

// ran counts the upstream's executions of tool.
func (u upstream) ran(t testing.TB, tool string) int {
	b, err := os.ReadFile(u.journal)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, tool+" ") {
			n++
		}
	}
	return n
}

// syncBuffer is a bytes.Buffer safe for the proxy's and the test's
// goroutines.
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

// human answers elicitations with its action.
type human struct {
	action string
	before func() // when set, runs as the human is asked
	mu     sync.Mutex
	asked  int
}

func (h *human) handler(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	if h.before != nil {
		h.before()
	}
	h.mu.Lock()
	h.asked++
	h.mu.Unlock()
	return &sdk.ElicitResult{Action: h.action}, nil
}

func (h *human) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.asked
}

// proxy is a running verity-mcp and its stdio client.
type proxy struct {
	cs     *sdk.ClientSession
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

// startProxy runs the command with args in-process, connected to a client
// (answering elicitations as h does when h is not nil) over its stdio.
func startProxy(t testing.TB, args []string, h *human) *proxy {
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
	opts := &sdk.ClientOptions{}
	if h != nil {
		opts.ElicitationHandler = h.handler
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, opts).
		Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connecting to the proxy: %v\nstderr:\n%s", err, p.stderr.String())
	}
	p.cs = cs
	t.Cleanup(func() {
		cancel()
		_ = cs.Close()
	})
	return p
}

// stop closes the client (the proxy's stdin) and returns the exit status.
func (p *proxy) stop(t testing.TB) int {
	_ = p.cs.Close()
	select {
	case code := <-p.done:
		return code
	case <-time.After(30 * time.Second):
		p.cancel()
		t.Fatalf("the proxy did not exit\nstderr:\n%s", p.stderr.String())
		return -1
	}
}

func (p *proxy) call(t testing.TB, tool string, args map[string]any) *sdk.CallToolResult {
	res, err := p.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "stderr:\n%s", p.stderr.String())
	return res
}

func text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

var headLine = regexp.MustCompile(`msg="log head" .* head=(\d+):([0-9a-f]{64})`)

// checkLog checks what a stopped proxy left: the head it printed is the
// log file's, the file verifies, and the caller's kernel session replays
// from it to net spend want.
func checkLog(t testing.TB, stderr, logPath, policyPath, caller string, want kernel.Cost) {
	t.Helper()
	m := headLine.FindStringSubmatch(stderr)
	require.NotNil(t, m, "the proxy prints the log's head on exit; stderr:\n%s", stderr)

	ro, err := trace.OpenFileReadOnly(logPath) // verifies the whole chain
	require.NoError(t, err)
	head, err := ro.Head(context.Background())
	require.NoError(t, err)
	require.NoError(t, ro.Close())
	assert.Equal(t, m[1], fmt.Sprint(head.Size-1), "printed seq")
	assert.Equal(t, m[2], head.Hash.String(), "printed hash")

	// Replay from a copy, with the kernel a gate under the same policy
	// builds.
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	cp := filepath.Join(t.TempDir(), "copy.log")
	require.NoError(t, os.WriteFile(cp, b, 0o600))
	store, err := trace.OpenFile(cp, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	defer func() { _ = log.Close() }()
	pol, err := toolgate.LoadPolicy(policyPath)
	require.NoError(t, err)
	comp, err := pol.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(context.Background(), log, comp)
	require.NoError(t, err)
	s, err := kernel.Replay(context.Background(), log, g.Kernel(), g.SessionID(caller))
	require.NoError(t, err, "the caller's kernel session replays from the log")
	assert.Equal(t, want, s.Meter().Budget().Net(), "replayed net spend")
}

func TestProxyForwardsCalls(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "notes.txt", "buy milk")
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...), nil)

	list, err := p.cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	// The upstream's list, in its (sorted) order, without echo: the policy refuses
	// unknown tools, so tools/list hides those the caller may never call.
	assert.Equal(t, []string{"delete_file", "read_file", "search", "write_file"}, names)

	res := p.call(t, "read_file", map[string]any{"path": "notes.txt"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "buy milk", text(res))
	res = p.call(t, "write_file", map[string]any{"path": "b.txt", "content": "milk bought"})
	require.False(t, res.IsError, text(res))
	res = p.call(t, "search", map[string]any{"query": "milk"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, "b.txt\nnotes.txt", text(res))

	// An upstream error comes back as the tool's error, and still counts.
	res = p.call(t, "read_file", map[string]any{"path": "missing.txt"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "no such file")

	assert.Equal(t, 2, up.ran(t, "read_file"))
	assert.Equal(t, 1, up.ran(t, "write_file"))
	assert.Equal(t, 1, up.ran(t, "search"))
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", kernel.Unit/10*2+kernel.Unit/2+kernel.Unit)
	assert.Contains(t, p.stderr.String(), "sync_while_running=false", "decisions are durable before their tools by default")
}

func TestProxyRefusesUnknownTool(t *testing.T) {
	up := newUpstream(t)
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...), nil)

	res := p.call(t, "echo", map[string]any{"text": "hi"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), `tool "echo" is not in the gate's catalogue`)
	assert.Zero(t, up.ran(t, "echo"), "the upstream never saw it")
	require.Equal(t, 0, p.stop(t), p.stderr.String())
}

func TestProxyDeleteAsksTheHuman(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	up.file(t, "b.txt", "b")
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")

	yes := &human{action: "accept"}
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...), yes)
	res := p.call(t, "delete_file", map[string]any{"path": "a.txt"})
	require.False(t, res.IsError, text(res))
	assert.Equal(t, 1, yes.count(), "the human was asked")
	assert.Equal(t, 1, up.ran(t, "delete_file"), "approved: ran once")
	assert.False(t, up.exists("a.txt"))
	require.Equal(t, 0, p.stop(t), p.stderr.String())

	// The same log, another run, a human who declines.
	no := &human{action: "decline"}
	p = startProxy(t, append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...), no)
	res = p.call(t, "delete_file", map[string]any{"path": "b.txt"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), `approval): DELETE denied by human: declined`)
	assert.Equal(t, 1, no.count())
	assert.Equal(t, 1, up.ran(t, "delete_file"), "declined: never ran")
	assert.True(t, up.exists("b.txt"))

	// A client that cannot ask its human gets no delete either.
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	p = startProxy(t, append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...), nil)
	res = p.call(t, "delete_file", map[string]any{"path": "b.txt"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "cannot ask for one")
	assert.Equal(t, 1, up.ran(t, "delete_file"))
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", kernel.Unit)
}

func TestProxyBudgetRunsOut(t *testing.T) {
	up := newUpstream(t)
	pol := writePolicy(t, "2.5", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...), nil)

	for range 2 {
		res := p.call(t, "search", map[string]any{"query": "x"})
		require.False(t, res.IsError, text(res))
	}
	res := p.call(t, "search", map[string]any{"query": "x"})
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), `action "search" rejected: budget: cost 1, remaining 0.5`)
	assert.Equal(t, 2, up.ran(t, "search"))
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", 2*kernel.Unit)
}

func TestProxyParallelCallsNeverOverspend(t *testing.T) {
	up := newUpstream(t)
	pol := writePolicy(t, "5", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...), nil)

	assert.Equal(t, 5, parallelSearches(t, p, 16), "exactly what the budget holds")
	assert.Equal(t, 5, up.ran(t, "search"), "the upstream ran exactly the allowed calls")
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", 5*kernel.Unit)
}

// parallelSearches makes n concurrent "search" calls through the proxy
// and returns how many were allowed; every refusal must name the budget.
func parallelSearches(t *testing.T, p *proxy, n int) int {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range n {
		wg.Go(func() {
			res, err := p.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
			if !assert.NoError(t, err) {
				return
			}
			if !res.IsError {
				mu.Lock()
				allowed++
				mu.Unlock()
			} else {
				assert.Contains(t, text(res), "budget")
			}
		})
	}
	wg.Wait()
	return allowed
}

// TestSyncWhileRunningFlag: with -sync-while-running the proxy says so
// when it starts, parallel calls still never overspend, and every call
// answered is on the log, decision and result, when the proxy stops.
func TestSyncWhileRunningFlag(t *testing.T) {
	up := newUpstream(t)
	pol := writePolicy(t, "5", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-sync-while-running", "--"}, up.argv()...), nil)

	assert.Equal(t, 5, parallelSearches(t, p, 8), "exactly what the budget holds")
	assert.Equal(t, 5, up.ran(t, "search"), "the upstream ran exactly the allowed calls")
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "sync_while_running=true")
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", 5*kernel.Unit)
	results := 0
	ro, err := trace.OpenFileReadOnly(logPath)
	require.NoError(t, err)
	defer ro.Close()
	for e, err := range ro.Entries(context.Background(), 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindResult {
			results++
		}
	}
	assert.Equal(t, 5, results, "a result entry for every call that ran")
}

func TestProxyRestartResumesSpend(t *testing.T) {
	up := newUpstream(t)
	pol := writePolicy(t, "2", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	args := append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...)

	p := startProxy(t, args, nil)
	require.False(t, p.call(t, "search", map[string]any{"query": "x"}).IsError)
	require.Equal(t, 0, p.stop(t), p.stderr.String())

	p = startProxy(t, args, nil)
	require.False(t, p.call(t, "search", map[string]any{"query": "x"}).IsError)
	res := p.call(t, "search", map[string]any{"query": "x"})
	assert.True(t, res.IsError, "the first run's spend still counts")
	assert.Contains(t, text(res), "remaining 0")
	require.Equal(t, 0, p.stop(t), p.stderr.String())

	// Another caller key starts afresh on the same log.
	p = startProxy(t, append([]string{"-caller", "other"}, args...), nil)
	require.False(t, p.call(t, "search", map[string]any{"query": "x"}).IsError)
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	assert.Equal(t, 3, up.ran(t, "search"))
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", 2*kernel.Unit)
}

// TestProxiesShareOneBudget runs two verity-mcp processes, each with its
// own log and its own upstream, on one shared budget of 3 units in one
// database: six parallel searches of a unit each, three through each
// proxy, run exactly three times in all, although each caller's own budget
// has room for ten.
func TestProxiesShareOneBudget(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		shareOneBudget(t, "sqlite:"+filepath.Join(t.TempDir(), "budgets.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := sqltest.PostgresSchema(t) // skips without VERITY_PG_DSN
		if _, err := parseDB(dsn); err != nil {
			t.Skipf("%s is not a postgres:// URL: %v", sqltest.PostgresEnv, err)
		}
		shareOneBudget(t, dsn)
	})
}

func shareOneBudget(t *testing.T, db string) {
	bin := proxyBinary(t)
	pol := writePolicy(t, "10", `,
  "shared_budget": {"id": "team", "limit": "3"}`)
	type node struct {
		up     upstream
		log    string
		cs     *sdk.ClientSession
		stderr *syncBuffer
	}
	nodes := make([]*node, 2)
	for i := range nodes {
		n := &node{up: newUpstream(t), log: filepath.Join(t.TempDir(), "trace.log"), stderr: &syncBuffer{}}
		argv := append([]string{"-policy", pol, "-log", n.log, "-db", db, "--"}, n.up.argv()...)
		cmd := exec.Command(bin, argv...)
		cmd.Stderr = n.stderr
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).
			Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err, "stderr:\n%s", n.stderr.String())
		n.cs = cs
		nodes[i] = n
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range 3 {
			wg.Go(func() {
				res, err := n.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
				if assert.NoError(t, err) && res.IsError {
					assert.Contains(t, text(res), "shared", "refused by the shared budget")
				}
			})
		}
	}
	wg.Wait()
	total := 0
	for _, n := range nodes {
		total += n.up.ran(t, "search")
		require.NoError(t, n.cs.Close(), "the proxy exits cleanly; stderr:\n%s", n.stderr.String())
		assert.Regexp(t, headLine, n.stderr.String())
		_, err := trace.OpenFileReadOnly(n.log)
		require.NoError(t, err, "each proxy's log verifies")
	}
	assert.Equal(t, 3, total, "the two proxies ran exactly what the shared budget holds")
}

func TestProxyServesStreamableHTTP(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	up.file(t, "b.txt", "b")
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-caller-per-session", "--"}, up.argv()...), nil)

	addr := httpAddr(t, p)

	connect := func(h *human) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "web-agent", Version: "v1"}, &sdk.ClientOptions{ElicitationHandler: h.handler}).
			Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + addr}, &sdk.ClientSessionOptions{ProtocolVersion: legacyProtocol})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	yes, no := &human{action: "accept"}, &human{action: "decline"}
	a, b := connect(yes), connect(no)
	require.NotEmpty(t, a.ID(), "a streamable HTTP session has an id")

	res, err := a.CallTool(context.Background(), &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "a.txt"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, text(res))
	res, err = b.CallTool(context.Background(), &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "b.txt"}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, text(res), "denied by human")
	assert.Equal(t, 1, yes.count())
	assert.Equal(t, 1, no.count())
	assert.Equal(t, 1, up.ran(t, "delete_file"))
	assert.False(t, up.exists("a.txt"))
	assert.True(t, up.exists("b.txt"))

	// The stdio client is served alongside, as its own caller.
	res = p.call(t, "read_file", map[string]any{"path": "b.txt"})
	assert.False(t, res.IsError, text(res))

	// With -http, the proxy keeps serving after stdio ends, until an
	// interrupt.
	_ = p.cs.Close()
	select {
	case <-p.done:
		t.Fatal("the proxy exited while serving HTTP")
	case <-time.After(100 * time.Millisecond):
	}
	res, err = a.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "b.txt"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, text(res))
	p.cancel()
	select {
	case code := <-p.done:
		assert.Equal(t, 0, code, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the proxy did not stop\n%s", p.stderr.String())
	}
	checkLog(t, p.stderr.String(), logPath, pol, a.ID(), kernel.Unit+kernel.Unit/10)
}

// TestHTTPCallerSharesOneBudget: with -http-caller, every streamable HTTP
// session is that one caller, so a client cannot reset its budget by
// initializing a new session; the stdio client stays its own caller.
func TestHTTPCallerSharesOneBudget(t *testing.T) {
	up := newUpstream(t)
	pol := writePolicy(t, "2.5", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-http-caller", "web", "--"}, up.argv()...), nil)
	addr := httpAddr(t, p)

	search := func(cs *sdk.ClientSession) *sdk.CallToolResult {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err)
		return res
	}
	connect := func(version string) *sdk.ClientSession {
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "web-agent", Version: "v1"}, nil).
			Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + addr}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	a, b := connect(legacyProtocol), connect(legacyProtocol)
	require.NotEqual(t, a.ID(), b.ID(), "two sessions")
	assert.False(t, search(a).IsError)
	assert.False(t, search(b).IsError)
	res := search(b)
	assert.True(t, res.IsError, "the second session draws on the first one's budget")
	assert.Contains(t, text(res), "remaining 0.5")
	require.NoError(t, a.Close())
	res = search(connect(legacyProtocol))
	assert.True(t, res.IsError, "a new session does not reset the budget")
	assert.Contains(t, text(res), "remaining 0.5")
	stateless := connect("") // 2026-07-28: no session at all
	require.Empty(t, stateless.ID(), "a 2026-07-28 client has no session")
	res = search(stateless)
	assert.True(t, res.IsError, "a request without a session is charged to the same caller")
	assert.Contains(t, text(res), "remaining 0.5")
	assert.Equal(t, 2, up.ran(t, "search"))

	// The stdio client is its own caller still.
	assert.False(t, p.call(t, "search", map[string]any{"query": "x"}).IsError)

	_ = p.cs.Close()
	p.cancel()
	select {
	case code := <-p.done:
		assert.Equal(t, 0, code, p.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the proxy did not stop\n%s", p.stderr.String())
	}
	checkLog(t, p.stderr.String(), logPath, pol, "web", 2*kernel.Unit)
}

// httpAddr waits for a proxy started with -http to listen, and returns
// its address.
func httpAddr(t *testing.T, p *proxy) string {
	var addr string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`msg=listening http=(\S+)`).FindStringSubmatch(p.stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond)
	return addr
}

// TestUsage: every configuration error exits 2 with the usage (and -h
// lists the exit statuses); failures at run time exit 1.
func TestUsage(t *testing.T) {
	pol := writePolicy(t, "10", "")
	shared := writePolicy(t, "10", `,
  "shared_budget": {"id": "team", "limit": "3"}`)
	badPolicy := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(badPolicy, []byte(`{"version": 1, "budget": "ten"}`), 0o600))
	cases := map[string][]string{
		"no policy":                  {"-log", "x", "--", "true"},
		"no log":                     {"-policy", pol, "--", "true"},
		"no upstream":                {"-policy", pol, "-log", "x"},
		"bad -db":                    {"-policy", pol, "-log", "x", "-db", "mysql://x", "--", "true"},
		"bad flag":                   {"-nope"},
		"-http-caller without -http": {"-policy", pol, "-log", "x", "-http-caller", "web", "--", "true"},
		"missing policy":             {"-policy", filepath.Join(t.TempDir(), "none.json"), "-log", filepath.Join(t.TempDir(), "l"), "--", "true"},
		"invalid policy":             {"-policy", badPolicy, "-log", filepath.Join(t.TempDir(), "l"), "--", "true"},
		"-db without a shared":       {"-policy", pol, "-log", filepath.Join(t.TempDir(), "l"), "-db", "sqlite:" + filepath.Join(t.TempDir(), "b.db"), "--", "true"},
		"shared without -db":         {"-policy", shared, "-log", filepath.Join(t.TempDir(), "l"), "--", "true"},
		"bad -list":                  {"-policy", pol, "-log", "x", "-list", "some", "--", "true"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr.String(), "usage: verity-mcp")
		})
	}
	// Failures after the command line is read exit 1 and say why.
	failures := map[string][]string{
		"upstream not starting": {"-policy", pol, "-log", filepath.Join(t.TempDir(), "l"), "--", filepath.Join(t.TempDir(), "no-such-server")},
		"log in a missing dir":  {"-policy", pol, "-log", filepath.Join(t.TempDir(), "no", "l"), "--", "true"},
	}
	for name, args := range failures {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
			assert.Equal(t, 1, code)
			assert.Contains(t, stderr.String(), "verity-mcp failed")
		})
	}
	var stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-h"}, strings.NewReader(""), io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "exit status: 0 clean shutdown, 1 run-time failure")
	assert.Contains(t, stderr.String(), "2 configuration error")
}

// TestSecondProxyOnOneLogRefused: a verity-mcp process holds its -log; a
// second one on the same log exits 1 at once, before starting its
// upstream, naming the log and the holder; the first keeps serving, and
// its log verifies with every call it acknowledged.
func TestSecondProxyOnOneLogRefused(t *testing.T) {
	bin := proxyBinary(t)
	up := newUpstream(t)
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	argv := append([]string{"-policy", pol, "-log", logPath, "--"}, up.argv()...)
	firstErr := &syncBuffer{}
	first := exec.Command(bin, argv...)
	first.Stderr = firstErr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: first}, nil)
	require.NoError(t, err, "stderr:\n%s", firstErr.String())
	call := func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "x"}})
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
	}
	call()

	second := exec.Command(bin, argv...)
	var out bytes.Buffer
	second.Stderr = &out
	second.Stdin = strings.NewReader("")
	err = second.Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee, "the second proxy must not run:\n%s", out.String())
	assert.Equal(t, 1, ee.ExitCode())
	assert.Contains(t, out.String(), logPath+" is open for writing by process")
	if runtime.GOOS == "linux" {
		assert.Contains(t, out.String(), fmt.Sprintf("by process %d", first.Process.Pid))
	}
	assert.Equal(t, 1, up.ran(t, "search"), "the second proxy never started its upstream")

	call() // the first still serves
	require.NoError(t, cs.Close(), "stderr:\n%s", firstErr.String())
	assert.Equal(t, 2, up.ran(t, "search"))
	checkLog(t, firstErr.String(), logPath, pol, "stdio", 2*kernel.Unit)
}

// TestApproverMustBeThePolicys: -approver names who the client's human
// answers as; when the policy has calls that need an approval and names
// other approvers for all of them, the command exits 2 and names the
// approvers it expects, rather than start a proxy whose approvals could
// never be given.
func TestApproverMustBeThePolicys(t *testing.T) {
	privilege := `,
  "approvers": {"DELETE": ["ops", "bob"], "PRIVILEGE": ["root"]}`
	withPrivilege := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(withPrivilege, []byte(`{"version": 1, "budget": "10", "min_cost": "0.01",
  "tools": [{"match": "delete_file", "cost": "1", "tier": "DELETE"}, {"match": "sudo", "cost": "1", "tier": "PRIVILEGE"}]`+privilege+`}`), 0o600))
	noApprovals := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(noApprovals, []byte(`{"version": 1, "budget": "10", "min_cost": "0.01",
  "tools": [{"match": "read_file", "cost": "1"}]}`), 0o600))
	missing := filepath.Join(t.TempDir(), "no-such-server")
	cmd := func(pol, approver string) []string {
		return []string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "l"), "-approver", approver, "--", missing}
	}
	refused := map[string]struct {
		args []string
		says string
	}{
		"not the default": {cmd(writePolicy(t, "10", ""), "alice"),
			`-approver "alice" approves no call of ` + "%s" + `: it expects human for DELETE`},
		"none of the named": {cmd(withPrivilege, "human"),
			`-approver "human" approves no call of ` + "%s" + `: it expects ops, bob for DELETE; root for PRIVILEGE`},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(""), io.Discard, &stderr)
			assert.Equal(t, 2, code, stderr.String())
			assert.Contains(t, stderr.String(), fmt.Sprintf(tc.says, tc.args[1]))
			assert.Contains(t, stderr.String(), "usage: verity-mcp")
		})
	}
	// Accepted: an approver of one tier (the other's calls wait for their
	// approvers, out of band, and the proxy says so), or any name when no
	// call needs an approval. These proxies then fail to start their
	// upstream: exit 1, past the check.
	accepted := map[string]struct {
		args []string
		warn string
	}{
		"one tier's":   {cmd(withPrivilege, "root"), `cannot approve DELETE calls (ops, bob): they wait for approval out of band`},
		"the default":  {cmd(writePolicy(t, "10", ""), "human"), ""},
		"no approvals": {cmd(noApprovals, "anyone"), ""},
	}
	for name, tc := range accepted {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			code := run(context.Background(), tc.args, strings.NewReader(""), io.Discard, &stderr)
			assert.Equal(t, 1, code, stderr.String())
			assert.Contains(t, stderr.String(), "starting the upstream")
			if tc.warn != "" {
				assert.Contains(t, stderr.String(), tc.warn)
			} else {
				assert.NotContains(t, stderr.String(), "cannot approve")
			}
		})
	}
}

// TestApproverCheckRefusesOnlyAnApproverOfNothing: checkApprover refuses
// an -approver exactly when the policy's rules use a tier needing an
// approval and the approver is named for none of those tiers (the
// default approver for both when the policy names none), against a naive
// model.
func TestApproverCheckRefusesOnlyAnApproverOfNothing(t *testing.T) {
	names := []string{toolgate.DefaultApprover, "ops", "bob", "root"}
	tiers := []claims.RiskTier{claims.TierReadOnly, claims.TierModify, claims.TierDelete, claims.TierPrivilege}
	rapid.Check(t, func(t *rapid.T) {
		var cfg toolgate.Policy
		for _, tier := range rapid.SliceOfN(rapid.SampledFrom(tiers), 0, 4).Draw(t, "rule_tiers") {
			cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "t", Tier: tier})
		}
		if rapid.Bool().Draw(t, "allow_unknown") {
			cfg.AllowUnknown, cfg.DefaultRule = true, &toolgate.Rule{Tier: rapid.SampledFrom(tiers).Draw(t, "default_tier")}
		}
		if rapid.Bool().Draw(t, "named") {
			cfg.Approvers = map[claims.RiskTier][]string{}
			for _, tier := range approvalTiers {
				cfg.Approvers[tier] = rapid.SliceOfNDistinct(rapid.SampledFrom(names), 1, 3, rapid.ID[string]).Draw(t, "approvers_"+string(tier))
			}
		}
		approver := rapid.SampledFrom(names).Draw(t, "approver")

		// The model.
		uses := func(tier claims.RiskTier) bool {
			if cfg.AllowUnknown && cfg.DefaultRule.Tier == tier {
				return true
			}
			return slices.ContainsFunc(cfg.Tools, func(r toolgate.Rule) bool { return r.Tier == tier })
		}
		needs, approves := false, false
		for _, tier := range approvalTiers {
			if !uses(tier) {
				continue
			}
			needs = true
			expected := []string{toolgate.DefaultApprover}
			if cfg.Approvers != nil {
				expected = cfg.Approvers[tier]
			}
			approves = approves || slices.Contains(expected, approver)
		}

		warnings, err := checkApprover(cfg, approver, "p.json")
		if needs && !approves {
			require.Error(t, err)
			require.Contains(t, err.Error(), fmt.Sprintf("-approver %q approves no call of p.json: it expects ", approver))
		} else {
			require.NoError(t, err)
		}
		if !needs {
			require.Empty(t, warnings)
		}
	})
}
