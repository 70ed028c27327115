package pin_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/kernel/toolgate/pin"
)

// TestHashFollowsTheJCSVectors: a definition is hashed over its RFC 8785
// form — each public JCS vector's input, as a member of a definition,
// hashes as its canonical output does, and the hash is the SHA-256 of
// that output's bytes.
func TestHashFollowsTheJCSVectors(t *testing.T) {
	inputs, err := filepath.Glob("../../../internal/canon/testdata/jcs/input/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no JCS vectors: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			input, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			output, err := os.ReadFile(filepath.Join(filepath.Dir(in), "..", "output", filepath.Base(in)))
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := pin.HashDefinition([]byte(`{"value": ` + string(input) + `, "name": "t"}`))
			if err != nil {
				t.Fatal(err)
			}
			want := sha256.Sum256([]byte(`{"name":"t","value":` + strings.TrimSpace(string(output)) + `}`))
			if got != "sha256:"+hex.EncodeToString(want[:]) {
				t.Fatalf("hash %s, want the SHA-256 of the canonical output", got)
			}
		})
	}
}

// definitionGen draws a tool definition as a tree: every member a
// server may send, with nested values.
func definitionGen() *rapid.Generator[map[string]any] {
	leaf := rapid.OneOf(
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.Int64Range(-1<<53+1, 1<<53-1), func(n int64) any { return json.Number(fmt.Sprint(n)) }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Just[any](nil),
	)
	value := rapid.OneOf(leaf,
		rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z$_]{1,6}`), leaf, 0, 4), func(m map[string]any) any { return m }),
		rapid.Map(rapid.SliceOfN(leaf, 0, 3), func(s []any) any { return s }))
	return rapid.Custom(func(t *rapid.T) map[string]any {
		d := map[string]any{"name": rapid.StringMatching(`[a-z_]{1,10}`).Draw(t, "name")}
		for _, m := range []string{"title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta"} {
			if rapid.Bool().Draw(t, "has "+m) {
				d[m] = value.Draw(t, m)
			}
		}
		return d
	})
}

// write serializes v with its object members in a drawn order and
// drawn white space between tokens.
func write(t *rapid.T, v any) string {
	ws := func() string { return rapid.SampledFrom([]string{"", " ", "\n  ", "\t"}).Draw(t, "ws") }
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		perm := rapid.Permutation(keys).Draw(t, "order")
		var b strings.Builder
		b.WriteString("{" + ws())
		for i, k := range perm {
			if i > 0 {
				b.WriteString("," + ws())
			}
			kb, _ := json.Marshal(k)
			b.WriteString(string(kb) + ws() + ":" + ws() + write(t, v[k]))
		}
		return b.String() + ws() + "}"
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = write(t, x)
		}
		return "[" + ws() + strings.Join(parts, ","+ws()) + ws() + "]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestHashIgnoresMemberOrderAndWhitespace: two texts of one definition —
// members in any order, any white space — have one hash.
func TestHashIgnoresMemberOrderAndWhitespace(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := definitionGen().Draw(t, "definition")
		_, h1, err := pin.HashDefinition([]byte(write(t, d)))
		if err != nil {
			t.Fatal(err)
		}
		_, h2, err := pin.HashDefinition([]byte(write(t, d)))
		if err != nil {
			t.Fatal(err)
		}
		if h1 != h2 {
			t.Fatalf("one definition, two hashes: %s %s", h1, h2)
		}
	})
}

// TestHashChangesWithAnyMember: changing, adding or removing any member
// of a definition — the description, a schema, an annotation, an icon,
// _meta — changes its hash.
func TestHashChangesWithAnyMember(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := definitionGen().Draw(t, "definition")
		_, before, err := pin.HashDefinition([]byte(write(t, d)))
		if err != nil {
			t.Fatal(err)
		}
		m := rapid.SampledFrom([]string{"title", "description", "inputSchema", "outputSchema", "annotations", "icons", "_meta", "x"}).Draw(t, "member")
		old, had := d[m]
		switch {
		case had && rapid.Bool().Draw(t, "remove"):
			delete(d, m)
		default:
			nv := rapid.OneOf(rapid.Map(rapid.String(), func(s string) any { return s }),
				rapid.Just[any](map[string]any{"readOnlyHint": true}), rapid.Just[any](nil)).Draw(t, "new value")
			if had && fmt.Sprint(nv) == fmt.Sprint(old) && fmt.Sprintf("%T", nv) == fmt.Sprintf("%T", old) {
				t.Skip("the same value")
			}
			d[m] = nv
		}
		_, after, err := pin.HashDefinition([]byte(write(t, d)))
		if err != nil {
			t.Fatal(err)
		}
		if before == after {
			t.Fatalf("member %q changed, the hash did not: %s", m, after)
		}
	})
}

// TestHashNeverFollowsRefs: a "$ref" — remote or local — is hashed as
// the string it is; nothing is fetched, and the hash is that of the text.
func TestHashNeverFollowsRefs(t *testing.T) {
	def := `{"inputSchema":{"$ref":"https://attacker.example/schema.json"},"name":"fetch"}`
	_, h, err := pin.HashDefinition([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(def)) // already canonical
	if h != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("hash %s is not of the definition's own text", h)
	}
}

// TestParseToolsRefusesWhatCannotBePinned: a tools/list result whose
// tools cannot be hashed one way is refused with the tool's index.
func TestParseToolsRefusesWhatCannotBePinned(t *testing.T) {
	for name, doc := range map[string]string{
		"two tools of one name": `{"tools":[{"name":"a"},{"name":"a","description":"x"}]}`,
		"no name":               `{"tools":[{"description":"x"}]}`,
		"not an object":         `{"tools":["a"]}`,
		"duplicate member":      `{"tools":[{"name":"a","name":"b"}]}`,
		"unsafe integer":        `{"tools":[{"name":"a","x":12345678901234567891}]}`,
		"no tools":              `{"result":{}}`,
		"not JSON":              `{"tools":[`,
	} {
		if _, err := pin.ParseTools([]byte(doc)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line", name, err)
		}
	}
	tools, err := pin.ParseTools([]byte(`{"tools":[{"name":"b","description":"x"},{"name":"a"}],"nextCursor":"2"}`))
	if err != nil || len(tools) != 2 || tools[0].Name != "b" || !pin.ValidHash(tools[1].Hash) {
		t.Fatalf("ParseTools = %v, %v", tools, err)
	}
}

// FuzzParseTools: any tools/list result is tools or an error, never a
// panic; each tool parsed has a valid hash that HashDefinition gives its
// definition again, and a name no other tool has.
func FuzzParseTools(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a","description":"x"},{"name":"b","inputSchema":{"$ref":"#/x"}}]}`))
	f.Add([]byte(`{"tools":[{"name":"a"},{"name":"a"}]}`))
	f.Add([]byte(`{"tools":[{"name":"\u0430","_meta":{"k":[1,2.5e3,null,true]}}],"nextCursor":"x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tools, err := pin.ParseTools(data)
		if err != nil {
			return
		}
		names := map[string]bool{}
		for _, tool := range tools {
			name, h, err := pin.HashDefinition(tool.Definition)
			if err != nil || name != tool.Name || h != tool.Hash || !pin.ValidHash(h) {
				t.Fatalf("tool %q: hashed again %q %s %v", tool.Name, name, h, err)
			}
			if names[name] {
				t.Fatalf("two tools named %q", name)
			}
			names[name] = true
		}
	})
}
