package cedar_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
	"github.com/verity-go/verity/kernel/toolgate/scenario"
)

// loadCedar loads a policy file and registers Cedar for its conditions.
func loadCedar(t testing.TB, path string) toolgate.Policy {
	t.Helper()
	p, err := toolgate.LoadPolicy(path)
	require.NoError(t, err)
	p.Conditions = []toolgate.ConditionLanguage{cedar.Language{Server: "github"}}
	return p
}

// TestWorkedExampleCedarAndNativePassTheSameCases runs the worked
// example — only group eng may call github.create_pull_request, only on
// repositories under acme/, never after a private_data label — written
// once in Cedar and once in native rules, through the same cases file
// with the scenario runner of verity policy test.
func TestWorkedExampleCedarAndNativePassTheSameCases(t *testing.T) {
	cases, err := scenario.Load("testdata/worked.cases.json")
	require.NoError(t, err)
	for _, file := range []string{"testdata/worked_cedar.json", "testdata/worked_cedar_file.json", "testdata/worked_native.json"} {
		r, err := scenario.NewRunner(loadCedar(t, file))
		require.NoError(t, err, file)
		for _, c := range cases {
			res := r.Run(context.Background(), c)
			for _, f := range res.Failures {
				t.Errorf("%s: %s %s: %s (%s)", file, c.Name(), f.Where(), strings.Join(f.Problems, "; "), f.Got)
			}
		}
	}
}

// TestWorkedExampleCatchesAWrongCondition: the same cases fail a Cedar
// condition that forgets the forbid, so the cases would catch it.
func TestWorkedExampleCatchesAWrongCondition(t *testing.T) {
	cases, err := scenario.Load("testdata/worked.cases.json")
	require.NoError(t, err)
	p := loadCedar(t, "testdata/worked_cedar.json")
	text := p.Tools[1].When.Text
	p.Tools[1].When = &toolgate.WhenCondition{Language: "cedar", Text: text[:strings.Index(text, "@id(\"no-private-data\")")]}
	r, err := scenario.NewRunner(p)
	require.NoError(t, err)
	failed := 0
	for _, c := range cases {
		if !r.Run(context.Background(), c).Passed() {
			failed++
		}
	}
	require.Equal(t, 3, failed, "the three cases after private_data fail")
}
