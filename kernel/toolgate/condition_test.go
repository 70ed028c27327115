package toolgate_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
)

// subjectLanguage is a condition language for the tests: the text is a
// subject the rule applies to; "!name" refuses name's calls (policy id
// "deny-name"); "error" fails every evaluation; "spent<N" applies while
// the caller has spent less than N thousandths.
type subjectLanguage struct{}

func (subjectLanguage) Name() string { return "subject" }

func (subjectLanguage) Compile(at, text string) (toolgate.CompiledCondition, error) {
	if strings.ContainsAny(text, " \n") {
		return nil, errors.New(at + ":1:" + "1: a subject has no space")
	}
	return subjectCondition(text), nil
}

type subjectCondition string

func (c subjectCondition) Evaluate(in *toolgate.ConditionInput) (toolgate.ConditionAnswer, error) {
	s := string(c)
	switch {
	case s == "error":
		return toolgate.ConditionAnswer{}, errors.New("the condition cannot be evaluated")
	case strings.HasPrefix(s, "!"):
		if in.Principal.Subject == s[1:] {
			return toolgate.ConditionAnswer{Refuses: true, Policies: []string{"deny-" + s[1:]}}, nil
		}
		return toolgate.ConditionAnswer{Applies: true}, nil
	case strings.HasPrefix(s, "spent<"):
		n, _ := kernel.ParseCost(s[len("spent<"):])
		return toolgate.ConditionAnswer{Applies: in.Spent < n, Policies: []string{"budget"}}, nil
	}
	return toolgate.ConditionAnswer{Applies: in.Principal.Subject == s, Policies: []string{"is-" + s}}, nil
}

func whenPolicy(texts ...string) toolgate.Policy {
	p := toolgate.Policy{Budget: 100_000, MinCost: 1000, Conditions: []toolgate.ConditionLanguage{subjectLanguage{}}}
	for i, t := range texts {
		p.Tools = append(p.Tools, toolgate.Rule{Name: "r" + string(rune('0'+i)), Match: "t", Cost: 1000,
			When: &toolgate.WhenCondition{Language: "subject", Text: t}})
	}
	p.Tools = append(p.Tools, toolgate.Rule{Name: "last", Match: "t", Cost: 1000, Effect: toolgate.EffectRefuse, Reason: "nobody else"})
	return p
}

func callBy(subject string) toolgate.Call {
	return toolgate.Call{Tool: "t", Arguments: []byte(`{"a":1}`), Principal: toolgate.Principal{Issuer: "i", Subject: subject}}
}

// TestWhenConditionDecidesTheRule: a condition that applies makes its
// rule decide; one that does not leaves the rule for the next; one that
// refuses refuses at the rule naming its policy; one that fails refuses
// at the rule (fail closed), never falling through.
func TestWhenConditionDecidesTheRule(t *testing.T) {
	comp, err := whenPolicy("!mallory", "alice", "error").Compile()
	require.NoError(t, err)
	at := time.Unix(0, 0)
	ru := comp.Decide(toolgate.Snapshot{}, callBy("alice"), at)
	assert.Equal(t, toolgate.Allow, ru.Verdict)
	assert.Equal(t, "r0", ru.Rule.Name, "!mallory applies to alice")
	require.NotNil(t, ru.When)
	assert.Equal(t, "applies", ru.When.Evaluations[0].Answer)

	ru = comp.Decide(toolgate.Snapshot{}, callBy("mallory"), at)
	assert.Equal(t, toolgate.Refuse, ru.Verdict)
	assert.Equal(t, "r0", ru.Rule.Name)
	assert.Equal(t, gatelog.ConditionWhen, ru.Condition)
	assert.Equal(t, "condition", ru.Reason)
	assert.Contains(t, ru.Explanation, "deny-mallory")

	comp, err = whenPolicy("alice", "error").Compile()
	require.NoError(t, err)
	ru = comp.Decide(toolgate.Snapshot{}, callBy("bob"), at)
	assert.Equal(t, toolgate.Refuse, ru.Verdict)
	assert.Equal(t, "r1", ru.Rule.Name, "an evaluation error refuses at its rule")
	assert.Contains(t, ru.Explanation, "cannot be evaluated")
	require.Len(t, ru.When.Evaluations, 2)
	assert.Equal(t, []string{"misses", "error"}, []string{ru.When.Evaluations[0].Answer, ru.When.Evaluations[1].Answer})

	comp, err = whenPolicy("alice").Compile()
	require.NoError(t, err)
	ru = comp.Decide(toolgate.Snapshot{}, callBy("bob"), at)
	assert.Equal(t, "last", ru.Rule.Name, "a condition that does not apply leaves the rule")
	ref, _ := comp.Match("t", toolgate.Principal{Subject: "alice"}, []byte(`{}`))
	assert.Equal(t, "r0", ref.Name, "Match evaluates conditions too")
}

// TestWhenLanguageMustBeRegistered: a rule whose language is not on
// Policy.Conditions is refused by Compile, naming what to do; so is a
// text the language refuses, with its located error.
func TestWhenLanguageMustBeRegistered(t *testing.T) {
	p := whenPolicy("alice")
	p.Conditions = nil
	_, err := p.Compile()
	var ve *toolgate.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Violations, 1)
	assert.Equal(t, "/tools/0/when/language", ve.Violations[0].Path)
	assert.Equal(t, "language", ve.Violations[0].Rule)
	assert.Contains(t, ve.Violations[0].Message, "Policy.Conditions")

	p.Tools[0].When.Language = "cedar"
	_, err = p.Compile()
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, ve.Violations[0].Message, "kernel/toolgate/cedar")

	p = whenPolicy("two words")
	_, err = p.Compile()
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "/tools/0/when/text", ve.Violations[0].Path)
	assert.Equal(t, "condition", ve.Violations[0].Rule)
	assert.Contains(t, ve.Violations[0].Message, "/tools/0/when/text:1:1")
}

// TestWhenInTheFile: "when" reads and writes back; it needs version 2,
// both members, and is not a member of the default rule.
func TestWhenInTheFile(t *testing.T) {
	file := `{"version": 2, "budget": "10", "min_cost": "1", "tools": [
		{"match": "t", "cost": "1", "when": {"language": "subject", "text": "alice"}}]}`
	p, err := toolgate.ParsePolicy([]byte(file))
	require.NoError(t, err)
	require.NotNil(t, p.Tools[0].When)
	assert.Equal(t, toolgate.WhenCondition{Language: "subject", Text: "alice"}, *p.Tools[0].When)
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	q, err := toolgate.ParsePolicy(b)
	require.NoError(t, err)
	assert.Equal(t, p, q)
	_, err = p.Compile()
	require.Error(t, err, "no language registered")
	p.Conditions = []toolgate.ConditionLanguage{subjectLanguage{}}
	_, err = p.Compile()
	require.NoError(t, err)

	for _, c := range []struct{ file, path, rule string }{
		{strings.Replace(file, `"version": 2`, `"version": 1`, 1), "/tools/0/when", "unknown_field"},
		{strings.Replace(file, `"text": "alice"`, `"text": ""`, 1), "/tools/0/when/text", "required"},
		{strings.Replace(file, `"language": "subject", `, ``, 1), "/tools/0/when/language", "required"},
		{strings.Replace(file, `"alice"}`, `"alice", "file": "x"}`, 1), "/tools/0/when/file", "when_form"},
		{strings.Replace(file, `"text": "alice"`, `"file": ""`, 1), "/tools/0/when/file", "required"},
		{strings.Replace(file, `"alice"}`, `"alice", "path": "x"}`, 1), "/tools/0/when/path", "unknown_field"},
	} {
		_, err := toolgate.ParsePolicy([]byte(c.file))
		var ve *toolgate.ValidationError
		require.ErrorAs(t, err, &ve, c.file)
		assert.Equal(t, c.path, ve.Violations[0].Path, c.file)
		assert.Equal(t, c.rule, ve.Violations[0].Rule, c.file)
	}
	d := toolgate.Policy{Budget: 10, MinCost: 1, AllowUnknown: true,
		DefaultRule: &toolgate.Rule{Cost: 1, When: &toolgate.WhenCondition{Language: "subject", Text: "a"}}}
	_, err = d.Compile()
	require.ErrorContains(t, err, "/default_rule/when")
}

// TestWhenRecordedWithTheDecision: the gate gives a condition the
// caller's labels and spend, and records what it saw and answered — on
// the refusal entry, and in a when: tag of the execution.
func TestWhenRecordedWithTheDecision(t *testing.T) {
	log, _ := trace.NewLog(trace.NewMemory())
	g, err := toolgate.New(ctx, log, mustCompile(whenPolicy("spent<2")))
	require.NoError(t, err)
	var verdicts []toolgate.Verdict
	for range 3 {
		d, err := g.Before(ctx, callBy("alice"))
		require.NoError(t, err)
		verdicts = append(verdicts, d.Verdict)
	}
	assert.Equal(t, []toolgate.Verdict{toolgate.Allow, toolgate.Allow, toolgate.Refuse}, verdicts)
	var tags []string
	var refused *gatelog.When
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		switch e.Kind {
		case kernel.KindExecute:
			x, err := kernel.DecodeEntry(e)
			require.NoError(t, err)
			for _, tag := range x.(kernel.ExecuteEntry).Action.Tags {
				if strings.HasPrefix(tag, "when:") {
					tags = append(tags, tag)
				}
			}
		case gatelog.KindRefuse:
			x, err := gatelog.Decode(e)
			require.NoError(t, err)
			refused = x.(gatelog.Refuse).When
		}
	}
	require.Len(t, tags, 2)
	var first gatelog.When
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(tags[0], "when:")), &first))
	assert.Contains(t, string(first.Input), `"remaining":"100","spent":"0"`)
	require.NotNil(t, refused)
	assert.Contains(t, string(refused.Input), `"remaining":"98","spent":"2"`)
	assert.Equal(t, "misses", refused.Evaluations[0].Answer)
	var in toolgate.ConditionInput
	require.NoError(t, in.UnmarshalJSON(refused.Input))
	assert.Equal(t, kernel.Cost(2000), in.Spent)
	assert.Equal(t, "alice", in.Principal.Subject)
}

// TestConditionInputJSONRoundTrips: the recorded input reads back to
// the input the condition saw, and writes the same canonical bytes
// again, so that a replay evaluates exactly what the gate evaluated.
func TestConditionInputJSONRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		str := rapid.String()
		in := toolgate.ConditionInput{
			Principal: toolgate.Principal{Issuer: str.Draw(t, "issuer"), Subject: str.Draw(t, "subject"),
				Groups: rapid.SliceOf(str).Draw(t, "groups"), Scopes: rapid.SliceOf(str).Draw(t, "scopes"),
				Attributes: rapid.MapOf(str, str).Draw(t, "attributes")},
			Tool:      str.Draw(t, "tool"),
			Arguments: map[string]any{"s": str.Draw(t, "arg"), "n": json.Number(rapid.SampledFrom([]string{"0", "-3", "9007199254740991", "1.5"}).Draw(t, "n")), "b": true, "z": nil, "xs": []any{"a", json.Number("2")}},
			Labels:    rapid.SliceOf(str).Draw(t, "labels"),
			Spent:     kernel.Cost(rapid.Int64Range(0, 1<<50).Draw(t, "spent")),
			Remaining: kernel.Cost(rapid.Int64Range(0, 1<<50).Draw(t, "remaining")),
		}
		b, err := in.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back toolgate.ConditionInput
		if err := back.UnmarshalJSON(b); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		b2, err := back.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(b2) {
			t.Fatalf("%s\n%s", b, b2)
		}
		if back.Spent != in.Spent || back.Principal.Subject != in.Principal.Subject || len(back.Labels) != len(in.Labels) {
			t.Fatalf("read back %+v", back)
		}
	})
}

// TestNoConditionNoRecord: a policy without when conditions records
// nothing of them, and its decisions are as before.
func TestNoConditionNoRecord(t *testing.T) {
	log, _ := trace.NewLog(trace.NewMemory())
	g, err := toolgate.New(ctx, log, mustCompile(toolgate.Policy{Budget: 10, MinCost: 1, Tools: []toolgate.Rule{{Match: "t", Cost: 1}}}))
	require.NoError(t, err)
	d, err := g.Before(ctx, callBy("alice"))
	require.NoError(t, err)
	require.Equal(t, toolgate.Allow, d.Verdict)
	d, err = g.Before(ctx, toolgate.Call{Tool: "u", Arguments: []byte(`{}`)})
	require.NoError(t, err)
	require.Equal(t, toolgate.Refuse, d.Verdict)
	for e, err := range log.Entries(ctx, 0) {
		require.NoError(t, err)
		assert.NotContains(t, string(e.Payload), "when", e.Kind)
	}
}

// TestWhenFromAFile: a condition may live in a file beside the policy;
// LoadPolicy reads it, relative to the policy file, and the file form is
// written back; a policy from ParsePolicy cannot compile one, and a file
// that cannot be read refuses the policy naming where.
func TestWhenFromAFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "conds"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "conds", "alice.txt"), []byte("alice"), 0o600))
	file := `{"version": 2, "budget": "10", "min_cost": "1", "tools": [
		{"match": "t", "cost": "1", "when": {"language": "subject", "file": "conds/alice.txt"}}]}`
	path := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	p, err := toolgate.LoadPolicy(path)
	require.NoError(t, err)
	assert.Equal(t, "alice", p.Tools[0].When.Source())
	assert.Equal(t, "conds/alice.txt", p.Tools[0].When.File)
	p.Conditions = []toolgate.ConditionLanguage{subjectLanguage{}}
	comp, err := p.Compile()
	require.NoError(t, err)
	ru := comp.Decide(toolgate.Snapshot{}, callBy("alice"), time.Unix(0, 0))
	assert.Equal(t, toolgate.Allow, ru.Verdict)
	assert.Equal(t, "#0", ru.When.Evaluations[0].Rule)
	b, err := p.MarshalJSON()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"file":"conds/alice.txt"`)
	assert.NotContains(t, string(b), `"text"`)

	q, err := toolgate.ParsePolicy([]byte(file))
	require.NoError(t, err)
	q.Conditions = p.Conditions
	_, err = q.Compile()
	require.ErrorContains(t, err, "LoadPolicy reads a condition's file")

	require.NoError(t, os.Remove(filepath.Join(dir, "conds", "alice.txt")))
	_, err = toolgate.LoadPolicy(path)
	var ve *toolgate.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "/tools/0/when/file", ve.Violations[0].Path)
}
