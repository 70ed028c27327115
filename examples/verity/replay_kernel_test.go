package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// toolLog writes a log of one kernel session "tools" with invs: run is
// given the session to record its actions.
func toolLog(t *testing.T, invs []kernel.Invariant, run func(context.Context, *kernel.Session)) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tools.trace")
	st, err := trace.OpenFile(path, trace.FileOptions{Sync: trace.SyncManual})
	require.NoError(t, err)
	log, err := trace.NewLog(st)
	require.NoError(t, err)
	k, err := kernel.New(kernel.Config{Budget: 10 * kernel.Unit, MinActionCost: 1, Invariants: invs})
	require.NoError(t, err)
	clk := &clock{t: time.Unix(1700000000, 0)}
	s, err := kernel.NewSession(ctx, log, k, kernel.State{}, kernel.WithSessionID("tools"), kernel.WithIDs(idSource("call")), kernel.WithClock(clk.now))
	require.NoError(t, err)
	run(ctx, s)
	require.NoError(t, log.Close())
	return path
}

// search is a tool call that sets every variable the ready-made
// invariants below look at to a value they warn about.
var search = kernel.Action{ID: "search", Cost: 4 * kernel.Unit, Effects: []kernel.Effect{
	kernel.Count("calls", value.Int(1), value.Int(0)),
	kernel.Count("calls.search", value.Int(1), value.Int(0)),
	kernel.Set("load", value.Float(2)),
	kernel.Set("mode", value.String("wild")),
}}

// reserveSettleRefund reserves search, settles it for less and refunds
// part of what it was charged.
func reserveSettleRefund(t *testing.T) func(context.Context, *kernel.Session) {
	return func(ctx context.Context, s *kernel.Session) {
		rec, err := s.Reserve(ctx, search)
		require.NoError(t, err)
		_, err = s.Settle(ctx, rec.ExecID, kernel.Unit)
		require.NoError(t, err)
		_, err = s.Refund(ctx, rec.ExecID, kernel.Unit/2, "tool failed")
		require.NoError(t, err)
	}
}

func monitoring(inv kernel.Invariant) kernel.Invariant {
	inv.Enforcement = kernel.EnforcementMonitoring
	return inv
}

// TestReplayExplainedWarnings: a log whose monitoring invariants warned
// with an explanation (every ready-made invariant explains), in an
// execution or a reservation, replays.
func TestReplayExplainedWarnings(t *testing.T) {
	invs := []kernel.Invariant{
		monitoring(kernel.AtMost("few-calls", "calls", 0)),
		monitoring(kernel.AtMostEach("few-each", "calls.", 0)),
		monitoring(kernel.Within("light", "load", 0, 1)),
		monitoring(kernel.OneOf("tame", "mode", value.String("calm"))),
		monitoring(kernel.Matches("calm-mode", "mode", regexp.MustCompile(`^calm$`))),
	}
	explained := invs[0]
	explained.Suggestion = "call less"
	runs := map[string]func(context.Context, *kernel.Session){
		"execute": func(ctx context.Context, s *kernel.Session) {
			_, err := s.Execute(ctx, search)
			require.NoError(t, err)
		},
		"reserve": reserveSettleRefund(t),
	}
	for name, run := range runs {
		t.Run(name, func(t *testing.T) {
			for _, invs := range [][]kernel.Invariant{invs, {explained}} {
				path := toolLog(t, invs, run)
				require.Contains(t, verity(t, "inspect", path).stdout, "warned: invariant "+invs[0].Name)
				r := verity(t, "replay", path)
				require.Equal(t, exitOK, r.code, r.stdout+r.stderr)
				assert.Contains(t, r.stdout, "kernel session tools")
			}
		})
	}
}

// TestReplayPanickedAndTimedOutWarnings: a monitoring invariant whose
// predicate panicked or ran past its time limit replays with the
// recorded reason.
func TestReplayPanickedAndTimedOutWarnings(t *testing.T) {
	calls := func(s kernel.State) int64 { v, _ := s.Get("calls"); n, _ := v.AsInt(); return n }
	invs := []kernel.Invariant{{
		Name: "panics", Enforcement: kernel.EnforcementMonitoring, Suggestion: "fix the predicate",
		Check: func(s kernel.State) bool {
			if calls(s) == 1 {
				panic("boom (at one call)")
			}
			return calls(s) < 3
		},
		Explain: func(s kernel.State) string { return "explained; suggestion: not this" },
	}, {
		Name: "slow", Enforcement: kernel.EnforcementMonitoring, Timeout: 5 * time.Millisecond,
		Check: func(s kernel.State) bool {
			if calls(s) == 2 {
				time.Sleep(100 * time.Millisecond)
			}
			return calls(s) < 3
		},
	}}
	path := toolLog(t, invs, func(ctx context.Context, s *kernel.Session) {
		for range 4 {
			_, err := s.Execute(ctx, kernel.Action{ID: "call", Cost: kernel.Unit, Effects: []kernel.Effect{kernel.Count("calls", value.Int(1), value.Int(0))}})
			require.NoError(t, err)
		}
		reserveSettleRefund(t)(ctx, s)
	})
	ins := verity(t, "inspect", path, "--json").stdout
	for _, want := range []string{"predicate panicked: boom (at one call)", "time limit 5ms", "not this", "fix the predicate"} {
		require.Contains(t, ins, want)
	}
	r := verity(t, "replay", path)
	require.Equal(t, exitOK, r.code, r.stdout+r.stderr)

	// A recorded reason the kernel could not have written is a disagreement.
	forged := rewrite(t, path, func(e trace.Entry) []byte {
		return bytes.ReplaceAll(e.Payload, []byte(`violated (predicate panicked`), []byte(`violated (predicate failed`))
	})
	r = verity(t, "replay", forged)
	assert.Equal(t, exitReplay, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stderr, "warnings")
}

// TestRecordedWarningReasonsRebuildExactly: whatever explanation, panic,
// time limit and suggestion a monitoring invariant's warnings were
// recorded with, the parts replay takes them apart into make the kernel
// write the same reasons again.
func TestRecordedWarningReasonsRebuildExactly(t *testing.T) {
	piece := rapid.SampledFrom([]string{"a", ")", ": ", "; suggestion: ", reasonPanicked, reasonTimedOut, "5ms", " ", "é"})
	text := rapid.Custom(func(t *rapid.T) string { return strings.Join(rapid.SliceOfN(piece, 0, 5).Draw(t, "pieces"), "") })
	rapid.Check(t, func(t *rapid.T) {
		name := text.Draw(t, "name")
		suggestion := text.Draw(t, "suggestion")
		limit := time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "limit"))
		prefix := (&kernel.InvariantViolation{Name: name}).Error()
		var reasons, rests []string
		for range rapid.IntRange(1, 4).Draw(t, "warnings") {
			v := &kernel.InvariantViolation{Name: name, Suggestion: suggestion}
			switch rapid.IntRange(0, 2).Draw(t, "how") {
			case 0:
				v.Detail = text.Draw(t, "detail")
			case 1:
				v.Panic = text.Draw(t, "panic")
			case 2:
				v.TimedOut = limit
			}
			reasons = append(reasons, v.Error())
			rests = append(rests, strings.TrimPrefix(v.Error(), prefix))
		}
		s := recordedSuggestion(rests)
		for i, r := range rests {
			w, ok := parseWarning(r, s)
			require.True(t, ok, "%q with suggestion %q", r, s)
			v := &kernel.InvariantViolation{Name: name, Suggestion: s, Detail: w.detail, TimedOut: w.timeout}
			if w.panicked {
				v.Panic = w.panicText
			}
			require.Equal(t, reasons[i], v.Error())
		}
	})
}

// TestInspectToolCalls: reservations, settlements and refunds each have a
// one-line summary.
func TestInspectToolCalls(t *testing.T) {
	path := toolLog(t, nil, reserveSettleRefund(t))
	r := verity(t, "inspect", path, "--kind", "kernel")
	require.Equal(t, exitOK, r.code, r.stderr)
	assert.Regexp(t, `kernel\.reserve +reserved 4 for search \(exec call-1\) → budget net 4 \(gross 4, refunded 0\) of 10, steps 1\n`, r.stdout)
	assert.Regexp(t, `kernel\.settle +settled exec call-1: reserved 4, actual 1, refund 3, overrun 0, unpaid 0 → budget net 1 \(gross 4, refunded 3\) of 10\n`, r.stdout)
	assert.Regexp(t, `kernel\.refund +refunded 0\.5 to exec call-1 \(tool failed\) → budget net 0\.5 \(gross 4, refunded 3\.5\) of 10\n`, r.stdout)
	assert.NotContains(t, r.stdout, "Entry", "no entry falls back to its Go type")
}

// TestViewBudgetOfToolCalls: the budget chart follows a session's
// reservations, settlements and refunds.
func TestViewBudgetOfToolCalls(t *testing.T) {
	base, _ := startView(t, toolLog(t, nil, reserveSettleRefund(t)))
	var budget []budgetSeries
	getJSON(t, base+"api/budget", &budget)
	require.Len(t, budget, 1)
	assert.Equal(t, "tools", budget[0].Session)
	// seq, gross, refunded, net, limit: start, reserve, settle, refund
	assert.Equal(t, [][5]float64{{0, 0, 0, 0, 10}, {1, 4, 0, 4, 10}, {2, 4, 3, 1, 10}, {3, 4, 3.5, 0.5, 10}}, budget[0].Points)
}
