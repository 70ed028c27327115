package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// TestInboxWorksOutOfTheBoxWithAClientTimeout: with -approvals and a
// policy without approval_timeout, a call whose client cannot elicit
// waits (the default, 5m) for the inbox. A client with a TypeScript-style
// request timeout longer than the human takes — the answer arrives after
// 5 s — gets the result, and the tool runs once. A client whose timeout
// is shorter gives up first: the held call is recorded as unanswered, the
// request still waits, and once approved the client's retry runs — once.
func TestInboxWorksOutOfTheBoxWithAClientTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for 10 s")
	}
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	up.file(t, "b.txt", "b")
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01",
	  "tools": [{"match": "delete_file", "cost": "1", "tier": "DELETE"}]}`), 0o600))
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)
	callWithin := func(timeout time.Duration, path string) (*sdk.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return p.cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": path}})
	}
	approveAfter := func(d time.Duration) <-chan int {
		done := make(chan int, 1)
		go func() {
			reqs := waitListed(t, base, "", 1)
			time.Sleep(d)
			code, _ := inboxPost(t, base, `{"id":"`+reqs[0].ID+`","decision":"approve","reason":"after a while"}`, nil)
			done <- code
		}()
		return done
	}

	// A 60 s client timeout (the TypeScript SDK's default); the human
	// answers after 5 s.
	approved := approveAfter(5 * time.Second)
	start := time.Now()
	res, err := callWithin(60*time.Second, "a.txt")
	require.NoError(t, err)
	assert.False(t, res.IsError, text(res))
	assert.GreaterOrEqual(t, time.Since(start), 5*time.Second, "held until the answer")
	assert.Equal(t, http.StatusOK, <-approved)
	assert.False(t, up.exists("a.txt"))
	assert.Equal(t, 1, up.ran(t, "delete_file"))

	// A 2 s client timeout: the client gives up before the human answers.
	approved = approveAfter(5 * time.Second)
	_, err = callWithin(2*time.Second, "b.txt")
	require.Error(t, err, "the client's own timeout")
	assert.Equal(t, http.StatusOK, <-approved, "the request still waited")
	res, err = callWithin(60*time.Second, "b.txt")
	require.NoError(t, err)
	assert.False(t, res.IsError, text(res))
	assert.False(t, up.exists("b.txt"))
	assert.Equal(t, 2, up.ran(t, "delete_file"), "each call ran once")

	require.Equal(t, 0, p.stop(t))
	refusals := logEntries(t, logPath, gatelog.KindRefuse)
	require.Len(t, refusals, 1, "the call whose client gave up")
	assert.Equal(t, "approval_timeout", refusals[0]["reason"])
}
