package contracts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fixture struct {
	kind Kind
	name string // file name without .json
	rule string // for invalid fixtures: the rule the file is named for
	path string
	data []byte
}

// loadFixtures reads testdata/<dir>/<kind>/*.json. The files are generated
// from the tables in fixturegen_test.go (TestFixturesUpToDate checks them;
// -update rewrites them): each invalid fixture is a valid one with a single
// change, named "<rule>[--<variant>].json" after the rule it breaks.
func loadFixtures(t testing.TB, dir string) []fixture {
	t.Helper()
	var out []fixture
	kinds, err := os.ReadDir(filepath.Join("testdata", dir))
	require.NoError(t, err)
	for _, kd := range kinds {
		kind, err := ParseKind(kd.Name())
		require.NoError(t, err, "fixture directory %s", kd.Name())
		files, err := filepath.Glob(filepath.Join("testdata", dir, kd.Name(), "*.json"))
		require.NoError(t, err)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			rule, _, _ := strings.Cut(name, "--")
			out = append(out, fixture{kind: kind, name: name, rule: rule, path: f, data: data})
		}
	}
	require.NotEmpty(t, out)
	return out
}

func rulesOf(vs []Violation) []string {
	var rules []string
	for _, v := range vs {
		if !slices.Contains(rules, v.Rule) {
			rules = append(rules, v.Rule)
		}
	}
	slices.Sort(rules)
	return rules
}

// TestFixtures runs every fixture under testdata/ through Validate: valid
// fixtures have no violation; each invalid fixture breaks exactly the rule
// it is named for, and nothing else.
func TestFixtures(t *testing.T) {
	for _, f := range loadFixtures(t, "valid") {
		t.Run("valid/"+string(f.kind)+"/"+f.name, func(t *testing.T) {
			vs, err := Check(f.kind, f.data)
			require.NoError(t, err)
			assert.Empty(t, vs)
		})
	}
	for _, f := range loadFixtures(t, "invalid") {
		t.Run("invalid/"+string(f.kind)+"/"+f.name, func(t *testing.T) {
			vs, err := Check(f.kind, f.data)
			require.NoError(t, err)
			require.NotEmpty(t, vs, "an invalid fixture must not validate")
			assert.Equal(t, []string{f.rule}, rulesOf(vs), "violations: %v", vs)
			for _, v := range vs {
				assert.NotEmpty(t, v.Message)
				assert.True(t, v.Path == "" || strings.HasPrefix(v.Path, "/"), "JSON Pointer %q", v.Path)
			}
		})
	}
}
