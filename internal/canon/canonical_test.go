package canon

import (
	"encoding/binary"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCanonicalAliasesOnlyCanonicalInput(t *testing.T) {
	in := []byte(`{"a":1,"b":[true,null]}`)
	out, err := Canonical(in)
	if err != nil || &out[0] != &in[0] {
		t.Fatalf("canonical input: got %q, %v; want the same bytes", out, err)
	}
	out, err = Canonical([]byte(`{ "b":1.0, "a":"x" }`))
	if err != nil || string(out) != `{"a":"x","b":1}` {
		t.Fatalf("non-canonical input: got %q, %v", out, err)
	}
	if _, err := Canonical([]byte(`{"a":1,"a":2}`)); err == nil {
		t.Fatal("a duplicate key was accepted")
	}
}

// TestPlainWordIsPlainASCIIEightTimes: the eight-at-a-time string scan says
// a word is plain exactly when each of its bytes is plainASCII, for words
// made of the bytes at every boundary of the rule and of any bytes at all.
func TestPlainWordIsPlainASCIIEightTimes(t *testing.T) {
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', 0x23, 0x5b, '\\', 0x5d, 0x7e, 0x7f, 0x80, 0x81, 0xc3, 0xfe, 0xff, 'a'}
	rapid.Check(t, func(t *rapid.T) {
		var b [8]byte
		for i := range b {
			if rapid.Bool().Draw(t, "edge") {
				b[i] = rapid.SampledFrom(edges).Draw(t, "b")
			} else {
				b[i] = rapid.Byte().Draw(t, "b")
			}
		}
		want := true
		for _, c := range b {
			want = want && plainASCII[c]
		}
		if got := plainWord(binary.LittleEndian.Uint64(b[:])); got != want {
			t.Fatalf("plainWord(% x) = %v, want %v", b, got, want)
		}
	})
	// One byte of every value at every position of a plain word.
	for pos := 0; pos < 8; pos++ {
		for c := 0; c < 256; c++ {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			if got := plainWord(binary.LittleEndian.Uint64(b)); got != plainASCII[c] {
				t.Fatalf("plainWord(%q) = %v, want %v", b, got, plainASCII[c])
			}
		}
	}
}

// TestValidLongStrings: strings long enough for the eight-at-a-time scan,
// with a byte the rule cares about at every offset, are judged as
// Transform judges them.
func TestValidLongStrings(t *testing.T) {
	for _, special := range []string{`\"`, `\\`, `\n`, `\u001f`, "\x01", "\x7f", "é", "\xff", "\xc3", `"`, "\u2028"} {
		for n := 0; n < 40; n++ {
			for at := 0; at <= n; at++ {
				body := strings.Repeat("x", at) + special + strings.Repeat("y", n-at)
				in := []byte(`{"k":"` + body + `"}`)
				out, err := Transform(in)
				want := err == nil && string(out) == string(in)
				if got := isCanonical(in); got != want {
					t.Fatalf("isCanonical(%q) = %v, Transform says %v (%v)", in, got, want, err)
				}
			}
		}
	}
}
