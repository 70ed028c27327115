/*
This file checks the detection vocabulary:

	the false-positive profile: prose, other values, tags     TestFalsePositiveProfile
	every spelling of a marker key is a marker                 TestKeyNormalisationMatches
	payloads that hide markers are caught, with their path     TestBypassCases, TestMarkerInsideAKey,
	                                                           TestDetectBytesInTypedGoValues, TestQuotedTokenAcrossAStringLayer
	a Go map's answer does not depend on its iteration order   TestGoMapFindingIsDeterministic
	bounded work; exceeding a limit is a rejection             TestLimitDepth, TestLimitEncodings, TestLimitWork,
	                                                           TestNestedEncodingsAreLinear, TestUnencodableValueIsRejected

The properties over generated documents are in prop_test.go; that the
specification's own algorithm is covered, in reference_test.go
(TestDetectCoversSpecReference) and FuzzDetect.
*/

package speculative

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/violation"
)

// isSpeculative is the guards' reading of Detect: a marker, or a value
// that could not be checked, is speculative.
func isSpeculative(v any) bool {
	_, found, err := Detect(v)
	return found || err != nil
}

func decode(t testing.TB, s string) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal([]byte(s), &v), s)
	return v
}

func TestNormalizeKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"epistemic_status", "epistemic_status"},
		{"epistemicStatus", "epistemic_status"},
		{"EpistemicStatus", "epistemic_status"},
		{"Epistemic-Status", "epistemic_status"},
		{"EPISTEMIC_STATUS", "epistemic_status"},
		{"EPISTEMIC-STATUS", "epistemic_status"},
		{"speculativeContext", "speculative_context"},
		{"speculative-context", "speculative_context"},
		{"experimentHints", "experiment_hints"},
		{"EdgeCases", "edge_cases"},
		{"HTTPServer", "http_server"},
		{"claimID2x", "claim_id2x"},
		{"lane", "lane"},
		{"", ""},
	} {
		assert.Equal(t, tc.want, normalizeKey(tc.in), tc.in)
	}
}

// TestKeyNormalisationMatches: every spelling the issue names, and the
// separator- and case-insensitive ones the fold adds, are markers.
func TestKeyNormalisationMatches(t *testing.T) {
	for _, tc := range []struct {
		key, value, marker string
		rule               Rule
	}{
		{"epistemic_status", "speculative", "epistemic_status", RuleStatus},
		{"epistemicStatus", "speculative", "epistemic_status", RuleStatus},
		{"Epistemic-Status", "speculative", "epistemic_status", RuleStatus},
		{"EPISTEMIC_STATUS", "speculative", "epistemic_status", RuleStatus},
		{"epistemic__status", "speculative", "epistemic_status", RuleStatus},
		{"ePiStEmIc_StAtUs", "speculative", "epistemic_status", RuleStatus},
		{"epistemic\u200bstatus", "speculative", "epistemic_status", RuleStatus},
		{"epistemic status", "speculative", "epistemic_status", RuleStatus},
		{"epistemic\x00status", "speculative\x7f", "epistemic_status", RuleStatus},
		{"\x00lane", "speculative", "lane", RuleStatus},
		{"@lane", "speculative.", "lane", RuleStatus},
		{"$epistemic:status", "(speculative)", "epistemic_status", RuleStatus},
		{"epistemic\u2010status", "speculative", "epistemic_status", RuleStatus}, // Unicode hyphen
		{"edge\uff3fcases", "x", "edge_cases", RuleArtifact},                     // full-width low line
		{"\x7f_edge_cases", "x", "edge_cases", RuleArtifact},
		{"lane", "spe\u0301culative", "lane", RuleStatus},                        // combining mark
		{"\uff45pistemic_status", "speculative", "epistemic_status", RuleStatus}, // full-width e
		{"lane", "speculative", "lane", RuleStatus},
		{"Lane", " Speculative ", "lane", RuleStatus},
		{"LANE", "SPECULATIVE", "lane", RuleStatus},
		{"lane", "\tspeculative\n", "lane", RuleStatus},
		{"lane", "\ufeffspeculative\u200b", "lane", RuleStatus},
		{"lane", "\u017fpeculative", "lane", RuleStatus}, // long s folds to s
		{"speculative_context", "x", "speculative_context", RuleContext},
		{"speculative-context", "x", "speculative_context", RuleContext},
		{"SpeculativeContext", "x", "speculative_context", RuleContext},
		{"speculative_context_id", "x", "speculative_context", RuleContext},
		{"speculativeContexts", "x", "speculative_context", RuleContext},
		{"experiment_hints", "x", "experiment_hints", RuleArtifact},
		{"experimentHints", "x", "experiment_hints", RuleArtifact},
		{"Experiment-Hints", "x", "experiment_hints", RuleArtifact},
		{"alternatives", "x", "alternatives", RuleArtifact},
		{"ALTERNATIVES", "x", "alternatives", RuleArtifact},
		{"analogies", "x", "analogies", RuleArtifact},
		{"edge_cases", "x", "edge_cases", RuleArtifact},
		{"edgeCases", "x", "edge_cases", RuleArtifact},
		{"edge-cases", "x", "edge_cases", RuleArtifact},
	} {
		doc := map[string]any{"ok": 1, tc.key: tc.value}
		f, found, err := Detect(doc)
		require.NoError(t, err)
		require.True(t, found, "%q: %q", tc.key, tc.value)
		assert.Equal(t, tc.marker, f.Marker, tc.key)
		assert.Equal(t, tc.rule, f.Rule, tc.key)
		assert.Equal(t, tc.key, f.Key)
		// The same over the raw text.
		raw, _ := json.Marshal(doc)
		f2, found2, err := Detect(json.RawMessage(raw))
		require.NoError(t, err)
		require.True(t, found2, string(raw))
		assert.Equal(t, f, f2)
	}
}

// TestFalsePositiveProfile pins what is NOT a marker.
func TestFalsePositiveProfile(t *testing.T) {
	for _, doc := range []string{
		`{"note":"the hypothesis was speculative at first"}`,            // bare word in prose
		`{"lane":"grounded"}`,                                           // lane with another value
		`{"epistemic_status":"supported"}`,                              // status with another value
		`{"epistemic_status":"non-speculative"}`,                        // not the value
		`{"status":"speculative"}`,                                      // not a status key
		`{"tags":["speculative"]}`,                                      // a bare string value
		`{"speculative":true}`,                                          // not a marker key
		`{"alternative":"x","analogy":"y","edge_case":"z"}`,             // singular forms
		`{"lanes":"speculative"}`,                                       // not "lane"
		`{"speculative_hypothesis_count":3}`,                            // not the context family
		`{"note":"it's speculative, isn't it"}`,                         // apostrophes, no quoted token
		`{"note":"{not json but mentions speculative}"}`,                // unparseable, no quote
		`{"n":1.5e3,"b":false,"z":null,"s":"","a":[],"o":{}}`,           // scalars and empties
		`{"nested":"{\"lane\":\"grounded\",\"note\":\"speculative\"}"}`, // JSON in a string, clean
	} {
		v := decode(t, doc)
		assert.False(t, isSpeculative(v), doc)
		assert.False(t, isSpeculative(json.RawMessage(doc)), doc)
	}
}

// TestBypassCases are payloads that hide markers; every one is caught.
func TestBypassCases(t *testing.T) {
	for _, tc := range []struct {
		name, doc, path string
		rule            Rule
	}{
		{"top level", `{"epistemic_status":"speculative"}`, "/epistemic_status", RuleStatus},
		{"nested", `{"a":{"b":[{"epistemic_status":"speculative"}]}}`, "/a/b/0/epistemic_status", RuleStatus},
		{"kebab", `{"epistemic-status":"speculative"}`, "/epistemic-status", RuleStatus},
		{"camel", `{"epistemicStatus":"Speculative"}`, "/epistemicStatus", RuleStatus},
		{"lane", `{"meta":{"lane":" SPECULATIVE "}}`, "/meta/lane", RuleStatus},
		{"status in array", `{"lane":["grounded","speculative"]}`, "/lane/1", RuleStatus},
		{"json string", `{"payload":"{\"epistemic_status\":\"speculative\"}"}`, "/payload/epistemic_status", RuleStatus},
		{"json string kebab", `{"payload":"{\"epistemic-status\":\"speculative\"}"}`, "/payload/epistemic-status", RuleStatus},
		{"json array string", `{"p":"[1,{\"speculative_context\":{}}]"}`, "/p/1/speculative_context", RuleContext},
		{"double encoded", `{"p":"\"{\\\"lane\\\":\\\"speculative\\\"}\""}`, "/p/lane", RuleStatus},
		{"whitespace around json", `{"p":"  {\"alternatives\":[]}  "}`, "/p/alternatives", RuleArtifact},
		{"escaped key", `{"\u0065pistemic_status":"\u0073peculative"}`, "/epistemic_status", RuleStatus},
		{"context key any value", `{"x":{"speculative_context":null}}`, "/x/speculative_context", RuleContext},
		{"artifact", `{"params":{"l":[{"alternatives":["a"]}]}}`, "/params/l/0/alternatives", RuleArtifact},
		{"hints", `{"experiment_hints":{}}`, "/experiment_hints", RuleArtifact},
		{"quoted token", `{"note":"the model said \"speculative\" twice"}`, "/note", RuleQuoted},
		{"single quoted", `{"note":"python repr {'epistemic_status': 'speculative'}"}`, "/note", RuleQuoted},
		{"truncated json", `{"note":"{\"epistemic_status\": \"specul"}`, "/note", RuleQuoted},
		{"json with prefix", `{"note":"result: {\"lane\":\"speculative\"}"}`, "/note", RuleQuoted},
		{"escaped quotes in text", `{"note":"x \\\"speculative\\\" y"}`, "/note", RuleQuoted},
		{"json string value", `{"lane":"\"speculative\""}`, "/lane", RuleStatus},
		{"duplicate key", `{"lane":"grounded","lane":"speculative"}`, "/lane", RuleStatus},
		{"python NaN", `{"p":"{\"x\": NaN, \"y\": -Infinity, \"z\": {\"lane\": \"speculative\"}}"}`, "/p/z/lane", RuleStatus},
		{"escaped token in text", `{"p":"broken {\"\\u0073peculative_context\": 1"}`, "/p", RuleQuoted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, found, err := Detect(json.RawMessage(tc.doc))
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, tc.path, f.Path)
			assert.Equal(t, tc.rule, f.Rule)
			if tc.name != "duplicate key" {
				v := decode(t, tc.doc)
				g, found, err := Detect(v)
				require.NoError(t, err)
				require.True(t, found)
				assert.Equal(t, f, g, "decoded and raw agree")
			}
		})
	}
}

func TestDetectGoValues(t *testing.T) {
	type ev struct {
		ClaimID string `json:"claim_id"`
		Lane    string `json:"lane"`
	}
	for _, tc := range []struct {
		name string
		v    any
		want bool
	}{
		{"nil", nil, false},
		{"number", 3.5, false},
		{"bool", true, false},
		{"json.Number", json.Number("1"), false},
		{"string json", `{"lane":"speculative"}`, true},
		{"bytes json", []byte(`{"lane":"speculative"}`), true},
		{"bytes text", []byte(`plain "speculative" text`), true},
		{"bytes clean text", []byte(`plain text`), false},
		{"raw", json.RawMessage(`[{"analogies":1}]`), true},
		{"map string string", map[string]string{"Lane": "Speculative"}, true},
		{"string slice", []string{"a", `{"edge_cases":[]}`}, true},
		{"map slice", []map[string]any{{"a": 1}, {"alternatives": 1}}, true},
		{"map raw", map[string]json.RawMessage{"x": json.RawMessage(`{"lane":"speculative"}`)}, true},
		{"struct speculative", ev{ClaimID: "c", Lane: "speculative"}, true},
		{"struct grounded", ev{ClaimID: "c", Lane: "grounded"}, false},
		{"pointer", &ev{Lane: "speculative"}, true},
		{"typed map", map[string]int{"alternatives": 1}, true},
		{"raw in map", map[string]any{"x": json.RawMessage(`"{\"lane\":\"speculative\"}"`)}, true},
	} {
		assert.Equal(t, tc.want, isSpeculative(tc.v), tc.name)
	}
}

func TestUnencodableValueIsRejected(t *testing.T) {
	_, found, err := Detect(map[string]any{"f": func() {}})
	assert.False(t, found)
	require.ErrorIs(t, err, ErrMalformed)
	assert.True(t, isSpeculative(map[string]any{"c": make(chan int)}))
}

// TestGoMapFindingIsDeterministic: the least key wins, whatever order the
// map is walked in.
func TestGoMapFindingIsDeterministic(t *testing.T) {
	v := map[string]any{
		"z": map[string]any{"lane": "speculative"},
		"m": []any{map[string]any{"alternatives": 1}},
		"b": map[string]any{"q": map[string]any{"edge_cases": 1}, "a": map[string]any{"analogies": 1}},
		"c": "x",
	}
	for range 50 {
		f, found, err := Detect(v)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, "/b/a/analogies", f.Path)
	}
}

func nest(depth int, inner string) string {
	return strings.Repeat(`{"a":`, depth) + inner + strings.Repeat("}", depth)
}

func TestLimitDepth(t *testing.T) {
	ok := nest(MaxDepth-1, `{"lane":"grounded"}`)
	assert.False(t, isSpeculative(json.RawMessage(ok)))
	assert.False(t, isSpeculative(decode(t, ok)))

	deep := nest(MaxDepth, `{}`)
	_, found, err := Detect(json.RawMessage(deep))
	assert.False(t, found)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "depth", le.Limit)
	assert.True(t, errors.Is(err, ErrLimit))
	assert.True(t, isSpeculative(json.RawMessage(deep)), "over the limit is a rejection")

	// Very deep input does not overflow the stack.
	huge := strings.Repeat("[", 1_000_000)
	assert.True(t, isSpeculative(json.RawMessage(huge)))
	assert.True(t, isSpeculative(map[string]any{"s": huge}))

	// A self-referencing Go map is caught by the depth limit.
	cyc := map[string]any{}
	cyc["self"] = cyc
	_, _, err = Detect(cyc)
	require.ErrorIs(t, err, ErrLimit)

	// Depth counts through JSON-in-string layers.
	half, _ := json.Marshal(nest(MaxDepth/2+1, "1"))
	layered := nest(MaxDepth/2, string(half))
	_, _, err = Detect(json.RawMessage(layered))
	require.ErrorIs(t, err, ErrLimit)
}

func encodeN(v any, n int) any {
	for range n {
		b, _ := json.Marshal(v)
		v = string(b)
	}
	return v
}

func TestLimitEncodings(t *testing.T) {
	clean := map[string]any{"x": 1}
	spec := map[string]any{"lane": "speculative"}
	for n := 1; n <= MaxEncodings; n++ {
		assert.False(t, isSpeculative(map[string]any{"p": encodeN(clean, n)}), n)
		f, found, err := Detect(map[string]any{"p": encodeN(spec, n)})
		require.NoError(t, err, n)
		require.True(t, found, n)
		assert.Equal(t, "/p/lane", f.Path)
		assert.Equal(t, n, f.Encodings)
	}
	// Text at the deepest layer that is not JSON is only text.
	text := encodeN(map[string]any{"x": `{not json "alternatives"`, "y": `"quoted" text`}, MaxEncodings)
	f, found, err := Detect(map[string]any{"p": text})
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, RuleQuoted, f.Rule)
	assert.Equal(t, MaxEncodings, f.Encodings)
	_, _, err = Detect(map[string]any{"p": encodeN(map[string]any{"y": `"quoted" text`}, MaxEncodings)})
	require.NoError(t, err)

	_, _, err = Detect(map[string]any{"p": encodeN(clean, MaxEncodings+1)})
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "encodings", le.Limit)
	assert.Equal(t, "/p", le.Path)
}

func TestLimitWork(t *testing.T) {
	// A document of MaxWork bytes cannot be checked inside the budget.
	big := make([]byte, 0, MaxWork+16)
	big = append(big, '"')
	big = append(big, strings.Repeat("a", MaxWork)...)
	big = append(big, '"')
	_, _, err := Detect(json.RawMessage(big))
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "work", le.Limit)
}

// TestNestedEncodingsAreLinear: strings holding JSON inside strings
// holding JSON cost each layer once, not once per enclosing layer pair.
func TestNestedEncodingsAreLinear(t *testing.T) {
	var v any = map[string]any{"x": strings.Repeat("y", 1<<16)}
	for range MaxEncodings {
		v = map[string]any{"inner": encodeN(v, 1), "pad": strings.Repeat("z", 1<<10)}
	}
	b, _ := json.Marshal(v)
	w := newWalker(false, false, 1)
	w.value(json.RawMessage(b), 0, "")
	require.NoError(t, w.err)
	used := MaxWork - w.budget
	assert.Less(t, used, 4*(MaxEncodings+1)*len(b), "work %d for %d bytes", used, len(b))
}

func TestFindingString(t *testing.T) {
	f, _, _ := Detect(json.RawMessage(`{"p":"{\"lane\":\"speculative\"}"}`))
	assert.Equal(t, `"lane" is speculative at /p/lane (inside 1 JSON-in-string layer)`, f.String())
	f, _, _ = Detect(`say "speculative"`)
	assert.Equal(t, `quoted marker "speculative" in a string at the top level`, f.String())
	f, _, _ = Detect(map[string]any{"a b": map[string]any{"edgeCases": 1}})
	assert.Equal(t, `artifact key "edgeCases" at /a b/edgeCases`, f.String())
}

func TestCheck(t *testing.T) {
	require.NoError(t, Check(decode(t, `{"lane":"grounded"}`)))
	err := Check(decode(t, `{"a":[{"lane":"speculative"}]}`))
	var se *SpeculativeError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, ErrSpeculative)
	assert.Equal(t, "/a/0/lane", se.Finding.Path)
	assert.Contains(t, err.Error(), "/a/0/lane")
}

// TestKeyPrecheckNeverChangesTheAnswer: the first-byte pre-check of keys
// only skips keys the full fold would not match either.
func TestKeyPrecheckNeverChangesTheAnswer(t *testing.T) {
	parts := []string{"lane", "epistemic", "status", "speculative", "context", "edge", "cases", "alternatives",
		"analogies", "experiment", "hints", "_", "-", ".", " ", "@", "$", "\x00", "\x7f", "\u200b", "\u0301", "\u2010",
		"K", "\u212a", "\u017f", "x", "1", "\uff45", "\u0435"}
	rapid.Check(t, func(t *rapid.T) {
		var b strings.Builder
		for _, p := range rapid.SliceOfN(rapid.SampledFrom(parts), 1, 5).Draw(t, "parts") {
			b.WriteString(p)
		}
		if first := rapid.IntRange(0, 255).Draw(t, "first"); first < 0x80 {
			b.WriteByte(byte(first))
		}
		for _, key := range []string{b.String(), string(b.String()[len(b.String())-1:]) + b.String()} {
			var f folded
			fold(key, &f)
			wc, wm := classifyFolded(&f)
			gc, gm := classify(key)
			if wc != gc || wm != gm {
				t.Fatalf("%q: classify %v %q, fold %v %q", key, gc, gm, wc, wm)
			}
		}
	})
}

// TestDetectBytesInTypedGoValues: a []byte holding JSON is checked as JSON
// wherever it sits in a Go value. encoding/json writes a []byte field or
// map value as base64, which hid the marker from the check although the
// same bytes in a map[string]any are caught.
func TestDetectBytesInTypedGoValues(t *testing.T) {
	inner := []byte(`{"epistemic_status":"speculative"}`)
	type payload struct {
		ClaimID string `json:"claim_id"`
		Raw     []byte `json:"raw"`
	}
	type wrapper struct {
		Items []payload
		Any   any
	}
	for _, tc := range []struct {
		name string
		v    any
		want bool
		path string
	}{
		{"struct field", payload{ClaimID: "c", Raw: inner}, true, "/raw/epistemic_status"},
		{"struct pointer", &payload{ClaimID: "c", Raw: inner}, true, "/raw/epistemic_status"},
		{"map of bytes", map[string][]byte{"p": inner}, true, "/p/epistemic_status"},
		{"slice of bytes", [][]byte{[]byte(`{}`), inner}, true, "/1/epistemic_status"},
		{"nested", wrapper{Items: []payload{{ClaimID: "c"}, {ClaimID: "c", Raw: inner}}}, true, "/Items/1/raw/epistemic_status"},
		{"interface", wrapper{Any: map[string]any{"x": map[string][]byte{"y": inner}}}, true, "/Any/x/y/epistemic_status"},
		{"status key", struct {
			Lane []byte `json:"lane"`
		}{[]byte("speculative")}, true, "/lane"},
		{"clean struct", payload{ClaimID: "c", Raw: []byte(`{"a":1}`)}, false, ""},
		{"clean map", map[string][]byte{"p": []byte(`plain text`)}, false, ""},
	} {
		f, found, err := Detect(tc.v)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, found, tc.name)
		assert.Equal(t, tc.want, isSpeculative(tc.v), tc.name)
		if tc.want {
			assert.Equal(t, tc.path, f.Path, tc.name)
		}
	}
}

// TestMarkerInsideAKey: an object key is a string too. A key that holds
// JSON, or a quoted marker token, is checked like a string value; before,
// moving a serialised marker from a value into a key hid it.
func TestMarkerInsideAKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
		path string
	}{
		{"json key", json.RawMessage(`{"{\"lane\":\"speculative\"}":1}`), `/{"lane":"speculative"}/lane`},
		{"quoted token key", json.RawMessage(`{"note 'speculative' x":1}`), "/note 'speculative' x"},
		{"nested json key", json.RawMessage(`{"a":[{"{\"alternatives\":[]}":true}]}`), `/a/0/{"alternatives":[]}`},
		{"go map key", map[string]any{`{"edge_cases":1}`: 1}, `/{"edge_cases":1}/edge_cases`},
		{"string key", `{"{\"experiment_hints\":{}}":1}`, `/{"experiment_hints":{}}`},
	} {
		f, found, err := Detect(tc.v)
		require.NoError(t, err, tc.name)
		assert.True(t, found, tc.name)
		assert.Equal(t, tc.path, f.Path, tc.name)
	}
	for _, clean := range []any{
		json.RawMessage(`{"it's a key":1,"{\"a\":1}":2}`),
		map[string]any{`"quoted"`: 1, "speculative": 2},
	} {
		assert.False(t, isSpeculative(clean), "%v", clean)
	}
	_, err := DecodeExperimentSpec([]byte(`{"claim_id":"c","template_qid":"t@1.0.0","scope_lock_id":"s","params":{"{\"alternatives\":[]}":1}}`))
	require.ErrorIs(t, err, ErrResidue)
}

// TestQuotedTokenAcrossAStringLayer: a string that is one JSON string
// literal is decoded and checked again, but the last-resort wire must
// still look at the text as written: in "\"0\"speculative" the token
// "speculative" is quoted only at the outer layer (the closing quote of
// the literal closes it), and the specification's algorithm flags it.
// Found by FuzzDetect.
func TestQuotedTokenAcrossAStringLayer(t *testing.T) {
	for _, doc := range []string{
		`{"":"\"\\\"0\\\"speCulAtive\""}`,
		`{"note":"\"x\\\"speculative\""}`,
		`["\"a\\\"epistemic_status\""]`,
	} {
		var v any
		require.NoError(t, json.Unmarshal([]byte(doc), &v))
		require.True(t, specReference(v, 0), "the reference flags %s", doc)
		assert.True(t, isSpeculative(json.RawMessage(doc)), doc)
		assert.True(t, isSpeculative(v), doc)
	}
}

// TestPointerMatchesViolationJoin: the detector's own pointer rendering
// builds what violation.Join and violation.Index build.
func TestPointerMatchesViolationJoin(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var path []seg
		want := ""
		for range rapid.IntRange(0, 8).Draw(t, "n") {
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				n := rapid.IntRange(0, 1<<20).Draw(t, "index")
				path = append(path, seg{kind: segIndex, idx: n})
				want = violation.Index(want, n)
			case 1:
				k := rapid.StringMatching(`[a/~b0]{0,6}`).Draw(t, "key")
				path = append(path, seg{kind: segBytes, key: []byte(k)})
				want = violation.Join(want, k)
			default:
				k := rapid.String().Draw(t, "name")
				path = append(path, seg{kind: segString, str: k})
				want = violation.Join(want, k)
			}
		}
		if got := pointer(path); got != want {
			t.Fatalf("pointer %q, violation.Join %q", got, want)
		}
	})
}
