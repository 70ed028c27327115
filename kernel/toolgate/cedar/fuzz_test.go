package cedar_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go/types"

	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/cedar"
)

// fits is the naive boundary: whether a JSON tree (json.Number numbers)
// fits Cedar's types and the bounds as the package doc says.
func fits(v any) bool {
	if v == nil {
		return true
	}
	if _, ok := v.(map[string]any); !ok {
		return false
	}
	n := 0
	var walk func(v any, depth int) bool
	walk = func(v any, depth int) bool {
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				if e == nil {
					continue
				}
				if n++; n > cedar.MaxValues || depth+1 > cedar.MaxDepth || !walk(e, depth+1) {
					return false
				}
			}
			return true
		case []any:
			if len(x) > cedar.MaxSetElements {
				return false
			}
			for _, e := range x {
				if n++; e == nil || n > cedar.MaxValues || depth+1 > cedar.MaxDepth || !walk(e, depth+1) {
					return false
				}
			}
			return true
		case json.Number:
			_, err := strconv.ParseInt(string(x), 10, 64)
			return err == nil
		}
		return true
	}
	return walk(v, 0)
}

// FuzzRequest builds the Cedar request of arbitrary tool arguments (read
// as the gate reads them): it never panics, refuses exactly the
// arguments that do not fit Cedar's types (ErrBoundary), and keeps every
// top-level member that is not null.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"repo":"acme/api","n":3}`, `{"n":1.5}`, `{"n":1e3}`, `{"n":9223372036854775807}`,
		`{"n":-9223372036854775809}`, `{"xs":[1,null]}`, `{"o":{"p":[{"q":true}]},"z":null}`, `[1]`, `"s"`, `null`, `{"a":{"b":{"c":[[["d"]]]}}}`} {
		f.Add([]byte(s), "eng")
	}
	f.Fuzz(func(t *testing.T, raw []byte, group string) {
		var in toolgate.ConditionInput
		// The gate's reader, through the input's own JSON form.
		wrapped := `{"principal":{"issuer":"","subject":"s","groups":[],"scopes":[],"attributes":{}},"tool":"t","arguments":` + string(raw) +
			`,"labels":[],"spent":"0","remaining":"1"}`
		if err := in.UnmarshalJSON([]byte(wrapped)); err != nil {
			return
		}
		in.Principal.Groups = []string{group}
		req, entities, err := cedar.Request(&in, types.NewEntityUID(cedar.TypeServer, "s"))
		want := fits(in.Arguments)
		if (err == nil) != want {
			t.Fatalf("%s: err %v, want fit %v", raw, err, want)
		}
		if err != nil {
			if !errors.Is(err, cedar.ErrBoundary) {
				t.Fatalf("%s: %v does not wrap ErrBoundary", raw, err)
			}
			return
		}
		args, ok := req.Context.Get("arguments")
		if !ok {
			t.Fatal("no arguments in the context")
		}
		rec := args.(types.Record)
		if m, ok := in.Arguments.(map[string]any); ok {
			n := 0
			for _, v := range m {
				if v != nil {
					n++
				}
			}
			if rec.Len() != n {
				t.Fatalf("%s: %d members, want %d", raw, rec.Len(), n)
			}
		}
		if _, ok := entities.Get(req.Principal); !ok || !strings.HasPrefix(req.Principal.String(), "Principal::") {
			t.Fatalf("no principal entity %v", req.Principal)
		}
	})
}

// TestHostileArgumentsAreBounded: arguments Cedar would take quadratic
// time to hold (many sets whose hashes collide), too many values or too
// deep are refused at the boundary, naming the bound.
func TestHostileArgumentsAreBounded(t *testing.T) {
	pairs := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"xs":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("[" + strconv.Itoa(i) + "," + strconv.Itoa(n-i) + "]")
		}
		return b.String() + `]}`
	}
	for _, c := range []struct{ args, why string }{
		{pairs(4000), "more than 256"},
		{`{"a":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 41), "deeper than 32"},
		{`{"a":[` + strings.Repeat(`[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16],`, 255) + `[0]]}`, "more than 4096 values"},
	} {
		var in toolgate.ConditionInput
		wrapped := `{"principal":{"issuer":"","subject":"s","groups":[],"scopes":[],"attributes":{}},"tool":"t","arguments":` + c.args +
			`,"labels":[],"spent":"0","remaining":"1"}`
		if err := in.UnmarshalJSON([]byte(wrapped)); err != nil {
			t.Fatal(err)
		}
		_, _, err := cedar.Request(&in, types.NewEntityUID(cedar.TypeServer, "s"))
		if !errors.Is(err, cedar.ErrBoundary) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("%.60s: %v, want %q", c.args, err, c.why)
		}
	}
	var in toolgate.ConditionInput
	wrapped := `{"principal":{"issuer":"","subject":"s","groups":[],"scopes":[],"attributes":{}},"tool":"t","arguments":` + pairs(256) +
		`,"labels":[],"spent":"0","remaining":"1"}`
	if err := in.UnmarshalJSON([]byte(wrapped)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := cedar.Request(&in, types.NewEntityUID(cedar.TypeServer, "s")); err != nil {
		t.Errorf("256 pairs: %v", err)
	}
}
