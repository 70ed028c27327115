package cedar_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
)

// condition is one condition both languages can say, in each.
type condition struct {
	bounds     []int64 // a numeric condition's edges, for the calls to try
	cedar      string
	group      string         // native: principals.groups
	properties map[string]any // native: an argument schema's properties
	required   string         // the argument the condition reads
}

func genCondition(t *rapid.T) condition {
	switch rapid.IntRange(0, 3).Draw(t, "kind") {
	case 0:
		g := rapid.SampledFrom([]string{"eng", "ops", "qa"}).Draw(t, "group")
		return condition{cedar: fmt.Sprintf(`principal in Group::%q`, g), group: g}
	case 1:
		v := rapid.SampledFrom(repos).Draw(t, "equal")
		return condition{cedar: fmt.Sprintf(`context.arguments has repo && context.arguments.repo == %q`, v),
			properties: map[string]any{"repo": map[string]any{"const": v}}, required: "repo"}
	case 2:
		p := rapid.StringMatching(`[a-c/]{0,4}`).Draw(t, "prefix")
		return condition{cedar: fmt.Sprintf(`context.arguments has repo && context.arguments.repo like %q`, p+"*"),
			properties: map[string]any{"repo": map[string]any{"type": "string", "pattern": "^" + regexp.QuoteMeta(p)}}, required: "repo"}
	}
	lo := rapid.Int64Range(-1<<40, 1<<40).Draw(t, "lo")
	hi := lo + rapid.Int64Range(0, 1<<20).Draw(t, "width")
	return condition{bounds: []int64{lo - 1, lo, hi, hi + 1}, cedar: fmt.Sprintf(`context.arguments has n && context.arguments.n >= %d && context.arguments.n <= %d`, lo, hi),
		properties: map[string]any{"n": map[string]any{"type": "integer", "minimum": lo, "maximum": hi}}, required: "n"}
}

var repos = []string{"acme/api", "acme/web", "ab/c", "a", "", "evil/acme", "c/b/a"}

// policies returns the same policy twice: the conditions conjoined in a
// Cedar when, and natively (principals and an argument schema whose
// allOf holds each argument condition). A later rule refuses what the
// first does not admit.
func policies(conds []condition) (toolgate.Policy, toolgate.Policy) {
	var when []string
	var allOf []any
	native := toolgate.Rule{Name: "r", Match: "t", Cost: 1}
	for _, c := range conds {
		when = append(when, "("+c.cedar+")")
		if c.group != "" {
			native.Principals = &toolgate.PrincipalCondition{Groups: []string{c.group}}
			continue
		}
		allOf = append(allOf, map[string]any{"type": "object", "properties": c.properties, "required": []string{c.required}})
	}
	if len(allOf) > 0 {
		b, _ := json.Marshal(map[string]any{"allOf": allOf})
		native.Arguments = b
	}
	text := "@id(\"c\") permit (principal, action, resource) when { " + strings.Join(when, " && ") + " };"
	rest := toolgate.Rule{Name: "rest", Match: "t", Effect: toolgate.EffectRefuse}
	c := toolgate.Policy{Budget: 1 << 40, MinCost: 1, Conditions: []toolgate.ConditionLanguage{cedar.Language{}},
		Tools: []toolgate.Rule{{Name: "r", Match: "t", Cost: 1, When: &toolgate.WhenCondition{Language: "cedar", Text: text}}, rest}}
	n := toolgate.Policy{Budget: 1 << 40, MinCost: 1, Tools: []toolgate.Rule{native, rest}}
	return c, n
}

// TestCedarAndNativeConditionsAgree is the differential property: for
// generated principals, arguments and conditions both languages can say
// (group membership, equality, prefix, numeric bounds, and their
// conjunction), the Cedar condition and the native one decide every
// call alike.
func TestCedarAndNativeConditionsAgree(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		conds := rapid.SliceOfN(rapid.Custom(genCondition), 1, 3).Draw(t, "conditions")
		groups := 0
		for _, c := range conds {
			if c.group != "" {
				groups++
			}
		}
		if groups > 1 { // principals admits any of its groups: one group condition at most
			t.Skip("two group conditions")
		}
		edges := []int64{0}
		for _, c := range conds {
			edges = append(edges, c.bounds...)
		}
		cp, np := policies(conds)
		cc, err := cp.Compile()
		if err != nil {
			t.Fatalf("cedar: %v", err)
		}
		nc, err := np.Compile()
		if err != nil {
			t.Fatalf("native: %v", err)
		}
		for i := range 8 {
			groups := rapid.SliceOfDistinct(rapid.SampledFrom([]string{"eng", "ops", "qa"}), rapid.ID[string]).Draw(t, "groups"+strconv.Itoa(i))
			args := map[string]any{}
			if rapid.Bool().Draw(t, "hasRepo"+strconv.Itoa(i)) {
				args["repo"] = rapid.OneOf(rapid.SampledFrom(repos), rapid.StringMatching(`[a-c/]{0,5}`)).Draw(t, "repo"+strconv.Itoa(i))
			}
			if rapid.Bool().Draw(t, "hasN"+strconv.Itoa(i)) {
				args["n"] = rapid.OneOf(rapid.SampledFrom(edges), rapid.Int64Range(-1<<41, 1<<41)).Draw(t, "n"+strconv.Itoa(i))
			}
			b, _ := json.Marshal(args)
			call := toolgate.Call{Tool: "t", Arguments: b, Caller: "c", Principal: toolgate.Principal{Subject: "s", Groups: groups}}
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			got, want := cc.Decide(toolgate.Snapshot{}, call, at), nc.Decide(toolgate.Snapshot{}, call, at)
			if got.Verdict != want.Verdict || got.Rule != want.Rule {
				t.Fatalf("%s by %v: cedar %s at %s (%s), native %s at %s (%s)", b, groups, got.Verdict, got.Rule, got.Explanation, want.Verdict, want.Rule, want.Explanation)
			}
		}
	})
}
