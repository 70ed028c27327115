// Guarantee checked here: every named rule is listed once, with a
// description and a source, and Lookup finds exactly the listed rules
// (TestTable). That each rule fires on its fixture, and that SpecOnly
// leaves out exactly the extensions, is checked in package contracts
// (TestRuleTable, TestRuleSources, TestSpecOnlyLeavesOutExactlyTheExtensions).

package rule

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range All() {
		assert.False(t, seen[r.Name], "%s listed twice", r.Name)
		seen[r.Name] = true
		assert.NotEmpty(t, r.Description, r.Name)
		assert.NotEmpty(t, r.Source, r.Name)
		got, ok := Lookup(r.Name)
		assert.True(t, ok, r.Name)
		assert.Equal(t, r, got)
	}
	_, ok := Lookup("schema.required")
	assert.False(t, ok)
	_, ok = Lookup("")
	assert.False(t, ok)
	assert.True(t, seen[OverallVerdictConsistent])
}
