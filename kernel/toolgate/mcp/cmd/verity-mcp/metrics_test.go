package main

// -metrics serves exact counts of what the proxy decided, charged and
// waited on: TestMetricsCountTheTraffic (a real upstream process, a real
// client over stdio, the metrics scraped over HTTP); the decision log has
// one line per decision and result: the same test; -metrics is loopback
// only unless -insecure-metrics: TestMetricsFlags.

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/trace"
)

// metricsAddr waits for a proxy started with -metrics to listen, and
// returns its address.
func metricsAddr(t *testing.T, p *proxy) string {
	var addr string
	require.Eventually(t, func() bool {
		m := regexp.MustCompile(`msg=metrics http=(\S+)`).FindStringSubmatch(p.stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond)
	return addr
}

// scrape returns the samples of the Prometheus text at addr, by series
// (name and labels as written).
func scrape(t testing.TB, addr string) map[string]float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+MetricsPath, nil)
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = res.Body.Close() }()
	require.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, res.Header.Get("Content-Type"), "text/plain")
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(t, i, line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	require.NoError(t, sc.Err())
	return out
}

func TestMetricsCountTheTraffic(t *testing.T) {
	up := newUpstream(t)
	up.file(t, "notes.txt", "buy milk")
	up.file(t, "old.txt", "x")
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	// The human scrapes the metrics while the call waits for them.
	var addr string
	var waiting []float64
	yes := &human{action: "accept", before: func() {
		waiting = append(waiting, scrape(t, addr)["verity_toolgate_approvals_waiting"])
	}}
	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-metrics", "127.0.0.1:0", "--"}, up.argv()...), yes)
	addr = metricsAddr(t, p)

	for range 2 {
		res := p.call(t, "read_file", map[string]any{"path": "notes.txt"})
		require.False(t, res.IsError, text(res))
	}
	res := p.call(t, "read_file", map[string]any{"path": "missing.txt"})
	require.True(t, res.IsError, "the upstream's failure")
	res = p.call(t, "search", map[string]any{"query": "milk"})
	require.False(t, res.IsError, text(res))
	res = p.call(t, "echo", map[string]any{"text": "hi"})
	require.True(t, res.IsError, "not in the policy")
	res = p.call(t, "delete_file", map[string]any{"path": "old.txt"})
	require.False(t, res.IsError, text(res))
	require.Equal(t, 1, yes.count())
	require.Len(t, waiting, 1)
	assert.Equal(t, 1.0, waiting[0], "the delete waited for its human")

	sample := scrape(t, addr)
	m := func(series string) float64 {
		v, ok := sample[series]
		assert.True(t, ok, "no series %s", series)
		return v
	}
	calls := func(tool, verdict string) float64 {
		return m(`verity_toolgate_calls_total{gen_ai_tool_name="` + tool + `",verity_toolgate_caller="stdio",verity_toolgate_verdict="` + verdict + `"}`)
	}
	assert.Equal(t, 3.0, calls("read_file", "allow"))
	assert.Equal(t, 1.0, calls("search", "allow"))
	assert.Equal(t, 1.0, calls("echo", "refuse"))
	assert.Equal(t, 1.0, calls("delete_file", "ask_approval"))
	assert.Equal(t, 1.0, calls("delete_file", "allow"))
	n := 0
	for k, v := range sample {
		if strings.HasPrefix(k, "verity_toolgate_calls_total{") {
			n += int(v)
		}
	}
	assert.Equal(t, 7, n, "no other decision")

	spend := func(tool string) float64 {
		return m(`verity_toolgate_spend_total{gen_ai_tool_name="` + tool + `",verity_toolgate_caller="stdio"}`)
	}
	assert.InDelta(t, 0.3, spend("read_file"), 1e-9)
	assert.InDelta(t, 1, spend("search"), 1e-9)
	assert.InDelta(t, 1, spend("delete_file"), 1e-9)
	assert.InDelta(t, 10-0.3-1-1, m(`verity_toolgate_budget_remaining{verity_toolgate_caller="stdio"}`), 1e-9)
	assert.Equal(t, 0.0, m(`verity_toolgate_approvals_waiting`))
	assert.Equal(t, 1.0, m(`verity_toolgate_callers_live`))

	// Upstream latency: one observation per forwarded call, the failed
	// one apart.
	assert.Equal(t, 2.0, m(`gen_ai_execute_tool_duration_seconds_count{gen_ai_tool_name="read_file"}`))
	assert.Equal(t, 1.0, m(`gen_ai_execute_tool_duration_seconds_count{error_type="tool_error",gen_ai_tool_name="read_file"}`))
	assert.Equal(t, 1.0, m(`gen_ai_execute_tool_duration_seconds_count{gen_ai_tool_name="search"}`))
	assert.Equal(t, 1.0, m(`gen_ai_execute_tool_duration_seconds_count{gen_ai_tool_name="delete_file"}`))
	assert.Equal(t, 1.0, m(`gen_ai_execute_tool_duration_seconds_bucket{gen_ai_tool_name="search",le="+Inf"}`))
	assert.Equal(t, 5.0, m(`verity_toolgate_decision_duration_seconds_count{verity_toolgate_verdict="allow"}`))
	assert.Equal(t, 1.0, m(`verity_toolgate_decision_duration_seconds_count{verity_toolgate_verdict="refuse"}`))
	assert.Equal(t, 1.0, m(`verity_toolgate_decision_duration_seconds_count{verity_toolgate_verdict="ask_approval"}`))

	// fsync latency: the log fsyncs what it appends, each entry at most
	// once.
	ro, err := trace.OpenFileReadOnly(logPath)
	require.NoError(t, err)
	head, err := ro.Head(context.Background())
	require.NoError(t, err)
	require.NoError(t, ro.Close())
	syncs := m(`verity_trace_sync_duration_seconds_count`)
	assert.GreaterOrEqual(t, syncs, 1.0)
	assert.LessOrEqual(t, syncs, float64(head.Size))
	assert.Positive(t, m(`verity_trace_sync_duration_seconds_sum`))

	require.Equal(t, 0, p.stop(t), p.stderr.String())
	checkLog(t, p.stderr.String(), logPath, pol, "stdio", kernel.Unit*3/10+2*kernel.Unit)

	// The decision log: one line per decision and per result.
	stderr := p.stderr.String()
	assert.Equal(t, 7, strings.Count(stderr, `msg="toolgate decision"`), stderr)
	assert.Equal(t, 5, strings.Count(stderr, `msg="toolgate result"`), stderr)
	assert.Regexp(t, `level=INFO msg="toolgate decision" tool=search call_id=\S+ caller=stdio verdict=allow rule="rule #3" condition=match seq=\d+ cost=1 exec_id=\S+ remaining=8.7 duration=\S+`, stderr)
	assert.Regexp(t, `level=INFO msg="toolgate result" tool=read_file call_id=\S+ caller=stdio exec_id=\S+ ok=false charged=0.1 remaining=\S+ seq=\d+ tool_duration=\S+ duration=\S+`, stderr)
	assert.Regexp(t, `level=INFO msg="toolgate decision" tool=echo call_id=\S+ caller=stdio verdict=refuse condition=unknown_tool seq=\d+ remaining=\S+ explanation="tool \\"echo\\" is not in the gate's catalogue" duration=\S+`, stderr)
}

// TestMetricsFlags: -metrics binds loopback addresses only unless
// -insecure-metrics; the caps must be positive; -decision-log=false
// silences the decision lines.
func TestMetricsFlags(t *testing.T) {
	up := newUpstream(t)
	pol := writePolicy(t, "10", "")
	logPath := filepath.Join(t.TempDir(), "trace.log")
	for _, args := range [][]string{
		{"-metrics", "0.0.0.0:0"},
		{"-metrics", ":0"},
		{"-metrics", "example.com:9090"},
		{"-insecure-metrics"},
		{"-metrics", "127.0.0.1:0", "-metrics-max-callers", "0"},
		{"-metrics", "127.0.0.1:0", "-metrics-max-tools", "-1"},
	} {
		var stderr syncBuffer
		code := run(context.Background(), append(append([]string{"-policy", pol, "-log", logPath}, args...), append([]string{"--"}, up.argv()...)...),
			strings.NewReader(""), io.Discard, &stderr)
		assert.Equal(t, 2, code, "%v: %s", args, stderr.String())
		assert.Contains(t, stderr.String(), "usage:", args)
	}

	p := startProxy(t, append([]string{"-policy", pol, "-log", logPath, "-metrics", "[::1]:0", "-insecure-metrics", "-decision-log=false", "--"}, up.argv()...), nil)
	res := p.call(t, "echo", map[string]any{"text": "hi"})
	require.True(t, res.IsError)
	require.Equal(t, 0, p.stop(t), p.stderr.String())
	assert.NotContains(t, p.stderr.String(), "toolgate decision")
	assert.NotContains(t, p.stderr.String(), "-insecure-metrics: anyone", "a loopback address needs no warning")
}
