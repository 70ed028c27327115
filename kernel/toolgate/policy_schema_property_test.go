package toolgate_test

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate"
)

// TestTypedPolicyReaderAgreesWithSchema: ParsePolicy does not run
// policy.schema.json; its typed reader says what the schema says. For
// generated policies, valid, with their numbers written in other forms
// (1.0, 1e0, a cost as a number), with tricky values planted where the
// schema bounds a member, with defects planted or with random damage, the
// schema accepts a file exactly when ParsePolicy reports no rule the
// schema says too; and every file ParsePolicy accepts, the schema accepts.
func TestTypedPolicyReaderAgreesWithSchema(t *testing.T) {
	var accepted, refused int
	defer func() {
		require.Positive(t, accepted, "no generated file was accepted")
		require.Positive(t, refused, "no generated file was refused by the schema")
	}()
	rapid.Check(t, func(t *rapid.T) {
		p := policyGen().Draw(t, "policy")
		b, err := p.MarshalJSON()
		require.NoError(t, err)
		tree, err := canon.Decode(b)
		require.NoError(t, err)
		root := tree.(map[string]any)
		switch rapid.IntRange(0, 3).Draw(t, "how") {
		case 0: // valid, numbers reworded
		case 1:
			for range rapid.IntRange(1, 3).Draw(t, "tricky") {
				plantTricky(t, root)
			}
		case 2:
			for range rapid.IntRange(1, 3).Draw(t, "defects") {
				m := rapid.SampledFrom(policyMutations(p.MinCost)).Draw(t, "mutation")
				m.apply(t, root)
			}
			stripMutated(root)
		default:
			for range rapid.IntRange(1, 4).Draw(t, "damages") {
				tree = damage(t, tree, 0)
			}
		}
		tree = reword(t, tree)
		data, err := json.Marshal(tree)
		require.NoError(t, err, "%#v", tree)

		valid, run := schemaVerdict(t, data)
		require.True(t, run, "%s", data)
		_, err = toolgate.ParsePolicy(data)
		if err == nil {
			require.True(t, valid, "ParsePolicy accepts what the schema refuses:\n%s", data)
			accepted++
			return
		}
		got := violationsOf(t, err)
		require.Equal(t, !valid, shapeBroken(got), "schema valid %v; ParsePolicy: %v\n%s", valid, err, data)
		if !valid {
			refused++
		}
	})
}

// reword writes some of the numbers of a decoded file in another form
// of the same value: 1 as 1.0, 1e0 or 10e-1, 0.5 as 5e-1; and some cost
// strings as numbers.
func reword(t *rapid.T, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			it := x[k]
			if s, ok := it.(string); ok && (k == "cost" || k == "budget" || k == "min_cost" || k == "limit") && jsonNumber.MatchString(s) &&
				rapid.IntRange(0, 3).Draw(t, "cost_as_number") == 0 {
				x[k] = json.Number(s)
				continue
			}
			x[k] = reword(t, it)
		}
	case []any:
		for i := range x {
			x[i] = reword(t, x[i])
		}
	case json.Number:
		s := string(x)
		switch rapid.IntRange(0, 5).Draw(t, "number_form") {
		case 0:
			if !strings.ContainsAny(s, ".eE") {
				return json.Number(s + ".0")
			}
		case 1:
			if !strings.ContainsAny(s, "eE") {
				return json.Number(s + "e0")
			}
		case 2:
			if !strings.ContainsAny(s, ".eE") && strings.TrimPrefix(s, "-")[0] != '0' {
				return json.Number(s + "0e-1")
			}
		}
	}
	return v
}

var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// plantTricky sets a member the schema bounds to a value at or beyond
// its bound, in one of the forms a reader could get wrong.
func plantTricky(t *rapid.T, root map[string]any) {
	num := func(s string) any { return json.Number(s) }
	type plant struct {
		member string
		values []any
	}
	costs := []any{num("0.001"), num("1e-3"), num("0.0005"), num("-0.0"), num("1000000000000000"),
		num("999999999999999.999"), num("999999999999999.9995"), "0.0010", "1.", "-0", "1e3", "01", "0.0005", num("1E2")}
	top := []plant{
		{"version", []any{num("1.0"), num("2e0"), num("1.5"), num("3"), "2", num("0.2e1"), nil}},
		{"budget", costs},
		{"min_cost", costs},
		{"result_text_limit", []any{num("-1.0"), num("16777216"), num("16777217"), num("1e3"), num("-2"), num("0.5"), "1"}},
		{"max_waiting", []any{num("-1"), num("1048576"), num("1048577"), num("1.0e2"), true}},
		{"unknown_tools", []any{"allow", "refuse", "Allow", num("1"), nil}},
		{"approval_timeout", []any{"5m", "1x", num("5"), ""}},
		{"self_approval", []any{true, "true", nil}},
		{"conversation_labels", []any{true, false, "yes", nil}},
		{"labels", []any{[]any{}, []any{""}, []any{"a", num("1")}, "a", []any{"a"}}},
		{"approvers", []any{map[string]any{}, map[string]any{"DELETE": []any{}}, map[string]any{"MODIFY": []any{"a"}},
			map[string]any{"PRIVILEGE": []any{"a", "a"}}, map[string]any{"DELETE": []any{""}}, []any{}}},
		{"budget_period", []any{map[string]any{"every": "24h"}, map[string]any{"calendar": "week", "time_zone": "Europe/Paris"},
			map[string]any{"calendar": "year"}, map[string]any{"every": num("60")}, map[string]any{}, map[string]any{"every": "1h", "calendar": "day"},
			map[string]any{"calendar": "day", "time_zone": "Mars/Olympus"}, map[string]any{"every": "0.5s"}, map[string]any{"every": "1h", "x": true}, nil}},
		{"shared_budget", []any{map[string]any{"id": "x", "limit": "1", "period": map[string]any{"every": "1h"}},
			map[string]any{"id": "x", "limit": "1", "period": map[string]any{"calendar": "month"}}, map[string]any{"id": "", "limit": "1"}, map[string]any{"id": "x"}, nil,
			map[string]any{"id": strings.Repeat("é", 200), "limit": num("1.5")}, map[string]any{"id": "a\u0000", "limit": "1"}}},
	}
	rule := []plant{
		{"cost", costs},
		{"tier", []any{"DELETE", "delete", num("3"), ""}},
		{"tier_from_hints", []any{true, false, "yes", num("1")}},
		{"match", []any{"", num("1"), "x*"}},
		{"effect", []any{"refuse", "deny", nil}},
		{"server", []any{"github", "team-*", "", num("1"), nil, []any{"a"}}},
		{"rate", []any{map[string]any{"calls": num("1.0"), "per": "1s"}, map[string]any{"calls": num("0"), "per": "1s"},
			map[string]any{"calls": num("2147483648"), "per": "1s"}, map[string]any{"calls": num("2147483647"), "per": "1s", "scope": "rule"},
			map[string]any{"calls": num("1e0"), "per": num("1")}}},
		{"principals", []any{map[string]any{}, map[string]any{"groups": []any{}}, map[string]any{"scopes": []any{"a"}}, map[string]any{"x": true}}},
		{"paths", []any{[]any{}, []any{map[string]any{"argument": "/p", "under": []any{"/tmp"}}}, []any{map[string]any{"argument": "", "under": []any{}}}}},
		{"flow", []any{[]any{}, []any{map[string]any{"after": []any{"a"}, "effect": "ask", "tier": "MODIFY"}}}},
		{"arguments", []any{true, map[string]any{"maximum": num("1e-3")}, "x", num("1")}},
		{"when", []any{map[string]any{"language": "cedar", "text": "permit (principal, action, resource);"}, map[string]any{"language": "", "text": "x"},
			map[string]any{"language": "cedar"}, map[string]any{"language": "cedar", "text": "", "file": "x"}, "cedar", nil}},
	}
	inv := []plant{
		{"at_most", []any{map[string]any{"key": "k", "n": num("1.0")}, map[string]any{"key": "k", "n": num("9007199254740991")},
			map[string]any{"key": "k", "n": num("9007199254740992")}, map[string]any{"key": "k", "n": num("-0")}, map[string]any{"key": "", "n": num("1")}}},
		{"within", []any{map[string]any{"key": "k", "min": num("1e308"), "max": num("-1e308")}, map[string]any{"key": "k", "min": num("0.5"), "max": "1"}}},
		{"one_of", []any{map[string]any{"key": "k", "values": []any{num("1.0"), nil, true, "a"}}, map[string]any{"key": "k", "values": []any{}},
			map[string]any{"key": "k", "values": []any{map[string]any{}}}}},
		{"enforcement", []any{"monitoring", "warn", num("0")}},
	}
	pick := func(m map[string]any, ps []plant) {
		pl := rapid.SampledFrom(ps).Draw(t, "member")
		m[pl.member] = rapid.SampledFrom(pl.values).Draw(t, pl.member)
	}
	switch rapid.IntRange(0, 2).Draw(t, "where") {
	case 0:
		pick(root, top)
	case 1:
		if a, _ := root["tools"].([]any); len(a) > 0 {
			if m, ok := a[rapid.IntRange(0, len(a)-1).Draw(t, "tool")].(map[string]any); ok {
				pick(m, rule)
			}
		}
	default:
		if a, _ := root["invariants"].([]any); len(a) > 0 {
			if m, ok := a[rapid.IntRange(0, len(a)-1).Draw(t, "invariant")].(map[string]any); ok {
				pick(m, inv)
			}
		}
	}
}
