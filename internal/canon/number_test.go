package canon

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestRFC8785AppendixBNumbers: the number serialisation samples of RFC 8785
// Appendix B (IEEE-754 bits → text) are written as the RFC says, and each
// text is accepted back as it is.
func TestRFC8785AppendixBNumbers(t *testing.T) {
	for _, c := range []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		f := math.Float64frombits(c.bits)
		assert.Equal(t, c.want, string(AppendFloat(nil, f)), "%016x", c.bits)
		out, err := Marshal(f)
		if assert.NoError(t, err, c.want) {
			assert.Equal(t, c.want, string(out))
		}
		out, err = Transform([]byte(c.want))
		if assert.NoError(t, err, c.want) {
			assert.Equal(t, c.want, string(out))
		}
		assert.NoError(t, Valid([]byte(c.want)), c.want)
	}
}

// TestIntegerLiteralBoundaries: an integer literal is accepted when it is
// exactly a double or is a double's canonical text, and is written as RFC
// 8785 writes that double; any other is refused with ErrUnsafeInteger.
func TestIntegerLiteralBoundaries(t *testing.T) {
	accepted := map[string]string{
		"9007199254740991":        "9007199254740991",
		"9007199254740992":        "9007199254740992",
		"-9007199254740992":       "-9007199254740992",
		"9007199254740994":        "9007199254740994",
		"10000000000000000":       "10000000000000000",
		"100000000000000000000":   "100000000000000000000",
		"150000000000000000000":   "150000000000000000000",
		"1152921504606846976":     "1152921504606847000", // 2^60, exact
		"1152921504606847000":     "1152921504606847000", // its canonical text
		"-1152921504606846976":    "-1152921504606847000",
		"9223372036854775808":     "9223372036854776000", // 2^63
		"-9223372036854775808":    "-9223372036854776000",
		"18446744073709551616":    "18446744073709552000",  // 2^64
		"295147905179352825856":   "295147905179352830000", // 2^68
		"295147905179352830000":   "295147905179352830000",
		"999999999999999900000":   "999999999999999900000",
		"999999999999999868928":   "999999999999999900000", // its exact value
		"1000000000000000000000":  "1e+21",
		"-1000000000000000000000": "-1e+21",
		"1180591620717411303424":  "1.1805916207174113e+21", // 2^70
		// 2^1023, exactly
		"89884656743115795386465259539451236680898848947115328636715040578866337902750481566354238661203768010560056939935696678829394884407208311246423715319737062188883946712432742638151109800623047059726541476042502884419075341171231440736956555270413618581675255342293149119973622969239858152417678164812112068608": "8.98846567431158e+307",
	}
	for in, want := range accepted {
		out, err := Transform([]byte(in))
		if !assert.NoError(t, err, in) {
			continue
		}
		assert.Equal(t, want, string(out), in)
		assert.NoError(t, Valid(out), in)
		if in != want {
			assert.ErrorIs(t, Valid([]byte(in)), ErrNotCanonical, in)
		}
	}
	for _, in := range []string{
		"9007199254740993", "-9007199254740993", "9007199254740995",
		"12345678901234567891", "1152921504606847001", "1152921504606846977",
		"9223372036854775807", "18446744073709551615", "295147905179352830001",
		"1000000000000000000001", "999999999999999999999",
		"1" + strings.Repeat("0", 309), // 1e309 overflows
		"1" + strings.Repeat("0", 400),
	} {
		doc := `{"n":[` + in + `]}`
		_, err := Transform([]byte(doc))
		require.ErrorIs(t, err, ErrUnsafeInteger, in)
		var se *SyntaxError
		require.True(t, errors.As(err, &se))
		assert.Equal(t, 6, se.Offset, in)
		assert.Equal(t, in, se.Detail)
		assert.Contains(t, err.Error(), "string")
		assert.ErrorIs(t, Valid([]byte(doc)), ErrUnsafeInteger, in)
	}
}

// TestMarshalWritesIntegersWithTheirOwnDigits: Marshal writes an integer
// literal only when canonical JSON spells it with its own digits, so that
// decoding it into a Go integer gives back the value that was marshalled
// (int64(1)<<60 would come back as 1152921504606847000). A float64 is
// written as RFC 8785 writes it.
func TestMarshalWritesIntegersWithTheirOwnDigits(t *testing.T) {
	for _, v := range []any{
		int64(1) << 53, -(int64(1) << 53), int64(1)<<53 + 2, int64(1e16), uint64(1e19),
		int64(MaxSafeInteger), -int64(MaxSafeInteger), uint32(math.MaxUint32), int8(-128),
	} {
		digits := string(must(json.Marshal(v)))
		got, err := Marshal(v)
		require.NoError(t, err, digits)
		assert.Equal(t, digits, string(got))
		got, err = Marshal(struct{ N any }{v}) // through encoding/json
		require.NoError(t, err, digits)
		assert.Equal(t, `{"N":`+digits+`}`, string(got))
		var back int64
		if u, ok := v.(uint64); !ok || u <= math.MaxInt64 {
			require.NoError(t, DecodeInto(got[5:len(got)-1], &back, false))
			assert.Equal(t, digits, strconv.FormatInt(back, 10), "reads back as itself")
		}
	}
	for _, v := range []any{
		int64(1)<<53 + 1, -(int64(1)<<53 + 1), int64(math.MaxInt64), int64(math.MinInt64 + 1),
		uint64(1)<<60 + 1, uint64(math.MaxUint64), uint(1)<<63 + 1,
		int64(1) << 60, int64(math.MinInt64), uint64(1) << 63, int(1) << 62, uint(3) << 60,
		json.Number("1152921504606846976"), json.RawMessage(`[1152921504606846976]`),
	} {
		_, err := Marshal(v)
		assert.ErrorIs(t, err, ErrUnsafeInteger, "%v", v)
		_, err = Marshal(struct{ N any }{v})
		assert.ErrorIs(t, err, ErrUnsafeInteger, "%v in a struct", v)
	}
	for f, want := range map[float64]string{1.5e20: "150000000000000000000", 1 << 60: "1152921504606847000", 1e21: "1e+21", -1e16: "-10000000000000000", 0.5: "0.5"} {
		got, err := Marshal(f)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
		got, err = Marshal(json.Number(strconv.FormatFloat(f, 'g', -1, 64)))
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// genDouble draws finite doubles, often integral ones of any size.
func genDouble() *rapid.Generator[float64] {
	return rapid.Custom(func(t *rapid.T) float64 {
		var f float64
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 0:
			f = rapid.Float64().Draw(t, "f")
		case 1:
			f = math.Float64frombits(rapid.Uint64().Draw(t, "bits"))
		default: // an integral double from 2^52 to about 2^150
			m := rapid.Int64Range(1<<52, 1<<53-1).Draw(t, "mantissa")
			f = math.Ldexp(float64(m), rapid.IntRange(0, 100).Draw(t, "shift"))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0.5
		}
		if rapid.Bool().Draw(t, "neg") {
			f = -f
		}
		return f
	})
}

// TestEveryDoubleIsAcceptedAsItsCanonicalText: the RFC 8785 text of any
// finite double is accepted by Transform and Valid, is a fixed point, and
// reads back as the same double; Marshal writes the same text.
func TestEveryDoubleIsAcceptedAsItsCanonicalText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := genDouble().Draw(t, "f")
		text := AppendFloat(nil, f)
		out, err := Transform(text)
		if err != nil || string(out) != string(text) {
			t.Fatalf("Transform(%s) = %s, %v", text, out, err)
		}
		if err := Valid(text); err != nil {
			t.Fatalf("Valid(%s): %v", text, err)
		}
		back, err := strconv.ParseFloat(string(text), 64)
		if err != nil || back != f && !(f == 0 && back == 0) {
			t.Fatalf("%s reads back as %v, want %v (%v)", text, back, f, err)
		}
		if m, err := Marshal(f); err != nil || string(m) != string(text) {
			t.Fatalf("Marshal(%v) = %s, %v; want %s", f, m, err, text)
		}
	})
}

// genIntLiteral draws integer literals near the edge of what doubles hold:
// random digit strings, exact values and canonical texts of large integral
// doubles, and those moved by a few units.
func genIntLiteral() *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		var n big.Int
		switch rapid.IntRange(0, 2).Draw(t, "shape") {
		case 0:
			digits := rapid.StringMatching(`[1-9][0-9]{0,29}`).Draw(t, "digits")
			n.SetString(digits, 10)
		case 1:
			f := math.Abs(genDouble().Draw(t, "f"))
			new(big.Float).SetFloat64(math.Trunc(f)).Int(&n)
		default:
			f := math.Abs(genDouble().Draw(t, "f"))
			n.SetString(strconv.FormatFloat(math.Trunc(f), 'f', -1, 64), 10)
		}
		n.Add(&n, big.NewInt(rapid.SampledFrom([]int64{0, 0, 0, 1, -1, 1000}).Draw(t, "delta")))
		if rapid.Bool().Draw(t, "neg") {
			n.Neg(&n)
		}
		return n.String()
	})
}

// TestIntegerLiteralRefusedIffRounded: Transform accepts an integer literal
// iff math/big says it is exactly a double or it is that double's canonical
// text, writes it as that double's canonical text, and Valid agrees.
func TestIntegerLiteralRefusedIffRounded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lit := genIntLiteral().Draw(t, "lit")
		var n big.Int
		n.SetString(lit, 10)
		f, acc := new(big.Float).SetInt(&n).Float64()
		canonical := !math.IsInf(f, 0) && string(AppendFloat(nil, f)) == lit
		want := acc == big.Exact || canonical

		out, err := Transform([]byte(lit))
		switch {
		case want && err != nil:
			t.Fatalf("Transform(%s) refused a literal that is a double: %v", lit, err)
		case want && string(out) != string(AppendFloat(nil, f)):
			t.Fatalf("Transform(%s) = %s, want %s", lit, out, AppendFloat(nil, f))
		case !want && !errors.Is(err, ErrUnsafeInteger):
			t.Fatalf("Transform(%s) = %s, %v; want ErrUnsafeInteger", lit, out, err)
		}
		if got := Valid([]byte(lit)) == nil; got != (want && string(out) == lit) {
			t.Fatalf("Valid(%s) = %v disagrees with Transform (%s, %v)", lit, got, out, err)
		}
	})
}

// BenchmarkValidLargeNumbers: the fast path stays allocation-free for
// integers beyond 2^53.
func BenchmarkValidLargeNumbers(b *testing.B) {
	in := []byte(`[9007199254740992,1152921504606847000,150000000000000000000,295147905179352830000,1e+21,-12345678.9]`)
	require.NoError(b, Valid(in))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Valid(in); err != nil {
			b.Fatal(err)
		}
	}
}
