package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/verity-go/verity/kernel/toolgate"
)

// policyCases is the file "verity policy test" runs:
//
//	{"cases": [{
//	   "name": "a write needs the owner's approval",
//	   "tool": "write_file", "arguments": {"path": "/srv/notes/a.md", "content": "x"},
//	   "principal": {"issuer": "…", "subject": "alice", "groups": ["eng"], "scopes": ["fs:write"]},
//	   "labels": ["untrusted_input"],
//	   "before": [{"tool": "read_text_file", "arguments": {"path": "/srv/notes/b.md"}}],
//	   "expect": "ask_approval", "rule": "writes", "condition": "tier",
//	   "reason": "…", "explanation": "…"
//	}]}
//
// A case is one call, decided by the policy's decision core for a caller
// whose session already holds labels, and the calls of before (in
// order, one second apart, each allowed one adding its labels and rate
// windows as the gate would). expect is the verdict (allow, refuse,
// ask_approval); rule (the rule's name, "#index", "default" or "none"),
// condition, reason (the refusal's code) and explanation (a substring of
// the one-line explanation) are checked when given.
type policyCases struct {
	Cases []policyCase `json:"cases"`
}

type policyCase struct {
	Name string `json:"name"`
	caseCall
	Labels      []string   `json:"labels"`
	Before      []caseCall `json:"before"`
	At          string     `json:"at"`
	Expect      string     `json:"expect"`
	Rule        *string    `json:"rule"`
	Condition   *string    `json:"condition"`
	Reason      *string    `json:"reason"`
	Explanation *string    `json:"explanation"`
}

type caseCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Principal *struct {
		Issuer     string            `json:"issuer"`
		Subject    string            `json:"subject"`
		Groups     []string          `json:"groups"`
		Scopes     []string          `json:"scopes"`
		Attributes map[string]string `json:"attributes"`
	} `json:"principal"`
}

func (c caseCall) call() toolgate.Call {
	out := toolgate.Call{Tool: c.Tool, Arguments: c.Arguments, Caller: "policy-test"}
	if len(out.Arguments) == 0 {
		out.Arguments = []byte("{}")
	}
	if p := c.Principal; p != nil {
		out.Principal = toolgate.Principal{Issuer: p.Issuer, Subject: p.Subject, Groups: p.Groups, Scopes: p.Scopes, Attributes: p.Attributes}
	}
	return out
}

// maxCasesSize bounds a cases file.
const maxCasesSize = 8 << 20

// caseEpoch is the time of a case's call when it gives none.
var caseEpoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func readCases(name string) ([]policyCase, error) {
	data, err := readInput(name, maxCasesSize)
	if err != nil {
		return nil, err
	}
	return parseCases(name, data)
}

// parseCases reads a cases file's content; name is for messages.
func parseCases(name string, data []byte) ([]policyCase, error) {
	if len(data) > maxCasesSize {
		return nil, fmt.Errorf("%s: over %d bytes", name, maxCasesSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var doc policyCases
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", name)
	}
	if len(doc.Cases) == 0 {
		return nil, fmt.Errorf(`%s: no "cases"`, name)
	}
	var problems []string
	for i, c := range doc.Cases {
		at := fmt.Sprintf("cases[%d]", i)
		if c.Name == "" {
			problems = append(problems, at+": no name")
		}
		if c.Tool == "" {
			problems = append(problems, at+": no tool")
		}
		switch c.Expect {
		case "allow", "refuse", "ask_approval":
		default:
			problems = append(problems, fmt.Sprintf("%s: expect %q is not allow, refuse or ask_approval", at, c.Expect))
		}
		if c.At != "" {
			if _, err := time.Parse(time.RFC3339Nano, c.At); err != nil {
				problems = append(problems, fmt.Sprintf("%s: at: %v", at, err))
			}
		}
		for j, b := range c.Before {
			if b.Tool == "" {
				problems = append(problems, fmt.Sprintf("%s.before[%d]: no tool", at, j))
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s: %s", name, strings.Join(problems, "; "))
	}
	return doc.Cases, nil
}

func policyTest(e *env, args []string) error {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
		fmt.Fprint(e.stdout, policyUsage)
		return nil
	}
	if len(args) != 2 || strings.HasPrefix(args[0], "-") || strings.HasPrefix(args[1], "-") {
		return usagef("policy test: want POLICY CASES")
	}
	_, compiled, err := loadPolicyConfig(args[0])
	if err != nil {
		return err
	}
	cases, err := readCases(args[1])
	if err != nil {
		return err
	}
	failed := 0
	for _, c := range cases {
		got := runCase(compiled, c)
		if problems := c.mismatches(got); len(problems) > 0 {
			failed++
			fmt.Fprintf(e.stdout, "FAIL %s: %s\n", c.Name, strings.Join(problems, "; "))
			fmt.Fprintf(e.stdout, "     got %s by %s, condition %s: %s\n", got.Verdict, got.Rule, got.Condition, got.Explanation)
			continue
		}
		fmt.Fprintf(e.stdout, "PASS %s\n", c.Name)
	}
	fmt.Fprintf(e.stdout, "%d/%d cases passed\n", len(cases)-failed, len(cases))
	if failed > 0 {
		return fmt.Errorf("%w: %d case(s) failed", errPolicyFindings, failed)
	}
	return nil
}

// runCase decides c's call after its session history.
func runCase(compiled *toolgate.Compiled, c policyCase) toolgate.Ruling {
	at := caseEpoch
	if c.At != "" {
		at, _ = time.Parse(time.RFC3339Nano, c.At) // checked by readCases
	}
	snap := toolgate.Snapshot{Labels: map[string]bool{}, Windows: map[string][]time.Time{}}
	for _, l := range c.Labels {
		snap.Labels[l] = true
	}
	for i, b := range c.Before {
		t := at.Add(-time.Duration(len(c.Before)-i) * time.Second)
		ru := compiled.Decide(snap, b.call(), t)
		if ru.Verdict != toolgate.Allow {
			continue
		}
		for _, l := range ru.Labels {
			snap.Labels[l] = true
		}
		for _, w := range ru.Windows {
			snap.Windows[w.ID] = append(snap.Windows[w.ID], t)
		}
	}
	return compiled.Decide(snap, c.call(), at)
}

// mismatches lists how got differs from what c expects.
func (c policyCase) mismatches(got toolgate.Ruling) []string {
	var out []string
	if v := got.Verdict.String(); v != c.Expect {
		out = append(out, fmt.Sprintf("verdict %s, want %s", v, c.Expect))
	}
	if c.Rule != nil && !sameRule(got.Rule, *c.Rule) {
		out = append(out, fmt.Sprintf("rule %s, want %s", got.Rule, *c.Rule))
	}
	if c.Condition != nil && got.Condition != *c.Condition {
		out = append(out, fmt.Sprintf("condition %q, want %q", got.Condition, *c.Condition))
	}
	if c.Reason != nil && got.Reason != *c.Reason {
		out = append(out, fmt.Sprintf("reason %q, want %q", got.Reason, *c.Reason))
	}
	if c.Explanation != nil && !strings.Contains(got.Explanation, *c.Explanation) {
		out = append(out, fmt.Sprintf("explanation %q does not contain %q", got.Explanation, *c.Explanation))
	}
	return out
}

// sameRule reports whether want ("none", "default", "#index" or a name)
// names r.
func sameRule(r toolgate.RuleRef, want string) bool {
	switch {
	case want == "none":
		return !r.Found
	case !r.Found:
		return false
	case want == "default":
		return r.Index < 0
	case strings.HasPrefix(want, "#"):
		i, err := strconv.Atoi(want[1:])
		return err == nil && r.Index >= 0 && i == r.Index
	}
	return r.Name == want
}
