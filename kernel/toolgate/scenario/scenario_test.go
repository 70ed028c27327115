package scenario

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
)

// policyFile is the policy every file of testdata/scenarios runs against.
const policyFile = "testdata/policy.json"

func testRunner(t testing.TB) *Runner {
	t.Helper()
	p, err := toolgate.LoadPolicy(policyFile)
	require.NoError(t, err)
	r, err := NewRunner(p)
	require.NoError(t, err)
	return r
}

// TestScenarioFiles runs every file in testdata/scenarios: the gate's
// lifecycle, step by step, with the entries each step appends.
func TestScenarioFiles(t *testing.T) {
	r := testRunner(t)
	files, err := filepath.Glob("testdata/scenarios/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			cases, err := Load(file)
			require.NoError(t, err)
			for _, c := range cases {
				res := r.Run(context.Background(), c)
				for _, f := range res.Failures {
					t.Errorf("%s: %s: %s\n\t%s", c.Name(), f.Where(), strings.Join(f.Problems, "; "), f.Got)
				}
			}
		})
	}
}
