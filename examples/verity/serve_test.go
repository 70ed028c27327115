package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/verity-go/verity/internal/httpguard/guardtest"
)

// TestViewIdleAndSlowClientsStarveNoOne: idle, slow-header and
// slow-body clients, more idle ones than --max-conns, are let go within
// their timeouts, while the page's status is answered promptly all along.
func TestViewIdleAndSlowClientsStarveNoOne(t *testing.T) {
	path, _ := fileLog(t, 40)
	l := guardtest.Limits()
	base, _ := startView(t, append(guardtest.Args(l), path)...)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	guardtest.Run(t, guardtest.Target{
		Addr:   u.Host,
		Limits: l,
		Get:    "/api/status",
		Post:   "/api/status", // the page takes no body: refused, and the body is still bounded
		Normal: func(ctx context.Context, c *http.Client, base string) error {
			req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/status", nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status: %d", resp.StatusCode)
			}
			return nil
		},
	})
}

// TestViewLimitFlags: no limit can be switched off (a usage error), and
// the usage lists them.
func TestViewLimitFlags(t *testing.T) {
	path, _ := fileLog(t, 5)
	for _, f := range []string{"--max-conns", "--read-timeout", "--idle-timeout"} {
		r := verity(t, "view", path, f, "0")
		assert.Equal(t, exitUsage, r.code, f)
		assert.Contains(t, r.stderr, "must be positive", f)
		assert.Contains(t, r.stderr, "--max-conns 256", "the usage lists the limits")
	}
}
