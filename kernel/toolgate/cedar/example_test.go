package cedar_test

import (
	"fmt"
	"time"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
)

// A rule whose condition is Cedar: only group eng may open pull
// requests, only on repositories under acme/, never after private data
// was read in the session.
func ExampleLanguage() {
	p, err := toolgate.ParsePolicy([]byte(`{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [
	  {"name": "pr", "match": "github.create_pull_request", "cost": "0.1", "when": {"language": "cedar", "text":
	    "@id(\"eng-acme\") permit (principal in Group::\"eng\", action, resource) when { context.arguments.repo like \"acme/*\" };\n@id(\"no-private-data\") forbid (principal, action, resource) when { context.labels.contains(\"private_data\") };"}}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p.Conditions = append(p.Conditions, cedar.Language{Server: "github"})
	comp, err := p.Compile()
	if err != nil {
		fmt.Println(err)
		return
	}
	alice := toolgate.Principal{Issuer: "idp", Subject: "alice", Groups: []string{"eng"}}
	for _, c := range []struct {
		repo   string
		labels map[string]bool
	}{{"acme/api", nil}, {"evil/api", nil}, {"acme/api", map[string]bool{"private_data": true}}} {
		call := toolgate.Call{Tool: "github.create_pull_request", Arguments: []byte(`{"repo":"` + c.repo + `"}`), Principal: alice}
		ru := comp.Decide(toolgate.Snapshot{Labels: c.labels}, call, time.Now())
		fmt.Println(ru.Verdict, ru.When.Evaluations[0].Answer, ru.When.Evaluations[0].Policies)
	}
	// Output:
	// allow applies [eng-acme]
	// refuse misses []
	// refuse refuses [no-private-data]
}
