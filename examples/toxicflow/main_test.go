package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// TestToxicFlowStoppedByTheGate runs the demonstration: without the gate
// the injected instructions make the agent publish the private secret in
// a pull request; with it no pull request is opened, the refusal names
// the flow rule, the kept log verifies, holds the refusal with its rule
// and condition and the labels that led to it, and every decision
// replays.
func TestToxicFlowStoppedByTheGate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toxicflow.trace")
	var out bytes.Buffer
	rep, err := demonstrate(context.Background(), &out, []string{"-log", path})
	require.NoError(t, err, out.String())

	require.Len(t, rep.Leaked, 1, "without the gate the agent opens the pull request")
	assert.Contains(t, rep.Leaked[0].Body, Secret, "and the secret is in it")
	require.Len(t, rep.Gated, 1, "with the gate the leaking pull request is never opened; after the review the clean one is")
	assert.NotContains(t, rep.Gated[0].Body, Secret)
	assert.Contains(t, out.String(), "security-lead clears untrusted_input")
	assert.Contains(t, rep.Refusal, `tool "create_pull_request" (rule #3 "open-pull-request", flow/0)`)
	assert.Equal(t, 6, rep.Replayed, "every call of the gated run was decided again")
	assert.Equal(t, 1, strings.Count(out.String(), "THE PRIVATE SECRET IS NOW PUBLIC"), out.String())
	assert.Contains(t, out.String(), "log kept in "+path)

	// The kept log, read on its own.
	store, err := trace.OpenFileReadOnly(path)
	require.NoError(t, err)
	log, err := trace.NewLog(store)
	require.NoError(t, err)
	defer log.Close()
	var entries []trace.Entry
	for e, err := range log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		entries = append(entries, e)
	}
	_, err = trace.Verify(entries)
	require.NoError(t, err)
	assert.Equal(t, rep.Entries, len(entries))
	var refusals []gatelog.Refuse
	labels := map[string]bool{}
	for _, e := range entries {
		if strings.Contains(string(e.Payload), Secret) {
			// The file's content reached the model (it ran), never a
			// pull request: the refused call is on the log only by its
			// arguments' digest.
			assert.Equal(t, gatelog.KindResult, e.Kind, "entry %d holds the secret", e.Seq)
		}
		if e.Kind == gatelog.KindRefuse {
			d, err := gatelog.Decode(e)
			require.NoError(t, err)
			refusals = append(refusals, d.(gatelog.Refuse))
		}
		for _, l := range []string{"untrusted_input", "private_data", "external_comm"} {
			if strings.Contains(string(e.Payload), `"label:`+l+`"`) {
				labels[l] = true
			}
		}
	}
	require.Len(t, refusals, 1)
	r := refusals[0]
	assert.Equal(t, "create_pull_request", r.Tool)
	assert.Equal(t, "#3", r.Rule)
	assert.Equal(t, "open-pull-request", r.RuleName)
	assert.Equal(t, "flow/0", r.Condition)
	assert.Equal(t, rep.Refusal, r.Explanation, "the model read what the log holds")
	assert.Equal(t, map[string]bool{"untrusted_input": true, "private_data": true, "external_comm": true}, labels,
		"the labels that led to the refusal are on the log; the refused call attached none, the clean pull request external_comm")
	var cleared []gatelog.Declassify
	for _, e := range entries {
		if e.Kind == gatelog.KindDeclassify {
			d, err := gatelog.Decode(e)
			require.NoError(t, err)
			cleared = append(cleared, d.(gatelog.Declassify))
		}
	}
	require.Len(t, cleared, 1)
	assert.Equal(t, "untrusted_input", cleared[0].Label)
	assert.Equal(t, "security-lead", cleared[0].Approver)
}

// TestReplayCatchesAnotherPolicy: the replay is a check, not a
// formality. The log of a run decided under the flow rule does not
// replay under a policy without it (the refused call would be allowed
// now), nor under one that labels nothing (the private read's tags would
// differ).
func TestReplayCatchesAnotherPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "toxicflow.trace")
	var out bytes.Buffer
	rep, err := demonstrate(context.Background(), &out, []string{"-log", path})
	require.NoError(t, err)
	cfg := mustPolicy(t)
	_, n, err := audit(context.Background(), &bytes.Buffer{}, path, cfg, rep.calls, rep.meter)
	require.NoError(t, err, "the run's own policy replays")
	require.Equal(t, 6, n)
	noFlow := mustPolicy(t)
	noFlow.Tools[3].Flow = nil
	_, _, err = audit(context.Background(), &bytes.Buffer{}, path, noFlow, rep.calls, rep.meter)
	require.ErrorContains(t, err, "replay of entry")

	unlabelled := mustPolicy(t)
	unlabelled.Tools[1].Arguments = nil
	unlabelled.Tools[1].Match = "no_such_tool"
	_, _, err = audit(context.Background(), &bytes.Buffer{}, path, unlabelled, rep.calls, rep.meter)
	require.ErrorContains(t, err, "replay of entry")
}

func TestUsage(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "old.trace")
	require.NoError(t, os.WriteFile(existing, []byte("keep me"), 0o600))
	for _, args := range [][]string{{"-log", existing}, {"extra"}, {"-nope"}} {
		_, err := demonstrate(context.Background(), &bytes.Buffer{}, args)
		var usage usageError
		assert.True(t, errors.As(err, &usage), "%v: %v", args, err)
	}
	b, err := os.ReadFile(existing)
	require.NoError(t, err)
	assert.Equal(t, "keep me", string(b), "an existing file is never written")
}

func mustPolicy(t *testing.T) toolgate.Policy {
	t.Helper()
	cfg, err := policy()
	require.NoError(t, err)
	return cfg
}

// TestToolsListIsTheServers: testdata/tools.json, which `verity policy
// check policy.json -tools testdata/tools.json` lints the policy against,
// is what the GitHub-like server lists.
func TestToolsListIsTheServers(t *testing.T) {
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := newGitHub().server().Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "v1"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	got, err := json.MarshalIndent(res, "", "  ")
	require.NoError(t, err)
	if os.Getenv("UPDATE_TOOLS") != "" {
		require.NoError(t, os.WriteFile("testdata/tools.json", append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile("testdata/tools.json")
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got), "run UPDATE_TOOLS=1 go test -run TestToolsListIsTheServers")
}
