//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rssKiB is the resident memory of process pid, from /proc.
func rssKiB(t *testing.T, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(data)
	require.NotNil(t, m)
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n
}

// TestHTTPSessionCap: the built command, a real process, with
// -max-sessions 50, is sent 3,000 initialize: every one is answered,
// the oldest idle sessions are closed to make room (404 on their next
// request), at most 50 are live at the end, and the process's memory
// stays near where it started. A session whose call is in progress (a
// DELETE call held while its approval waits in the inbox) is never the
// one closed.
func TestHTTPSessionCap(t *testing.T) {
	const max, flood = 50, 3000
	bin := proxyBinary(t)
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := writeInboxPolicy(t, `"human"`, "10m")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0",
		"-approvals", "127.0.0.1:0", "-max-sessions", strconv.Itoa(max), "--"}, up.argv()...)...)
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe() // held open: the stdio client stays
	require.NoError(t, err)
	defer stdin.Close()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var addr string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`msg=listening http=(\S+)`).FindStringSubmatch(stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 30*time.Second, 10*time.Millisecond, "the proxy listens")
	base := "http://" + addr

	// A session whose call waits for its approval: a POST in progress
	// all through the flood.
	held, err := sdk.NewClient(&sdk.Implementation{Name: "held", Version: "v1"}, nil).
		Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base}, &sdk.ClientSessionOptions{ProtocolVersion: legacyProtocol}) // sessions are 2025's
	require.NoError(t, err)
	defer held.Close()
	done := callAsync(held, "delete_file", map[string]any{"path": "a.txt"})
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "delete_file") }, 30*time.Second, 10*time.Millisecond)

	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	_, _, err = mcpPost(ctx, client, base, "", initializeBody) // warm up
	require.NoError(t, err)
	before := rssKiB(t, cmd.Process.Pid)
	ids := make([]string, flood)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				code, id, err := mcpPost(ctx, client, base, "", initializeBody)
				mu.Lock()
				if err != nil {
					codes[-1]++
				} else {
					codes[code]++
				}
				mu.Unlock()
				ids[i] = id
			}
		})
	}
	for i := range flood {
		work <- i
	}
	close(work)
	wg.Wait()
	assert.Equal(t, map[int]int{http.StatusOK: flood}, codes, "every initialize answered")
	after := rssKiB(t, cmd.Process.Pid)

	alive := 0
	for _, id := range ids {
		code, _, err := mcpPost(ctx, client, base, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		require.NoError(t, err)
		if code == http.StatusOK {
			alive++
		} else {
			assert.Equal(t, http.StatusNotFound, code)
		}
	}
	assert.LessOrEqual(t, alive, max, "live sessions at most -max-sessions")
	assert.Positive(t, alive, "the newest sessions live")
	code, _, err := mcpPost(ctx, client, base, ids[0], `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, code, "the oldest session was closed for room")
	require.NoError(t, held.Ping(ctx, nil), "the session with a call in progress was kept")
	select {
	case s := <-done:
		t.Fatalf("the held call ended: %s", s)
	default:
	}
	t.Logf("%d initialize with -max-sessions %d: %d live at the end; resident memory %d KiB before, %d KiB after (%+d KiB)",
		flood, max, alive, before, after, after-before)
	assert.Less(t, after-before, 64<<10, "the flood grew the process by under 64 MiB")
	assert.Contains(t, stderr.String(), "HTTP sessions at -max-sessions")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	_ = stdin.Close()
	require.NoError(t, cmd.Wait(), stderr.String())
	assert.Regexp(t, `msg="HTTP sessions" live=\d+ closed_for_room=\d+ refused=0`, stderr.String())
}
