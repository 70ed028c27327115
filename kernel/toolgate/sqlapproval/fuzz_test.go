package sqlapproval

import (
	"errors"
	"slices"
	"testing"
)

// FuzzDecodeNames: no column value makes decodeNames panic; a refused
// one wraps ErrInvalid; an accepted one is a list of at most MaxNames
// valid names that encodes back to a column decoding to the same list.
func FuzzDecodeNames(f *testing.F) {
	for _, s := range []string{`[]`, `["human"]`, `["group:ops","group:ops"]`, `[null]`, `null`, `{}`, `[1]`, `["a"] x`,
		`["\u0000"]`, `[""]`, "[\"\xff\"]", `["a","b"`, `"a"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := decodeNames("c", s)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if err := checkNames("c", names); err != nil {
			t.Fatalf("accepted names that do not check: %v", err)
		}
		again, err := decodeNames("c", encodeNames(names))
		if err != nil || !slices.Equal(again, names) {
			t.Fatalf("round trip: %q → %q, %v", names, again, err)
		}
	})
}
