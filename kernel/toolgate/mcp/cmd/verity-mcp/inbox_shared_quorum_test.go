package main

// Shared approvals with tokens, two replicas in-process on one database
// (a SQLite file; PostgreSQL too with VERITY_PG_DSN):
//
//   - A k-of-n request held on replica 1 counts distinct principals
//     across replicas: the first member's approval at replica 2 is one of
//     two, the same member again at replica 1 is refused (409, naming the
//     member), and a second member's approval at replica 1 releases the
//     call, once. The call's own principal may not approve its PRIVILEGE
//     call at another replica (403): TestSharedQuorumAcrossReplicas.
//   - The page, in Chromium, shows the replica holding each request and
//     answers it from another replica: TestSharedInboxInChromium.

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/testissuer"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

const sharedQuorumPolicy = `{"version": 2, "budget": "10", "min_cost": "0.01",
  "approvers": {"DELETE": {"group": "ops", "count": 2}, "PRIVILEGE": ["group:ops"]},
  "tools": [{"match": "delete_file", "cost": "1", "tier": "DELETE"}, {"match": "write_file", "cost": "0.5", "tier": "PRIVILEGE"}],
  "approval_timeout": "10m", "approval_ttl": "1h"}`

// startTokenReplicas starts n replicas in-process with tokens of is,
// sharing one SQLite database, each with its own log and upstream.
func startTokenReplicas(t *testing.T, is *testissuer.Issuer, n int, db string) ([]*proxy, []string, []upstream) {
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(sharedQuorumPolicy), 0o600))
	ps, logs, ups := make([]*proxy, n), make([]string, n), make([]upstream, n)
	for i := range ps {
		ups[i] = newUpstream(t)
		logs[i] = filepath.Join(t.TempDir(), "trace.log")
		ps[i] = startProxy(t, append([]string{"-policy", pol, "-log", logs[i], "-db", db, "-replica", fmt.Sprintf("r%d", i+1),
			"-http", "127.0.0.1:0", "-jwks", is.JWKSURL, "-issuer", is.URL, "-resource", testResource, "-approvals", "127.0.0.1:0", "--"},
			ups[i].argv()...), nil)
	}
	return ps, logs, ups
}

func TestSharedQuorumAcrossReplicas(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		sharedQuorum(t, "sqlite:"+filepath.Join(t.TempDir(), "shared.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := sqltest.PostgresSchema(t) // skips without VERITY_PG_DSN
		if _, err := parseDB(dsn); err != nil {
			t.Skipf("%s is not a postgres:// URL: %v", sqltest.PostgresEnv, err)
		}
		sharedQuorum(t, dsn)
	})
}

func sharedQuorum(t *testing.T, db string) {
	is := testissuer.New(t, testResource)
	ps, logs, ups := startTokenReplicas(t, is, 2, db)
	ups[0].file(t, "a.txt", "a")
	base1, base2 := inboxURL(t, ps[0]), inboxURL(t, ps[1])
	olga, oleg := issuerToken(t, is, "olga", "ops"), issuerToken(t, is, "oleg", "ops")
	agent := issuerToken(t, is, "agent", "ops")
	cs := connectWithToken(t, ps[0], agent)

	done := callAsync(cs, "delete_file", map[string]any{"path": "a.txt"})
	r := waitListedAt(t, base2, olga, "r1")
	assert.Equal(t, []string{"group:ops", "group:ops"}, r.Approvers)
	code, res := inboxPost(t, base2, `{"id":"`+r.ID+`","decision":"approve","reason":"one"}`, bearerHeader(olga))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.False(t, res.Granted)
	assert.Equal(t, []string{"group:ops"}, res.Awaiting)
	code, res = inboxPost(t, base1, `{"id":"`+r.ID+`","decision":"approve","reason":"again"}`, bearerHeader(olga))
	assert.Equal(t, http.StatusConflict, code, "one member counts once, whichever replica")
	assert.Contains(t, res.Error, `"`+is.URL+`|olga" answered request`)
	select {
	case s := <-done:
		t.Fatalf("the call returned on one approval of two: %s", s)
	default:
	}
	code, res = inboxPost(t, base1, `{"id":"`+r.ID+`","decision":"approve","reason":"two"}`, bearerHeader(oleg))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.True(t, res.Granted)
	assert.NotContains(t, receive(t, done), "refused")
	assert.Equal(t, 1, ups[0].ran(t, "delete_file"))

	// The agent, a member of ops, may not approve its own PRIVILEGE call
	// at the other replica.
	written := callAsync(cs, "write_file", map[string]any{"path": "b.txt", "content": "b"})
	w := waitListedAt(t, base2, olga, "r1")
	code, res = inboxPost(t, base2, `{"id":"`+w.ID+`","decision":"approve"}`, bearerHeader(agent))
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, res.Error, "cannot approve it")
	code, res = inboxPost(t, base2, `{"id":"`+w.ID+`","decision":"approve"}`, bearerHeader(olga))
	require.Equal(t, http.StatusOK, code, res.Error)
	assert.NotContains(t, receive(t, written), "refused")

	for _, p := range ps {
		stopHTTPProxy(t, p)
	}
	var approvers []string
	for _, e := range logEntries(t, logs[0], claims.KindApprove) {
		a := e["approval"].(map[string]any)
		approvers = append(approvers, fmt.Sprintf("%s %s", a["decision"], a["reason"]))
	}
	assert.Equal(t, []string{
		"APPROVED by " + is.URL + "|olga: one [answered at replica r2]",
		"APPROVED by " + is.URL + "|oleg: two",
		"APPROVED by " + is.URL + "|olga: [answered at replica r2]",
	}, approvers, "the holder's log records each approval once, and where it was given")
	assert.Empty(t, logEntries(t, logs[1], claims.KindApprove), "replica 2 records none: it held nothing")
}

func TestSharedInboxInChromium(t *testing.T) {
	b := startBrowser(t)
	is := testissuer.New(t, testResource)
	ps, _, ups := startTokenReplicas(t, is, 2, "sqlite:"+filepath.Join(t.TempDir(), "shared.db"))
	ups[0].file(t, "a.txt", "a")
	base2 := inboxURL(t, ps[1])
	olga, oleg := issuerToken(t, is, "olga", "ops"), issuerToken(t, is, "oleg", "ops")
	cs := connectWithToken(t, ps[0], issuerToken(t, is, "agent"))
	done := callAsync(cs, "delete_file", map[string]any{"path": "a.txt"})
	r := waitListedAt(t, base2, olga, "r1")

	b.open(base2)
	b.useToken(olga, is.URL+"|olga")
	b.until(`document.body.dataset.count === "1"`)
	var held string
	b.eval(`document.querySelector("article.request dd.replica").textContent`, &held)
	assert.Equal(t, "r1", held, "the card names the replica holding the call")
	assert.Equal(t, "200", b.answer(r.ID, "approve", "one"))
	b.useToken(oleg, is.URL+"|oleg")
	assert.Equal(t, "200", b.answer(r.ID, "approve", "two"))
	assert.NotContains(t, receive(t, done), "refused")
	b.until(`document.body.dataset.count === "0"`)
	assert.Equal(t, 1, ups[0].ran(t, "delete_file"))
	for _, p := range ps {
		stopHTTPProxy(t, p)
	}
}
