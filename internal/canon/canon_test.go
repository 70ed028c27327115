package canon

// The guarantees of the package and the tests that check them:
//
//   - Transform agrees with the public RFC 8785 vectors in testdata/jcs
//     (TestRFC8785Vectors) and with Appendix B's number table
//     (TestRFC8785AppendixBNumbers in number_test.go).
//   - Every rejection named in the package documentation happens, with its
//     sentinel (TestRejections, TestMaxDepthAccepted, TestMarshalMaxDepth);
//     an integer literal is refused exactly when a double would round it
//     (TestIntegerLiteralBoundaries, TestIntegerLiteralRefusedIffRounded),
//     and every double is accepted as its canonical text
//     (TestEveryDoubleIsAcceptedAsItsCanonicalText).
//   - Transform is idempotent and never panics; its output is valid and it
//     never accepts what encoding/json rejects (TestTransformIdempotent,
//     FuzzTransform).
//   - Valid's one-pass fast path agrees with a full Transform
//     (TestValidFastPathAgrees), and Canonical aliases its input only when
//     that input is canonical (TestCanonicalAliasesOnlyCanonicalInput).
//   - Marshal writes what Transform would write for the same value
//     (TestMarshal, TestMarshalIntegersThatAreDoubles,
//     TestMarshalFloat32AgreesWithTransform).
//   - Decode and DecodeInto refuse what canonical JSON refuses, and
//     DecodeInto's strict mode refuses unknown fields (TestDecodeIsStrict,
//     TestDecodeIntoStrictFields in decode_test.go).

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestRFC8785Vectors(t *testing.T) {
	inputs, err := filepath.Glob("testdata/jcs/input/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		name := filepath.Base(in)
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			require.NoError(t, err)
			want, err := os.ReadFile(filepath.Join("testdata/jcs/output", name))
			require.NoError(t, err)
			got, err := Transform(src)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got))
			require.NoError(t, Valid(want), "the expected output is itself canonical")
		})
	}
}

func TestNumberFormatting(t *testing.T) {
	cases := map[string]string{
		"0": "0", "-0": "0", "-0.0": "0", "1": "1", "-1": "-1",
		"1E30": "1e+30", "1e21": "1e+21", "1e20": "100000000000000000000", "1.5e20": "150000000000000000000",
		"4.50": "4.5", "2e-3": "0.002", "0.000001": "0.000001", "0.0000001": "1e-7",
		"123456789012345.6": "123456789012345.6", "1.5": "1.5",
		"9007199254740991": "9007199254740991", "-9007199254740991": "-9007199254740991",
		"5e-324": "5e-324", "1.7976931348623157e308": "1.7976931348623157e+308",
		"333333333.33333329": "333333333.3333333", "100": "100", "1.0": "1",
		"9007199254740991.0": "9007199254740991", "9007199254740992.0": "9007199254740992", "1e16": "10000000000000000",
		// A fraction or exponent may round to the nearest double.
		"9007199254740993.0": "9007199254740992", "1.2345678901234567891e19": "12345678901234567000",
	}
	for in, want := range cases {
		got, err := Transform([]byte(in))
		if want == "" {
			assert.ErrorIs(t, err, ErrUnsafeInteger, in)
			continue
		}
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, string(got), in)
		}
	}
}

func TestRejections(t *testing.T) {
	cases := []struct {
		in   string
		want error
		at   int
	}{
		{`{"a":1,"a":2}`, ErrDuplicateKey, 7},
		{`{"b":1,"a":2,"b":3}`, ErrDuplicateKey, 0},
		{`{"a":1,"\u0061":2}`, ErrDuplicateKey, 7},
		{`"\ud800"`, ErrLoneSurrogate, 1},
		{`"\udc00\ud800"`, ErrLoneSurrogate, 1},
		{`"\ud800\u0041"`, ErrLoneSurrogate, 1},
		{"\"\xff\"", ErrInvalidUTF8, 1},
		{`1e400`, ErrNonFinite, 0},
		{`-1e400`, ErrNonFinite, 0},
		{`NaN`, ErrSyntax, 0},
		{`Infinity`, ErrSyntax, 0},
		{`9007199254740993`, ErrUnsafeInteger, 0},
		{`[1, -9007199254740993]`, ErrUnsafeInteger, 4},
		{`12345678901234567891`, ErrUnsafeInteger, 0},
		{`{"a":1,}`, ErrSyntax, 7},
		{`[1,]`, ErrSyntax, 3},
		{`01`, ErrSyntax, 0},
		{`1 2`, ErrSyntax, 2},
		{``, ErrSyntax, 0},
		{`"abc`, ErrSyntax, 4},
		{"\"a\tb\"", ErrSyntax, 2},
		{`"\x"`, ErrSyntax, 1},
		{`{"a" 1}`, ErrSyntax, 5},
		{`tru`, ErrSyntax, 0},
		{strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), ErrTooDeep, MaxDepth},
	}
	for _, c := range cases {
		_, err := Transform([]byte(c.in))
		require.ErrorIs(t, err, c.want, c.in)
		var se *SyntaxError
		require.True(t, errors.As(err, &se), c.in)
		assert.Equal(t, c.at, se.Offset, "offset for %q: %v", c.in, err)
	}
}

func TestUnsafeIntegerErrorSaysUseStrings(t *testing.T) {
	_, err := Transform([]byte(`{"amount":12345678901234567891}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "string")
}

func TestMaxDepthAccepted(t *testing.T) {
	in := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	out, err := Transform([]byte(in))
	require.NoError(t, err)
	assert.Equal(t, in, string(out))
}

func TestKeyOrderUTF16(t *testing.T) {
	// U+FB33 (BMP, above the surrogate range) sorts after U+1F602 in UTF-16
	// (0xD83D...) but before it in UTF-8 byte order.
	out, err := Transform([]byte(`{"\ufb33":1,"\ud83d\ude02":2,"a":3}`))
	require.NoError(t, err)
	assert.Equal(t, "{\"a\":3,\"\U0001F602\":2,\"\uFB33\":1}", string(out))
}

func TestStringEscaping(t *testing.T) {
	out, err := Transform([]byte(`"\u003c/script\u003e \u0007\u001f\u007f\/\"\\ é"`))
	require.NoError(t, err)
	assert.Equal(t, "\"</script> \\u0007\\u001f\u007f/\\\"\\\\ é\"", string(out))
}

func TestValidFastPathAgrees(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/jcs/output/*.json")
	for _, in := range inputs {
		b, _ := os.ReadFile(in)
		assert.True(t, isCanonical(b), in)
	}
	for _, s := range []string{`{"b":1,"a":2}`, `{"a":1,"a":1}`, `-0`, `1.0`, `1E3`, `"\u0041"`, `"\/"`, `"\u000a"`, `"\u001F"`,
		`9007199254740992`, `9007199254740993`, `1152921504606846976`, `1152921504606847000`, `1000000000000000000000`, `-0`, `01`, `[1,]`, `{"a":1,}`, ` 1`, `1 `, `"\ud83d\ude02"`, "\"\x01\"", "\"\xff\""} {
		out, err := Transform([]byte(s))
		want := err == nil && string(out) == s
		assert.Equal(t, want, isCanonical([]byte(s)), s)
	}
	for _, s := range []string{`"\u001f"`, `"\n"`, `{"\u0001":1,"a":2}`, `1e+30`, `0.002`, `-1`, `[]`, `{}`, `""`} {
		assert.True(t, isCanonical([]byte(s)), s)
	}
}

func TestValid(t *testing.T) {
	require.NoError(t, Valid([]byte(`{"a":[1,2.5,"x"],"b":null}`)))
	for _, in := range []string{`{"b":1,"a":2}`, `{ "a":1}`, `1.50`, `"\u0041"`, `[1,2 ]`} {
		err := Valid([]byte(in))
		assert.ErrorIs(t, err, ErrNotCanonical, in)
	}
	assert.ErrorIs(t, Valid([]byte(`{`)), ErrSyntax)
}

func TestMarshal(t *testing.T) {
	type inner struct {
		Z string  `json:"z"`
		A float64 `json:"a"`
	}
	v := map[string]any{
		"html":   "<&>",
		"n":      int64(-42),
		"f":      1e30,
		"s":      []string{"b", "a"},
		"struct": inner{Z: "\u2028", A: 0.1},
		"raw":    json.RawMessage(`{"y":1, "x":2}`),
		"num":    json.Number("4.50"),
		"nil":    nil,
		"list":   []any{true, false, uint8(7)},
		"m":      map[string]string{"k": "v"},
	}
	out, err := Marshal(v)
	require.NoError(t, err)
	assert.Equal(t, `{"f":1e+30,"html":"<&>","list":[true,false,7],"m":{"k":"v"},"n":-42,"nil":null,"num":4.5,"raw":{"x":2,"y":1},"s":["b","a"],"struct":{"a":0.1,"z":"`+"\u2028"+`"}}`, string(out))
	require.NoError(t, Valid(out))

	for _, bad := range []any{math.NaN(), math.Inf(1), int64(1)<<53 + 1, uint64(1)<<60 + 1, int64(math.MaxInt64), uint64(math.MaxUint64), "\xff", func() {}} {
		_, err := Marshal(bad)
		assert.Error(t, err, "%#v", bad)
	}
}

// TestTransformIdempotent: canonical output is a fixed point of Transform
// and agrees with encoding/json on the value.
func TestTransformIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genJSON().Draw(t, "v")
		raw, err := json.Marshal(v)
		if err != nil {
			t.Skip("encoding/json refused the value")
		}
		once, err := Transform(raw)
		if err != nil {
			t.Fatalf("Transform(%s): %v", raw, err)
		}
		twice, err := Transform(once)
		if err != nil || string(once) != string(twice) {
			t.Fatalf("not idempotent: %s -> %s (%v)", once, twice, err)
		}
		if err := Valid(once); err != nil {
			t.Fatalf("Valid(%s): %v", once, err)
		}
		var a, b any
		_ = json.Unmarshal(raw, &a)
		if err := json.Unmarshal(once, &b); err != nil {
			t.Fatalf("canonical output is not JSON: %v", err)
		}
		ra, _ := json.Marshal(a)
		rb, _ := json.Marshal(b)
		if string(ra) != string(rb) {
			t.Fatalf("value changed: %s vs %s", ra, rb)
		}
		direct, err := Marshal(v)
		if err != nil || string(direct) != string(once) {
			t.Fatalf("Marshal disagrees with Transform: %s vs %s (%v)", direct, once, err)
		}
	})
}

func genJSON() *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any { return genValue(t, 0) })
}

func genValue(t *rapid.T, depth int) any {
	kind := rapid.IntRange(0, 6).Draw(t, "kind")
	if depth > 3 && kind >= 5 {
		kind = 0
	}
	switch kind {
	case 0:
		return rapid.String().Draw(t, "s")
	case 1:
		return float64(rapid.Int64Range(-MaxSafeInteger, MaxSafeInteger).Draw(t, "i"))
	case 2:
		f := rapid.Float64().Draw(t, "f")
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return 0.5
		}
		if f == 0 {
			return 0.0 // -0 canonicalises to 0 by design (TestNumberFormatting)
		}
		return f
	case 3:
		return rapid.Bool().Draw(t, "b")
	case 4:
		return nil
	case 5:
		n := rapid.IntRange(0, 4).Draw(t, "n")
		a := make([]any, n)
		for i := range a {
			a[i] = genValue(t, depth+1)
		}
		return a
	default:
		n := rapid.IntRange(0, 4).Draw(t, "n")
		m := map[string]any{}
		for i := 0; i < n; i++ {
			m[rapid.String().Draw(t, "k")] = genValue(t, depth+1)
		}
		return m
	}
}

func FuzzTransform(f *testing.F) {
	inputs, _ := filepath.Glob("testdata/jcs/input/*.json")
	for _, in := range inputs {
		b, _ := os.ReadFile(in)
		f.Add(b)
	}
	for _, s := range []string{`{"a":1,"a":2}`, `"\ud800"`, `9007199254740992`, `1e400`, `[[[]]]`, `{"\ufb33":1,"\ud83d\ude02":2}`, `-0.0`, `1.5e20`,
		`9007199254740993`, `-9007199254740994`, `1152921504606846976`, `1152921504606847000`, `1152921504606847001`,
		`1000000000000000000000`, `999999999999999900000`, `295147905179352830000`, `295147905179352825856`,
		`12345678901234567891`, `1e16`, `9007199254740992.0`, `1` + strings.Repeat("0", 308), `1` + strings.Repeat("0", 309)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Transform(in)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output is not valid JSON: %q", out)
		}
		var v any
		if json.Unmarshal(in, &v) != nil {
			t.Fatalf("accepted what encoding/json rejects: %q", in)
		}
		again, err := Transform(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
		if !isCanonical(out) {
			t.Fatalf("fast check rejects canonical text %q", out)
		}
		if isCanonical(in) != (string(in) == string(out)) {
			t.Fatalf("fast check disagrees with Transform on %q", in)
		}
	})
}

func BenchmarkTransform(b *testing.B) {
	in, err := os.ReadFile("testdata/jcs/input/structures.json")
	require.NoError(b, err)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Transform(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValid200(b *testing.B) {
	in := []byte(`{"action":"deploy-service","cost":1500,"effects":[{"key":"replicas","op":"increment","value":2}],"id":"0193a1b2-7c4d-7e8f-9a0b-1c2d3e4f5a6b","ok":true,"reason":"scale out before the evening peak"}`)
	require.NoError(b, Valid(in))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := Valid(in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMarshalMaxDepth: Marshal applies Transform's depth limit to the whole
// value, counting the Go containers around a raw or encoding/json part, so
// that it never writes a text Transform and Valid would refuse.
func TestMarshalMaxDepth(t *testing.T) {
	nest := func(levels int, inner any) any {
		v := inner
		for i := 0; i < levels; i++ {
			v = []any{v}
		}
		return v
	}
	deep := strings.Repeat("[", MaxDepth/2) + strings.Repeat("]", MaxDepth/2)
	for name, c := range map[string]struct {
		v  any
		ok bool
	}{
		"MaxDepth Go arrays":          {nest(MaxDepth-1, []any{}), true},
		"MaxDepth+1 Go arrays":        {nest(MaxDepth, []any{}), false},
		"Go arrays around raw JSON":   {nest(MaxDepth/2, json.RawMessage(deep)), true},
		"Go arrays around raw JSON+1": {nest(MaxDepth/2+1, json.RawMessage(deep)), false},
		"Go arrays around a struct":   {nest(MaxDepth/2+1, struct{ A json.RawMessage }{json.RawMessage(deep)}), false},
	} {
		out, err := Marshal(c.v)
		if c.ok {
			require.NoError(t, err, name)
			require.NoError(t, Valid(out), name)
		} else {
			require.ErrorIs(t, err, ErrTooDeep, name)
		}
	}
}

// TestMarshalFloat32AgreesWithTransform: a float32 is encoded as
// encoding/json writes it (its shortest float32 digits) whether it stands
// alone, in a []any or in a struct, so one value never has two canonical
// forms.
func TestMarshalFloat32AgreesWithTransform(t *testing.T) {
	for _, f := range []float32{0.1, 1.5, 3.4028235e38, 1e-45, -2.5e-7, 16777216} {
		raw, err := json.Marshal([]any{f, struct{ F float32 }{f}})
		require.NoError(t, err)
		want, err := Transform(raw)
		require.NoError(t, err)
		got, err := Marshal([]any{f, struct{ F float32 }{f}})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%v", f)
	}
}

// TestMarshalNumberMustBeANumber: a json.Number holds a number literal, as
// encoding/json insists; Marshal must not splice other JSON in through it.
func TestMarshalNumberMustBeANumber(t *testing.T) {
	for _, n := range []json.Number{`"x"`, `{"a":1}`, `[1]`, `true`, `null`, ` 1`, `1 `} {
		_, jerr := json.Marshal(n)
		require.Error(t, jerr, "encoding/json refuses %q", n)
		_, err := Marshal(map[string]any{"n": n})
		assert.ErrorIs(t, err, ErrSyntax, "%q", n)
	}
	out, err := Marshal(json.Number("-4.50e1"))
	require.NoError(t, err)
	assert.Equal(t, "-45", string(out))
}
