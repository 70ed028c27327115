package canon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// canonicalCheckSeeds are texts on both sides of every rule the check
// applies: key order by UTF-16 code units with and without escapes,
// duplicates after unescaping, escapes, UTF-8, numbers, depth.
var canonicalCheckSeeds = []string{
	`{"a":1,"b":2}`, `{"b":1,"a":2}`, `{"a":1,"a":1}`,
	`{"\n":1,"a":2}`, `{"a":1,"\n":2}`, `{"\"":1,"\\":2}`, `{"\\":1,"\"":2}`,
	`{"\u0001":1,"\u0002":2}`, `{"\u0002":1,"\u0001":2}`, `{"\u0001":1,"\u0001":2}`,
	`{"a\n":1,"a\t":2}`, `{"a\t":1,"a\n":2}`, `{"\t":1,"\t":2}`, `{"\u001f":1," ":2}`,
	"{\"\uff61\":1,\"\U0001f600\":2}", "{\"\U0001f600\":1,\"\uff61\":2}", "{\"\\n\U0001f600\":1,\"\\n\uff61\":2}", "{\"\\n\uff61\":1,\"\\n\U0001f600\":2}",
	`{"a":{"b":[1,"x",true,false,null,{}]},"c":[]}`, `"\u00"`, `"\u000A"`, `"\u000a"`, `"\u0020"`, `"\/"`,
	"\"\xff\"", "\"\xed\xa0\x80\"", "\"\x01\"", `1.5`, `1.50`, `-0`, `0`, `-1`, `1e21`, `1e+21`, `100000000000000000000`,
	`9007199254740993`, `1152921504606847000`, `1152921504606846976`, `[1,]`, `{"a":1,}`, ` 1`, `1 `,
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	`{"id":"` + strings.Repeat("x", 40) + `\"` + strings.Repeat("y", 9) + `"}`,
}

// FuzzCanonicalCheck: the one-pass check (isCanonical) accepts exactly
// what the reference check (refIsCanonical) accepts, and both exactly the
// texts Transform leaves unchanged.
func FuzzCanonicalCheck(f *testing.F) {
	for _, s := range canonicalCheckSeeds {
		f.Add([]byte(s))
	}
	inputs, _ := filepath.Glob("testdata/jcs/output/*.json")
	for _, in := range inputs {
		b, _ := os.ReadFile(in)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Transform(in)
		want := err == nil && string(out) == string(in)
		if got := isCanonical(in); got != want {
			t.Fatalf("isCanonical(%q) = %v, Transform says %v", in, got, want)
		}
		if ref := refIsCanonical(in); ref != want {
			t.Fatalf("refIsCanonical(%q) = %v, Transform says %v", in, ref, want)
		}
		if err == nil && !isCanonical(out) {
			t.Fatalf("isCanonical refuses Transform's output %q", out)
		}
	})
}

// TestCanonicalCheckAllocatesNothing: the check allocates nothing, keys
// with escapes included.
func TestCanonicalCheckAllocatesNothing(t *testing.T) {
	for _, s := range canonicalCheckSeeds {
		in := []byte(s)
		if n := testing.AllocsPerRun(20, func() { isCanonical(in) }); n != 0 {
			t.Errorf("isCanonical(%q): %v allocations", s, n)
		}
	}
}

// TestCanonicalCheckSeeds: the seeds hold both answers, and each agrees
// with Transform.
func TestCanonicalCheckSeeds(t *testing.T) {
	yes, no := 0, 0
	for _, s := range canonicalCheckSeeds {
		out, err := Transform([]byte(s))
		want := err == nil && string(out) == s
		if got := isCanonical([]byte(s)); got != want {
			t.Errorf("isCanonical(%q) = %v, Transform says %v", s, got, want)
		}
		if want {
			yes++
		} else {
			no++
		}
	}
	if yes < 10 || no < 10 {
		t.Errorf("seeds: %d canonical, %d not", yes, no)
	}
}
