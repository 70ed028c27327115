package toolgate_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// The decision core's guarantees, checked on Compiled.Decide alone:
//
//   - It is a function: the same compiled rules, snapshot, call and time
//     give the same Ruling, and the snapshot is left as it was
//     (TestDecideIsPure).
//   - The first rule whose match and principals admit the call decides;
//     a refusing rule refuses (TestFirstApplicableRuleDecides).
//   - A rate window never admits more than its limit in any window of its
//     length (TestRateWindowNeverExceeded).

var (
	coreTools  = []string{"read_file", "read_dir", "write_file", "sql", "post"}
	coreGroups = []string{"admin", "ops", "guest"}
)

func drawRule(t *rapid.T, label string) toolgate.Rule {
	r := toolgate.Rule{Match: rapid.SampledFrom(append(slices.Clone(coreTools), "read_*", "*", "?ql")).Draw(t, label+".match"), Cost: 1}
	if rapid.Bool().Draw(t, label+".principals") {
		r.Principals = &toolgate.PrincipalCondition{Groups: []string{rapid.SampledFrom(coreGroups).Draw(t, label+".group")}}
	}
	if rapid.IntRange(0, 3).Draw(t, label+".refuse") == 0 {
		r.Effect = toolgate.EffectRefuse
	}
	if rapid.Bool().Draw(t, label+".labels") {
		r.Labels = []string{rapid.SampledFrom([]string{"a", "b"}).Draw(t, label+".label")}
	}
	if rapid.Bool().Draw(t, label+".flow") {
		r.Flow = []toolgate.FlowRule{{After: []string{rapid.SampledFrom([]string{"a", "b"}).Draw(t, label+".after")}}}
	}
	if rapid.Bool().Draw(t, label+".rate") {
		r.Rate = &toolgate.Rate{Calls: rapid.IntRange(1, 3).Draw(t, label+".calls"), Per: time.Second}
	}
	if rapid.Bool().Draw(t, label+".args") {
		r.Arguments = json.RawMessage(`{"properties": {"n": {"maximum": 5}}}`)
	}
	return r
}

// compileDrawn compiles drawn rules, the labels they use declared, after
// dropping those Compile refuses because an earlier rule always decides
// for their tools (duplicate_match, shadowed): it returns the rules kept.
func compileDrawn(t *rapid.T, rules []toolgate.Rule) (*toolgate.Compiled, []toolgate.Rule) {
	for {
		comp, err := toolgate.Policy{Budget: 100, MinCost: 1, Labels: []string{"a", "b"}, Tools: rules}.Compile()
		if err == nil {
			return comp, rules
		}
		var ve *toolgate.ValidationError
		if !errors.As(err, &ve) {
			t.Fatal(err)
		}
		drop := map[int]bool{}
		for _, v := range ve.Violations {
			var i int
			if _, scanErr := fmt.Sscanf(v.Path, "/tools/%d/match", &i); scanErr != nil || v.Rule != "duplicate_match" && v.Rule != "shadowed" {
				t.Fatal(err)
			}
			drop[i] = true
		}
		var kept []toolgate.Rule
		for i, r := range rules {
			if !drop[i] {
				kept = append(kept, r)
			}
		}
		rules = kept
	}
}

func drawCall(t *rapid.T) toolgate.Call {
	var groups []string
	for _, g := range coreGroups {
		if rapid.Bool().Draw(t, "in."+g) {
			groups = append(groups, g)
		}
	}
	return toolgate.Call{Tool: rapid.SampledFrom(append(slices.Clone(coreTools), "other")).Draw(t, "tool"),
		Principal: toolgate.Principal{Issuer: "idp", Subject: "s", Groups: groups},
		Arguments: []byte(fmt.Sprintf(`{"n": %d}`, rapid.IntRange(0, 9).Draw(t, "n")))}
}

func drawSnapshot(t *rapid.T, at time.Time) toolgate.Snapshot {
	s := toolgate.Snapshot{Labels: map[string]bool{}, Windows: map[string][]time.Time{}}
	for _, l := range []string{"a", "b"} {
		if rapid.Bool().Draw(t, "seen."+l) {
			s.Labels[l] = true
		}
	}
	for i := range rapid.IntRange(0, 5).Draw(t, "windows") {
		id := fmt.Sprintf("rule:#%d|tool:%s", i, rapid.SampledFrom(coreTools).Draw(t, "wtool"))
		n := rapid.IntRange(0, 4).Draw(t, "wn")
		for k := range n {
			s.Windows[id] = append(s.Windows[id], at.Add(-time.Duration(n-k)*300*time.Millisecond))
		}
	}
	return s
}

func TestDecideIsPure(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rules := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) toolgate.Rule { return drawRule(t, "rule") }), 1, 6).Draw(t, "rules")
		comp, _ := compileDrawn(t, rules)
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		s := drawSnapshot(t, at)
		before := toolgate.Snapshot{Labels: maps.Clone(s.Labels), Windows: map[string][]time.Time{}}
		for k, v := range s.Windows {
			before.Windows[k] = slices.Clone(v)
		}
		c := drawCall(t)
		r1, r2 := comp.Decide(s, c, at), comp.Decide(s, c, at)
		if !reflect.DeepEqual(r1, r2) {
			t.Fatalf("two rulings:\n%+v\n%+v", r1, r2)
		}
		if !reflect.DeepEqual(before, s) {
			t.Fatalf("the snapshot changed")
		}
	})
}

func TestFirstApplicableRuleDecides(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		rules := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) toolgate.Rule { return drawRule(t, "rule") }), 1, 8).Draw(t, "rules")
		comp, rules := compileDrawn(t, rules)
		c := drawCall(t)
		var n int
		fmt.Sscanf(string(c.Arguments), `{"n": %d}`, &n)
		want, matched := -1, false
		for i, r := range rules {
			ok, _ := path.Match(r.Match, c.Tool)
			matched = matched || ok
			if !ok || r.Principals != nil && !slices.Contains(c.Principal.Groups, r.Principals.Groups[0]) || len(r.Arguments) > 0 && n > 5 {
				continue
			}
			want = i
			break
		}
		ru := comp.Decide(toolgate.Snapshot{}, c, time.Unix(0, 0))
		if want < 0 {
			// A rule that matches the tool makes it known: the refusal
			// names the rules that do not admit the call.
			cond := gatelog.ConditionUnknownTool
			if matched {
				cond = gatelog.ConditionNoRule
			}
			if ru.Rule.Found || ru.Verdict != toolgate.Refuse || ru.Condition != cond {
				t.Fatalf("no rule applies; ruling %+v", ru)
			}
			return
		}
		if !ru.Rule.Found || ru.Rule.Index != want {
			t.Fatalf("rule %d applies first; ruling names %s", want, ru.Rule)
		}
		if rules[want].Effect == toolgate.EffectRefuse && (ru.Verdict != toolgate.Refuse || ru.Condition != gatelog.ConditionEffect) {
			t.Fatalf("a refusing rule: ruling %+v", ru)
		}
		if rules[want].Effect == toolgate.EffectAllow && ru.Verdict != toolgate.Allow {
			t.Fatalf("an allowing rule with an empty snapshot: ruling %+v", ru)
		}
	})
}

func TestRateWindowNeverExceeded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 4).Draw(t, "limit")
		per := time.Duration(rapid.IntRange(1, 2000).Draw(t, "per_ms")) * time.Millisecond
		scope := rapid.SampledFrom([]toolgate.RateScope{toolgate.RateScopeTool, toolgate.RateScopeRule}).Draw(t, "scope")
		comp, err := toolgate.Policy{Budget: 100, MinCost: 1, Tools: []toolgate.Rule{
			{Match: "*", Cost: 1, Rate: &toolgate.Rate{Calls: limit, Per: per, Scope: scope}}}}.Compile()
		if err != nil {
			t.Fatal(err)
		}
		s := toolgate.Snapshot{Windows: map[string][]time.Time{}}
		at := time.Unix(1000, 0)
		for range rapid.IntRange(1, 40).Draw(t, "calls") {
			at = at.Add(time.Duration(rapid.IntRange(0, 700).Draw(t, "gap_ms")) * time.Millisecond)
			ru := comp.Decide(s, toolgate.Call{Tool: rapid.SampledFrom([]string{"x", "y"}).Draw(t, "tool")}, at)
			if ru.Verdict != toolgate.Allow {
				if ru.Condition != gatelog.ConditionRate {
					t.Fatalf("refused for %s", ru.Condition)
				}
				continue
			}
			for _, w := range ru.Windows { // what the shell does once the call ran
				s.Windows[w.ID] = append(s.Windows[w.ID], at)
			}
		}
		// Per window id, no interval (t-per, t] holds more than limit.
		for id, ts := range s.Windows {
			for _, end := range ts {
				n := 0
				for _, x := range ts {
					if x.After(end.Add(-per)) && !x.After(end) {
						n++
					}
				}
				if n > limit {
					t.Fatalf("window %s holds %d calls in (%s-%s, %s], limit %d", id, n, end, per, end, limit)
				}
			}
		}
	})
}
