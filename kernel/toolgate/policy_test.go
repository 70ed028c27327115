package toolgate_test

// The policy file's guarantees and the tests that check them:
//
//   - Every problem of a file is named at once, with its JSON Pointer and
//     its rule: TestPolicyCorpus (testdata/policy/invalid, each file with
//     the exact violations expected), TestPolicyNamesEveryProblem (rapid:
//     several defects planted in a valid policy are each reported, and
//     nothing else).
//   - The schema and the Go decoder agree: TestPolicyCorpus (each file's
//     schema verdict), TestSchemaAgreesWithDecoder (rapid, random damage to
//     valid policies), FuzzParsePolicy; every example in testdata follows
//     the schema: TestExamplePoliciesFollowTheSchema.
//   - A policy survives being written and read back, costs exactly:
//     TestPolicyRoundTrip (rapid), FuzzParsePolicy.
//   - What ParsePolicy accepts, New accepts: TestValidPolicyStartsAGate
//     (rapid), TestExamplePolicyDrivesAGate.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/sqlbudget"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/value"
	"github.com/verity-go/verity/trace"
)

// policySemantic are the rules the schema does not check (ParsePolicy's
// third group); policyBeforeSchema stop the reading before the schema
// could run.
var (
	policySemantic = map[string]bool{
		"min_cost": true, "budget": true, "glob": true, "duplicate_match": true, "shadowed": true, "regex": true,
		"duplicate_name": true, "bounds": true, "value": true, "approvers": true, "id_length": true,
		"duration": true, "rule_name": true, "duplicate_rule_name": true, "argument_schema": true, "pointer": true,
		"path": true, "label": true, "unknown_label": true, "flow_tier": true, "self_approval_unused": true, "cost_from": true, "budget_period": true, "tier_from_hints": true,
	}
	policyBeforeSchema = map[string]bool{"size": true, "syntax": true, "duplicate_key": true, "number": true}
)

// policyTestSchema compiles policy.schema.json on its own, as another
// program would, so that the test does not trust the package's use of it.
var policyTestSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, fmt.Errorf("no loading %s", u) }
	if err := c.AddResource(toolgate.PolicySchemaID, bytes.NewReader(toolgate.PolicySchema())); err != nil {
		return nil, err
	}
	return c.Compile(toolgate.PolicySchemaID)
})

// schemaVerdict returns whether the schema accepts data, and false for
// run when data is not a JSON text the schema can be run on.
func schemaVerdict(t policyTB, data []byte) (valid, run bool) {
	tree, err := canon.Decode(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if err != nil {
		return false, false
	}
	s, err := policyTestSchema()
	require.NoError(t, err)
	return s.Validate(tree) == nil, true
}

// policyTB is what the helpers need of a *testing.T or *rapid.T.
type policyTB interface {
	require.TestingT
	Helper()
	Fatalf(format string, args ...any)
}

type pathRule struct{ Path, Rule string }

func (p pathRule) String() string { return fmt.Sprintf("%q %s", p.Path, p.Rule) }

// violationsOf returns the (path, rule) pairs of a policy error, checking
// that it is what ParsePolicy promises.
func violationsOf(t policyTB, err error) []pathRule {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)
	var ve *toolgate.ValidationError
	require.ErrorAs(t, err, &ve)
	require.NotEmpty(t, ve.Violations)
	out := make([]pathRule, 0, len(ve.Violations))
	for _, v := range ve.Violations {
		require.NotEmpty(t, v.Message, "%s %s", v.Path, v.Rule)
		out = append(out, pathRule{v.Path, v.Rule})
	}
	return out
}

// shapeBroken reports whether some violation is one the schema checks too.
func shapeBroken(vs []pathRule) bool {
	return slices.ContainsFunc(vs, func(v pathRule) bool { return !policySemantic[v.Rule] && !policyBeforeSchema[v.Rule] })
}

type policyWant struct {
	Schema     string      `json:"schema"` // valid, invalid, not_run
	Violations [][2]string `json:"violations"`
}

func TestPolicyCorpus(t *testing.T) {
	invalid, err := filepath.Glob("testdata/policy/invalid/*.json")
	require.NoError(t, err)
	var cases int
	for _, file := range invalid {
		if strings.HasSuffix(file, ".want.json") {
			continue
		}
		cases++
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			wantText, err := os.ReadFile(strings.TrimSuffix(file, ".json") + ".want.json")
			require.NoError(t, err)
			var want policyWant
			require.NoError(t, json.Unmarshal(wantText, &want))

			_, err = toolgate.ParsePolicy(data)
			got := violationsOf(t, err)
			var wantVs []pathRule
			for _, v := range want.Violations {
				wantVs = append(wantVs, pathRule{v[0], v[1]})
			}
			assert.ElementsMatch(t, wantVs, got, "%v", err)
			for _, v := range got {
				assert.False(t, strings.HasPrefix(v.Rule, "schema."), "the schema refused what the decoder let through: %v", err)
			}

			valid, run := schemaVerdict(t, data)
			switch want.Schema {
			case "not_run":
				for _, v := range wantVs {
					assert.True(t, policyBeforeSchema[v.Rule], "%s stops the reading", v)
				}
			case "valid":
				require.True(t, run)
				assert.True(t, valid, "the schema accepts %s", file)
				assert.False(t, shapeBroken(got), "only rules the schema cannot say")
			case "invalid":
				require.True(t, run)
				assert.False(t, valid, "the schema refuses %s", file)
				assert.True(t, shapeBroken(got), "a rule the schema says too")
			default:
				t.Fatalf("want.schema %q", want.Schema)
			}
		})
	}
	assert.GreaterOrEqual(t, cases, 30)
}

// examplePolicies are the files that must be accepted.
func examplePolicies(t testing.TB) []string {
	valid, err := filepath.Glob("testdata/policy/valid/*.json")
	require.NoError(t, err)
	return append(valid, "testdata/policy/example.json")
}

func TestExamplePoliciesFollowTheSchema(t *testing.T) {
	for _, file := range examplePolicies(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			valid, run := schemaVerdict(t, data)
			require.True(t, run)
			assert.True(t, valid, "schema")
			p, err := toolgate.LoadPolicy(file)
			require.NoError(t, err)
			cfg, err := p.Compile()
			require.NoError(t, err)
			_, err = toolgate.New(context.Background(), trace.NewMemoryLog(), cfg)
			require.NoError(t, err)
		})
	}
}

func TestPolicySchemaIsSelfContained(t *testing.T) {
	s := toolgate.PolicySchema()
	var doc map[string]any
	require.NoError(t, json.Unmarshal(s, &doc))
	assert.Equal(t, toolgate.PolicySchemaID, doc["$id"])
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
	_, err := policyTestSchema() // compiles against the draft's meta-schema, loading nothing
	require.NoError(t, err)
	s[0] = 'x'
	assert.Equal(t, byte('{'), toolgate.PolicySchema()[0], "PolicySchema returns a copy")
	onDisk, err := os.ReadFile("policy.schema.json")
	require.NoError(t, err)
	assert.Equal(t, onDisk, toolgate.PolicySchema())
}

func TestPolicyTooLarge(t *testing.T) {
	big := append([]byte(`{"version": 1, "budget": "1", "min_cost": "0.01", "$schema": "`),
		bytes.Repeat([]byte("x"), toolgate.MaxPolicySize)...)
	big = append(big, `"}`...)
	_, err := toolgate.ParsePolicy(big)
	assert.Equal(t, []pathRule{{"", "size"}}, violationsOf(t, err))

	file := filepath.Join(t.TempDir(), "big.json")
	require.NoError(t, os.WriteFile(file, big, 0o600))
	_, err = toolgate.LoadPolicy(file)
	assert.Equal(t, []pathRule{{"", "size"}}, violationsOf(t, err))
}

func TestLoadPolicyNamesTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gate.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"version": 1, "budget": "1", "min_cost": "0.0001"}`), 0o600))
	_, err := toolgate.LoadPolicy(file)
	assert.Equal(t, []pathRule{{"/min_cost", "cost"}}, violationsOf(t, err))
	assert.Contains(t, err.Error(), file)

	_, err = toolgate.LoadPolicy(filepath.Join(t.TempDir(), "missing.json"))
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.NotErrorIs(t, err, toolgate.ErrInvalidPolicy)
}

// TestSharedBudgetIDMatchesSQLBudget: a shared budget id the policy
// accepts is one kernel/sqlbudget accepts, up to its longest.
func TestSharedBudgetIDMatchesSQLBudget(t *testing.T) {
	policyWith := func(id string) []byte {
		b, err := json.Marshal(map[string]any{"version": 1, "budget": "1", "min_cost": "1",
			"shared_budget": map[string]any{"id": id, "limit": "5"}})
		require.NoError(t, err)
		return b
	}
	p, err := toolgate.ParsePolicy(policyWith(strings.Repeat("é", sqlbudget.MaxIDLen/2)))
	require.NoError(t, err)
	assert.Equal(t, &toolgate.SharedBudgetSpec{ID: strings.Repeat("é", sqlbudget.MaxIDLen/2), Limit: 5 * kernel.Unit}, p.Shared)
	_, err = toolgate.ParsePolicy(policyWith(strings.Repeat("x", sqlbudget.MaxIDLen+1)))
	assert.Equal(t, []pathRule{{"/shared_budget/id", "id"}}, violationsOf(t, err))
	_, err = toolgate.ParsePolicy(policyWith(strings.Repeat("é", sqlbudget.MaxIDLen/2) + "x"))
	assert.Equal(t, []pathRule{{"/shared_budget/id", "id_length"}}, violationsOf(t, err))
}

// TestPolicyValidate: a Policy built in Go is checked with the paths of
// its JSON form, including what JSON could not hold.
func TestPolicyValidate(t *testing.T) {
	p := toolgate.Policy{
		Version: 3, Budget: -1, MinCost: 10,
		Approvers: map[claims.RiskTier][]string{claims.TierModify: {"x"}},
		Tools: []toolgate.Rule{
			{Match: "a", Cost: 10, Tier: "root"},
			{Match: "", Cost: toolgate.MaxPolicyCost + 1},
		},
		DefaultRule: &toolgate.Rule{Match: "x", Cost: 10},
		Invariants: []toolgate.InvariantSpec{
			{Name: "w", Within: &toolgate.WithinSpec{Key: "k", Min: math.NaN(), Max: 1}},
			{Name: "o", Enforcement: 7, OneOf: &toolgate.OneOfSpec{Key: "k", Values: []value.Value{value.List(), value.Float(math.Inf(1))}}},
			{Name: "m", AtMost: &toolgate.AtMostSpec{Key: "k", N: -1}, AtMostEach: &toolgate.AtMostEachSpec{N: math.MaxInt64}},
		},
		ResultTextLimit: -2,
		MaxWaiting:      -2,
		Shared:          &toolgate.SharedBudgetSpec{ID: "a\x00b", Limit: 10},
	}
	_, err := p.Compile()
	assert.ElementsMatch(t, []pathRule{
		{"/approvers/MODIFY", "enum"},
		{"/budget", "cost"},
		{"/default_rule", "default_rule_unused"},
		{"/default_rule/match", "unknown_field"},
		{"/invariants/0/within/min", "type"},
		{"/invariants/1/enforcement", "enum"},
		{"/invariants/1/one_of/values/0", "type"},
		{"/invariants/1/one_of/values/1", "type"},
		{"/invariants/2", "invariant_form"},
		{"/invariants/2/at_most/n", "range"},
		{"/invariants/2/at_most_each/n", "range"},
		{"/result_text_limit", "range"},
		{"/max_waiting", "range"},
		{"/shared_budget/id", "id"},
		{"/tools/0/tier", "enum"},
		{"/tools/1/cost", "cost"},
		{"/tools/1/match", "required"},
		{"/version", "version"},
	}, violationsOf(t, err), "%v", err)
	_, err = p.Compile()
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)

	_, err = p.MarshalJSON()
	require.Error(t, err, "NaN and infinities have no JSON form")
	p.Invariants = p.Invariants[1:2]
	p.Invariants[0].OneOf.Values = p.Invariants[0].OneOf.Values[:1]
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	_, err = toolgate.ParsePolicy(b)
	got := violationsOf(t, err)
	assert.Contains(t, got, pathRule{"/invariants/0/one_of/values/0", "type"})
	assert.Contains(t, got, pathRule{"/tools/0/tier", "enum"})
}

func TestInvariantSpecNeedsOneForm(t *testing.T) {
	_, err := toolgate.InvariantSpec{Name: "none"}.Invariant()
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)
	_, err = toolgate.InvariantSpec{Name: "bad", Matches: &toolgate.MatchesSpec{Key: "k", Pattern: "("}}.Invariant()
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)

	inv, err := toolgate.InvariantSpec{Name: "deletes", Description: "few deletes", Suggestion: "ask", Enforcement: kernel.EnforcementMonitoring,
		AtMost: &toolgate.AtMostSpec{Key: "calls/rm", N: 1}}.Invariant()
	require.NoError(t, err)
	assert.Equal(t, "few deletes", inv.Description)
	assert.Equal(t, "ask", inv.Suggestion)
	assert.Equal(t, kernel.EnforcementMonitoring, inv.Enforcement)
	s, err := kernel.NewState(nil)
	require.NoError(t, err)
	assert.True(t, inv.Check(s))
	for _, n := range []int64{1, 2} {
		s2, err := s.With("calls/rm", value.Int(n))
		require.NoError(t, err)
		assert.Equal(t, n <= 1, inv.Check(s2))
	}
}

func TestPolicySkipsByteOrderMark(t *testing.T) {
	p, err := toolgate.ParsePolicy([]byte("\xef\xbb\xbf" + `{"version": 1, "budget": "1", "min_cost": "1"}`))
	require.NoError(t, err)
	assert.Equal(t, kernel.Unit, p.Budget)
	_, err = toolgate.ParsePolicy([]byte("\xef\xbb\xbf\xef\xbb\xbf" + `{"version": 1, "budget": "1", "min_cost": "1"}`))
	assert.Equal(t, []pathRule{{"", "syntax"}}, violationsOf(t, err), "one mark, not two")
}

func TestPolicyUnmarshalJSON(t *testing.T) {
	var host struct {
		Name   string          `json:"name"`
		Policy toolgate.Policy `json:"policy"`
	}
	require.NoError(t, json.Unmarshal([]byte(`{"name": "fs", "policy": {"version": 1, "budget": 2, "min_cost": "0.5"}}`), &host))
	assert.Equal(t, toolgate.Policy{Version: 1, Budget: 2 * kernel.Unit, MinCost: kernel.Unit / 2}, host.Policy)
	require.NoError(t, json.Unmarshal([]byte(`{"name": "other", "policy": null}`), &host))
	assert.Equal(t, kernel.Unit/2, host.Policy.MinCost, "null changes nothing")
	err := json.Unmarshal([]byte(`{"policy": {"version": 1, "budget": 2, "min_cost": "0.5", "budget": 3}}`), &host)
	assert.Equal(t, []pathRule{{"", "duplicate_key"}}, violationsOf(t, err))
}

// TestExamplePolicyDrivesAGate runs testdata/policy/example.json: cheap
// reads, a search priced afterwards, unknown tools refused, each delete
// approved by a human, the fourth refused by the policy's invariant, and
// the log replays.
func TestExamplePolicyDrivesAGate(t *testing.T) {
	ctx := context.Background()
	p, err := toolgate.LoadPolicy("testdata/policy/example.json")
	require.NoError(t, err)
	cfg, err := p.Compile()
	require.NoError(t, err)
	log := trace.NewMemoryLog()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	g, err := toolgate.New(ctx, log, cfg, toolgate.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	const who = "session-1"
	spent := func() kernel.Cost {
		m, ok := g.Meter(who)
		require.True(t, ok)
		return m.Budget().Net()
	}

	d, err := g.Before(ctx, toolgate.Call{Tool: "read_text_file", Arguments: []byte(`{"path":"a.txt"}`), Caller: who})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	_, err = g.After(ctx, d.Call, toolgate.Result{Output: []byte("hello")})
	require.NoError(t, err)
	assert.Equal(t, kernel.Unit/100, spent())

	d, err = g.Before(ctx, toolgate.Call{Tool: "search_files", Arguments: []byte(`{"pattern":"*.go"}`), Caller: who})
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
	assert.True(t, d.Reserved)
	oc, err := g.After(ctx, d.Call, toolgate.Result{Output: []byte(`["a.go"]`), Actual: kernel.Unit / 4, Measured: true})
	require.NoError(t, err)
	assert.Equal(t, kernel.Unit/4, oc.Charged)

	d, err = g.Before(ctx, toolgate.Call{Tool: "format_disk", Caller: who})
	require.NoError(t, err)
	assert.Equal(t, toolgate.Refuse, d.Verdict)

	for i := range 4 {
		c := toolgate.Call{Tool: "delete_file", Arguments: fmt.Appendf(nil, `{"path":"f%d"}`, i), Caller: who}
		d, err := g.Before(ctx, c)
		require.NoError(t, err)
		if i == 3 { // the invariant would refuse it: nobody is asked
			require.Equal(t, toolgate.Refuse, d.Verdict)
			assert.Contains(t, d.Explanation, "at-most-3-deletes")
			assert.Contains(t, d.Explanation, "ask the user to delete the remaining files themselves")
			assert.Contains(t, d.Explanation, "nobody was asked to approve it")
			break
		}
		require.Equal(t, toolgate.AskApproval, d.Verdict, d.Explanation)
		assert.Equal(t, []string{"human"}, d.Approval.Awaiting)
		ok, err := g.Approve(ctx, d.Approval.ID, "human", "fine")
		require.NoError(t, err)
		require.True(t, ok)
		d, err = g.Before(ctx, d.Call)
		require.NoError(t, err)
		require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
		_, err = g.After(ctx, d.Call, toolgate.Result{})
		require.NoError(t, err)
	}
	assert.Equal(t, kernel.Unit/100+kernel.Unit/4+3*kernel.Unit, spent())

	d, err = g.Before(ctx, toolgate.Call{Tool: "set_permissions", Arguments: []byte(`{}`), Caller: who})
	require.NoError(t, err)
	require.Equal(t, toolgate.AskApproval, d.Verdict)
	assert.ElementsMatch(t, []string{"human", "admin"}, d.Approval.Awaiting)

	s, err := kernel.Replay(ctx, log, g.Kernel(), g.SessionID(who))
	require.NoError(t, err)
	assert.Equal(t, spent(), s.Meter().Budget().Net())
}

// drawVersion2 sets the members of version 2 on p's tools now and then,
// as the decoder reads them back (argument schemas as compact JSON with
// sorted keys, rate scopes explicit).
func drawVersion2(t *rapid.T, p *toolgate.Policy, text *rapid.Generator[string]) {
	labels := []string{"private_data", "untrusted_input", "x.y:z"}
	declare := rapid.Bool().Draw(t, "declare_labels")
	for i := range p.Tools {
		r := &p.Tools[i]
		l := fmt.Sprintf("tool%d.", i)
		if rapid.Bool().Draw(t, l+"named") {
			r.Name = fmt.Sprintf("rule-%d.%s", i, rapid.StringMatching(`[a-z0-9_]{0,4}`).Draw(t, l+"name"))
		}
		if rapid.IntRange(0, 4).Draw(t, l+"server") == 0 {
			r.Server = rapid.SampledFrom([]string{"github", "team-*", "files", "s?"}).Draw(t, l+"server_pattern")
		}
		if rapid.IntRange(0, 3).Draw(t, l+"principals") == 0 {
			r.Principals = &toolgate.PrincipalCondition{Groups: []string{"admin"}}
			if rapid.Bool().Draw(t, l+"scopes") {
				r.Principals = &toolgate.PrincipalCondition{Issuers: []string{"https://idp.example"}, Scopes: []string{"db:read", "db:write"}}
			}
		}
		if rapid.IntRange(0, 3).Draw(t, l+"arguments") == 0 {
			r.Arguments = json.RawMessage(rapid.SampledFrom([]string{`{"properties":{"path":{"type":"string"}},"type":"object"}`, `true`,
				`{"required":["q"]}`}).Draw(t, l+"schema"))
		}
		if rapid.IntRange(0, 3).Draw(t, l+"paths") == 0 {
			r.Paths = []toolgate.PathCondition{{Argument: rapid.SampledFrom([]string{"/path", "/a~1b/0", "/x~0"}).Draw(t, l+"pointer"),
				Under: []string{"/srv/data", "/tmp"}[:rapid.IntRange(1, 2).Draw(t, l+"roots")], CaseInsensitive: rapid.Bool().Draw(t, l+"fold")}}
		}
		if rapid.IntRange(0, 4).Draw(t, l+"refuse") == 0 {
			r.Effect, r.Reason = toolgate.EffectRefuse, text.Draw(t, l+"reason")
			if rapid.Bool().Draw(t, l+"no_cost") {
				r.Cost = 0
			}
		}
		if rapid.IntRange(0, 3).Draw(t, l+"rate") == 0 {
			r.Rate = &toolgate.Rate{Calls: rapid.IntRange(1, 1000).Draw(t, l+"calls"),
				Per:   rapid.SampledFrom([]time.Duration{time.Second, time.Minute, 90 * time.Second, time.Hour, 1500 * time.Millisecond}).Draw(t, l+"per"),
				Scope: rapid.SampledFrom([]toolgate.RateScope{toolgate.RateScopeTool, toolgate.RateScopeRule}).Draw(t, l+"scope")}
		}
		if rapid.Bool().Draw(t, l+"labels") {
			r.Labels = []string{rapid.SampledFrom(labels).Draw(t, l+"label")}
		}
		if rapid.IntRange(0, 3).Draw(t, l+"flow") == 0 {
			f := toolgate.FlowRule{After: []string{rapid.SampledFrom(labels).Draw(t, l+"after")}, Reason: text.Draw(t, l+"flow_reason")}
			if f.Ask = rapid.Bool().Draw(t, l+"ask"); f.Ask {
				f.Tier = rapid.SampledFrom([]claims.RiskTier{"", claims.TierDelete, claims.TierPrivilege}).Draw(t, l+"flow_tier")
			}
			r.Flow = []toolgate.FlowRule{f}
			declare = true // a flow's label is then known
		}
	}
	if declare {
		p.Labels = labels
	}
}

// policyGen draws valid policies: every field set now and then, tools
// that never shadow each other, approvers for every tier a rule needs.
func policyGen() *rapid.Generator[toolgate.Policy] {
	return rapid.Custom(func(t *rapid.T) toolgate.Policy {
		minCost := kernel.Cost(rapid.Int64Range(1, 2000).Draw(t, "min_cost"))
		cost := func(label string) kernel.Cost {
			return minCost + kernel.Cost(rapid.Int64Range(0, 1_000_000).Draw(t, label))
		}
		text := rapid.OneOf(rapid.Just(""), rapid.String(), rapid.StringMatching(`[a-z <>&"\\]{1,12}`))
		tier := rapid.SampledFrom([]claims.RiskTier{"", claims.TierReadOnly, claims.TierWriteLimited,
			claims.TierModify, claims.TierDelete, claims.TierPrivilege})
		rule := func(label, match string) toolgate.Rule {
			return toolgate.Rule{Match: match, Description: text.Draw(t, label+".description"), Cost: cost(label + ".cost"),
				Reserve: rapid.Bool().Draw(t, label+".reserve"), Tier: tier.Draw(t, label+".tier"),
				RefundOnError: rapid.Bool().Draw(t, label+".refund"), CheckResult: rapid.Bool().Draw(t, label+".check")}
		}
		p := toolgate.Policy{
			Version:         rapid.SampledFrom([]int{1, toolgate.PolicyVersion}).Draw(t, "version"),
			Schema:          rapid.SampledFrom([]string{"", toolgate.PolicySchemaID, "../../policy.schema.json"}).Draw(t, "schema"),
			MinCost:         minCost,
			Budget:          cost("budget"),
			AllowUnknown:    rapid.Bool().Draw(t, "allow_unknown"),
			ResultTextLimit: rapid.IntRange(-1, toolgate.MaxResultTextLimit).Draw(t, "result_text_limit"),
			MaxWaiting:      rapid.IntRange(-1, toolgate.MaxPolicyWaiting).Draw(t, "max_waiting"),
			CheckResults:    rapid.Bool().Draw(t, "check_results"),
		}
		if p.AllowUnknown {
			r := rule("default", "")
			p.DefaultRule = &r
		}
		// Distinct prefixes: no pattern matches another rule's name.
		for i := range rapid.IntRange(0, 6).Draw(t, "tools") {
			shape := rapid.SampledFrom([]string{"t%d", "t%d_*", "t%d_?x", "t%d_[a-c]*", "ns/t%d", "t%d-" + rapid.StringMatching(`[a-z0-9_]{0,8}`).Draw(t, "suffix")}).Draw(t, "shape")
			p.Tools = append(p.Tools, rule(fmt.Sprintf("tool%d", i), fmt.Sprintf(shape, i)))
		}
		if p.Version == 2 {
			drawVersion2(t, &p, text)
		}
		if rapid.Bool().Draw(t, "approvers") {
			p.Approvers = map[claims.RiskTier][]string{}
			needs := []claims.RiskTier{}
			for _, r := range append(slices.Clone(p.Tools), ptrRule(p.DefaultRule)...) {
				if r.Tier == claims.TierDelete || r.Tier == claims.TierPrivilege {
					needs = append(needs, r.Tier)
				}
				for _, f := range r.Flow {
					if f.Ask && f.Tier == "" {
						needs = append(needs, claims.TierPrivilege)
					} else if f.Ask {
						needs = append(needs, f.Tier)
					}
				}
			}
			for _, tr := range []claims.RiskTier{claims.TierDelete, claims.TierPrivilege} {
				if slices.Contains(needs, tr) || rapid.Bool().Draw(t, "extra_tier") {
					names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z]{1,6}`), 1, 3, func(s string) string { return s }).Draw(t, "names")
					if rapid.IntRange(0, 3).Draw(t, "k_of_n") == 0 { // k distinct members of a group
						names = slices.Repeat([]string{toolgate.GroupPrefix + names[0]}, rapid.IntRange(1, 16).Draw(t, "k"))
					}
					p.Approvers[tr] = names
				}
			}
		}
		for i := range rapid.IntRange(0, 5).Draw(t, "invariants") {
			s := toolgate.InvariantSpec{
				Name:        fmt.Sprintf("inv-%d-%s", i, rapid.StringMatching(`[a-z]{0,4}`).Draw(t, "name")),
				Description: text.Draw(t, "inv.description"),
				Suggestion:  text.Draw(t, "inv.suggestion"),
				Enforcement: rapid.SampledFrom([]kernel.Enforcement{kernel.EnforcementBlocking, kernel.EnforcementMonitoring}).Draw(t, "enforcement"),
			}
			key := rapid.SampledFrom([]string{"calls", "calls/t0", "calls/t1_x", "mode"}).Draw(t, "key")
			n := rapid.Int64Range(0, 1<<53-1).Draw(t, "n")
			switch rapid.IntRange(0, 4).Draw(t, "form") {
			case 0:
				s.AtMost = &toolgate.AtMostSpec{Key: key, N: n}
			case 1:
				s.AtMostEach = &toolgate.AtMostEachSpec{Prefix: rapid.SampledFrom([]string{"", "calls/", "x"}).Draw(t, "prefix"), N: n}
			case 2:
				a, b := policyFloat().Draw(t, "min"), policyFloat().Draw(t, "max")
				if a > b {
					a, b = b, a
				}
				s.Within = &toolgate.WithinSpec{Key: key, Min: a, Max: b}
			case 3:
				s.OneOf = &toolgate.OneOfSpec{Key: key, Values: rapid.SliceOfN(policyScalar(), 1, 4).Draw(t, "values")}
			case 4:
				pattern := rapid.OneOf(rapid.SampledFrom([]string{"", "^[a-z]+$", `\d{3}`, "(?i)safe|review"}),
					rapid.Map(rapid.String(), regexp.QuoteMeta)).Draw(t, "pattern")
				s.Matches = &toolgate.MatchesSpec{Key: key, Pattern: pattern}
			}
			p.Invariants = append(p.Invariants, s)
		}
		if rapid.Bool().Draw(t, "shared") {
			p.Shared = &toolgate.SharedBudgetSpec{ID: rapid.StringMatching(`[a-zA-Z0-9_é-]{1,40}`).Draw(t, "id"), Limit: cost("limit")}
			if rapid.Bool().Draw(t, "shared_period") {
				p.Shared.Period = calendarPeriodGen().Draw(t, "shared_period")
			}
		}
		switch rapid.IntRange(0, 2).Draw(t, "budget_period") {
		case 1:
			p.BudgetPeriod = &toolgate.BudgetPeriod{Every: time.Duration(rapid.Int64Range(1, 366*24*3600).Draw(t, "every")) * time.Second}
		case 2:
			p.BudgetPeriod = calendarPeriodGen().Draw(t, "calendar")
		}
		return p
	})
}

func calendarPeriodGen() *rapid.Generator[*toolgate.BudgetPeriod] {
	return rapid.Custom(func(t *rapid.T) *toolgate.BudgetPeriod {
		return &toolgate.BudgetPeriod{Calendar: rapid.SampledFrom([]string{"day", "week", "month"}).Draw(t, "calendar"),
			TimeZone: rapid.SampledFrom([]string{"", "UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata"}).Draw(t, "time_zone")}
	})
}

func ptrRule(r *toolgate.Rule) []toolgate.Rule {
	if r == nil {
		return nil
	}
	return []toolgate.Rule{*r}
}

func policyFloat() *rapid.Generator[float64] {
	return rapid.OneOf(rapid.Float64(), rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e300, 5e-324}))
}

func policyScalar() *rapid.Generator[value.Value] {
	return rapid.OneOf(
		rapid.Just(value.Null()),
		rapid.Map(rapid.Bool(), value.Bool),
		rapid.Map(rapid.String(), value.String),
		rapid.Map(rapid.Int64Range(-(1<<53-1), 1<<53-1), value.Int),
		rapid.Map(policyFloat(), value.Float),
	)
}

// samePolicy checks that q is p: the same fields, and the same bytes
// written (which tells -0 from 0).
func samePolicy(t policyTB, p, q toolgate.Policy) {
	t.Helper()
	if !reflect.DeepEqual(toolgate.WithoutCompiledSchemas(p), toolgate.WithoutCompiledSchemas(q)) {
		t.Fatalf("read back another policy:\n%#v\n%#v", p, q)
	}
	b1, err := p.MarshalJSON()
	require.NoError(t, err)
	b2, err := q.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(b1), string(b2))
}

// TestPolicyRoundTrip: any valid Policy written with MarshalJSON follows
// the schema and reads back with ParsePolicy to an equal Policy, and its
// Config carries the written costs exactly.
func TestPolicyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := policyGen().Draw(t, "policy")
		_, err := p.Compile()
		require.NoError(t, err)
		b, err := p.MarshalJSON()
		require.NoError(t, err)
		valid, run := schemaVerdict(t, b)
		require.True(t, run && valid, "%s", b)
		q, err := toolgate.ParsePolicy(b)
		require.NoError(t, err, "%s", b)
		samePolicy(t, p, q)

		cfg, err := q.Compile()
		require.NoError(t, err)
		require.Equal(t, p.Budget, cfg.Policy().Budget)
		require.Equal(t, p.MinCost, cfg.Policy().MinCost)
		require.Len(t, cfg.Policy().Tools, len(p.Tools))
		for i, r := range p.Tools {
			require.Equal(t, r.Cost, cfg.Policy().Tools[i].Cost)
			require.Equal(t, r.Match, cfg.Policy().Tools[i].Match)
			require.True(t, cfg.Policy().Tools[i].Tier.Valid())
		}
		if p.DefaultRule != nil {
			require.Equal(t, p.DefaultRule.Cost, cfg.Policy().DefaultRule.Cost)
		}
		require.Len(t, cfg.Policy().Invariants, len(p.Invariants))
		for i, inv := range cfg.Policy().Invariants {
			require.Equal(t, p.Invariants[i].Name, inv.Name)
			require.Equal(t, p.Invariants[i].Enforcement, inv.Enforcement)
		}
	})
}

// TestValidPolicyStartsAGate: whatever Policy ParsePolicy accepts gives a
// Config that New accepts, and a call of each rule's tool is decided with
// the rule's cost.
func TestValidPolicyStartsAGate(t *testing.T) {
	ctx := context.Background()
	allowed := 0
	defer func() { assert.Positive(t, allowed, "some calls ran") }()
	rapid.Check(t, func(t *rapid.T) {
		p := policyGen().Draw(t, "policy")
		cfg, err := p.Compile()
		require.NoError(t, err)
		g, err := toolgate.New(ctx, trace.NewMemoryLog(), cfg)
		require.NoError(t, err)
		for i, r := range p.Tools {
			if strings.ContainsAny(r.Match, `*?[\`) || r.Tier == claims.TierDelete || r.Tier == claims.TierPrivilege ||
				r.Principals != nil || r.Arguments != nil || r.Paths != nil || r.Effect == toolgate.EffectRefuse {
				continue // a call with no arguments and no principal meets another rule
			}
			caller := fmt.Sprint(i)
			// A server the rule's pattern ("github", "team-*", "s?", …) matches.
			server := strings.NewReplacer("*", "x", "?", "1").Replace(r.Server)
			d, err := g.Before(ctx, toolgate.Call{Tool: r.Match, Caller: caller, Server: server})
			require.NoError(t, err)
			if r.Cost > p.Budget {
				require.Equal(t, toolgate.Refuse, d.Verdict)
				continue
			}
			if d.Verdict == toolgate.Refuse {
				// Only a policy invariant may refuse a first call.
				require.NotEmpty(t, p.Invariants, d.Explanation)
				continue
			}
			require.Equal(t, toolgate.Allow, d.Verdict, d.Explanation)
			allowed++
			m, _ := g.Meter(caller)
			require.Equal(t, r.Cost, m.Budget().Net())
		}
	})
}

// mutation plants one defect in a decoded policy file and says where and
// what ParsePolicy must report.
type mutation struct {
	name  string
	apply func(t *rapid.T, root map[string]any) (pathRule, bool)
}

func elem(root map[string]any, list string, i int) map[string]any {
	a, _ := root[list].([]any)
	if i >= len(a) {
		return nil
	}
	m, _ := a[i].(map[string]any)
	return m
}

// policyMutations: each targets its own member, so that the defects do
// not hide one another.
func policyMutations(minCost kernel.Cost) []mutation {
	ms := []mutation{
		{"budget-type", func(_ *rapid.T, r map[string]any) (pathRule, bool) {
			r["budget"] = true
			return pathRule{"/budget", "type"}, true
		}},
		{"root-unknown", func(_ *rapid.T, r map[string]any) (pathRule, bool) {
			r["budgets"] = "1"
			return pathRule{"/budgets", "unknown_field"}, true
		}},
		{"version", func(_ *rapid.T, r map[string]any) (pathRule, bool) {
			r["version"] = json.Number("3")
			return pathRule{"/version", "version"}, true
		}},
		{"result-text-limit", func(_ *rapid.T, r map[string]any) (pathRule, bool) {
			r["result_text_limit"] = json.Number("-5")
			return pathRule{"/result_text_limit", "range"}, true
		}},
	}
	toolMutation := func(name string, f func(m map[string]any, at string) pathRule) mutation {
		return mutation{name, func(t *rapid.T, r map[string]any) (pathRule, bool) {
			a, _ := r["tools"].([]any)
			if len(a) == 0 {
				return pathRule{}, false
			}
			i := rapid.IntRange(0, len(a)-1).Draw(t, name+".tool")
			m := elem(r, "tools", i)
			if m["mutated"] != nil {
				return pathRule{}, false
			}
			m["mutated"] = true // removed before encoding
			return f(m, fmt.Sprintf("/tools/%d", i)), true
		}}
	}
	invMutation := func(name string, f func(m map[string]any, at string) pathRule) mutation {
		return mutation{name, func(t *rapid.T, r map[string]any) (pathRule, bool) {
			a, _ := r["invariants"].([]any)
			if len(a) == 0 {
				return pathRule{}, false
			}
			i := rapid.IntRange(0, len(a)-1).Draw(t, name+".invariant")
			m := elem(r, "invariants", i)
			if m["mutated"] != nil {
				return pathRule{}, false
			}
			m["mutated"] = true
			return f(m, fmt.Sprintf("/invariants/%d", i)), true
		}}
	}
	ms = append(ms,
		toolMutation("inexact-cost", func(m map[string]any, at string) pathRule {
			m["cost"] = "0.0005"
			return pathRule{at + "/cost", "cost"}
		}),
		toolMutation("tier", func(m map[string]any, at string) pathRule {
			m["tier"] = "root"
			return pathRule{at + "/tier", "enum"}
		}),
		toolMutation("tool-unknown", func(m map[string]any, at string) pathRule {
			m["costs"] = "1"
			return pathRule{at + "/costs", "unknown_field"}
		}),
		toolMutation("glob", func(m map[string]any, at string) pathRule {
			m["match"] = "[" + at
			return pathRule{at + "/match", "glob"}
		}),
		toolMutation("missing-cost", func(m map[string]any, at string) pathRule {
			delete(m, "cost")
			delete(m, "effect") // a refusing rule needs no cost
			return pathRule{at + "/cost", "required"}
		}),
		invMutation("empty-name", func(m map[string]any, at string) pathRule {
			m["name"] = ""
			return pathRule{at + "/name", "required"}
		}),
		invMutation("two-forms", func(m map[string]any, at string) pathRule {
			if m["at_most"] == nil {
				m["at_most"] = map[string]any{"key": "k", "n": json.Number("1")}
			} else {
				m["matches"] = map[string]any{"key": "k", "pattern": "x"}
			}
			return pathRule{at, "invariant_form"}
		}),
		invMutation("enforcement", func(m map[string]any, at string) pathRule {
			m["enforcement"] = "loud"
			return pathRule{at + "/enforcement", "enum"}
		}),
	)
	if minCost > 1 {
		ms = append(ms, toolMutation("below-min-cost", func(m map[string]any, at string) pathRule {
			m["cost"] = (minCost - 1).String()
			return pathRule{at + "/cost", "min_cost"}
		}))
	}
	return ms
}

// stripMutated removes the marks mutations leave.
func stripMutated(root map[string]any) {
	for _, list := range []string{"tools", "invariants"} {
		a, _ := root[list].([]any)
		for i := range a {
			if m := elem(root, list, i); m != nil {
				delete(m, "mutated")
			}
		}
	}
}

// TestPolicyNamesEveryProblem: however many defects are planted in a
// valid policy file, each is reported at its path with its rule, and
// nothing else is.
func TestPolicyNamesEveryProblem(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := policyGen().Draw(t, "policy")
		b, err := p.MarshalJSON()
		require.NoError(t, err)
		tree, err := canon.Decode(b)
		require.NoError(t, err)
		root := tree.(map[string]any)

		ms := policyMutations(p.MinCost)
		var want []pathRule
		used := map[string]bool{}
		for range rapid.IntRange(1, 6).Draw(t, "defects") {
			m := rapid.SampledFrom(ms).Draw(t, "mutation")
			if used[m.name] && !strings.Contains("inexact-cost tier tool-unknown glob missing-cost below-min-cost empty-name two-forms enforcement", m.name) {
				continue
			}
			if v, ok := m.apply(t, root); ok {
				used[m.name] = true
				want = append(want, v)
			}
		}
		if len(want) == 0 {
			t.Skip("no defect could be planted")
		}
		stripMutated(root)
		data, err := json.Marshal(root)
		require.NoError(t, err)

		_, err = toolgate.ParsePolicy(data)
		require.ElementsMatch(t, want, violationsOf(t, err), "%s\n%v", data, err)
	})
}

// damage replaces, removes or adds a member somewhere in v.
func damage(t *rapid.T, v any, depth int) any {
	junk := rapid.SampledFrom([]any{nil, true, json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("1e2"),
		json.Number("0.0005"), "", "x", "1", "0.0005", "READ_ONLY", "DELETE", "allow", "monitoring", "[", "calls/",
		[]any{}, []any{"a"}, map[string]any{}, map[string]any{"key": "k", "n": json.Number("1")}})
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		})
		switch op := rapid.IntRange(0, 3).Draw(t, "op"); {
		case op == 0 || len(keys) == 0:
			member := rapid.SampledFrom([]string{"match", "cost", "tier", "name", "at_most", "within", "one_of", "default_rule",
				"unknown_tools", "approvers", "values", "n", "key", "min", "max", "shared_budget", "id", "limit", "zzz"}).Draw(t, "member")
			x[member] = junk.Draw(t, "junk")
		case op == 1:
			delete(x, rapid.SampledFrom(keys).Draw(t, "delete"))
		default:
			k := rapid.SampledFrom(keys).Draw(t, "key")
			if depth < 4 && rapid.Bool().Draw(t, "deeper") {
				x[k] = damage(t, x[k], depth+1)
			} else {
				x[k] = junk.Draw(t, "junk")
			}
		}
		return x
	case []any:
		if len(x) == 0 || rapid.IntRange(0, 3).Draw(t, "append") == 0 {
			return append(x, junk.Draw(t, "junk"))
		}
		i := rapid.IntRange(0, len(x)-1).Draw(t, "index")
		if depth < 4 && rapid.Bool().Draw(t, "deeper") {
			x[i] = damage(t, x[i], depth+1)
		} else {
			x[i] = junk.Draw(t, "junk")
		}
		return x
	}
	return junk.Draw(t, "junk")
}

// TestSchemaAgreesWithDecoder: whatever damage is done to a valid policy,
// the schema refuses the file exactly when ParsePolicy reports a rule the
// schema says too, and ParsePolicy never needs the schema's own words.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := policyGen().Draw(t, "policy")
		b, err := p.MarshalJSON()
		require.NoError(t, err)
		tree, err := canon.Decode(b)
		require.NoError(t, err)
		for range rapid.IntRange(1, 4).Draw(t, "damages") {
			tree = damage(t, tree, 0)
		}
		data, err := json.Marshal(tree)
		require.NoError(t, err)
		checkAgreement(t, data)
	})
}

// checkAgreement checks ParsePolicy against the schema on data.
func checkAgreement(t policyTB, data []byte) {
	_, err := toolgate.ParsePolicy(data)
	var got []pathRule
	if err != nil {
		got = violationsOf(t, err)
	}
	for _, v := range got {
		require.False(t, strings.HasPrefix(v.Rule, "schema."), "the schema refused what the decoder let through: %s\n%v", data, err)
		if policyBeforeSchema[v.Rule] {
			return
		}
	}
	valid, run := schemaVerdict(t, data)
	require.True(t, run)
	require.Equal(t, !valid, shapeBroken(got), "schema valid %v; ParsePolicy: %v\n%s", valid, err, data)
}

func BenchmarkParsePolicy(b *testing.B) {
	data, err := os.ReadFile("testdata/policy/example.json")
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toolgate.ParsePolicy(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCompilePolicy is Compile of the example policy: every check,
// and the compiled form New takes.
func BenchmarkCompilePolicy(b *testing.B) {
	p, err := toolgate.LoadPolicy("testdata/policy/example.json")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Compile(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGoOnlyMembersAreNotWritten: a Policy built in Go may hold what no
// file can (a rule's CostFunc, GoInvariants); MarshalJSON refuses it
// rather than write a file that decides otherwise, and a Version of 0
// is written as the newest.
func TestGoOnlyMembersAreNotWritten(t *testing.T) {
	p := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{{Match: "read_*", Cost: kernel.Unit}}}
	_, err := p.Compile()
	require.NoError(t, err, "version 0 is the newest in Go")
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	back, err := toolgate.ParsePolicy(b)
	require.NoError(t, err, "%s", b)
	assert.Equal(t, toolgate.PolicyVersion, back.Version)

	priced := p
	priced.Tools = []toolgate.Rule{{Match: "read_*", CostFunc: func(toolgate.Call) (kernel.Cost, error) { return kernel.Unit, nil }}}
	_, err = priced.Compile()
	require.NoError(t, err, "a CostFunc prices the call: no cost to check")
	_, err = priced.MarshalJSON()
	assert.ErrorContains(t, err, "/tools/0 has a CostFunc, which is Go only")

	counted := p
	counted.GoInvariants = []kernel.Invariant{kernel.AtMost("at-most-2", "calls", 2)}
	_, err = counted.MarshalJSON()
	assert.ErrorContains(t, err, "GoInvariants (at-most-2…) are Go only")
	_, err = json.Marshal(counted)
	assert.Error(t, err, "encoding/json refuses it too")
}
