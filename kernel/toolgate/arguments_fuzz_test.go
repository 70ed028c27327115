package toolgate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/verity-go/verity/internal/canon"
)

// FuzzReadArgumentsAgrees: the one pass that reads a call's arguments
// (scanArguments) accepts exactly what canon.Decode and caseFolded
// accept, and builds the same tree; readArguments says what they say.
func FuzzReadArgumentsAgrees(f *testing.F) {
	var wide, wideFolded strings.Builder
	wide.WriteString(`{"path":"/srv/data/a"`)
	wideFolded.WriteString(`{"path":"/srv/data/a"`)
	for i := range 40 {
		wide.WriteString(`,"m` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1`)
		wideFolded.WriteString(`,"m` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `":1`)
	}
	wide.WriteString(`}`)
	wideFolded.WriteString(`,"PATH":3}`)
	for _, s := range []string{
		`{"path": "/srv/data/a", "Path": "/etc/passwd"}`,
		`{"path": "/srv/data/a", "path": "/etc/passwd"}`,
		`{"path": "/srv/data/a", "o": {"x": [1, {"k": 1, "\u212a": 2}]}}`,
		`{"\u017f": 1, "S": 2}`,
		`{"a\u0000b": "\ud83d\ude00", "e": "\"\\\/\b\f\n\r\t"}`,
		` { "z" : [ ] , "a" : { } , "n" : [ -0 , 1.5e3 , 9007199254740993 ] } `,
		`{"n": 9007199254740992, "m": 1e400}`,
		`{"s": "\ud800"}`,
		`{"a": 1} x`,
		`[1, 2,]`,
		`{"a": 1, "b": [true, false, null, "x"]}`,
		"{\"a\": \"\xff\"}",
		strings.Repeat("[", 513) + strings.Repeat("]", 513),
		strings.Repeat("[", 511) + strings.Repeat("]", 511),
		wide.String(),
		wideFolded.String(),
		`"just a string"`,
		`12`,
		``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, werr := canon.Decode(raw)
		if werr == nil {
			werr = caseFolded(want)
		}
		got, ok := scanArguments(raw)
		switch {
		case ok && werr != nil:
			t.Fatalf("the one pass accepts %q, which canon.Decode and caseFolded refuse: %v", raw, werr)
		case !ok && werr == nil:
			t.Fatalf("the one pass refuses %q, which canon.Decode and caseFolded accept", raw)
		case ok && !reflect.DeepEqual(got, want):
			t.Fatalf("the one pass reads %q as %#v, canon.Decode as %#v", raw, got, want)
		}
		v, err := readArguments(raw)
		if (err == nil) != (werr == nil) || err != nil && err.Error() != werr.Error() {
			t.Fatalf("readArguments(%q): %v, want %v", raw, err, werr)
		}
		if err == nil && !reflect.DeepEqual(v, want) {
			t.Fatalf("readArguments(%q) = %#v, want %#v", raw, v, want)
		}
	})
}
