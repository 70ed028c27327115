/*
This file checks the detection guarantees as properties of generated
documents:

	removing every marker makes a document clean           TestRemovingEveryMarkerMakesClean
	wrapping a speculative value keeps it detected         TestWrappingKeepsDetected
	JSON-encoding it, up to MaxEncodings times, too         TestJSONEncodingKeepsDetected
	a JSON text and its decoded value get the same answer  TestDetectRawAgreesWithDecoded
	exceeding a limit is a rejection, never a pass         TestExceedingALimitIsARejection
*/

package speculative

import (
	"encoding/json"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// A node is a generated document with optional markers. render(true)
// gives the document, render(false) the same document with every marker
// removed: marker keys dropped, status values changed to "grounded", quoted
// tokens unquoted.
type node interface {
	render(markers bool) any
	hasMarker() bool
}

type (
	nScalar struct{ v any }
	nText   struct {
		words  []string
		quoted string // a marker token quoted inside prose; "" for none
	}
	nObject struct {
		keys []string
		vals []node
	}
	nArray   struct{ elems []node }
	nEncoded struct{ inner node } // the inner document serialised into a string
	nMarker  struct {             // a marker key (or a status key) inside an object
		key     string
		status  bool // key is a status key: the marker is its value
		statusV string
		value   node
	}
)

func (n nScalar) render(bool) any  { return n.v }
func (n nScalar) hasMarker() bool  { return false }
func (n nText) hasMarker() bool    { return n.quoted != "" }
func (n nArray) hasMarker() bool   { return anyMarker(n.elems) }
func (n nObject) hasMarker() bool  { return anyMarker(n.vals) }
func (n nEncoded) hasMarker() bool { return n.inner.hasMarker() }
func (n nMarker) hasMarker() bool  { return true }
func (n nEncoded) render(m bool) any {
	b, err := json.Marshal(n.inner.render(m))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (n nText) render(m bool) any {
	s := ""
	for i, w := range n.words {
		if i > 0 {
			s += " "
		}
		s += w
	}
	if n.quoted != "" && m {
		s += ` "` + n.quoted + `"`
	}
	return s
}

func (n nArray) render(m bool) any {
	out := make([]any, len(n.elems))
	for i, e := range n.elems {
		out[i] = e.render(m)
	}
	return out
}

func (n nObject) render(m bool) any {
	out := map[string]any{}
	for i, k := range n.keys {
		if mk, ok := n.vals[i].(nMarker); ok {
			switch {
			case mk.status && m:
				out[mk.key] = mk.statusV
			case mk.status:
				out[mk.key] = "grounded"
			case m:
				out[mk.key] = mk.value.render(m)
			}
			continue
		}
		out[k] = n.vals[i].render(m)
	}
	return out
}

func (n nMarker) render(m bool) any { panic("rendered by its object") }

func anyMarker(ns []node) bool {
	for _, n := range ns {
		if n.hasMarker() {
			return true
		}
	}
	return false
}

// Clean vocabulary: keys and words that start with letters no marker
// starts with, so they can never spell one.
var (
	cleanKey  = rapid.StringMatching(`[b-dfgh-kmnp-rt-z][a-z0-9_]{0,8}`)
	cleanWord = rapid.StringMatching(`[b-dfgh-kmnp-rt-z][a-z]{0,7}`)
	statusKey = rapid.SampledFrom([]string{"epistemic_status", "epistemicStatus", "Epistemic-Status", "EPISTEMIC_STATUS", "lane", "Lane", "LANE"})
	statusVal = rapid.SampledFrom([]string{"speculative", " Speculative ", "SPECULATIVE", "speculative\n"})
	markerKey = rapid.SampledFrom([]string{"speculative_context", "speculative-context", "speculativeContext", "SpeculativeContextId",
		"experiment_hints", "experimentHints", "alternatives", "Alternatives", "analogies", "edge_cases", "edgeCases", "EDGE-CASES"})
	quotedTok = rapid.SampledFrom([]string{"speculative", "Speculative", "epistemic_status", "epistemic-status", "speculative_context", "experiment_hints", "alternatives"})
)

func genNode(t *rapid.T, depth, enc int, label string) node {
	choices := 4
	if depth < 4 {
		choices = 8
	}
	switch rapid.IntRange(0, choices-1).Draw(t, label) {
	case 0:
		return nScalar{rapid.SampledFrom([]any{nil, true, false, 0.0, 1.5, -3.0, 1e10}).Draw(t, label+".scalar")}
	case 1, 2:
		txt := nText{words: rapid.SliceOfN(cleanWord, 0, 4).Draw(t, label+".words")}
		if rapid.IntRange(0, 5).Draw(t, label+".q") == 0 {
			txt.quoted = quotedTok.Draw(t, label+".tok")
		}
		return txt
	case 3:
		return nScalar{""}
	case 4, 5:
		o := nObject{}
		n := rapid.IntRange(0, 4).Draw(t, label+".n")
		seen := map[string]bool{}
		for i := range n {
			l := fmt.Sprintf("%s.%d", label, i)
			var k string
			var v node
			switch rapid.IntRange(0, 6).Draw(t, l+".kind") {
			case 0:
				k = statusKey.Draw(t, l+".key")
				v = nMarker{key: k, status: true, statusV: statusVal.Draw(t, l+".val")}
			case 1:
				k = markerKey.Draw(t, l+".key")
				v = nMarker{key: k, value: genNode(t, depth+1, enc, l)}
			default:
				k = cleanKey.Draw(t, l+".key")
				v = genNode(t, depth+1, enc, l)
			}
			if seen[k] {
				continue
			}
			seen[k] = true
			o.keys, o.vals = append(o.keys, k), append(o.vals, v)
		}
		return o
	case 6:
		return nArray{elems: rapid.SliceOfN(rapid.Custom(func(t *rapid.T) node { return genNode(t, depth+1, enc, label+".e") }), 0, 4).Draw(t, label+".elems")}
	default:
		if enc >= 3 {
			return nScalar{2.0}
		}
		return nEncoded{inner: genNode(t, depth+1, enc+1, label+".enc")}
	}
}

// TestRemovingEveryMarkerMakesClean: a document with markers is detected,
// and the same document with every marker removed is clean — as a decoded
// value and as JSON text.
func TestRemovingEveryMarkerMakesClean(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := genNode(t, 0, 0, "root")
		with, without := n.render(true), n.render(false)
		rawWith, _ := json.Marshal(with)
		rawWithout, _ := json.Marshal(without)
		if n.hasMarker() {
			if !isSpeculative(with) || !isSpeculative(json.RawMessage(rawWith)) {
				t.Fatalf("marker missed: %s", rawWith)
			}
		} else if isSpeculative(with) {
			t.Fatalf("clean document flagged: %s", rawWith)
		}
		if isSpeculative(without) || isSpeculative(json.RawMessage(rawWithout)) {
			f, _, err := Detect(without)
			t.Fatalf("document without markers flagged: %s (%v, %v)", rawWithout, f, err)
		}
	})
}

// genSpeculative draws a value that carries a marker.
func genSpeculative(t *rapid.T) any {
	switch rapid.IntRange(0, 3).Draw(t, "form") {
	case 0:
		return map[string]any{statusKey.Draw(t, "k"): statusVal.Draw(t, "v")}
	case 1:
		return map[string]any{markerKey.Draw(t, "k"): rapid.SampledFrom([]any{nil, 1.0, "x", []any{}, map[string]any{}}).Draw(t, "v")}
	case 2:
		return "some text \"" + quotedTok.Draw(t, "tok") + "\" more"
	default:
		return []any{map[string]any{"x": map[string]any{statusKey.Draw(t, "k"): statusVal.Draw(t, "v")}}}
	}
}

// wrapIn puts v inside a random container: an object under a clean key with
// clean siblings, an array at a random index among clean elements, or a
// JSON encoding of it (counted against the encoding budget).
func wrapIn(t *rapid.T, v any, i int, enc *int) any {
	label := fmt.Sprintf("wrap%d", i)
	kind := rapid.IntRange(0, 2).Draw(t, label)
	if kind == 2 && *enc >= MaxEncodings {
		kind = 0
	}
	switch kind {
	case 0:
		o := map[string]any{}
		for _, k := range rapid.SliceOfN(cleanKey, 0, 3).Draw(t, label+".sib") {
			o[k] = k
		}
		o[cleanKey.Draw(t, label+".key")] = v
		return o
	case 1:
		a := []any{}
		for _, w := range rapid.SliceOfN(cleanWord, 0, 3).Draw(t, label+".sib") {
			a = append(a, w)
		}
		at := rapid.IntRange(0, len(a)).Draw(t, label+".at")
		a = append(a[:at], append([]any{v}, a[at:]...)...)
		return a
	default:
		*enc++
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// TestWrappingKeepsDetected: wrapping a speculative value in any container,
// any number of times, keeps it detected.
func TestWrappingKeepsDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genSpeculative(t)
		enc := 0
		if _, ok := v.(string); ok {
			enc = 0
		}
		for i := range rapid.IntRange(0, 12).Draw(t, "layers") {
			v = wrapIn(t, v, i, &enc)
		}
		raw, _ := json.Marshal(v)
		if !isSpeculative(v) || !isSpeculative(json.RawMessage(raw)) {
			t.Fatalf("lost after wrapping: %s", raw)
		}
	})
}

// TestJSONEncodingKeepsDetected: JSON-encoding a speculative value any
// number of times within MaxEncodings keeps it detected, and the finding
// reports the number of layers.
func TestJSONEncodingKeepsDetected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := map[string]any{statusKey.Draw(t, "k"): statusVal.Draw(t, "v")}
		n := rapid.IntRange(1, MaxEncodings).Draw(t, "n")
		doc := map[string]any{"payload": encodeN(v, n)}
		f, found, err := Detect(doc)
		if err != nil || !found {
			t.Fatalf("lost after %d encodings: %v %v", n, found, err)
		}
		if f.Encodings != n || f.Path == "" {
			t.Fatalf("finding %+v after %d encodings", f, n)
		}
	})
}

// TestDetectRawAgreesWithDecoded: a decoded value and its JSON text give
// the same answer, and the same first path (encoding/json sorts map keys,
// which is the order Detect uses for Go maps).
func TestDetectRawAgreesWithDecoded(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genNode(t, 0, 0, "root").render(true)
		raw, _ := json.Marshal(v)
		f1, ok1, err1 := Detect(v)
		f2, ok2, err2 := Detect(json.RawMessage(raw))
		if ok1 != ok2 || (err1 == nil) != (err2 == nil) || f1 != f2 {
			t.Fatalf("%s: decoded %v %+v %v, raw %v %+v %v", raw, ok1, f1, err1, ok2, f2, err2)
		}
	})
}

// TestExceedingALimitIsARejection: a clean document is clean exactly while
// it stays inside the limits, and rejected (never passed) beyond them.
func TestExceedingALimitIsARejection(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := rapid.IntRange(MaxDepth-3, MaxDepth+3).Draw(t, "depth")
		doc := nest(d, "1")
		if got := isSpeculative(json.RawMessage(doc)); got != (d > MaxDepth) {
			t.Fatalf("depth %d: speculative=%v", d, got)
		}
		n := rapid.IntRange(1, MaxEncodings+3).Draw(t, "encodings")
		v := map[string]any{"p": encodeN(map[string]any{"x": cleanWord.Draw(t, "w")}, n)}
		_, _, err := Detect(v)
		if (err != nil) != (n > MaxEncodings) || isSpeculative(v) != (n > MaxEncodings) {
			t.Fatalf("%d encodings: %v", n, err)
		}
	})
}
