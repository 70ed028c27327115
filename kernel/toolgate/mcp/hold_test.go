package mcp_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// TestHeldCallRunsOnceApprovedElsewhere: with Options.Hold, a client
// that cannot elicit waits while the request is answered out of band;
// approved, the call runs once; denied, it is refused with the reason.
func TestHeldCallRunsOnceApprovedElsewhere(t *testing.T) {
	protocols(t, func(t *testing.T, version string) {
		cfg := catalogue(10 * kernel.Unit)
		cfg.ApprovalTimeout = 10 * time.Minute
		r := newRigWith(t, cfg, gatemcp.Options{Hold: true})
		cs, _ := r.connect(t, version, nil, nil)

		for _, c := range []struct {
			path    string
			approve bool
		}{{"a", true}, {"b", false}} {
			done := make(chan string, 1)
			go func() {
				res := call(t, cs, "delete_file", c.path)
				if res.IsError {
					done <- "refused: " + text(res)
				} else {
					done <- text(res)
				}
			}()
			var pending []toolgate.ApprovalRequest
			require.Eventually(t, func() bool { pending = r.gate.Pending(); return len(pending) == 1 }, time.Minute, 5*time.Millisecond)
			assert.Equal(t, `{"path":"`+c.path+`"}`, pending[0].Arguments)
			if c.approve {
				ok, err := r.gate.Approve(ctx, pending[0].ID, toolgate.DefaultApprover, "")
				require.NoError(t, err)
				require.True(t, ok)
				assert.Equal(t, "delete_file a done", <-done)
			} else {
				require.NoError(t, r.gate.Deny(ctx, pending[0].ID, toolgate.DefaultApprover, "not that one"))
				assert.Equal(t, `refused: tool "delete_file" (rule #2, approval): DELETE denied by human: not that one`, <-done)
			}
		}
		assert.Equal(t, 1, r.tools.count("delete_file"))
	})
}

// TestHeldCallTimesOut: unanswered within the approval timeout, the held
// call is refused, the refusal is on the log, and the request still
// waits: approved later, the same call made again runs.
func TestHeldCallTimesOut(t *testing.T) {
	cfg := catalogue(10 * kernel.Unit)
	cfg.ApprovalTimeout = time.Second // the shortest a policy allows
	r := newRigWith(t, cfg, gatemcp.Options{Hold: true})
	cs, _ := r.connect(t, currentProtocol, nil, nil)

	res := call(t, cs, "delete_file", "a")
	require.True(t, res.IsError)
	assert.Regexp(t, `^tool "delete_file" \(rule #2, approval\): DELETE: no answer within [0-9.]+m?s$`, text(res))
	var reasons []string
	for e, err := range r.log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindRefuse {
			var m map[string]any
			require.NoError(t, json.Unmarshal(e.Payload, &m))
			reasons = append(reasons, m["reason"].(string))
		}
	}
	assert.Equal(t, []string{"approval_timeout"}, reasons)
	pending := r.gate.Pending()
	require.Len(t, pending, 1)
	ok, err := r.gate.Approve(ctx, pending[0].ID, toolgate.DefaultApprover, "")
	require.NoError(t, err)
	require.True(t, ok)
	res = call(t, cs, "delete_file", "a")
	assert.False(t, res.IsError, text(res))
	assert.Equal(t, 1, r.tools.count("delete_file"))
}
