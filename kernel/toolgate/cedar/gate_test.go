package cedar_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

var ctx = context.Background()

var eng = toolgate.Principal{Issuer: "idp", Subject: "alice", Groups: []string{"eng"}}

func newGate(t testing.TB, p toolgate.Policy) (*toolgate.Gate, *trace.Log) {
	t.Helper()
	comp, err := p.Compile()
	require.NoError(t, err)
	log, err := trace.NewLog(trace.NewMemory())
	require.NoError(t, err)
	g, err := toolgate.New(ctx, log, comp)
	require.NoError(t, err)
	return g, log
}

// entries returns the log's entries.
func entries(t testing.TB, log *trace.Log) []trace.Entry {
	var out []trace.Entry
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		out = append(out, e)
	}
	return out
}

// TestCedarForbidRefusesWithThePolicyID: a forbid refuses the call at
// its rule, the explanation names the Cedar policy, and the refusal
// entry records the evaluation (the policy ids, the text's hash, the
// input); an allowed call's execution carries the same record in a
// when: tag.
func TestCedarForbidRefusesWithThePolicyID(t *testing.T) {
	p := loadCedar(t, "testdata/worked_cedar.json")
	g, log := newGate(t, p)
	call := toolgate.Call{Tool: "github.create_pull_request", Arguments: []byte(`{"repo":"acme/api"}`), Principal: eng}
	d, err := g.Before(ctx, call)
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte("ok")})
	require.NoError(t, err)

	d, err = g.Before(ctx, toolgate.Call{Tool: "read_private", Arguments: []byte(`{}`), Principal: eng})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	d, err = g.Before(ctx, call)
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, d.Verdict)
	assert.Equal(t, gatelog.ConditionWhen, d.Condition)
	assert.Equal(t, "pr", d.Rule.Name)
	assert.Contains(t, d.Explanation, "no-private-data")

	var sawTag, sawRefuse bool
	for _, e := range entries(t, log) {
		switch e.Kind {
		case kernel.KindExecute:
			if strings.Contains(string(e.Payload), `when:`) {
				sawTag = true
				assert.Contains(t, string(e.Payload), `eng-acme`)
			}
		case gatelog.KindRefuse:
			x, err := gatelog.Decode(e)
			require.NoError(t, err)
			r := x.(gatelog.Refuse)
			require.NotNil(t, r.When)
			require.Len(t, r.When.Evaluations, 1)
			ev := r.When.Evaluations[0]
			assert.Equal(t, "refuses", ev.Answer)
			assert.Equal(t, []string{"no-private-data"}, ev.Policies)
			assert.Equal(t, "#1", ev.Rule)
			assert.Len(t, ev.TextSHA256, 64)
			assert.Contains(t, string(r.When.Input), `"labels":["private_data"]`)
			sawRefuse = true
		}
	}
	assert.True(t, sawTag, "the allowed call's execution carries the when: tag")
	assert.True(t, sawRefuse)

	mismatches, n, err := cedar.Replay(ctx, log, p, cedar.Language{Server: "github"})
	require.NoError(t, err)
	assert.Empty(t, mismatches)
	assert.Equal(t, 2, n)
}

// TestReplayFailsOnADifferentAnswer: a log whose recorded answer Cedar
// does not give again (here, a refusal recorded as applying), and a
// policy whose Cedar text is not the one recorded, are mismatches.
func TestReplayFailsOnADifferentAnswer(t *testing.T) {
	p := loadCedar(t, "testdata/worked_cedar.json")
	g, log := newGate(t, p)
	_, err := g.Before(ctx, toolgate.Call{Tool: "github.create_pull_request", Arguments: []byte(`{"repo":"evil/api"}`), Principal: eng})
	require.NoError(t, err)
	// A forged refusal: the same input, recorded as applying.
	var rec *gatelog.When
	for _, e := range entries(t, log) {
		if e.Kind == gatelog.KindRefuse {
			x, err := gatelog.Decode(e)
			require.NoError(t, err)
			rec = x.(gatelog.Refuse).When
		}
	}
	require.NotNil(t, rec)
	assert.Equal(t, "misses", rec.Evaluations[0].Answer)
	forged := *rec
	forged.Evaluations = []gatelog.WhenEvaluation{rec.Evaluations[0]}
	forged.Evaluations[0].Answer = "applies"
	forged.Evaluations[0].Policies = []string{"eng-acme"}
	payload := gatelog.Refuse{Session: "toolgate:x", Caller: "x", CallID: "c", Tool: "github.create_pull_request", Reason: "condition", When: &forged}
	_, err = log.Append(ctx, gatelog.KindRefuse, payload.AppendJSON(nil))
	require.NoError(t, err)
	mismatches, n, err := cedar.Replay(ctx, log, p, cedar.Language{Server: "github"})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	require.Len(t, mismatches, 1)
	assert.Equal(t, "applies [eng-acme]", mismatches[0].Recorded)
	assert.Equal(t, "misses []", mismatches[0].Replayed)

	other := loadCedar(t, "testdata/worked_cedar.json")
	other.Tools[1].When = &toolgate.WhenCondition{Language: "cedar", Text: other.Tools[1].When.Text + "\n"}
	mismatches, _, err = cedar.Replay(ctx, log, other, cedar.Language{Server: "github"})
	require.NoError(t, err)
	require.Len(t, mismatches, 2)
	assert.Contains(t, mismatches[0].Replayed, "a different text")
}

// TestCedarFailsClosed: an evaluation error (a policy reading an
// argument the call does not have) and arguments that do not fit
// Cedar's types (a fraction, an integer beyond 64 bits, a null in an
// array) refuse the call at the rule, with the reason; they never fall
// through to a later rule.
func TestCedarFailsClosed(t *testing.T) {
	p := toolgate.Policy{Budget: 1000, MinCost: 1, Conditions: []toolgate.ConditionLanguage{cedar.Language{}}, Tools: []toolgate.Rule{
		{Name: "small", Match: "t", Cost: 1, When: &toolgate.WhenCondition{Language: "cedar",
			Text: `@id("small") permit (principal, action, resource) when { context.arguments.n < 10 };`}},
		{Name: "fallback", Match: "t", Cost: 1},
	}}
	g, _ := newGate(t, p)
	for _, c := range []struct{ args, why string }{
		{`{}`, "does not have the attribute"},
		{`{"n": 1.5}`, "is not an integer"},
		{`{"n": 1.0}`, "is not an integer"},
		{`{"n": 9223372036854775808}`, "beyond 64 bits"},
		{`{"n": 1, "xs": [1, null]}`, "null"},
	} {
		d, err := g.Before(ctx, toolgate.Call{Tool: "t", Arguments: []byte(c.args), Caller: "a"})
		require.NoError(t, err)
		assert.Equal(t, toolgate.Refuse, d.Verdict, c.args)
		assert.Equal(t, "small", d.Rule.Name, c.args)
		assert.Equal(t, gatelog.ConditionWhen, d.Condition, c.args)
		assert.Contains(t, d.Explanation, c.why, c.args)
	}
	d, err := g.Before(ctx, toolgate.Call{Tool: "t", Arguments: []byte(`{"n": 12}`), Caller: "a"})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Allow, d.Verdict)
	assert.Equal(t, "fallback", d.Rule.Name, "a condition that does not permit leaves the rule")
	d, err = g.Before(ctx, toolgate.Call{Tool: "t", Arguments: []byte(`{"n": -9223372036854775808}`), Caller: "a"})
	require.NoError(t, err)
	assert.Equal(t, "small", d.Rule.Name, "the least Long fits")
}

// TestCedarSeesSpendAndTheServer: the context's spent and remaining are
// the caller's budget in thousandths, and the resource is the
// language's server.
func TestCedarSeesSpendAndTheServer(t *testing.T) {
	p := toolgate.Policy{Budget: 5000, MinCost: 1000, Conditions: []toolgate.ConditionLanguage{cedar.Language{Server: "github"}}, Tools: []toolgate.Rule{
		{Name: "cheap", Match: "t", Cost: 1000, When: &toolgate.WhenCondition{Language: "cedar",
			Text: `permit (principal, action, resource == Server::"github") when { context.spent < 2000 && context.remaining > 3000 };`}},
	}}
	g, _ := newGate(t, p)
	var verdicts []toolgate.Verdict
	for range 4 {
		d, err := g.Before(ctx, toolgate.Call{Tool: "t", Arguments: []byte(`{}`), Caller: "a"})
		require.NoError(t, err)
		verdicts = append(verdicts, d.Verdict)
	}
	assert.Equal(t, []toolgate.Verdict{toolgate.Allow, toolgate.Allow, toolgate.Refuse, toolgate.Refuse}, verdicts)
}

// TestCompileRefusesBadCedar: Cedar that does not parse refuses the
// policy with Cedar's error, located; a policy with a Cedar condition
// compiled without the language names the package to import.
func TestCompileRefusesBadCedar(t *testing.T) {
	p := loadCedar(t, "testdata/worked_cedar.json")
	p.Tools[1].When = &toolgate.WhenCondition{Language: "cedar", Text: "permit (principal, action, resource)\nwhen { context.x + };"}
	_, err := p.Compile()
	var ve *toolgate.ValidationError
	require.True(t, errors.As(err, &ve), "%v", err)
	require.Len(t, ve.Violations, 1)
	assert.Equal(t, "/tools/1/when/text", ve.Violations[0].Path)
	assert.Contains(t, ve.Violations[0].Message, ":2:")
	assert.Contains(t, ve.Violations[0].Message, "Cedar does not parse it")

	p = loadCedar(t, "testdata/worked_cedar.json")
	p.Conditions = nil
	_, err = p.Compile()
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "/tools/1/when/language", ve.Violations[0].Path)
	assert.Contains(t, ve.Violations[0].Message, "github.com/verity-go/verity/kernel/toolgate/cedar")

	p = loadCedar(t, "testdata/worked_cedar.json")
	p.Tools[1].When = &toolgate.WhenCondition{Language: "cedar", Text: `@id("a") permit (principal, action, resource); @id("a") forbid (principal, action, resource);`}
	_, err = p.Compile()
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.Violations[0].Message, `two policies have the id "a"`)
}

// TestCedarSeesTheDefinitionHash: a call's pinned definition hash is
// context.definition_hash, present only when the host pins definitions,
// and it is recorded with the input, so that a replay sees it too.
func TestCedarSeesTheDefinitionHash(t *testing.T) {
	const pinned = "sha256:0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
	p := toolgate.Policy{Budget: 5000, MinCost: 1000, Conditions: []toolgate.ConditionLanguage{cedar.Language{}}, Tools: []toolgate.Rule{
		{Name: "reviewed", Match: "t", Cost: 1000, When: &toolgate.WhenCondition{Language: "cedar",
			Text: `permit (principal, action, resource) when { context has definition_hash && context.definition_hash == "` + pinned + `" };`}},
	}}
	g, log := newGate(t, p)
	verdict := func(def string) toolgate.Verdict {
		d, err := g.Before(ctx, toolgate.Call{Tool: "t", Arguments: []byte(`{}`), Caller: "a", Definition: def})
		require.NoError(t, err)
		return d.Verdict
	}
	assert.Equal(t, toolgate.Refuse, verdict(""), "no pinned definition: the condition does not permit")
	assert.Equal(t, toolgate.Refuse, verdict("sha256:"+strings.Repeat("ab", 32)), "another definition")
	assert.Equal(t, toolgate.Allow, verdict(pinned))
	var recorded []string
	for _, e := range entries(t, log) {
		if strings.Contains(string(e.Payload), `definition\":\"`+pinned) { // in a when: tag, JSON in a string
			recorded = append(recorded, e.Kind)
		}
	}
	assert.NotEmpty(t, recorded, "the input with its definition is on the log")
	var in toolgate.ConditionInput
	require.NoError(t, in.UnmarshalJSON([]byte(`{"arguments":{},"definition":"`+pinned+`","labels":[],"principal":{"attributes":{},"groups":[],"issuer":"","scopes":[],"subject":""},"remaining":"5","spent":"0","tool":"t"}`)))
	assert.Equal(t, pinned, in.Definition)
	b, err := in.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `,"definition":"`+pinned+`","labels"`)
}

// TestCedarSeesThePeriodsBudget: under a budget that renews, spent and
// remaining are the period's, not the kernel session's (whose budget
// never binds then).
func TestCedarSeesThePeriodsBudget(t *testing.T) {
	p := toolgate.Policy{Budget: 5000, MinCost: 1000, BudgetPeriod: &toolgate.BudgetPeriod{Every: time.Hour},
		Conditions: []toolgate.ConditionLanguage{cedar.Language{}}, Tools: []toolgate.Rule{
			{Name: "cheap", Match: "t", Cost: 1000, When: &toolgate.WhenCondition{Language: "cedar",
				Text: `permit (principal, action, resource) when { context.remaining >= 4000 };`}},
		}}
	g, _ := newGate(t, p)
	var verdicts []toolgate.Verdict
	for range 3 {
		d, err := g.Before(ctx, toolgate.Call{Tool: "t", Arguments: []byte(`{}`), Caller: "a"})
		require.NoError(t, err)
		verdicts = append(verdicts, d.Verdict)
	}
	assert.Equal(t, []toolgate.Verdict{toolgate.Allow, toolgate.Allow, toolgate.Refuse}, verdicts)
}

// TestCedarResourceIsTheCallsServer: a gateway's call names its upstream
// (Call.Server), which is the request's resource; a call on no named
// server is on the language's. The input recorded with the decision
// carries the server, so that a replay decides the same.
func TestCedarResourceIsTheCallsServer(t *testing.T) {
	p := toolgate.Policy{Version: 2, Budget: 5000, MinCost: 1000, Conditions: []toolgate.ConditionLanguage{cedar.Language{Server: "github"}}, Tools: []toolgate.Rule{
		{Name: "gh", Match: "*", Cost: 1000, When: &toolgate.WhenCondition{Language: "cedar",
			Text: `permit (principal, action, resource == Server::"github");`}},
	}}
	g, log := newGate(t, p)
	for _, tc := range []struct {
		server string
		want   toolgate.Verdict
	}{{"", toolgate.Allow}, {"github", toolgate.Allow}, {"gitlab", toolgate.Refuse}} {
		d, err := g.Before(ctx, toolgate.Call{Tool: "t", Arguments: []byte(`{}`), Caller: "a", Server: tc.server})
		require.NoError(t, err)
		assert.Equal(t, tc.want, d.Verdict, "server %q", tc.server)
	}
	var sawServer bool
	for _, e := range entries(t, log) {
		if strings.Contains(string(e.Payload), `\"server\":\"gitlab\"`) || strings.Contains(string(e.Payload), `"server":"gitlab"`) {
			sawServer = true
		}
	}
	assert.True(t, sawServer, "the recorded input names the server")
	mismatches, n, err := cedar.Replay(ctx, log, p, cedar.Language{Server: "github"})
	require.NoError(t, err)
	assert.Positive(t, n)
	assert.Empty(t, mismatches)
}
