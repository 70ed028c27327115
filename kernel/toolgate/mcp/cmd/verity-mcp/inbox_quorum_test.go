package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
)

// TestInboxKOfN: a delete needs two members of ops; the inbox counts
// the approvals ("given" of "needed"), refuses the same member twice,
// and the call runs once, on the second member's approval.
func TestInboxKOfN(t *testing.T) {
	is := testissuer.New(t, testResource)
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01",
	  "approvers": {"DELETE": {"group": "ops", "count": 2}},
	  "tools": [{"match": "delete_file", "cost": "1", "tier": "DELETE"}],
	  "approval_timeout": "10m", "approval_ttl": "1h"}`), 0o600))
	logPath := filepath.Join(t.TempDir(), "trace.log")
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-http", "127.0.0.1:0", "-jwks", is.JWKSURL,
		"-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"}, up.argv()...), nil)
	base := inboxURL(t, p)
	olga, oleg := issuerToken(t, is, "olga", "ops"), issuerToken(t, is, "oleg", "ops")
	cs := connectWithToken(t, p, issuerToken(t, is, "agent"))
	done := callAsync(cs, "delete_file", map[string]any{"path": "a.txt"})

	r := waitListed(t, base, olga, 1)[0]
	assert.Equal(t, []string{"group:ops", "group:ops"}, r.Approvers)
	assert.Equal(t, [2]int{0, 2}, [2]int{r.Given, r.Needed})
	code, res := inboxPost(t, base, `{"id":"`+r.ID+`","decision":"approve","reason":"one"}`, bearerHeader(olga))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.False(t, res.Granted)
	r = waitListed(t, base, olga, 1)[0]
	assert.Equal(t, [2]int{1, 2}, [2]int{r.Given, r.Needed}, "1 of 2 approvals")
	assert.Equal(t, []string{"group:ops"}, r.Approved)
	code, res = inboxPost(t, base, `{"id":"`+r.ID+`","decision":"approve","reason":"again"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusForbidden, code, "one member counts once")
	select {
	case s := <-done:
		t.Fatalf("the call returned on one approval of two: %s", s)
	default:
	}
	code, res = inboxPost(t, base, `{"id":"`+r.ID+`","decision":"approve","reason":"two"}`, bearerHeader(oleg))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.True(t, res.Granted)
	assert.NotContains(t, receive(t, done), "refused")
	assert.Equal(t, 1, up.ran(t, "delete_file"))
	stopHTTPProxy(t, p)
	assert.Len(t, logEntries(t, logPath, claims.KindApprove), 2)
}
