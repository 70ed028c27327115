package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// TestSummaryWordsTheGatesNewerKinds: verity inspect words a task, a
// relayed request, labels shared by another gate, a declassification and
// a budget change, each in one line, rather than "unreadable payload"
// (toolgateSummary's type switch must know every payload Decode returns).
func TestSummaryWordsTheGatesNewerKinds(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		kind    string
		payload any
		want    string
	}{
		{gatelog.KindTask, gatelog.Task{Session: "s1", Caller: "alice", CallID: "c1", ExecID: "e1", Tool: "build", Rule: "builds", Reserved: true, Cost: 5 * kernel.Unit, TaskID: "t-9", Owner: "iss|alice", Expires: &at},
			`build call c1 for "alice" became task t-9 (exec e1, rule builds, reserved 5, owner "iss|alice", expires 2026-11-29T08:00:00.000000000Z)`},
		{gatelog.KindRelay, gatelog.Relay{Method: "elicitation/create", Caller: "alice", Action: gatelog.RelayRefused, Origin: "https://evil.example", Reason: "origin not allowed"},
			`refused the upstream's elicitation/create for "alice" to https://evil.example: origin not allowed`},
		{gatelog.KindSharedLabels, gatelog.SharedLabels{Session: "s1", Caller: "alice", Labels: []gatelog.SharedLabel{{Label: "untrusted"}, {Label: "private_data", Until: at}}},
			`labels shared by another gate for "alice": untrusted, private_data until 2026-11-29T08:00:00.000000000Z`},
		{gatelog.KindDeclassify, gatelog.Declassify{Session: "s1", Caller: "alice", Label: "untrusted", Approver: "bob", Reason: "reviewed"},
			`declassified label untrusted of "alice", by "bob": reviewed`},
	} {
		b, err := canon.Marshal(c.payload)
		require.NoError(t, err)
		e := trace.Entry{Kind: c.kind, Payload: b}
		_, err = gatelog.Decode(e)
		require.NoError(t, err, c.kind)
		line, v := describe(e)
		assert.NotNil(t, v, c.kind)
		assert.Equal(t, c.want, line, c.kind)
	}
}
