package toolgate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
)

func TestCostPointerMeasure(t *testing.T) {
	p, err := toolgate.ParseCostPointer("/structuredContent/scan~1ned/0")
	require.NoError(t, err)
	require.Equal(t, "/structuredContent/scan~1ned/0", p.String())
	c, err := p.Measure([]byte(`{"content":[],"structuredContent":{"scan/ned":[0.25, 9]}}`))
	require.NoError(t, err)
	require.Equal(t, kernel.Unit/4, c)

	meta, err := toolgate.ParseCostPointer("/_meta/cost")
	require.NoError(t, err)
	c, err = meta.Measure([]byte(`{"_meta":{"cost":"1.5"},"content":[]}`))
	require.NoError(t, err)
	require.Equal(t, kernel.Unit*3/2, c)

	whole, err := toolgate.ParseCostPointer("/structuredContent")
	require.NoError(t, err)
	c, err = whole.Measure([]byte(`{"structuredContent":2}`))
	require.NoError(t, err)
	require.Equal(t, 2*kernel.Unit, c)

	for _, result := range []string{
		`{"_meta":{}}`, `{"_meta":{"cost":-1}}`, `{"_meta":{"cost":0.0001}}`, `{"_meta":{"cost":true}}`,
		`{"_meta":{"cost":"lots"}}`, `{"_meta":{"cost":1e400}}`, `not json`, `{"_meta":{"cost":1}} {}`, ``,
	} {
		_, err := meta.Measure([]byte(result))
		require.Error(t, err, result)
	}

	for _, bad := range []string{"", "cost", "/content/0", "/_meta", "/structuredContent~2", "/" + strings.Repeat("a", 1100), "/isError"} {
		_, err := toolgate.ParseCostPointer(bad)
		require.Error(t, err, bad)
	}
}

// FuzzParseCostPointer: parsing never panics; a pointer accepted is
// under structuredContent or _meta and writes back as given (up to
// escapes), and measuring any result never panics and never returns a
// negative cost.
func FuzzParseCostPointer(f *testing.F) {
	f.Add("/structuredContent/scanned", []byte(`{"structuredContent":{"scanned":3}}`))
	f.Add("/_meta/cost", []byte(`{"_meta":{"cost":"0.5"}}`))
	f.Add("/structuredContent/a~1b/0", []byte(`{"structuredContent":{"a/b":[1]}}`))
	f.Add("/_meta/~", []byte(`{}`))
	f.Fuzz(func(t *testing.T, s string, result []byte) {
		p, err := toolgate.ParseCostPointer(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(s, "/structuredContent") && !strings.HasPrefix(s, "/_meta/") {
			t.Fatalf("accepted %q", s)
		}
		q, err := toolgate.ParseCostPointer(p.String())
		if err != nil || q.String() != p.String() {
			t.Fatalf("%q reads back as %q (%v)", p.String(), q.String(), err)
		}
		if c, err := p.Measure(result); err == nil && c < 0 {
			t.Fatalf("negative cost %s", c)
		}
	})
}

func TestPolicyTimeoutsReachTheGate(t *testing.T) {
	p, err := toolgate.LoadPolicy("testdata/policy/valid/timeouts.json")
	require.NoError(t, err)
	cfg, err := p.Compile()
	require.NoError(t, err)
	g, err := toolgate.New(ctx, newLog(t), cfg)
	require.NoError(t, err)
	for tool, want := range map[string]time.Duration{"search_files": 2 * time.Minute, "read_file": 30 * time.Second, "other": 5 * time.Second} {
		d, err := g.Before(ctx, toolgate.Call{Tool: tool, Caller: "c", Arguments: json.RawMessage(`{}`)})
		require.NoError(t, err)
		r, _ := g.Compiled().RuleOf(d.Rule)
		require.Equal(t, want, r.Timeout, tool)
	}
	r, ok := g.Compiled().RuleOf(toolgate.RuleRef{Found: true, Index: 0})
	require.True(t, ok)
	require.Equal(t, "/structuredContent/scanned", r.CostFrom)

	p.Tools[2].CostFrom = "/_meta/cost" // not reserved
	_, err = p.Compile()
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)
	p.Tools[2].CostFrom, p.Timeout = "", -time.Second
	_, err = p.Compile()
	require.ErrorIs(t, err, toolgate.ErrInvalidPolicy)
}

func TestMayCall(t *testing.T) {
	alice := toolgate.Principal{Subject: "alice"}
	cfg := toolgate.Policy{Budget: 10 * kernel.Unit, MinCost: kernel.Unit / 100, Tools: []toolgate.Rule{
		{Match: "drop_*", Effect: toolgate.EffectRefuse, Principals: &toolgate.PrincipalCondition{Subjects: []string{"bob"}}},
		{Match: "drop_*", Cost: kernel.Unit, Tier: "DELETE"},
		{Match: "write_*", Effect: toolgate.EffectRefuse, Arguments: json.RawMessage(`{"required":["force"]}`)},
		{Match: "write_*", Cost: kernel.Unit},
		{Match: "shell", Effect: toolgate.EffectRefuse}, // a rule after it for "shell" would never apply (duplicate_match)
		{Match: "admin", Cost: kernel.Unit, Principals: &toolgate.PrincipalCondition{Subjects: []string{"root"}}},
	}}
	g, err := toolgate.New(ctx, newLog(t), mustCompile(cfg))
	require.NoError(t, err)
	require.True(t, g.Compiled().MayCall("drop_table", alice))
	require.False(t, g.Compiled().MayCall("drop_table", toolgate.Principal{Subject: "bob"}))
	require.True(t, g.Compiled().MayCall("write_file", alice), "a conditional refusal leaves other calls")
	require.False(t, g.Compiled().MayCall("shell", alice))
	require.False(t, g.Compiled().MayCall("admin", alice))
	require.True(t, g.Compiled().MayCall("admin", toolgate.Principal{Subject: "root"}))
	require.False(t, g.Compiled().MayCall("unknown", alice))
	require.False(t, g.Compiled().Policy().AllowUnknown)
}
