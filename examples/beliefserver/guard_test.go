package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/httpguard"
	"github.com/verity-go/verity/internal/httpguard/guardtest"
)

// TestIdleAndSlowClientsStarveNoOne: idle, slow-header and slow-body
// clients, more idle ones than -max-conns, are let go within their
// timeouts, while a normal client declaring a session is answered
// promptly all along.
func TestIdleAndSlowClientsStarveNoOne(t *testing.T) {
	l := guardtest.Limits()
	base, stop, logs := start(t, guardtest.Args(l)...)
	defer func() { require.NoError(t, stop(), logs.String()) }()
	guardtest.Run(t, guardtest.Target{
		Addr:   strings.TrimPrefix(base, "http://"),
		Limits: l,
		Get:    "/v1/sessions/none",
		Post:   "/v1/sessions",
		Normal: declareSession,
	})
}

// TestLimitFlags: no limit can be switched off, and --help lists them.
func TestLimitFlags(t *testing.T) {
	for _, args := range [][]string{{"-max-conns", "0"}, {"-max-conns-per-client", "0"}, {"-read-timeout", "0s"}, {"-idle-timeout", "-1s"}} {
		var out strings.Builder
		err := run(context.Background(), args, &out, nil)
		require.ErrorContains(t, err, "must be positive", args)
	}
	var out strings.Builder
	require.Error(t, run(context.Background(), []string{"-help"}, &out, nil))
	for _, f := range []string{"-read-header-timeout", "-read-timeout", "-write-timeout", "-idle-timeout", "-max-header-bytes", "-max-conns", "-max-conns-per-client", "-conn-wait"} {
		require.Contains(t, out.String(), f)
	}
}

// TestOneClientCannotTakeEveryConnection: the command, a real process
// with its default limits, holds 256 slow-body connections from one
// client address to -max-conns-per-client (64): the others are closed
// at once, and another client is answered promptly all along. Before
// the per-client cap, they took every slot until -read-timeout (30s)
// cut them, and every other client was shut out.
func TestOneClientCannotTakeEveryConnection(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs 127.0.0.2 as a second loopback address")
	}
	cmd := command("-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	kill := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer kill.Stop()
	lines := bufio.NewScanner(stderr)
	var addr string
	for addr == "" && lines.Scan() {
		var l struct{ Msg, Addr string }
		if json.Unmarshal(lines.Bytes(), &l) == nil && l.Msg == "listening" {
			addr = l.Addr
		}
	}
	require.NotEmpty(t, addr, "the server starts")
	go func() { // keep draining its log
		for lines.Scan() {
		}
	}()
	l := httpguard.Defaults()
	guardtest.OneClient(t, guardtest.Target{
		Addr: addr, Limits: l, Post: "/v1/sessions",
		PostHeader: http.Header{"Content-Type": {"application/json"}},
		Normal:     declareSession,
	}, l.MaxConns, 5*time.Second)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
}

// declareSession is a normal client's request: declare a session.
func declareSession(ctx context.Context, c *http.Client, base string) error {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/v1/sessions", strings.NewReader(declare))
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("declare: status %d", resp.StatusCode)
	}
	return nil
}
