package canon

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecodeIsStrict(t *testing.T) {
	tree, err := Decode([]byte(` {"n": 1.0, "m": 1, "s": ["x", null, true]} `))
	if err != nil {
		t.Fatal(err)
	}
	m := tree.(map[string]any)
	if m["n"] != json.Number("1.0") || m["m"] != json.Number("1") {
		t.Fatalf("numbers are kept as written: %#v", m)
	}
	for _, bad := range []string{
		`{"a":1,"a":2}`,      // duplicate key
		`{"a":1,"\u0061":2}`, // duplicate after unescaping
		`"\ud800"`,           // lone surrogate
		"\"\xff\"",           // invalid UTF-8
		`9007199254740993`,   // would be rounded
		`{"a":1} {"b":2}`,    // two values
		``,                   // nothing
	} {
		if _, err := Decode([]byte(bad)); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestDecodeIntoStrictFields(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	if err := DecodeInto([]byte(`{"a":1,"b":2}`), &v, false); err != nil || v.A != 1 {
		t.Fatalf("lenient: %v %v", v, err)
	}
	err := DecodeInto([]byte(`{"a":1,"b":2}`), &v, true)
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("strict: an unknown member is ErrSyntax, got %v", err)
	}
	if err := DecodeInto([]byte(`{"a":"x"}`), &v, false); !errors.Is(err, ErrSyntax) {
		t.Fatalf("a type mismatch is ErrSyntax, got %v", err)
	}
}
