package toolgate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"testing"

	"pgregory.net/rapid"
)

// FuzzParsePolicyAgrees: the typed reader (internal/strictjson and
// Policy.violations) accepts exactly the files the decoder it replaced
// accepted (a walk of canon.Decode's tree, cross-checked by the schema),
// and reads an accepted file as the same Policy.
func FuzzParsePolicyAgrees(f *testing.F) {
	files, err := filepath.Glob("testdata/policy/*/*.json")
	if err != nil {
		f.Fatal(err)
	}
	files = append(files, "testdata/policy/example.json")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		`{"version":1.0,"budget":1e1,"min_cost":0.001,"result_text_limit":1e2,"max_waiting":-1.0}`,
		`{"version":2,"budget":"1","min_cost":"0.001","tools":[{"match":"a","effect":"refuse","rate":{"calls":1.0,"per":"1s"}}]}`,
		`{"version":1,"budget":"1","min_cost":"0.001","tools":[{"match":"a","cost":"0.5","labels":["x"],"flow":[{"after":[1],"effect":"ask"}]}]}`,
		`{"version":2,"budget":"1","min_cost":"0.001","tools":[{"match":"a","cost":"1","arguments":{"maximum":1e5000}}]}`,
		`{"version":2,"budget":"1","min_cost":"0.001","tools":[{"match":"a","cost":"1","principals":{"x":1}}],"labels":[]}`,
		`{"version":1,"budget":"1","min_cost":"0.001","invariants":[{"name":"a","one_of":{"key":"k","values":[9007199254740992,1.5,null]}}]}`,
		`{"version":1,"budget":"1","min_cost":"0.001","default_rule":null,"shared_budget":null}`,
		"\xef\xbb\xbf{\"version\":1,\"budget\":\"1\",\"min_cost\":\"0.001\",\"approvers\":{\"DELETE\":[\"a\",\"a\"],\"MODIFY\":null}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, vs := checkPolicy(data)
		q, ws := oldCheckPolicy(data)
		if (len(vs) == 0) != (len(ws) == 0) {
			t.Fatalf("the readers disagree on %q\nnew: %v\nold: %v", data, vs, ws)
		}
		if len(vs) == 0 && !reflect.DeepEqual(p, q) {
			t.Fatalf("the readers read %q differently:\nnew: %#v\nold: %#v", data, p, q)
		}
	})
}

// TestCostStringIsTheSchemaPattern: a cost string is read exactly when the
// pattern policy.schema.json gives cost strings matches it.
func TestCostStringIsTheSchemaPattern(t *testing.T) {
	var schema struct {
		Defs struct {
			Cost struct {
				OneOf []struct {
					Pattern string `json:"pattern"`
				} `json:"oneOf"`
			} `json:"cost"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(policySchemaText, &schema); err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(schema.Defs.Cost.OneOf[0].Pattern)
	for _, s := range []string{"0", "1", "0.001", "1.0000", "999999999999999.999", "1000000000000000", "01", "1.", ".5", "0.0005", "", "-1", "1e3", " 1", "1.2a"} {
		if got, want := policyCostString(s), pattern.MatchString(s); got != want {
			t.Fatalf("%q: %v, the schema's pattern says %v", s, got, want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringMatching(`[0-9]{0,17}(\.[0-9]{0,6})?[0-9.a]?`).Draw(t, "cost")
		if got, want := policyCostString(s), pattern.MatchString(s); got != want {
			t.Fatalf("%q: %v, the schema's pattern says %v", s, got, want)
		}
	})
}
