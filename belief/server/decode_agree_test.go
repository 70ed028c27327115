package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/violation"
)

// FuzzDecodersAgree: every request decoder accepts exactly the bodies the
// decoder it replaced (decode_old_test.go) accepted, reads them as the
// same request, and refuses the others for a problem at the same places.
func FuzzDecodersAgree(f *testing.F) {
	for _, s := range []string{
		`{` + ontoJSON + `,"hypotheses":["a","b"],"metadata":{"k":[1,2]}}`,
		`{"ontology":{"hypothesis_space_id":1},"hypotheses":null}`, `{"ontology":"x"}`,
		`{"session_id":"sid","source_id":"s","observation_id":"o","eliminated":["a",2],"justification":{ "a" : 1 }}`,
		`{"obligation_id":"ob","min_total_eliminations":3}`, `{"min_total_eliminations":1.0,"x":null}`,
		`{"obligation_id":"ob","context":{"force":true}}`, `{"session_id":"x","obligation_id":"y"}`,
		`{"conclusion_id":"c","context":null}`, `{"context":{"force":"x"}}`, `{"context":[]}`,
		`{"a":1,"a":2}`, `{"\ud800":1}`, `[`, ``, ` `, `null`, `"s"`, strings.Repeat("[", 600),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		agree(t, body, func(b []byte) (any, []belief.Violation) { return decodeDeclare(b) },
			func(b []byte) (any, []belief.Violation) { return oldDecodeDeclare(b) })
		agree(t, body, func(b []byte) (any, []belief.Violation) { return decodeEliminate(b, "sid") },
			func(b []byte) (any, []belief.Violation) { return oldDecodeEliminate(b, "sid") })
		agree(t, body, func(b []byte) (any, []belief.Violation) { return decodeObligation(b, "sid") },
			func(b []byte) (any, []belief.Violation) { return oldDecodeObligation(b, "sid") })
		agree(t, body, func(b []byte) (any, []belief.Violation) { return decodeExit(b, "sid", "ob") },
			func(b []byte) (any, []belief.Violation) { return oldDecodeExit(b, "sid", "ob") })
		agree(t, body, func(b []byte) (any, []belief.Violation) { return decodeConclusion(b, "sid") },
			func(b []byte) (any, []belief.Violation) { return oldDecodeConclusion(b, "sid") })
		agree(t, body, func(b []byte) (any, []belief.Violation) { return decodeTermination(b, "sid") },
			func(b []byte) (any, []belief.Violation) { return oldDecodeTermination(b, "sid") })
	})
}

func agree(t *testing.T, body []byte, decode, old func([]byte) (any, []belief.Violation)) {
	t.Helper()
	got, vs := decode(body)
	want, oldVs := old(body)
	if (len(vs) == 0) != (len(oldVs) == 0) {
		t.Fatalf("%q:\nold: %v\nnew: %v", body, oldVs, vs)
	}
	if len(vs) == 0 && !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\nold: %#v\nnew: %#v", body, want, got)
	}
	if paths(vs) != paths(oldVs) {
		t.Fatalf("%q: problems at other places:\nold: %v\nnew: %v", body, oldVs, vs)
	}
}

// paths are the distinct (path, rule) pairs of vs, in order.
func paths(vs []belief.Violation) string {
	vs = append([]belief.Violation(nil), vs...)
	for i := range vs {
		vs[i].Message = ""
	}
	violation.Sort(vs)
	var b strings.Builder
	for i, v := range vs {
		if i == 0 || v != vs[i-1] {
			b.WriteString(v.Path + " " + v.Rule + ";")
		}
	}
	return b.String()
}
