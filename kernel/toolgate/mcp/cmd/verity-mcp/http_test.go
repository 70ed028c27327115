package main

// The -http server's bounds: TestHTTPIdleAndSlowClientsStarveNoOne (raw
// TCP: idle, slow-header and slow-body clients), TestHTTPLongCallOutlivesTimeouts
// (a call's answer and the event stream stay open past the read and
// write timeouts; the session then expires), TestHTTPSessionsExpireAndMemoryReturns
// (1,200 sessions, their memory measured), TestHTTPSessionCap (3,000
// initialize against -max-sessions 50, the built command's memory
// measured), TestHTTPLimitFlags.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/httpguard/guardtest"
)

// initializeBody is a client's first request of a session.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"v1"}}}`

// mcpPost posts body to the proxy as an MCP client does, in session id
// (none: a new session), and returns the status and the session id.
func mcpPost(ctx context.Context, c *http.Client, base, id, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if id != "" {
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), err
}

// startHTTPProxy runs the proxy with -http on a free port and extra
// flags; it returns the proxy and the server's base URL.
func startHTTPProxy(t *testing.T, extra ...string) (*proxy, string) {
	t.Helper()
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := writePolicy(t, "100", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	args := append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0"}, extra...)
	p := startProxy(t, append(append(args, "--"), up.argv()...), nil)
	return p, "http://" + httpAddr(t, p)
}

// TestHTTPIdleAndSlowClientsStarveNoOne: idle, slow-header and slow-body
// clients, more idle ones than -max-conns, are let go within their
// timeouts, while a normal client initializing a session is answered
// promptly all along.
func TestHTTPIdleAndSlowClientsStarveNoOne(t *testing.T) {
	l := guardtest.Limits()
	_, base := startHTTPProxy(t, guardtest.Args(l)...)
	guardtest.Run(t, guardtest.Target{
		Addr:   strings.TrimPrefix(base, "http://"),
		Limits: l,
		Get:    "/",
		Post:   "/",
		PostHeader: http.Header{
			"Content-Type": {"application/json"},
			"Accept":       {"application/json, text/event-stream"},
		},
		Normal: func(ctx context.Context, c *http.Client, base string) error {
			code, id, err := mcpPost(ctx, c, base, "", initializeBody)
			if err == nil && (code != http.StatusOK || id == "") {
				err = fmt.Errorf("initialize: status %d, session %q", code, id)
			}
			return err
		},
	})
}

// TestHTTPLongCallOutlivesTimeouts: a DELETE call whose human takes longer
// than -read-timeout and -write-timeout to approve still gets its answer
// (the POST's stream stays open, its context is not cancelled), and the
// session lives while the call runs; once idle for -session-timeout, the
// session is gone.
func TestHTTPLongCallOutlivesTimeouts(t *testing.T) {
	_, base := startHTTPProxy(t, "-read-timeout", "500ms", "-write-timeout", "500ms", "-session-timeout", "1s")
	var asked atomic.Int32
	slowHuman := func(ctx context.Context, _ *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked.Add(1)
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &sdk.ElicitResult{Action: "accept"}, nil
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "web-agent", Version: "v1"}, &sdk.ClientOptions{ElicitationHandler: slowHuman}).
		Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: base}, &sdk.ClientSessionOptions{ProtocolVersion: legacyProtocol}) // sessions are 2025's
	require.NoError(t, err)
	defer cs.Close()

	start := time.Now()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "a.txt"}})
	require.NoError(t, err)
	assert.False(t, res.IsError, text(res))
	assert.Equal(t, int32(1), asked.Load())
	assert.Greater(t, time.Since(start), 2*time.Second, "the answer came after the approval")

	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	require.NoError(t, err, "the session outlived the long call")
	assert.True(t, res.IsError, "a.txt was deleted")

	time.Sleep(2500 * time.Millisecond) // past -session-timeout without a request
	_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a.txt"}})
	require.Error(t, err, "the idle session expired")
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestHTTPSessionsExpireAndMemoryReturns: two waves of 1,000 sessions,
// each initialized and left idle, are all closed after -session-timeout
// (each id is then unknown: 404), and the memory they held is returned.
// While open, each session holds about 5 KiB; after the first wave
// expires, under 1 KiB a session is left — what the SDK's session map
// and the runtime's pool of goroutine descriptors keep of their
// high-water mark — and the second wave, expired, leaves nothing more:
// memory stays flat however many sessions come and go.
func TestHTTPSessionsExpireAndMemoryReturns(t *testing.T) {
	const sessions = 1000
	timeout := 3 * time.Second
	p, base := startHTTPProxy(t, "-session-timeout", timeout.String())
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx := context.Background()

	// wave opens the sessions, measures the live heap with them, waits
	// for them to expire, checks that each is gone and measures again.
	wave := func() (peak, after uint64) {
		ids := make([]string, sessions)
		var wg sync.WaitGroup
		var failed atomic.Int32
		work := make(chan int)
		for range 8 {
			wg.Go(func() {
				for i := range work {
					code, id, err := mcpPost(ctx, client, base, "", initializeBody)
					if err != nil || code != http.StatusOK || id == "" {
						failed.Add(1)
						continue
					}
					ids[i] = id
				}
			})
		}
		start := time.Now()
		for i := range sessions {
			work <- i
		}
		close(work)
		wg.Wait()
		if opened := time.Since(start); opened > timeout {
			t.Logf("opening the sessions took %v, past -session-timeout: the first had expired at the peak", opened)
		}
		require.Zero(t, failed.Load(), "every initialize answered")
		tr.CloseIdleConnections()
		peak = heapInUse()

		time.Sleep(timeout + time.Second)
		unknown := 0
		for _, id := range ids {
			code, _, err := mcpPost(ctx, client, base, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
			require.NoError(t, err)
			if code == http.StatusNotFound {
				unknown++
			}
		}
		assert.Equal(t, sessions, unknown, "every idle session closed after -session-timeout")
		tr.CloseIdleConnections()
		return peak, heapInUse()
	}

	// Warm up (first-use allocations of the server and the client).
	_, _, err := mcpPost(ctx, client, base, "", initializeBody)
	require.NoError(t, err)
	time.Sleep(timeout + time.Second)
	tr.CloseIdleConnections()
	before := heapInUse()
	peak1, after1 := wave()
	peak2, after2 := wave()

	per := func(a, b uint64) float64 { return float64(int64(a)-int64(b)) / sessions }
	t.Logf("live heap: %.2f MiB before; %d sessions: %.2f MiB open (%.0f B each), %.2f MiB expired (%.0f B each left); "+
		"%d more: %.2f MiB open, %.2f MiB expired (%+.0f B each)",
		mib(before), sessions, mib(peak1), per(peak1, before), mib(after1), per(after1, before),
		sessions, mib(peak2), mib(after2), per(after2, after1))
	require.Greater(t, per(peak1, before), 1024.0, "each open session held more than 1 KiB")
	assert.Less(t, per(after1, before), 1024.0, "an expired session leaves under 1 KiB behind")
	// A leaked session holds about 730 B; 256 B each leaves room for the
	// runtime's own noise on a loaded machine (159 B was seen once).
	assert.Less(t, per(after2, after1), 256.0, "a second wave leaves nothing more behind")
	assert.NotContains(t, p.stderr.String(), "level=ERROR")
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// TestHTTPLimitFlags: no bound can be switched off (a usage error,
// exit 2), and --help lists them.
func TestHTTPLimitFlags(t *testing.T) {
	pol := writePolicy(t, "10", "")
	for _, f := range []string{"-session-timeout", "-max-sessions", "-max-conns", "-max-conns-per-client", "-read-timeout", "-max-body"} {
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"-policy", pol, "-log", "x", f, "0", "--", "true"}, strings.NewReader(""), io.Discard, &stderr)
		assert.Equal(t, 2, code, f)
		assert.Contains(t, stderr.String(), "must be positive", f)
	}
	var stderr bytes.Buffer
	assert.Equal(t, 0, run(context.Background(), []string{"-help"}, strings.NewReader(""), io.Discard, &stderr))
	for _, f := range []string{"-session-timeout", "-max-sessions", "-max-body", "-read-header-timeout", "-read-timeout", "-write-timeout", "-idle-timeout", "-max-header-bytes", "-max-conns", "-max-conns-per-client", "-conn-wait"} {
		assert.Contains(t, stderr.String(), f)
	}
}
