package kernel_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestStateTypedAccessors: each accessor reads its own kind only (an int
// is not a float, 1.0 is not an int) and says false for an absent
// variable or one of another kind.
func TestStateTypedAccessors(t *testing.T) {
	s := mustState(t, map[string]any{"i": 3, "f": 1.0, "b": true, "s": "x", "n": nil})
	i, ok := s.Int("i")
	assert.True(t, ok)
	assert.Equal(t, int64(3), i)
	f, ok := s.Float("f")
	assert.True(t, ok)
	assert.Equal(t, 1.0, f)
	b, ok := s.Bool("b")
	assert.True(t, ok && b)
	text, ok := s.Text("s")
	assert.True(t, ok)
	assert.Equal(t, "x", text)
	for _, key := range []string{"f", "b", "s", "n", "absent"} {
		_, ok := s.Int(key)
		assert.False(t, ok, key)
	}
	_, ok = s.Float("i")
	assert.False(t, ok, "an int is not a float")
	_, ok = s.Bool("n")
	assert.False(t, ok)
	_, ok = s.Text("absent")
	assert.False(t, ok)
}
