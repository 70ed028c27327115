package toolgate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// refusedAnswers returns the KindRefuseAnswer entries of log, decoded.
func refusedAnswers(t require.TestingT, log *trace.Log) []gatelog.RefuseAnswer {
	var out []gatelog.RefuseAnswer
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		if e.Kind != gatelog.KindRefuseAnswer {
			continue
		}
		v, err := gatelog.Decode(e)
		require.NoError(t, err)
		out = append(out, v.(gatelog.RefuseAnswer))
	}
	return out
}

func privilegeConfig(self bool) toolgate.Policy {
	cfg := testConfig()
	cfg.Tools = append(cfg.Tools, toolgate.Rule{Match: "grant_role", Cost: units(1), Tier: claims.TierPrivilege})
	cfg.Approvers = map[claims.RiskTier][]string{
		claims.TierDelete:    {"group:ops"},
		claims.TierPrivilege: {"group:ops"},
	}
	cfg.SelfApproval = self
	return cfg
}

var (
	alice   = toolgate.Principal{Issuer: "idp", Subject: "alice", Groups: []string{"ops"}}
	carol   = toolgate.Principal{Issuer: "idp", Subject: "carol", Groups: []string{"ops"}}
	mallory = toolgate.Principal{Issuer: "idp", Subject: "mallory", Groups: []string{"dev"}}
)

// TestPrivilegeSelfApprovalRefused: the principal a PRIVILEGE call was
// made for cannot approve it, not even for a group it belongs to; the
// refusal is on the log and the request still waits for another
// approver. A principal who is no approver is refused and recorded too.
// Denying one's own call, and approving one's own DELETE, are allowed.
func TestPrivilegeSelfApprovalRefused(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, privilegeConfig(false))
	c := toolgate.Call{Tool: "grant_role", Arguments: []byte(`{"role":"admin"}`), Principal: alice}
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.Equal(t, "idp|alice", d.Approval.Principal)

	_, err = g.ApproveAs(ctx, d.Approval.ID, alice, "mine")
	require.ErrorIs(t, err, toolgate.ErrSelfApproval)
	_, err = g.Approve(ctx, d.Approval.ID, "idp|alice", "by name")
	require.ErrorIs(t, err, toolgate.ErrSelfApproval, "an approver name that is the caller's key is the caller")
	_, err = g.ApproveAs(ctx, d.Approval.ID, mallory, "")
	require.ErrorIs(t, err, toolgate.ErrNotAnApprover)
	require.Len(t, g.Pending(), 1, "refused answers leave the request waiting")

	refused := refusedAnswers(t, log)
	require.Len(t, refused, 3)
	assert.Equal(t, gatelog.AnswerSelfApproval, refused[0].Reason)
	assert.Equal(t, "idp|alice", refused[0].Approver)
	assert.Equal(t, "APPROVED", refused[0].Decision)
	assert.Equal(t, d.Approval.ID, refused[0].Approval)
	assert.Equal(t, "grant_role", refused[0].Tool)
	assert.Equal(t, gatelog.AnswerSelfApproval, refused[1].Reason)
	assert.Equal(t, gatelog.AnswerNotApprover, refused[2].Reason)
	assert.Equal(t, "idp|mallory", refused[2].Approver)

	d2, err := g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d2.Verdict, "nothing was granted")
	ok, err := g.ApproveAs(ctx, d.Approval.ID, carol, "checked")
	require.NoError(t, err)
	require.True(t, ok)
	d, err = g.Before(ctx, c)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)

	// Her own DELETE call alice may approve; her own PRIVILEGE call deny.
	del := toolgate.Call{Tool: "delete_file", Arguments: []byte(`{"path":"x"}`), Principal: alice}
	d, err = g.Before(ctx, del)
	require.NoError(t, err)
	ok, err = g.ApproveAs(ctx, d.Approval.ID, alice, "")
	require.NoError(t, err)
	assert.True(t, ok)
	c.Arguments = []byte(`{"role":"root"}`)
	d, err = g.Before(ctx, c)
	require.NoError(t, err)
	require.NoError(t, g.DenyAs(ctx, d.Approval.ID, alice, "changed my mind"))
}

// TestSelfApprovalAllowedByPolicy: with SelfApproval the principal may
// approve its own PRIVILEGE call.
func TestSelfApprovalAllowedByPolicy(t *testing.T) {
	g := newGate(t, newLog(t), privilegeConfig(true))
	c := toolgate.Call{Tool: "grant_role", Arguments: []byte(`{"role":"admin"}`), Principal: alice}
	d, err := g.Before(ctx, c)
	require.NoError(t, err)
	ok, err := g.ApproveAs(ctx, d.Approval.ID, alice, "")
	require.NoError(t, err)
	assert.True(t, ok)
}

// TestSelfApprovalPolicyMember: "self_approval" reads into
// Policy.SelfApproval, writes back, and is refused where no PRIVILEGE
// call could ask.
func TestSelfApprovalPolicyMember(t *testing.T) {
	const file = `{"version":2,"budget":"10","min_cost":"0.01","self_approval":true,
	  "approvers":{"PRIVILEGE":["group:ops"]},
	  "tools":[{"match":"grant_role","cost":"1","tier":"PRIVILEGE"}]}`
	p, err := toolgate.ParsePolicy([]byte(file))
	require.NoError(t, err)
	assert.True(t, p.SelfApproval)
	cfg, err := p.Compile()
	require.NoError(t, err)
	assert.True(t, cfg.Policy().SelfApproval)
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"self_approval":true`)
	ok, _ := schemaVerdict(t, []byte(file))
	assert.True(t, ok, "the schema knows self_approval")

	_, err = toolgate.ParsePolicy([]byte(strings.Replace(file, `"PRIVILEGE"}`, `"DELETE"}`, 1)))
	assert.Equal(t, []pathRule{{"/self_approval", "self_approval_unused"}}, filterRule(violationsOf(t, err), "self_approval_unused"))
	_, err = toolgate.ParsePolicy([]byte(strings.Replace(file, `"self_approval":true`, `"self_approval":"yes"`, 1)))
	assert.Contains(t, violationsOf(t, err), pathRule{"/self_approval", "type"})

	flow := `{"version":2,"budget":"10","min_cost":"0.01","self_approval":true,"labels":["l"],
	  "tools":[{"match":"a","cost":"1","labels":["l"]},{"match":"b","cost":"1","flow":[{"after":["l"],"effect":"ask"}]}]}`
	_, err = toolgate.ParsePolicy([]byte(flow))
	require.NoError(t, err, "a flow that asks asks at PRIVILEGE by default")
}

func filterRule(got []pathRule, rule string) []pathRule {
	var out []pathRule
	for _, pr := range got {
		if pr.Rule == rule {
			out = append(out, pr)
		}
	}
	return out
}

// TestForgedAnswerLeavesTheQuestionAnswerable: the gate asks about
// delete_file /tmp/ok (call dd); an answer comes back with the same call
// id over /etc/passwd. It is recorded and refused, makes no request and
// cancels none; the answer to the real question then runs the real call.
func TestForgedAnswerLeavesTheQuestionAnswerable(t *testing.T) {
	log := newLog(t)
	g := newGate(t, log, testConfig())
	real := toolgate.Call{ID: "dd", Caller: "s", Tool: "delete_file", Arguments: []byte(`{"path":"/tmp/ok"}`)}
	d, err := g.Before(ctx, real)
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	asked := d.Approval.ID

	forged := real
	forged.Arguments = []byte(`{"path":"/etc/passwd"}`)
	yes := &toolgate.Answer{Approved: true, Approver: toolgate.DefaultApprover}
	for _, request := range []string{asked, "", "no-such-request"} {
		f, err := g.Resume(ctx, forged, request, yes)
		require.NoError(t, err)
		assert.Equal(t, toolgate.Refuse, f.Verdict, request)
		assert.Equal(t, gatelog.ConditionAnswer, f.Condition)
		assert.Equal(t, gatelog.KindRefuseAnswer, entryAt(t, log, f.Seq).Kind)
	}
	pending := g.Pending()
	require.Len(t, pending, 1, "no request for the forged arguments")
	assert.Equal(t, asked, pending[0].ID)
	assert.Len(t, refusedAnswers(t, log), 3)

	d, err = g.Resume(ctx, real, asked, yes)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict, "the real question stays answerable")
	assert.Equal(t, asked, d.ApprovalID)
	_, err = g.After(ctx, d.Call, toolgate.Result{})
	require.NoError(t, err)

	d, err = g.Resume(ctx, real, asked, yes)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict, "a replayed answer runs nothing")
	assert.Equal(t, gatelog.ConditionAnswer, d.Condition)
	assert.Empty(t, g.Pending(), "and asks nothing")
}

// TestResumeWithoutQuestionOnlyPassesCallsThatNeedNoHuman: with no
// request and no answer, a call that needs no human is decided as Before
// decides it; one that needs a human is refused, never asked.
func TestResumeWithoutQuestionOnlyPassesCallsThatNeedNoHuman(t *testing.T) {
	g := newGate(t, newLog(t), testConfig())
	d, err := g.Resume(ctx, call("read_file", `{}`), "", nil)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict)
	d, err = g.Resume(ctx, call("delete_file", `{}`), "", nil)
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Empty(t, g.Pending())
	d, err = g.Resume(ctx, call("read_file", `{}`), "", &toolgate.Answer{Approved: true})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict, "an answer for a call that needs no human answers no question")
}

// TestOnlyQuestionsTheGateAskedWait is a rapid state machine against a
// naive model of pending requests: a request waits only when Before
// decided a call needs a human; an answer brought back by Resume counts
// only for the request asked about exactly that call (once), and any
// other — forged (no request, an unknown one), replayed, or for other
// arguments — is refused and recorded, changes no request, and leaves
// the real question answerable.
func TestOnlyQuestionsTheGateAskedWait(t *testing.T) {
	paths := []string{"/tmp/ok", "/etc/passwd", "/srv/a"}
	rapid.Check(t, func(rt *rapid.T) {
		cfg := testConfig()
		cfg.Budget = units(1 << 20)
		log := newLog(rt)
		g, err := toolgate.New(ctx, log, mustCompile(cfg))
		require.NoError(rt, err)
		// The model.
		waiting := map[string]string{} // path → request id
		granted := map[string][]string{}
		var used []string // requests answered and used
		refusals := 0
		n := 0
		newCall := func(path string) toolgate.Call {
			n++
			return toolgate.Call{ID: fmt.Sprint("c", n), Caller: "s", Tool: "delete_file", Arguments: []byte(`{"path":"` + path + `"}`)}
		}
		finish := func(d toolgate.Decision) {
			_, err := g.After(ctx, d.Call, toolgate.Result{})
			require.NoError(rt, err)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"call": func(rt *rapid.T) {
				path := rapid.SampledFrom(paths).Draw(rt, "path")
				d, err := g.Before(ctx, newCall(path))
				require.NoError(rt, err)
				if ids := granted[path]; len(ids) > 0 {
					require.Equal(rt, toolgate.Allow, d.Verdict)
					require.Equal(rt, ids[0], d.ApprovalID)
					granted[path] = ids[1:]
					used = append(used, ids[0])
					finish(d)
					return
				}
				require.Equal(rt, toolgate.AskApproval, d.Verdict)
				if id, ok := waiting[path]; ok {
					require.Equal(rt, id, d.Approval.ID, "the call waits on its request")
				}
				waiting[path] = d.Approval.ID
			},
			"approve through the gate": func(rt *rapid.T) {
				path := rapid.SampledFrom(paths).Draw(rt, "path")
				id, ok := waiting[path]
				if !ok {
					rt.Skip("nothing waits")
				}
				ok, err := g.Approve(ctx, id, toolgate.DefaultApprover, "")
				require.NoError(rt, err)
				require.True(rt, ok)
				delete(waiting, path)
				granted[path] = append(granted[path], id)
			},
			"resume": func(rt *rapid.T) {
				path := rapid.SampledFrom(paths).Draw(rt, "path")
				// The request the answer names: the call's own, another
				// call's, one used already, an unknown one, or none.
				var candidates []string
				for _, p := range paths {
					if id, ok := waiting[p]; ok {
						candidates = append(candidates, id)
					}
					candidates = append(candidates, granted[p]...)
				}
				candidates = append(candidates, used...)
				candidates = append(candidates, "", "forged")
				request := rapid.SampledFrom(candidates).Draw(rt, "request")
				var ans *toolgate.Answer
				switch rapid.IntRange(0, 2).Draw(rt, "answer") {
				case 1:
					ans = &toolgate.Answer{Approved: true, Approver: toolgate.DefaultApprover}
				case 2:
					ans = &toolgate.Answer{Approver: toolgate.DefaultApprover, Reason: "no"}
				}
				d, err := g.Resume(ctx, newCall(path), request, ans)
				require.NoError(rt, err)
				own := request != "" && waiting[path] == request
				grant := request != "" && slices.Contains(granted[path], request)
				switch {
				case own && ans == nil:
					require.Equal(rt, toolgate.AskApproval, d.Verdict)
					require.Equal(rt, request, d.Approval.ID)
				case own && ans.Approved:
					require.Equal(rt, toolgate.Allow, d.Verdict, d.Explanation)
					require.Equal(rt, request, d.ApprovalID)
					delete(waiting, path)
					used = append(used, request)
					finish(d)
				case own:
					require.Equal(rt, toolgate.Refuse, d.Verdict)
					require.Equal(rt, "approval", d.Condition, "refused on the human's denial")
					delete(waiting, path)
					used = append(used, request)
				case grant && (ans == nil || ans.Approved):
					require.Equal(rt, toolgate.Allow, d.Verdict, d.Explanation)
					require.Equal(rt, request, d.ApprovalID)
					i := slices.Index(granted[path], request)
					granted[path] = slices.Delete(granted[path], i, i+1)
					used = append(used, request)
					finish(d)
				default:
					require.Equal(rt, toolgate.Refuse, d.Verdict, "request %q for %s: %s", request, path, d.Explanation)
					require.Equal(rt, gatelog.ConditionAnswer, d.Condition)
					require.Equal(rt, gatelog.KindRefuseAnswer, kindAt(rt, log, d.Seq))
					refusals++
				}
			},
			"": func(rt *rapid.T) {
				want := map[string]string{}
				for p, id := range waiting {
					want[id] = call("delete_file", `{"path":"`+p+`"}`).ArgumentsDigest()
				}
				got := map[string]string{}
				for _, r := range g.Pending() {
					got[r.ID] = r.ArgumentsDigest
				}
				require.Equal(rt, want, got, "only the questions the gate asked wait")
			},
		})
		require.Len(rt, refusedAnswers(rt, log), refusals, "every refused answer is recorded")
	})
}

// kindAt returns the kind of the log entry with sequence number seq.
func kindAt(t require.TestingT, log *trace.Log, seq uint64) string {
	for e, err := range log.Entries(ctx, seq) {
		require.NoError(t, err)
		return e.Kind
	}
	t.Errorf("no entry %d", seq)
	return ""
}
