package adk_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/adk"
)

// TestSecondApproverThroughTheGate: a gate that needs two approvers of a
// DELETE call. ADK asks the user once per call, so the confirmation
// records the first approval (WithApprover names who confirmed), the
// model reads that the call waits for the other approver, who approves
// through the gate; the model's next identical call runs, once.
func TestSecondApproverThroughTheGate(t *testing.T) {
	cfg := testConfig()
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"alice", "bob"}}
	del := map[string]any{"path": "/x"}
	w := &world{log: newLog(t), tools: &tools{}, session: sessionName(t),
		model: newScript("m", []*genai.FunctionCall{call("d1", "delete_file", del)}, []*genai.FunctionCall{call("d2", "delete_file", del)})}
	w.gate = newGate(t, w.log, cfg)
	var err error
	w.guard, err = adk.New(w.gate, adk.WithApprover(func(ctx agent.Context, _ toolgate.ApprovalRequest) string { return ctx.UserID() }))
	require.NoError(t, err)
	ac := llmagent.Config{Name: "assistant", Model: w.model, Tools: w.tools.list(t)}
	w.guard.Install(&ac)
	a, err := llmagent.New(ac)
	require.NoError(t, err)
	w.runner, err = runner.New(runner.Config{AppName: appName, Agent: a, SessionService: session.InMemoryService(), AutoCreateSession: true})
	require.NoError(t, err)

	reqs := confirmationRequests(w.say(t, "delete"))
	require.Len(t, reqs, 1)
	events := w.confirm(t, reqs[0].ID, true) // alice (the ADK user) confirms
	assert.Zero(t, w.tools.deletes.Load(), "one approval of two is not enough")
	assert.Empty(t, confirmationRequests(events))
	resp := functionResponses(events, "delete_file")
	require.Len(t, resp, 1)
	assert.Contains(t, resp[0]["error"], "waiting for approval by bob: ")
	pending := w.gate.Pending()
	require.Len(t, pending, 1)
	assert.Equal(t, []string{"bob"}, pending[0].Awaiting)

	granted, err := w.gate.Approve(context.Background(), pending[0].ID, "bob", "checked")
	require.NoError(t, err)
	require.True(t, granted)
	w.say(t, "try again")
	assert.EqualValues(t, 1, w.tools.deletes.Load(), "approved by both, the call runs once")
	checkLog(t, w.log, w.gate, w.caller())
}
