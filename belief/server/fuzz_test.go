// Bad input is never a 500 and never a panic: FuzzDecoders (every request
// decoder, JSON Pointer paths and rules included) and FuzzHandler (every
// route with arbitrary bodies).

package server

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/verity-go/verity/belief"
)

// FuzzDecoders feeds arbitrary bodies to every request decoder: none may
// panic, and a body a decoder accepts must re-encode as canonical JSON.
func FuzzDecoders(f *testing.F) {
	for _, s := range []string{
		`{` + ontoJSON + `,"hypotheses":["a","b"],"metadata":{"k":[1,2]}}`,
		`{"session_id":"sid","source_id":"s","observation_id":"o","eliminated":["a"],"justification":{}}`,
		`{"obligation_id":"ob","min_total_eliminations":3}`,
		`{"obligation_id":"ob","context":{"force":true}}`,
		`{"conclusion_id":"c","context":null}`,
		`{"context":{"force":"x"}}`,
		`{"min_total_eliminations":-0}`, `{"min_total_eliminations":1e3}`, `{"min_total_eliminations":99999999999999999999}`,
		`{"a":1,"a":2}`, `{"\ud800":1}`, `[`, ``, `null`, `"s"`, strings.Repeat("[", 600),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(req any, vs []belief.Violation) {
			if len(vs) == 0 {
				mustMarshal(t, req)
			}
			checkViolations(t, vs)
		}
		check(decodeDeclare(body))
		check(decodeEliminate(body, "sid"))
		check(decodeObligation(body, "sid"))
		check(decodeExit(body, "sid", "ob"))
		check(decodeConclusion(body, "sid"))
		check(decodeTermination(body, "sid"))
	})
}

// checkViolations: each violation is located by a JSON Pointer ("" or
// starting with "/") and names one of belief's rules.
func checkViolations(t *testing.T, vs []belief.Violation) {
	rules := []string{belief.RuleSyntax, belief.RuleType, belief.RuleRequired, belief.RuleRange, belief.RuleUTF8,
		belief.RuleUnknownField, belief.RulePathMismatch, belief.RuleDuplicate}
	for _, v := range vs {
		if v.Path != "" && !strings.HasPrefix(v.Path, "/") {
			t.Fatalf("path %q is not a JSON Pointer", v.Path)
		}
		if !slices.Contains(rules, v.Rule) || v.Message == "" {
			t.Fatalf("violation %+v names no rule or says nothing", v)
		}
	}
}

func mustMarshal(t *testing.T, v any) {
	if _, err := json.Marshal(v); err != nil {
		t.Fatalf("accepted request does not encode: %v", err)
	}
}

// FuzzHandler sends arbitrary requests through the whole handler over a
// live session: the answer is never 500 and always a JSON object, with
// the error envelope whenever the status is ≥ 400.
func FuzzHandler(f *testing.F) {
	f.Add(uint8(0), []byte(`{`+ontoJSON+`,"hypotheses":["a"]}`), "", "")
	f.Add(uint8(2), []byte(elimA), "", `"x"`)
	f.Add(uint8(3), []byte(``), "since_event_id=zz", "")
	f.Add(uint8(4), []byte(`{"obligation_id":"ob","min_total_eliminations":0}`), "", "*")
	f.Add(uint8(5), []byte(`{"obligation_id":"ob"}`), "", "")
	f.Add(uint8(6), []byte(`{"conclusion_id":"c"}`), "", "")
	f.Add(uint8(7), []byte(`{"context":{"force":true}}`), "", "")
	e := newEnv(f, belief.Policy{AllowForce: true})
	f.Fuzz(func(t *testing.T, which uint8, body []byte, query, ifMatch string) {
		rt := routes[int(which)%len(routes)]
		path := strings.NewReplacer("{session_id}", e.sid, "{obligation_id}", "ob").Replace(rt.path)
		req := httptest.NewRequest(rt.method, path, strings.NewReader(string(body)))
		req.URL.RawQuery = query
		req.Header.Set("If-Match", ifMatch)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", rt.method, path, body, rec.Code, rec.Body.String())
		}
		var out map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("response is not a JSON object: %q", rec.Body.String())
		}
		if rec.Code >= 400 {
			env, ok := out["error"].(map[string]any)
			if !ok || env["code"] == "" || env["message"] == "" || len(out) != 1 {
				t.Fatalf("bad envelope: %s", rec.Body.String())
			}
		}
	})
}
