// Guarantees checked here: semantic versions parse and order as Semantic
// Versioning 2.0.0 says (TestParse, TestVersionPrecedence,
// FuzzParse); a document is readable iff its major version is the
// reader's (TestCompatibilityMajorOnly, rapid); releases follow the
// specification's bump rules (TestVersioningRules); zero values fail
// closed (TestZeroValuesFailClosed).

package versioning

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestParse(t *testing.T) {
	v, err := Parse("1.2.3-rc.1+build.5")
	require.NoError(t, err)
	assert.Equal(t, Version{Major: 1, Minor: 2, Patch: 3, Prerelease: "rc.1", Build: "build.5"}, v)
	assert.Equal(t, "1.2.3-rc.1+build.5", v.String())
	for _, bad := range []string{"", "1", "1.0", "v1.0.0", "01.0.0", "1.0.0-", "1.0.0+", "1.0.0-01", " 1.0.0", "99999999999999999999.0.0"} {
		_, err := Parse(bad)
		assert.ErrorIs(t, err, ErrInvalid, bad)
	}
}

func TestVersionPrecedence(t *testing.T) {
	// Semantic Versioning 2.0.0 §11's example chain.
	chain := []string{"1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
		"1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.1.0", "2.0.0"}
	for i := range chain {
		for j := range chain {
			a, _ := Parse(chain[i])
			b, _ := Parse(chain[j])
			assert.Equal(t, cmpInt(i, j), a.Compare(b), "%s vs %s", chain[i], chain[j])
		}
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestCompatibilityMajorOnly: a document is readable iff its major version
// is the library's; minor, patch and prerelease never matter.
func TestCompatibilityMajorOnly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lib := Version{Major: rapid.Uint64Range(0, 3).Draw(t, "lM"), Minor: rapid.Uint64Range(0, 5).Draw(t, "lm"), Patch: rapid.Uint64Range(0, 5).Draw(t, "lp")}
		doc := Version{Major: rapid.Uint64Range(0, 3).Draw(t, "dM"), Minor: rapid.Uint64Range(0, 5).Draw(t, "dm"), Patch: rapid.Uint64Range(0, 5).Draw(t, "dp"),
			Prerelease: rapid.SampledFrom([]string{"", "rc.1"}).Draw(t, "pre")}
		err := Compatible(lib, doc)
		if (err == nil) != (lib.Major == doc.Major) {
			t.Fatalf("Compatible(%s, %s) = %v", lib, doc, err)
		}
	})
	assert.ErrorIs(t, Compatible(Version{Major: 1}, Version{Major: 2}), ErrIncompatible)
}

func TestVersioningRules(t *testing.T) {
	assert.Equal(t, BumpNone, RequiredBump())
	assert.Equal(t, BumpPatch, RequiredBump(ChangeClarification))
	assert.Equal(t, BumpMinor, RequiredBump(ChangeAddOptionalField, ChangeClarification))
	assert.Equal(t, BumpMinor, RequiredBump(ChangeExtendEnum))
	for _, c := range []Change{ChangeRemoveRequiredField, ChangeEnumSemantics, ChangeIDFormat} {
		assert.Equal(t, BumpMajor, RequiredBump(ChangeAddOptionalField, c))
	}
	v := func(s string) Version {
		x, err := Parse(s)
		require.NoError(t, err)
		return x
	}
	cases := []struct {
		old, new string
		changes  []Change
		ok       bool
	}{
		{"1.0.0", "1.1.0", []Change{ChangeAddOptionalField}, true},
		{"1.0.0", "1.0.1", []Change{ChangeAddOptionalField}, false},
		{"1.0.0", "1.0.0", []Change{ChangeExtendEnum}, false}, // an enum extension needs an explicit bump
		{"1.0.0", "1.0.1", []Change{ChangeClarification}, true},
		{"1.0.0", "2.0.0", []Change{ChangeClarification}, true}, // a larger bump is allowed
		{"1.4.2", "2.0.0", []Change{ChangeIDFormat}, true},
		{"1.4.2", "1.5.0", []Change{ChangeRemoveRequiredField}, false},
		{"1.4.2", "2.1.0", []Change{ChangeRemoveRequiredField}, false}, // a major bump resets minor
		{"1.4.2", "1.3.0", nil, false},                                 // backwards
		{"1.4.2", "1.5.1", []Change{ChangeAddOptionalField}, false},    // a minor bump resets patch
	}
	for _, c := range cases {
		err := CheckRelease(v(c.old), v(c.new), c.changes...)
		if c.ok {
			assert.NoError(t, err, fmt.Sprintf("%s→%s %v", c.old, c.new, c.changes))
		} else {
			assert.ErrorIs(t, err, ErrInvalid, fmt.Sprintf("%s→%s %v", c.old, c.new, c.changes))
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"1.0.0", "1.2.3-rc.1+b.5", "01.0.0", "1.0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err == nil && v.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, v.String())
		}
	})
}

// TestZeroValuesFailClosed: the zero Change is no known change and needs
// the most restrictive bump; the zero Bump is none of the bumps.
func TestZeroValuesFailClosed(t *testing.T) {
	assert.Equal(t, BumpMajor, RequiredBump(Change(0)))
	for _, b := range []Bump{BumpNone, BumpPatch, BumpMinor, BumpMajor} {
		assert.NotEqual(t, Bump(0), b)
	}
	assert.Equal(t, "Bump(0)", Bump(0).String())
}
