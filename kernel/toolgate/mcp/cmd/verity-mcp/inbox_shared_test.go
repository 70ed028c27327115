package main

// Shared approvals (-db with -approvals), on three replicas — real
// verity-mcp processes, each with its own log and upstream, on one
// database (a SQLite file always; PostgreSQL with VERITY_PG_DSN):
//
//   - An approval given at replica 2's inbox releases the call held on
//     replica 1, which runs once (one execution on the logs, one charge
//     of the shared budget); the same answer posted again, to replica 2
//     or 3, is refused 409 naming who answered and where; a denial at
//     replica 3 refuses the next held call; every inbox names the
//     replica holding each request; killed with -9 while holding, the
//     replica's request stays answerable elsewhere, and once it is
//     started again on its log the approval given meanwhile is applied
//     once and the call made again runs once: TestSharedApprovals.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/trace/sqlstore/sqltest"
)

const sharedInboxPolicy = `{
  "version": 1,
  "budget": "10",
  "min_cost": "0.01",
  "approvers": {"DELETE": ["human"]},
  "tools": [
    {"match": "read_file", "cost": "0.1"},
    {"match": "delete_file", "cost": "1", "tier": "DELETE"}
  ],
  "approval_timeout": "2m",
  "approval_ttl": "1h",
  "shared_budget": {"id": "team", "limit": "5"}
}`

// replica is one verity-mcp process of the test and its stdio client.
type replica struct {
	name, log, db, pol string
	up                 upstream
	cmd                *exec.Cmd
	cs                 *sdk.ClientSession
	stderr             *syncBuffer
	inbox              string
}

func startReplica(t *testing.T, r *replica) {
	t.Helper()
	r.stderr = &syncBuffer{}
	r.cmd = exec.Command(proxyBinary(t), append([]string{"-policy", r.pol, "-log", r.log, "-db", r.db, "-approvals", "127.0.0.1:0",
		"-replica", r.name, "--"}, r.up.argv()...)...)
	r.cmd.Stderr = r.stderr
	// Killed with -9, the replica leaves its upstream holding the stderr
	// pipe a moment longer.
	r.cmd.WaitDelay = 5 * time.Second
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "agent", Version: "v1"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: r.cmd}, nil)
	require.NoError(t, err, "stderr:\n%s", r.stderr.String())
	r.cs = cs
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`msg="approval inbox" url=(\S+)`).FindStringSubmatch(r.stderr.String())
		if m != nil {
			r.inbox = m[1]
		}
		return m != nil
	}, 30*time.Second, 10*time.Millisecond)
	t.Cleanup(func() {
		_ = r.cs.Close()
		_ = r.cmd.Process.Kill() // an error once it exited
	})
}

// stop ends the replica cleanly: its client leaves.
func (r *replica) stop(t *testing.T) {
	require.NoError(t, r.cs.Close(), "the replica exits cleanly; stderr:\n%s", r.stderr.String())
	assert.Regexp(t, headLine, r.stderr.String())
}

// waitListedAt waits until base's inbox lists the request for tool
// held at holder, and returns it.
func waitListedAt(t *testing.T, base, token, holder string) inboxRequest {
	t.Helper()
	var found inboxRequest
	require.Eventually(t, func() bool {
		for _, q := range inboxGet(t, base, token).Requests {
			if q.Replica == holder {
				found = q
				return true
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the request held at %s reaches %s", holder, base)
	return found
}

func TestSharedApprovals(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		sharedApprovals(t, "sqlite:"+filepath.Join(t.TempDir(), "shared.db"))
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := sqltest.PostgresSchema(t) // skips without VERITY_PG_DSN
		if _, err := parseDB(dsn); err != nil {
			t.Skipf("%s is not a postgres:// URL: %v", sqltest.PostgresEnv, err)
		}
		sharedApprovals(t, dsn)
	})
}

func sharedApprovals(t *testing.T, db string) {
	pol := filepath.Join(t.TempDir(), "policy.json")
	require.NoError(t, os.WriteFile(pol, []byte(sharedInboxPolicy), 0o600))
	rs := make([]*replica, 3)
	for i := range rs {
		rs[i] = &replica{name: fmt.Sprintf("r%d", i+1), log: filepath.Join(t.TempDir(), "trace.log"), db: db, pol: pol, up: newUpstream(t)}
		startReplica(t, rs[i])
	}
	r1, r2, r3 := rs[0], rs[1], rs[2]
	for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
		r1.up.file(t, f, f)
	}

	// Approved at replica 2: the call held on replica 1 runs, once.
	done := callAsync(r1.cs, "delete_file", map[string]any{"path": "a.txt"})
	q := waitListedAt(t, r2.inbox, "", "r1")
	assert.Equal(t, "delete_file", q.Tool)
	assert.Equal(t, `{"path":"a.txt"}`, q.Arguments)
	assert.Equal(t, []string{"human"}, q.Awaiting)
	assert.True(t, q.CanAnswer)
	assert.Equal(t, q.ID, waitListedAt(t, r3.inbox, "", "r1").ID, "every replica lists it")
	answer := `{"id":"` + q.ID + `","decision":"approve","reason":"checked"}`
	code, res := inboxPost(t, r2.inbox, answer, nil)
	require.Equal(t, 200, code, res.Error)
	assert.True(t, res.Granted)
	assert.Equal(t, "deleted a.txt", receive(t, done))
	assert.False(t, r1.up.exists("a.txt"))
	for _, r := range []*replica{r2, r3} {
		code, res = inboxPost(t, r.inbox, answer, nil)
		assert.Equal(t, 409, code, "the same answer again, at %s", r.name)
		assert.Contains(t, res.Error, `was approved already, by human at replica r2`)
	}
	require.Eventually(t, func() bool { return len(inboxGet(t, r1.inbox, "").Requests) == 0 }, time.Minute, 20*time.Millisecond,
		"no inbox lists it once used")
	assert.Empty(t, inboxGet(t, r3.inbox, "").Requests)

	// Denied at replica 3: the next held call is refused.
	done = callAsync(r1.cs, "delete_file", map[string]any{"path": "b.txt"})
	q2 := waitListedAt(t, r3.inbox, "", "r1")
	code, res = inboxPost(t, r3.inbox, `{"id":"`+q2.ID+`","decision":"deny","reason":"not this one"}`, nil)
	require.Equal(t, 200, code, res.Error)
	assert.False(t, res.Granted)
	out := receive(t, done)
	assert.True(t, strings.HasPrefix(out, "refused: "), out)
	assert.Contains(t, out, "not this one")
	assert.True(t, r1.up.exists("b.txt"))
	code, _ = inboxPost(t, r2.inbox, `{"id":"`+q2.ID+`","decision":"approve"}`, nil)
	assert.Equal(t, 409, code, "an approval after the denial is refused")

	// Killed with -9 while holding: the request stays answerable at
	// replica 2, and the approval is applied once replica 1 is back.
	done = callAsync(r1.cs, "delete_file", map[string]any{"path": "c.txt"})
	q3 := waitListedAt(t, r2.inbox, "", "r1")
	require.NoError(t, r1.cmd.Process.Kill()) // SIGKILL; the SDK's transport waits for it (a second Wait would race it)
	assert.True(t, strings.HasPrefix(receive(t, done), "error: "), "the held call ends with its process")
	_ = r1.cs.Close()
	assert.Equal(t, q3.ID, waitListedAt(t, r2.inbox, "", "r1").ID, "still listed while its replica is down")
	code, res = inboxPost(t, r2.inbox, `{"id":"`+q3.ID+`","decision":"approve"}`, nil)
	require.Equal(t, 200, code, res.Error)
	assert.True(t, r1.up.exists("c.txt"))

	startReplica(t, r1)
	require.Eventually(t, func() bool { return strings.Contains(r1.stderr.String(), "shared approvals: answer applied") },
		time.Minute, 20*time.Millisecond, "the answer given meanwhile is applied on restart")
	res1 := r1.call(t, "delete_file", map[string]any{"path": "c.txt"})
	assert.False(t, res1.IsError, text(res1))
	assert.False(t, r1.up.exists("c.txt"))
	assert.Empty(t, inboxGet(t, r2.inbox, "").Requests)

	for _, r := range rs {
		r.stop(t)
	}
	assert.Equal(t, 2, r1.up.ran(t, "delete_file"), "a.txt and c.txt, once each")
	assert.Zero(t, r2.up.ran(t, "delete_file")+r3.up.ran(t, "delete_file"))
	for _, id := range []string{q.ID, q3.ID} {
		assert.Equal(t, 1, executionsOf(t, r1.log, id), "one execution names the approval %s", id)
	}
	assert.Len(t, logEntries(t, r1.log, claims.KindApprove), 3, "the approval of a.txt, the denial of b.txt and the approval of c.txt, each recorded once on the holder's log")
	for _, r := range []*replica{r2, r3} {
		assert.Empty(t, logEntries(t, r.log, "kernel.execute"), "%s ran nothing", r.name)
	}
	assert.Equal(t, 2*kernel.Unit, sharedSpent(t, db), "two charges of the shared budget")
}

func (r *replica) call(t *testing.T, tool string, args map[string]any) *sdk.CallToolResult {
	res, err := r.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err, "stderr:\n%s", r.stderr.String())
	return res
}

// executionsOf counts the kernel executions on the log at path tagged
// with the approval id.
func executionsOf(t *testing.T, path, id string) int {
	n := 0
	for _, e := range logEntries(t, path, "kernel.execute") {
		b, _ := json.Marshal(e)
		if strings.Contains(string(b), `"approval:`+id+`"`) {
			n++
		}
	}
	return n
}

// sharedSpent is what the shared budget "team" has spent net.
func sharedSpent(t *testing.T, db string) kernel.Cost {
	spec, err := parseDB(db)
	require.NoError(t, err)
	h, err := sql.Open(spec.Driver, spec.DSN)
	require.NoError(t, err)
	defer h.Close()
	store, err := sqlbudget.Open(context.Background(), h, spec.Dialect)
	require.NoError(t, err)
	b, err := store.Open(context.Background(), "team")
	require.NoError(t, err)
	s, err := b.Snapshot(context.Background())
	require.NoError(t, err)
	return s.Gross - s.Refunded
}

// TestSharedUsage: -replica needs -db and -approvals, and a name
// without control characters; -db without a shared_budget needs
// -approvals (whose requests it shares). Each exits 2 naming why.
func TestSharedUsage(t *testing.T) {
	pol := writeInboxPolicy(t, `"human"`, "1m")
	db := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-replica", "r1"}, "-replica needs -db and -approvals"},
		{[]string{"-replica", "r1", "-db", db}, "-replica needs -db and -approvals"},
		{[]string{"-replica", "r\x1b[31m1", "-db", db, "-approvals", "127.0.0.1:0"}, "-replica: at most 512 bytes, without control characters"},
		{[]string{"-db", db}, "has no shared_budget (and -approvals, whose requests it would share, is not given)"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append(append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "l")}, c.args...), "--", "true"),
			strings.NewReader(""), io.Discard, &stderr)
		assert.Equal(t, 2, code, c.args)
		assert.Contains(t, stderr.String(), c.want)
	}
}

// TestSharedExpiry: the held call ends at approval_timeout on its
// replica; its request stays answerable at the others until
// approval_ttl, then leaves every inbox, and an answer after it is
// refused (404, expired) and changes nothing.
func TestSharedExpiry(t *testing.T) {
	pol := writeInboxPolicy(t, `"human"`, "1s")
	b, err := os.ReadFile(pol)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pol, []byte(strings.Replace(string(b), `"approval_ttl": "1h"`, `"approval_ttl": "4s"`, 1)), 0o600))
	db := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	up := newUpstream(t)
	up.file(t, "a.txt", "a")
	var ps []*proxy
	for i := range 2 {
		ps = append(ps, startProxy(t, append([]string{"-policy", pol, "-log", filepath.Join(t.TempDir(), "trace.log"), "-db", db,
			"-approvals", "127.0.0.1:0", "-replica", fmt.Sprintf("r%d", i+1), "--"}, up.argv()...), nil))
	}
	base2 := inboxURL(t, ps[1])
	res := ps[0].call(t, "delete_file", map[string]any{"path": "a.txt"})
	require.True(t, res.IsError)
	assert.Contains(t, text(res), "no answer within 1")
	q := waitListedAt(t, base2, "", "r1")
	require.NotEmpty(t, q.Expires)
	require.Eventually(t, func() bool { return len(inboxGet(t, base2, "").Requests) == 0 }, time.Minute, 50*time.Millisecond,
		"the expired request leaves the other replica's inbox")
	code, ar := inboxPost(t, base2, `{"id":"`+q.ID+`","decision":"approve"}`, nil)
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, ar.Error, "expired")
	res = ps[0].call(t, "delete_file", map[string]any{"path": "a.txt"})
	assert.True(t, res.IsError, "nothing was approved: asked again")
	assert.True(t, up.exists("a.txt"))
	for _, p := range ps {
		require.Equal(t, 0, p.stop(t))
	}
}
