package toolgate

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
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
