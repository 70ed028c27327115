package toolgate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel/toolgate"
)

// TestRootsAreTakenAsWritten: a directory of "under" that path.Clean
// would change — "/srv/data/../etc", which would load as "/srv/etc", a
// trailing "/", "//", "/./" — is refused by the policy loader and by
// Config.Compile, naming the root and its clean form; a clean root loads.
func TestRootsAreTakenAsWritten(t *testing.T) {
	for root, clean := range map[string]string{
		"/srv/data/../etc": "/srv/etc",
		"/srv/data/":       "/srv/data",
		"/srv//data":       "/srv/data",
		"/srv/./data":      "/srv/data",
		"/..":              "/",
	} {
		file := filepath.Join(t.TempDir(), "policy.json")
		require.NoError(t, os.WriteFile(file, []byte(`{"version": 2, "budget": "10", "min_cost": "0.01", "tools": [
			{"match": "read_file", "cost": "0.01", "paths": [{"argument": "/path", "under": ["`+root+`"]}]}]}`), 0o600))
		_, err := toolgate.LoadPolicy(file)
		assert.Equal(t, []pathRule{{"/tools/0/paths/0/under/0", "path"}}, violationsOf(t, err), root)
		assert.ErrorContains(t, err, `"`+root+`" is not a clean path`)
		assert.ErrorContains(t, err, `write it as "`+clean+`"`)

		_, err = toolgate.Config{Budget: 10, MinCost: 1, Rules: []toolgate.Rule{{Match: "read_file", Cost: 1,
			Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{root}}}}}}.Compile()
		assert.ErrorIs(t, err, toolgate.ErrInvalidConfig, root)
		assert.ErrorContains(t, err, `"`+root+`" is not a clean path`)
	}
	_, err := toolgate.Config{Budget: 10, MinCost: 1, Rules: []toolgate.Rule{{Match: "read_file", Cost: 1,
		Paths: []toolgate.PathCondition{{Argument: "/path", Under: []string{"/", "/srv/data", "/srv/data.d/x..y"}}}}}}.Compile()
	assert.NoError(t, err)
}
