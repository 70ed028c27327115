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
// fits Cedar's types as the package doc says.
func fits(v any, top bool) bool {
	if _, isObject := v.(map[string]any); top && !isObject {
		return v == nil
	}
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if e != nil && !fits(e, false) {
				return false
			}
		}
		return true
	case []any:
		if top {
			return false
		}
		for _, e := range x {
			if e == nil || !fits(e, false) {
				return false
			}
		}
		return true
	case json.Number:
		_, err := strconv.ParseInt(string(x), 10, 64)
		return err == nil
	case nil:
		return top
	}
	return !top
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
		want := fits(in.Arguments, true)
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
