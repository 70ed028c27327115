package cedar

import (
	"testing"

	"github.com/verity-go/verity/kernel/toolgate"
)

func TestSmoke(t *testing.T) {
	c, err := Language{Server: "github"}.Compile("/tools/0/when/text", `@id("eng-acme")
permit (principal in Group::"eng", action == Action::"github.create_pull_request", resource)
when { context.arguments.repo like "acme/*" };
@id("no-private")
forbid (principal, action, resource) when { context.labels.contains("private_data") };`)
	if err != nil {
		t.Fatal(err)
	}
	in := &toolgate.ConditionInput{Principal: toolgate.Principal{Subject: "a", Groups: []string{"eng"}}, Tool: "github.create_pull_request",
		Arguments: map[string]any{"repo": "acme/x"}}
	ans, err := c.Evaluate(in)
	t.Log(ans, err)
	in.Labels = []string{"private_data"}
	ans, err = c.Evaluate(in)
	t.Log(ans, err)
	s, err := Schema([]Tool{{Name: "github.create_pull_request", InputSchema: []byte(`{"type":"object","properties":{"repo":{"type":"string"},"n":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"o":{"type":"object","properties":{"x":{"type":"boolean"}}}},"required":["repo"]}`)}})
	t.Log(string(s), err)
	v, err := NewValidator("s.cedarschema", s)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(v.Check("p.cedar", []byte(`permit (principal in Group::"eng", action == Action::"github.create_pull_request", resource)
when { context.arguments.rpo like "acme/*" };`)))
	_, err = Language{}.Compile("/tools/0/when/text", "permit (principal, action, resource) when { 1 + };")
	t.Log(err)
}
