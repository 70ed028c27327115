package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

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
		Normal: func(ctx context.Context, c *http.Client, base string) error {
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
		},
	})
}

// TestLimitFlags: no limit can be switched off, and --help lists them.
func TestLimitFlags(t *testing.T) {
	for _, args := range [][]string{{"-max-conns", "0"}, {"-read-timeout", "0s"}, {"-idle-timeout", "-1s"}} {
		var out strings.Builder
		err := run(context.Background(), args, &out, nil)
		require.ErrorContains(t, err, "must be positive", args)
	}
	var out strings.Builder
	require.Error(t, run(context.Background(), []string{"-help"}, &out, nil))
	for _, f := range []string{"-read-header-timeout", "-read-timeout", "-write-timeout", "-idle-timeout", "-max-header-bytes", "-max-conns", "-conn-wait"} {
		require.Contains(t, out.String(), f)
	}
}
