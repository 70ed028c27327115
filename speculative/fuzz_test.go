package speculative

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
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

// FuzzDetect: no input panics; a JSON text and its decoded value
// get the same answer; whatever the specification's algorithm flags is
// flagged; and a JSON object or array that is speculative
// stays speculative when it is hidden in a string.
func FuzzDetect(f *testing.F) {
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

// FuzzDecodeEvidence: no input panics; accepted evidence is grounded,
// names a claim and carries its canonical document.
func FuzzDecodeEvidence(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEvidence(data)
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

// FuzzDecodeEntry: no payload panics; an accepted entry encodes back to
// canonical JSON that decodes to the same entry.
func FuzzDecodeEntry(f *testing.F) {
	kinds := []string{KindIntent, KindApprove, KindReject, KindPersist, KindSoftFail, KindDesign}
	for i, s := range []string{
		`{"intent":"i","write":"status","claim_id":"c","to":"supported","checks":{"feynman_passed":true,"sensitivity_failures":[]}}`,
		`{"by":"steward-policy","human":false,"intent":"i"}`,
		`{"intent":"i","reasons":["r"],"write":"evidence"}`,
		`{"approval":{"by":"a","human":true},"claim_id":"c","direction":"upgrade","from":"speculative","intent":"i","to":"supported","write":"status"}`,
		`{"claim_id":"c","id":"h","intent":"i","reason":"r","write":"link"}`,
		`{"claim_id":"c","hints_digest":"4fa8abe0135263e8807b1bfc433e2856b7e811ceb99992deb4e479662725939c","scope_lock_id":"L","template_qid":"t@1.0.0"}`,
	} {
		f.Add(uint8(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, k uint8, payload []byte) {
		kind := kinds[int(k)%len(kinds)]
		e, err := DecodeEntry(trace.Entry{Kind: kind, Payload: payload})
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without ErrMalformed: %v", err)
			}
			return
		}
		b, err := canon.Marshal(e)
		if err != nil {
			t.Fatalf("accepted entry does not encode: %v", err)
		}
		back, err := DecodeEntry(trace.Entry{Kind: kind, Payload: b})
		if err != nil || !reflect.DeepEqual(back, e) {
			t.Fatalf("round trip: %v\n%#v\n%#v", err, e, back)
		}
	})
}
