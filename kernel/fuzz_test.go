package kernel_test

import (
	"errors"
	"testing"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel"
)

var actionSeeds = []string{
	`{"id":"a","cost":"1.5","effects":[{"op":"increment","key":"x","value":1}]}`,
	`{"id":"a","effects":[{"initial":0,"key":"calls/x","op":"count","value":1},{"initial":0,"key":"x","op":"set","value":1}]}`,
	`{"id":"a","cost":0.001,"effects":[{"op":"set","key":"x","value":{"$float":"1"}},{"op":"delete","key":"y"}]}`,
	`{"id":"a","cost":1e-3,"reversible":true,"tags":["t"],"category":"c","name":"n","description":"d","precondition":"p","postcondition":"q"}`,
	`{"id":"a","effects":[{"op":"append","key":"l","value":[1,1.0,"1",null]},{"op":"remove","key":"l","value":{"$int":"9223372036854775807"}}]}`,
	`{"id":"a","cost":0.0005}`, `{"id":"a","cost":-1}`, `{"id":"a","id":"b"}`, `{"id":"\ud800"}`, `[`, `{}`,
	`{"id":"a","effects":[{"op":"set","key":"x","value":{"$object":{"$int":"1"}}}]}`,
}

// FuzzDecodeAction: decoding never panics; what decodes is valid, and its
// canonical JSON decodes to the same action.
func FuzzDecodeAction(f *testing.F) {
	for _, s := range actionSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := kernel.DecodeAction(b)
		if err != nil {
			return
		}
		if err := kernel.ValidateAction(a); err != nil {
			t.Fatalf("decoded an invalid action: %v", err)
		}
		out, err := a.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := canon.Valid(out); err != nil {
			t.Fatalf("non-canonical output %s: %v", out, err)
		}
		a2, err := kernel.DecodeAction(out)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", out, err)
		}
		out2, _ := a2.MarshalJSON()
		if string(out) != string(out2) {
			t.Fatalf("round trip changed %s to %s", out, out2)
		}
	})
}

// FuzzDecodeState: decoding never panics; a decoded state round-trips with
// the same fingerprint.
func FuzzDecodeState(f *testing.F) {
	for _, s := range []string{`{}`, `{"x":1,"y":1.0,"z":"1","n":null}`, `{"l":[1,[2,{"a":{"$float":"-0"}}]]}`,
		`{"b":{"$int":"-9223372036854775808"}}`, `{"\ue000":1,"😀":2}`, `{"x":1,"x":2}`, `[]`, `{"x":1e400}`, `{"$int":"1"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := kernel.DecodeState(b)
		if err != nil {
			if !errors.Is(err, kernel.ErrDecode) {
				t.Fatalf("error without ErrDecode: %v", err)
			}
			return
		}
		out, _ := s.MarshalJSON()
		if err := canon.Valid(out); err != nil {
			t.Fatalf("non-canonical state %s: %v", out, err)
		}
		s2, err := kernel.DecodeState(out)
		if err != nil || !s2.Equal(s) || s2.Fingerprint() != s.Fingerprint() {
			t.Fatalf("round trip of %s: %v", out, err)
		}
	})
}

// FuzzParseCost: never panics, never rounds: an accepted cost prints back
// to a decimal that parses to the same cost.
func FuzzParseCost(f *testing.F) {
	for _, s := range []string{"0", "1.5", "0.001", "0.0005", "1e3", "-1", "NaN", "9223372036854775.807", "1e-1000000", "00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := kernel.ParseCost(s)
		if err != nil {
			if !errors.Is(err, kernel.ErrInvalidCost) {
				t.Fatalf("error without ErrInvalidCost: %v", err)
			}
			return
		}
		if c < 0 {
			t.Fatalf("negative cost %d from %q", c, s)
		}
		back, err := kernel.ParseCost(c.String())
		if err != nil || back != c {
			t.Fatalf("%q → %d → %q → %d, %v", s, c, c.String(), back, err)
		}
	})
}

// FuzzEvaluate is the guard fuzz: any decodable action against a fixed
// state never panics, and a rejection changes nothing.
func FuzzEvaluate(f *testing.F) {
	for _, s := range actionSeeds {
		f.Add([]byte(s))
	}
	k, err := kernel.New(kernel.Config{Budget: 5 * kernel.Unit, MinActionCost: 1, Invariants: []kernel.Invariant{nonNegative("x")}, EmergencyActions: []string{"hover"}})
	if err != nil {
		f.Fatal(err)
	}
	s, err := kernel.DecodeState([]byte(`{"x":1,"y":2.5,"l":[1,1],"s":"str","n":null}`))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := kernel.DecodeAction(b)
		if err != nil {
			return
		}
		ks := k.Start()
		s1, ks1, rec, err := k.Execute(ks, s, a, "e")
		if err != nil {
			if s1 != s || ks1 != ks {
				t.Fatal("rejection changed something")
			}
			return
		}
		s2, _, _, err := k.Rollback(ks1, s1, rec)
		if err != nil || !s2.Equal(s) {
			t.Fatalf("rollback: %v", err)
		}
	})
}
