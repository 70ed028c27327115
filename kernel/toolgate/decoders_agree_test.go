package toolgate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
	"github.com/verity-go/verity/trace"
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
		if hasBudgetPeriod(data) {
			return // a member the decoder it replaced never had
		}
		p, vs := checkPolicy(data)
		q, ws := oldCheckPolicy(data)
		if (len(vs) == 0) != (len(ws) == 0) {
			t.Fatalf("the readers disagree on %q\nnew: %v\nold: %v", data, vs, ws)
		}
		if len(vs) == 0 && !reflect.DeepEqual(WithoutCompiledSchemas(p), WithoutCompiledSchemas(q)) {
			t.Fatalf("the readers read %q differently:\nnew: %#v\nold: %#v", data, p, q)
		}
	})
}

// hasBudgetPeriod reports whether a policy file has budget_period or a
// shared_budget's period, members added after the old decoder.
func hasBudgetPeriod(data []byte) bool {
	tree, err := canon.Decode(data)
	m, ok := tree.(map[string]any)
	if err != nil || !ok {
		return false
	}
	if _, ok := m["budget_period"]; ok {
		return true
	}
	shared, _ := m["shared_budget"].(map[string]any)
	_, ok = shared["period"]
	return ok
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

// FuzzDecodeEntryAgrees: gatelog.Decode, reading with internal/strictjson,
// accepts exactly the entries the decoder it replaced accepted (canon's
// check, encoding/json, then the required members), and reads them as
// the same values; except that it refuses, on purpose, a null member and
// a member named in another case (encoding/json took "Tool" for "tool").
func FuzzDecodeEntryAgrees(f *testing.F) {
	f.Add(gatelog.KindRefuse, []byte(`{"session":"toolgate:","caller":"","call_id":"1","tool":"x","reason":"unknown_tool","explanation":"e","arguments_sha256":"00","arguments_size":0}`))
	f.Add(gatelog.KindResult, []byte(`{"session":"toolgate:a","caller":"a","call_id":"1","exec_id":"e","tool":"x","ok":true,"output_sha256":"00","output_size":2,"output_text":"ok","charged":100}`))
	f.Add(gatelog.KindResult, []byte(`{"session":"toolgate:a","caller":"a","call_id":"1","exec_id":"e","tool":"x","ok":false,"error":"boom","output_sha256":"00","output_size":2,"charged":"0.5","unpaid":1,"measured":true,"actual":"0.25","speculative":true,"finding":"f","truncated":true,"output_base64":"AA=="}`))
	f.Add(gatelog.KindResult, []byte(`{"session":"s","session":"s"}`))
	f.Add(gatelog.KindRefuse, []byte(`{"session":null,"caller":"","call_id":"1","tool":"x","reason":"unknown_tool","explanation":"e","arguments_sha256":"00","arguments_size":0}`))
	f.Add(gatelog.KindRefuse, []byte(`{"session":"","Caller":"","call_id":"1","tool":"x","reason":"unknown_tool","explanation":"e","arguments_sha256":"00","arguments_size":0,"caller":""}`))
	f.Add(gatelog.KindRefuseAnswer, []byte(`{"session":"toolgate:a","caller":"a","approval":"r1","call_id":"dd","tool":"delete_file","arguments_sha256":"00","approver":"human","decision":"APPROVED","reason":"other_call","explanation":"e"}`))
	f.Fuzz(func(t *testing.T, kind string, payload []byte) {
		if kind == gatelog.KindAsk || kind == gatelog.KindExpire || kind == gatelog.KindBudget {
			return // the decoder it replaced did not read them
		}
		got, err := gatelog.Decode(trace.Entry{Kind: kind, Payload: payload})
		want, oldErr := oldDecodeEntry(trace.Entry{Kind: kind, Payload: payload})
		switch {
		case err == nil && oldErr == nil:
			if got != want {
				t.Fatalf("%q read as %+v, before as %+v", payload, got, want)
			}
		case err != nil && oldErr == nil:
			if !nullOrOtherCase(payload, got) {
				t.Fatalf("%q refused (%v), accepted before as %+v", payload, err, want)
			}
		case err == nil:
			t.Fatalf("%q accepted as %+v, refused before: %v", payload, got, oldErr)
		}
		if err != nil && !errors.Is(err, gatelog.ErrDecode) {
			t.Fatalf("%q: %v does not wrap ErrDecode", payload, err)
		}
	})
}

// nullOrOtherCase reports whether the JSON object payload has a null
// member or a member whose name is not spelled as a json tag of the entry
// types.
func nullOrOtherCase(payload []byte, _ any) bool {
	tree, err := canon.Decode(payload)
	m, ok := tree.(map[string]any)
	if err != nil || !ok {
		return false
	}
	names := map[string]bool{}
	for _, v := range []any{gatelog.Refuse{}, gatelog.Result{}, gatelog.RefuseAnswer{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			names[name] = true
		}
	}
	for k, v := range m {
		if v == nil || !names[k] {
			return true
		}
	}
	return false
}
