package canon

import "testing"

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
