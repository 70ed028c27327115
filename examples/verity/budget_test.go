package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

const budgetTestPolicy = `{
  "version": 2,
  "budget": "3",
  "min_cost": "0.5",
  "budget_period": {"calendar": "day"},
  "approvers": {"DELETE": ["ops-lead"]},
  "tools": [{"match": "t", "cost": "1"}, {"match": "scan", "cost": "1", "reserve": true}]
}`

// budgetLog writes a policy and a log file on which alice made two
// calls and left a reservation open, and bob one call, today.
func budgetLog(t *testing.T) (policy, log string) {
	dir := t.TempDir()
	policy, log = filepath.Join(dir, "policy.json"), filepath.Join(dir, "trace.log")
	require.NoError(t, os.WriteFile(policy, []byte(budgetTestPolicy), 0o600))
	p, err := toolgate.LoadPolicy(policy)
	require.NoError(t, err)
	comp, err := p.Compile()
	require.NoError(t, err)
	st, err := trace.OpenFile(log, trace.FileOptions{})
	require.NoError(t, err)
	lg, err := trace.NewLog(st)
	require.NoError(t, err)
	defer lg.Close()
	g, err := toolgate.New(context.Background(), lg, comp)
	require.NoError(t, err)
	for _, c := range []toolgate.Call{{Caller: "alice", Tool: "t"}, {Caller: "alice", Tool: "scan"}, {Caller: "bob", Tool: "t"}} {
		d, err := g.Before(context.Background(), c)
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
		if c.Tool == "t" {
			_, err = g.After(context.Background(), d.Call, toolgate.Result{})
			require.NoError(t, err)
		}
	}
	return policy, log
}

// TestBudgetShowAndGrant: verity budget show lists each caller's spend,
// limit, remaining budget, open reservations and when it renews; a grant
// to a log no process holds needs an approver of the policy and a
// reason, is recorded, and show counts it; a log a process holds is
// refused, pointing at -inbox.
func TestBudgetShowAndGrant(t *testing.T) {
	policy, log := budgetLog(t)
	r := verity(t, "budget", "show", log, "-policy", policy)
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `alice\s+day \d{4}-\d\d-\d\d \(UTC\)\s+2\s+3\s+1\s+2/6\s+1 \(1\)\s+\d{4}-`, r.stdout)
	assert.Regexp(t, `bob\s+day .*\s+1\s+3\s+2\s+1/6\s+0`, r.stdout)

	r = verity(t, "budget", "grant", "-policy", policy, "-log", log, "-caller", "alice", "-amount", "2", "-reason", "release night")
	assert.Equal(t, exitUsage, r.code, "no approver: %s", r.stderr)
	assert.Contains(t, r.stderr, "-approver NAME is needed")
	r = verity(t, "budget", "grant", "-policy", policy, "-log", log, "-caller", "alice", "-amount", "2", "-approver", "ops-lead")
	assert.Equal(t, exitUsage, r.code, "no reason")
	r = verity(t, "budget", "grant", "-policy", policy, "-log", log, "-caller", "alice", "-amount", "2", "-reason", "x", "-approver", "mallory")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "none of the policy's approvers")
	r = verity(t, "budget", "grant", "-policy", policy, "-log", log, "-caller", "alice", "-amount", "2", "-reason", "release night", "-approver", "ops-lead")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, "grant recorded for alice by ops-lead\n", r.stdout)

	r = verity(t, "budget", "show", log, "-policy", policy, "--json")
	require.Equal(t, exitOK, r.code, r.stderr)
	var alice map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout[:indexByte(r.stdout, '\n')]), &alice))
	assert.Equal(t, "alice", alice["caller"])
	assert.Equal(t, "5", alice["limit"])
	assert.Equal(t, "3", alice["remaining"])
	assert.Equal(t, "2", alice["granted"])
	assert.EqualValues(t, 1, alice["open_reservations"])

	r = verity(t, "budget", "show", log, "-policy", policy, "-at", time.Now().Add(48*time.Hour).UTC().Format(time.RFC3339))
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `alice\s+day .*\s+0\s+3\s+3\s+0/6\s+0`, r.stdout, "two days later: renewed")

	r = verity(t, "budget", "reset", "-policy", policy, "-log", log, "-caller", "alice", "-reason", "new quarter", "-approver", "ops-lead")
	require.Equal(t, exitOK, r.code, r.stderr)
	r = verity(t, "budget", "show", log, "-policy", policy)
	assert.Regexp(t, `alice\s+day .*\s+0\s+3\s+3\s+0/6\s+0`, r.stdout, "reset")

	held, err := trace.OpenFile(log, trace.FileOptions{})
	require.NoError(t, err)
	defer held.Close()
	r = verity(t, "budget", "reset", "-policy", policy, "-log", log, "-caller", "alice", "-reason", "x", "-approver", "ops-lead")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "-inbox URL")
}

func indexByte(s string, c byte) int {
	for i := range len(s) {
		if s[i] == c {
			return i
		}
	}
	return len(s)
}

// TestBudgetGrantThroughInbox: with -inbox, the change is posted to the
// inbox's /api/budget as JSON with the token, and its refusal is the
// command's error.
func TestBudgetGrantThroughInbox(t *testing.T) {
	var got map[string]string
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.Equal(t, "/api/budget", r.URL.Path)
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		auth = r.Header.Get("Authorization")
		b, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(b, &got))
		if got["caller"] == "nobody" {
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"error":"not one of the policy's approvers: only an approver may change a budget"}`))
			return
		}
		_, _ = w.Write([]byte(`{"by":"idp|olga"}`))
	}))
	defer srv.Close()
	r := verity(t, "budget", "grant", "-inbox", srv.URL+"/", "-token", "tok", "-caller", "alice", "-amount", "1.5", "-reason", "ok")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Equal(t, map[string]string{"caller": "alice", "action": "grant", "amount": "1.5", "reason": "ok"}, got)
	assert.Equal(t, "Bearer tok", auth)
	assert.Equal(t, "grant recorded for alice by idp|olga\n", r.stdout)
	r = verity(t, "budget", "reset", "-inbox", srv.URL, "-caller", "nobody", "-reason", "ok")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "the inbox refused the reset (403 Forbidden): not one of the policy's approvers")
	r = verity(t, "budget", "reset", "-inbox", "ftp://x", "-caller", "a", "-reason", "ok")
	assert.Equal(t, exitUsage, r.code)
}
