package kernel_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/value"
)

// FuzzDecodeValueAgrees: value.Decode, DecodeState and DecodeAction accept
// exactly the texts the readers they replaced accepted, and read them as
// the same values (the same canonical JSON; the same fingerprint).
func FuzzDecodeValueAgrees(f *testing.F) {
	for _, s := range []string{`1`, `-0`, `1.0`, `9007199254740992`, `{"$int":"9007199254740993"}`, `{"$int":1}`,
		`{"$float":"1e3"}`, `{"$float":"NaN"}`, `{"$object":{"$int":"1"}}`, `{"$object":{"$int":"1"},"a":1}`,
		`{"$int":"1","a":2}`, `[1,[2,{"b":null,"a":"x"}]]`, `{"a":1,"\u0061":2}`, `"\ud800"`,
		`{"id":"a","cost":1.5,"effects":[{"op":"set","key":"k","value":{"$int":"7"}},{"op":"count","key":"c","value":1,"initial":0}],"tags":["t"]}`,
		`{"id":"a","cost":"1.5","effects":[{"op":"delete","key":"k"}],"reversible":true}`, `{"id":"","x":1}`,
		`{"id":"a","tags":null}`, `{"id":"a","effects":[{"op":"set","key":"k"}]}`,
		strings.Repeat("[", 511) + strings.Repeat("]", 511), strings.Repeat(`{"$object":`, 300) + `{}` + strings.Repeat("}", 300),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := value.Decode(data)
		ov, oerr := kernel.OldDecodeValue(data)
		if (err == nil) != (oerr == nil) {
			t.Fatalf("DecodeValue %q:\nold: %v\nnew: %v", data, oerr, err)
		}
		if err == nil && !bytes.Equal(mustJSON(t, v), mustJSON(t, ov)) {
			t.Fatalf("DecodeValue %q: old %s, new %s", data, mustJSON(t, ov), mustJSON(t, v))
		}
		s, err := kernel.DecodeState(data)
		os, oerr := kernel.OldDecodeState(data)
		if (err == nil) != (oerr == nil) {
			t.Fatalf("DecodeState %q:\nold: %v\nnew: %v", data, oerr, err)
		}
		if err == nil && s.Fingerprint() != os.Fingerprint() {
			t.Fatalf("DecodeState %q: not the same state", data)
		}
		a, err := kernel.DecodeAction(data)
		oa, oerr := kernel.OldDecodeAction(data)
		if (err == nil) != (oerr == nil) {
			t.Fatalf("DecodeAction %q:\nold: %v\nnew: %v", data, oerr, err)
		}
		if err == nil && !bytes.Equal(mustJSON(t, a), mustJSON(t, oa)) {
			t.Fatalf("DecodeAction %q: old %s, new %s", data, mustJSON(t, oa), mustJSON(t, a))
		}
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
