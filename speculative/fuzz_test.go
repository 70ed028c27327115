package speculative

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/verity-go/verity/internal/canon"
)

var fuzzSeeds = []string{
	`{}`, `[]`, `"speculative"`, `null`, `1e5`,
	`{"epistemic_status":"speculative"}`,
	`{"a":{"b":[{"Epistemic-Status":" Speculative "}]}}`,
	`{"payload":"{\"epistemic-status\":\"speculative\"}"}`,
	`{"p":"\"{\\\"lane\\\":\\\"speculative\\\"}\""}`,
	`{"note":"the model said \"speculative\""}`,
	`{"note":"python {'lane': 'speculative'}"}`,
	`{"\u0065dge_cases":[]}`,
	`{"x":"[[[[[[[[[[[[[[[[[[[[[[[["}`,
	`{"lane":"grounded","speculative_contextual":1}`,
	`{"claim_id":"c1","template_qid":"numeric_consistency@1.0.0","scope_lock_id":"L1","params":{"l":[{"alternatives":[]}]}}`,
	`{"claim_id":"c1","template_qid":"numeric_consistency@1.0.0","scope_lock_id":"L1","params":{"n":1}}`,
	`{"claim_id":"c1","success":true,"variance":0.01,"outcome":"supports"}`,
	`{"entity_id":"e1","success":true}`,
	"{\"a\":\"\\ud800\"}", "\xff", `{"a":1,}`, `{"a":01}`,
}

// FuzzIsSpeculative: no input panics; a JSON text and its decoded value
// get the same answer; whatever the specification's algorithm flags is
// flagged; and a JSON object or array that is speculative
// stays speculative when it is hidden in a string.
func FuzzIsSpeculative(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		raw := isSpeculative(json.RawMessage(data))
		_, _, err := Detect(data)
		if err != nil && !raw {
			t.Fatalf("error %v but not rejected", err)
		}
		if canon.Valid(data) != nil {
			if _, err := canon.Transform(data); err != nil {
				return // not JSON, or duplicate keys: the decoded value would differ
			}
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("canon accepted what encoding/json rejects: %v", err)
		}
		if specReference(v, 0) && !raw {
			t.Fatalf("the specification's algorithm flags %q, detection does not", data)
		}
		if dec := isSpeculative(v); dec != raw {
			t.Fatalf("raw %v, decoded %v for %q", raw, dec, data)
		}
		s := strings.TrimSpace(string(data))
		if raw && (strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")) {
			if !isSpeculative(map[string]any{"hidden": string(data)}) {
				t.Fatalf("lost when hidden in a string: %q", data)
			}
		}
	})
}

// FuzzDecodeExperimentSpec: no input panics; an accepted spec validates,
// round-trips, and is not speculative.
func FuzzDecodeExperimentSpec(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		spec, err := DecodeExperimentSpec(data)
		if err != nil {
			if _, ok := err.(*ValidationError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if isSpeculative(json.RawMessage(data)) {
			t.Fatalf("accepted a speculative spec: %q", data)
		}
		if err := spec.validate(); err != nil {
			t.Fatalf("accepted spec does not validate: %v", err)
		}
		b, _ := json.Marshal(spec)
		back, err := DecodeExperimentSpec(b)
		if err != nil || !reflect.DeepEqual(back, spec) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, spec, back)
		}
	})
}

// FuzzParseEvidence: no input panics; accepted evidence is grounded,
// names a claim and carries its canonical document.
func FuzzParseEvidence(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := evidenceOf(data)
		if err != nil {
			return
		}
		if isSpeculative(data) || strings.TrimSpace(e.ClaimID()) == "" {
			t.Fatalf("accepted %q", data)
		}
		if canon.Valid(e.Document()) != nil {
			t.Fatalf("document not canonical: %s", e.Document())
		}
	})
}
