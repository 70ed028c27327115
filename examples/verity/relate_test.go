package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/trace"
)

// replicaLog writes the log of one replica of a gate: calls of the given
// callers at one-minute steps from start, with ids from prefix.
func replicaLog(t *testing.T, dir, name string, start time.Time, prefix string, callers ...string) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(dir, name)
	now := start
	clock := func() time.Time { return now }
	f, err := trace.OpenFile(path, trace.FileOptions{})
	require.NoError(t, err)
	log, err := trace.NewLog(f, trace.WithClock(clock))
	require.NoError(t, err)
	comp, err := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "read_*", Cost: kernel.Unit / 10},
	}}.Compile()
	require.NoError(t, err)
	n := 0
	g, err := toolgate.New(ctx, log, comp, toolgate.WithClock(clock), toolgate.WithIDs(func() string { n++; return fmt.Sprintf("%s-%d", prefix, n) }))
	require.NoError(t, err)
	for _, caller := range callers {
		d, err := g.Before(ctx, toolgate.Call{Tool: "read_file", Caller: caller, Arguments: []byte(`{}`)})
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict)
		_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte(`"ok"`)})
		require.NoError(t, err)
		now = now.Add(time.Minute)
	}
	_, err = g.Before(ctx, toolgate.Call{Tool: "format_disk", Caller: callers[0], Arguments: []byte(`{}`)})
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return path
}

// TestVerifySeveralLogs: three replicas' logs are verified each on its
// own and related: their spans and overlap, the budgets and callers they
// share; a call decided in two logs (a log copied into another's place)
// is a conflict, and a damaged log is named and fails the whole.
func TestVerifySeveralLogs(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	a := replicaLog(t, dir, "a.trace", t0, "a", "alice", "bob")
	b := replicaLog(t, dir, "b.trace", t0.Add(90*time.Second), "b", "alice", "carol")
	c := replicaLog(t, dir, "c.trace", t0.Add(time.Hour), "c", "dave")

	ts := func(d time.Duration) string { return trace.FormatTime(t0.Add(d)) }
	r := verity(t, "verify", a, b, c)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Equal(t, 3, strings.Count(r.stdout, "result   ok\n\n"), r.stdout)
	assert.Contains(t, r.stdout, "logs     3\n")
	assert.Contains(t, r.stdout, "  "+a+": ")
	assert.Contains(t, r.stdout, ts(0)+" … "+ts(2*time.Minute))
	assert.Contains(t, r.stdout, "overlap  "+a+" and "+b+": "+ts(90*time.Second)+" … "+ts(2*time.Minute))
	assert.NotContains(t, r.stdout, "overlap  every log")
	assert.NotContains(t, r.stdout, " and "+c+":", "c's hour is after both")
	assert.Contains(t, r.stdout, `budget   "`+toolgate.SessionPrefix+`alice" in `+a+", "+b)
	assert.Contains(t, r.stdout, `caller   "alice" in `+a+", "+b)
	assert.NotContains(t, r.stdout, `"bob" in`)
	assert.NotContains(t, r.stdout, "conflict")
	assert.True(t, strings.HasSuffix(r.stdout, "result   ok\n"))

	// A copy of a is a second log deciding the same calls.
	data, err := os.ReadFile(a)
	require.NoError(t, err)
	dup := filepath.Join(dir, "copy.trace")
	require.NoError(t, os.WriteFile(dup, data, 0o600))
	r = verity(t, "verify", a, dup)
	require.Equal(t, exitError, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "overlap  every log: "+ts(0)+" … "+ts(2*time.Minute))
	assert.Contains(t, r.stdout, `conflict call a-1 of caller "alice" is decided in `+a+" (entry ")
	assert.Contains(t, r.stdout, "conflict execution ")
	assert.Contains(t, r.stdout, "result   conflict: logs disagree")

	// A damaged log fails the whole, named; the others are still related.
	bad := tampered(t, b, func(d []byte) []byte {
		i := strings.LastIndex(string(d), "read_file")
		d[i] = 'R'
		return d
	})
	r = verity(t, "verify", a, bad, c)
	require.NotEqual(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "  "+bad+": not related: ")
	assert.Contains(t, r.stdout, "source   "+c+"\n")

	r = verity(t, "verify", "--head", "1:"+strings.Repeat("0", 64), a, b)
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "for one log")
}

// TestInspectSeveralLogs: inspect lists each log's entries, named, then
// the report; with -json each line names its log and the last is the
// relation.
func TestInspectSeveralLogs(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	a := replicaLog(t, dir, "a.trace", t0, "a", "alice")
	b := replicaLog(t, dir, "b.trace", t0.Add(30*time.Second), "b", "alice")

	r := verity(t, "inspect", a, b, "-kind", "toolgate")
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, a+"       ")
	assert.Contains(t, r.stdout, b+"       ")
	assert.Contains(t, r.stdout, "toolgate.refuse")
	assert.Contains(t, r.stdout, `caller   "alice" in `+a+", "+b)

	r = verity(t, "inspect", "-json", a, b)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var first inspectLine
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	assert.Equal(t, a, first.Log)
	var last struct {
		Relation struct {
			Logs []struct {
				Source  string `json:"source"`
				Entries uint64 `json:"entries"`
			} `json:"logs"`
			Principals map[string][]string `json:"principals_in_several_logs"`
			Conflicts  []string            `json:"conflicts"`
		} `json:"relation"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &last))
	require.Len(t, last.Relation.Logs, 2)
	assert.Positive(t, last.Relation.Logs[1].Entries)
	assert.Equal(t, []string{a, b}, last.Relation.Principals["alice"])
	assert.Empty(t, last.Relation.Conflicts)
}
