package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzRenameTool: renameTool never panics; what it returns is JSON whose
// name is the renamed one and whose other members are the definition's,
// unchanged; a definition it refuses has no single string name.
func FuzzRenameTool(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","inputSchema":{"type":"object"}}`,
		`{"description":"x\ud800y","name":"zeta","execution":{"taskSupport":"forbidden"}}`,
		`{"name":"a","name":"b"}`,
		`{"name":1}`,
		`{"inputSchema":{}}`,
		`[]`,
		`{"name":"a","NAME":"b"}`,
		`{"na\u006de":"escaped"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := renameTool(raw, func(n string) string { return "s__" + n })
		if err != nil {
			return
		}
		var before, after map[string]any
		if err := json.Unmarshal(raw, &before); err != nil {
			t.Fatalf("renamed %q, which does not decode: %v", raw, err)
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("renamed to %q, which does not decode: %v", out, err)
		}
		if after["name"] != "s__"+before["name"].(string) {
			t.Fatalf("name %v, want s__%v", after["name"], before["name"])
		}
		delete(before, "name")
		delete(after, "name")
		for k := range before {
			if strings.EqualFold(k, "name") {
				t.Fatalf("renamed %q, which has a member %q", raw, k)
			}
		}
		if !reflect.DeepEqual(before, after) {
			t.Fatalf("other members changed: %q → %q", raw, out)
		}
	})
}
