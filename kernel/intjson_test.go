package kernel_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// TestIntJSONIsLossless: an int is a plain literal within ±(2^53−1) and
// {"$int":"…"} beyond, even when it is exactly a double (2^53, 2^60,
// math.MinInt64), and reads back as the same int; a plain integer literal
// is an int only within ±(2^53−1), where every reader reads the same
// number: beyond, it is refused (1152921504606847000 is how canonical JSON
// writes the double 2^60, so reading it as an int would make one text two
// numbers); a number written with a fraction or an exponent is a float.
func TestIntJSONIsLossless(t *testing.T) {
	for i, want := range map[int64]string{
		1<<53 - 1:     `9007199254740991`,
		-(1<<53 - 1):  `-9007199254740991`,
		1 << 53:       `{"$int":"9007199254740992"}`,
		1 << 60:       `{"$int":"1152921504606846976"}`,
		math.MinInt64: `{"$int":"-9223372036854775808"}`,
		math.MaxInt64: `{"$int":"9223372036854775807"}`,
	} {
		assert.Equal(t, want, value.Int(i).String())
		back, err := value.Decode([]byte(want))
		require.NoError(t, err, want)
		assert.True(t, back.Equal(value.Int(i)), want)
	}
	for in, want := range map[string]value.Value{
		`9007199254740991`:      value.Int(1<<53 - 1),
		`-9007199254740991`:     value.Int(-(1<<53 - 1)),
		`1.5e20`:                value.Float(1.5e20),
		`9007199254740992.0`:    value.Float(1 << 53),
		`{"$float":"1e+21"}`:    value.Float(1e21),
		`{"$int":"1152921504"}`: value.Int(1152921504),
	} {
		v, err := value.Decode([]byte(in))
		require.NoError(t, err, in)
		assert.True(t, v.Equal(want), "%s read as %s", in, v)
	}
	for _, in := range []string{`9007199254740992`, `-9007199254740992`, `1152921504606846976`,
		`1152921504606847000`, `-9223372036854775808`, `9007199254740993`, `100000000000000000000`,
		`9223372036854775807`, `{"x":[1152921504606847000]}`} {
		_, err := value.Decode([]byte(in))
		assert.ErrorIs(t, err, kernel.ErrDecode, in)
	}
}
