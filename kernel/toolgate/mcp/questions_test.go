package mcp_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
	"github.com/verity-go/verity/trace"
)

func refusedAnswers(t require.TestingT, log *trace.Log) []gatelog.RefuseAnswer {
	var out []gatelog.RefuseAnswer
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind == gatelog.KindRefuseAnswer {
			v, err := gatelog.Decode(e)
			require.NoError(t, err)
			out = append(out, v.(gatelog.RefuseAnswer))
		}
	}
	return out
}

func pathDigest(path string) string {
	return toolgate.Call{Arguments: []byte(fmt.Sprintf(`{"path":%q}`, path))}.ArgumentsDigest()
}

// sessionUser is the authenticated user of the tests' sessions, as a
// bearer token would name them; the test changes it between calls.
type sessionUser struct {
	mu sync.Mutex
	p  toolgate.Principal
}

func (u *sessionUser) set(p toolgate.Principal) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.p = p
}

func (u *sessionUser) principal(context.Context, *sdk.CallToolRequest) toolgate.Principal {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.p
}

// TestElicitationAnswersAsTheSessionsUser: over elicitation the human who
// answers is the session's authenticated user, and their principal is
// what the gate records. Approving their own DELETE they may; approving
// their own PRIVILEGE call they may not — the answer is refused and
// recorded, nothing runs and the request still waits for another
// approver. An answer by a principal who is no longer an approver (their
// group was taken away between the question and the answer) is refused
// and recorded too.
func TestElicitationAnswersAsTheSessionsUser(t *testing.T) {
	cfg := catalogue(10 * kernel.Unit)
	cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "format_disk", Cost: kernel.Unit, Tier: claims.TierPrivilege})
	cfg.Approvers = map[claims.RiskTier][]string{claims.TierDelete: {"group:ops"}, claims.TierPrivilege: {"group:ops"}}
	alice := toolgate.Principal{Issuer: "https://id.example", Subject: "alice", Groups: []string{"ops"}}
	user := &sessionUser{p: alice}
	r := newRigWith(t, cfg, gatemcp.Options{Principal: user.principal})

	protocols(t, func(t *testing.T, version string) {
		user.set(alice)
		human := &answers{action: "accept"}
		cs, _ := r.connect(t, version, human, nil)
		deletes := r.tools.count("delete_file")
		res := call(t, cs, "delete_file", "own-"+version)
		require.False(t, res.IsError, text(res))
		assert.Equal(t, deletes+1, r.tools.count("delete_file"), "her own DELETE she may approve")

		before := len(refusedAnswers(t, r.log))
		res = call(t, cs, "format_disk", "disk-"+version)
		if res.NeedsInput() { // the current protocol: the client answers on retry
			res, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "format_disk", Arguments: map[string]any{"path": "disk-" + version},
				RequestState: res.RequestState, InputResponses: sdk.InputResponseMap{gatemcp.InputKey: &sdk.ElicitResult{Action: "accept"}}})
		}
		require.True(t, res.IsError)
		assert.Contains(t, text(res), "cannot be approved by the principal that made it")
		assert.Zero(t, r.tools.count("format_disk"))
		refused := refusedAnswers(t, r.log)[before:]
		require.Len(t, refused, 1)
		assert.Equal(t, gatelog.AnswerSelfApproval, refused[0].Reason)
		assert.Equal(t, "https://id.example|alice", refused[0].Approver, "the session's user is who answered")
		var waits bool
		for _, p := range r.gate.Pending() {
			waits = waits || p.ArgumentsDigest == pathDigest("disk-"+version)
		}
		assert.True(t, waits, "the PRIVILEGE call still waits for another approver")
	})

	t.Run("an approver no longer", func(t *testing.T) {
		user.set(alice)
		cs, _ := r.connect(t, currentProtocol, &answers{action: "accept"},
			&sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})
		res := call(t, cs, "delete_file", "revoked")
		require.True(t, res.NeedsInput(), text(res))
		user.set(toolgate.Principal{Issuer: alice.Issuer, Subject: alice.Subject})
		before := len(refusedAnswers(t, r.log))
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "revoked"},
			RequestState: res.RequestState, InputResponses: sdk.InputResponseMap{gatemcp.InputKey: &sdk.ElicitResult{Action: "accept"}}})
		require.NoError(t, err)
		assert.True(t, res.IsError)
		assert.Contains(t, text(res), "not an approver")
		refused := refusedAnswers(t, r.log)[before:]
		require.Len(t, refused, 1)
		assert.Equal(t, gatelog.AnswerNotApprover, refused[0].Reason)
	})
}

// TestOnlyQuestionsTheGateAskedWait is a rapid state machine over the
// current protocol's input-required retries, against a naive model of
// the questions asked: calls ask (one gate request per path), and
// retries come back with any request state issued so far over any path,
// accepting or declining — the human's answers, answers over swapped
// arguments, replays — or with a state the Guard never issued (a
// forgery). An answer counts only for the question its state asked,
// while it waits, over the same arguments: it runs the call once (or
// refuses it on a decline). Every other is recorded and refused, and
// Gate.Pending always holds exactly the questions the model says wait.
func TestOnlyQuestionsTheGateAskedWait(t *testing.T) {
	paths := []string{"tmp/ok", "etc/passwd"}
	rapid.Check(t, func(rt *rapid.T) {
		r := newRig(rt, catalogue(1000*kernel.Unit))
		cs, _ := r.connect(rt, currentProtocol, &answers{action: "accept"},
			&sdk.ClientOptions{MultiRoundTrip: &sdk.MultiRoundTripOptions{Disabled: true}})
		type issued struct {
			state, path string
			gen         int
		}
		var states []issued
		waiting := map[string]int{} // path → generation of its request
		gen, runs, refusals := 0, 0, 0
		retry := func(state, path, action string) *sdk.CallToolResult {
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": path},
				RequestState: state, InputResponses: sdk.InputResponseMap{gatemcp.InputKey: &sdk.ElicitResult{Action: action}}})
			if err != nil {
				// A state that fails verification (another call's, used
				// already, forged) is refused as a protocol error.
				requireStateError(rt, err, "invalid request state")
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}
			}
			return res
		}
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				path := rapid.SampledFrom(paths).Draw(rt, "path")
				res := call(rt, cs, "delete_file", path)
				require.True(rt, res.NeedsInput(), text(res))
				if _, ok := waiting[path]; !ok {
					gen++
					waiting[path] = gen
				}
				states = append(states, issued{res.RequestState, path, waiting[path]})
			},
			"retry": func(rt *rapid.T) {
				if len(states) == 0 {
					rt.Skip("no state issued")
				}
				st := states[rapid.IntRange(0, len(states)-1).Draw(rt, "state")]
				path := rapid.SampledFrom(paths).Draw(rt, "path")
				action := rapid.SampledFrom([]string{"accept", "decline"}).Draw(rt, "action")
				res := retry(st.state, path, action)
				if path == st.path && waiting[path] == st.gen {
					delete(waiting, path)
					if action == "accept" {
						require.False(rt, res.IsError, text(res))
						runs++
					} else {
						require.True(rt, res.IsError)
						require.Contains(rt, text(res), "denied")
					}
					return
				}
				require.True(rt, res.IsError, text(res))
				refusals++
			},
			"forged state": func(rt *rapid.T) {
				res := retry("vg2.e30AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", rapid.SampledFrom(paths).Draw(rt, "path"), "accept")
				require.True(rt, res.IsError)
				require.Contains(rt, text(res), "invalid request state")
				refusals++
			},
			"": func(rt *rapid.T) {
				require.Equal(rt, runs, r.tools.count("delete_file"), "runs only on an answer to the question asked")
				want := map[string]bool{}
				for p := range waiting {
					want[pathDigest(p)] = true
				}
				got := map[string]bool{}
				for _, p := range r.gate.Pending() {
					got[p.ArgumentsDigest] = true
				}
				require.Equal(rt, want, got, "only the questions the gate asked wait")
			},
		})
		require.Len(rt, refusedAnswers(rt, r.log), refusals, "every refused answer is recorded")
	})
}
