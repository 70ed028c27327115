package toolgate_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate"
)

// FuzzParsePolicy: ParsePolicy never panics; a refusal is a
// *ValidationError wrapping ErrInvalidPolicy that never needs the schema's
// own words (the decoder and the schema agree on the shape of every file);
// an accepted file re-encodes to a file read back as the same Policy, and
// builds a Config.
func FuzzParsePolicy(f *testing.F) {
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
	f.Add([]byte(`{"version":1,"budget":"1","min_cost":"0.001","tools":[{"match":"a*","cost":"0.5"},{"match":"ab","cost":"0.5"}]}`))
	f.Add([]byte(`{"version":2,"budget":"1","min_cost":"0.001","tools":[{"match":"a","cost":"0.5","when":{"language":"cedar","text":"permit (principal, action, resource);"}},{"match":"b","cost":"0.5","when":{"language":"cedar","file":"b.cedar"}}]}`))
	f.Add([]byte(`{"version":2,"budget":"1","min_cost":"0.001","approvers":{"DELETE":{"group":"ops","count":2},"PRIVILEGE":["a","group:x"]},` +
		`"labels":["u"],"tools":[{"match":"d","cost":"0.5","tier":"DELETE","labels":["u"],"label_ttl":"10m"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := toolgate.ParsePolicy(data)
		if err != nil {
			var ve *toolgate.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, toolgate.ErrInvalidPolicy) || len(ve.Violations) == 0 {
				t.Fatalf("refusal is not a policy ValidationError: %v", err)
			}
			checkAgreement(t, data)
			return
		}
		checkAgreement(t, data)
		b, err := p.MarshalJSON()
		if err != nil {
			t.Fatalf("an accepted policy does not encode: %v", err)
		}
		q, err := toolgate.ParsePolicy(b)
		if err != nil {
			t.Fatalf("the re-encoded policy is refused: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(toolgate.WithoutCompiledSchemas(p), toolgate.WithoutCompiledSchemas(q)) {
			t.Fatalf("read back another policy:\n%#v\n%#v", p, q)
		}
		b2, err := q.MarshalJSON()
		if err != nil || string(b2) != string(b) {
			t.Fatalf("re-encoding differs: %v\n%s\n%s", err, b, b2)
		}
		// With the languages its when conditions name registered, and
		// their files read.
		p = toolgate.WithWhenFilesRead(p, "text")
		for _, r := range p.Tools {
			if r.When != nil {
				p.Conditions = append(p.Conditions, acceptAll(r.When.Language))
			}
		}
		if _, err := p.Compile(); err != nil {
			t.Fatalf("an accepted policy gives no Config: %v", err)
		}
	})
}

// acceptAll is a condition language named so that compiles any text.
type acceptAll string

func (a acceptAll) Name() string { return string(a) }
func (a acceptAll) Compile(string, string) (toolgate.CompiledCondition, error) {
	return subjectCondition("anyone"), nil
}
