package violation

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var errSentinel = errors.New("x: invalid")

func TestNewSortsAndWraps(t *testing.T) {
	vs := []Violation{
		{Path: "/claims/10/id", Rule: "required", Message: "m"},
		{Path: "/claims/2/id", Rule: "required", Message: "m"},
		{Path: "", Rule: "syntax", Message: "m"},
		{Path: "/claims/2", Rule: "enum", Message: "m"},
		{Path: "/claims/2/id", Rule: "enum", Message: "m"},
	}
	in := slices.Clone(vs)
	e := New("claims", "claim bundle", vs, errSentinel, nil, errSentinel)
	require.NotNil(t, e)
	assert.Equal(t, in, vs, "New sorts a copy, not the caller's slice")
	assert.Equal(t, []string{"", "/claims/2", "/claims/2/id", "/claims/2/id", "/claims/10/id"}, paths(e.Violations))
	assert.Equal(t, "enum", e.Violations[2].Rule, "same path: by rule")
	assert.ErrorIs(t, e, errSentinel)
	assert.Len(t, e.Unwrap(), 1, "a sentinel is wrapped once")
	assert.True(t, e.Has("syntax"))
	assert.False(t, e.Has("range"))
	assert.Equal(t, "claims: invalid claim bundle: 5 violations: syntax: m; /claims/2: enum: m; /claims/2/id: enum: m; …", e.Error())
	assert.Nil(t, New("claims", "x", nil), "no violations, no error")
}

func TestErrorMessageSingular(t *testing.T) {
	e := New("", "", []Violation{{Path: "/a", Rule: "r", Message: "m"}})
	assert.Equal(t, "invalid value: 1 violation: /a: r: m", e.Error())
}

func TestJoinEscapesAndIndex(t *testing.T) {
	assert.Equal(t, "/a~1b~0c", Join("", "a/b~c"))
	assert.Equal(t, "/claims/3/id", Join(Index(Join("", "claims"), 3), "id"))
	assert.Equal(t, "/", Join("", ""), "the empty member name is a token too")
}

// TestCompareIsATotalOrder checks that Compare is antisymmetric and
// transitive on generated pointers, and numeric on array indices.
func TestCompareIsATotalOrder(t *testing.T) {
	tok := rapid.OneOf(rapid.SampledFrom([]string{"0", "1", "2", "9", "10", "01", "a", "", "b~1"}), rapid.StringMatching(`[0-9a-c]{0,3}`))
	ptr := rapid.Custom(func(t *rapid.T) string {
		p := ""
		for _, s := range rapid.SliceOfN(tok, 0, 4).Draw(t, "tokens") {
			p += "/" + s
		}
		return p
	})
	v := rapid.Custom(func(t *rapid.T) Violation {
		return Violation{Path: ptr.Draw(t, "path"), Rule: rapid.SampledFrom([]string{"a", "b"}).Draw(t, "rule"), Message: rapid.SampledFrom([]string{"x", "y"}).Draw(t, "msg")}
	})
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := v.Draw(t, "a"), v.Draw(t, "b"), v.Draw(t, "c")
		if Compare(a, b) != -Compare(b, a) {
			t.Fatalf("not antisymmetric: %v %v", a, b)
		}
		if (Compare(a, b) == 0) != (a == b) {
			t.Fatalf("equal iff identical: %v %v", a, b)
		}
		if Compare(a, b) <= 0 && Compare(b, c) <= 0 && Compare(a, c) > 0 {
			t.Fatalf("not transitive: %v %v %v", a, b, c)
		}
		i, j := rapid.IntRange(0, 1000).Draw(t, "i"), rapid.IntRange(0, 1000).Draw(t, "j")
		got := Compare(Violation{Path: Index("/x", i)}, Violation{Path: Index("/x", j)})
		if want := compareInts(i, j); got != want {
			t.Fatalf("indices %d, %d compare %d, want %d", i, j, got, want)
		}
	})
}

func compareInts(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func paths(vs []Violation) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Path
	}
	return out
}

func ExampleNew() {
	err := New("claims", "claim bundle", []Violation{
		{Path: Join(Index("/claims", 12), "confidence"), Rule: "range", Message: "must be within [0,1]"},
		{Path: Join(Index("/claims", 2), "id"), Rule: "required", Message: "must not be empty"},
	})
	// The violations come sorted, array indices as numbers.
	for _, v := range err.Violations {
		fmt.Println(v)
	}
	// Output:
	// /claims/2/id: required: must not be empty
	// /claims/12/confidence: range: must be within [0,1]
}
