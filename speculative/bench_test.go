package speculative

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// evidenceDoc builds a clean, realistic validation-evidence document of at
// least size bytes: Monte Carlo runs with numbers, prose notes (including
// the bare word "speculative", which is not a marker), nested parameters
// and a lane field that reads "grounded".
func evidenceDoc(size int) []byte {
	runs := []any{}
	doc := map[string]any{
		"claim_id":         "claim-7f3a",
		"evidence_id":      "ev-0001",
		"lane":             "grounded",
		"success":          true,
		"template_qid":     "numeric_consistency@1.2.0",
		"scope_lock_id":    "lock-42",
		"feynman_checks":   map[string]any{"passed": true, "failures": []any{}},
		"sensitivity_axes": []any{"temperature", "sample_size"},
		"runs":             nil,
	}
	var b []byte
	for i := 0; ; i++ {
		samples := make([]any, 16)
		for j := range samples {
			samples[j] = float64(i*16+j) / 7.0
		}
		runs = append(runs, map[string]any{
			"seed":     float64(i),
			"mean":     0.5 + float64(i%13)/100,
			"variance": 0.01 * float64(i%5),
			"samples":  samples,
			"notes":    fmt.Sprintf("run %d converged; reviewers called an earlier design speculative, this one is not", i),
			"params":   map[string]any{"n": float64(1000 + i), "dist": "normal", "tags": []any{"mc", "batch-" + strings.Repeat("x", i%4)}},
		})
		if i%8 == 0 {
			doc["runs"] = runs
			b, _ = json.Marshal(doc)
			if len(b) >= size {
				return b
			}
		}
	}
}

func benchDetect(b *testing.B, size int, decoded bool) {
	raw := evidenceDoc(size)
	var v any = json.RawMessage(raw)
	if decoded {
		var d any
		if err := json.Unmarshal(raw, &d); err != nil {
			b.Fatal(err)
		}
		v = d
	}
	if _, found, err := Detect(v); found || err != nil {
		b.Fatal("clean document flagged")
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, found, err := Detect(v); found || err != nil {
			b.Fatal("flagged")
		}
	}
}

// The clean path, the one every write takes.
func BenchmarkDetectClean100KB(b *testing.B)        { benchDetect(b, 100<<10, false) }
func BenchmarkDetectClean1MB(b *testing.B)          { benchDetect(b, 1<<20, false) }
func BenchmarkDetectClean100KBDecoded(b *testing.B) { benchDetect(b, 100<<10, true) }
func BenchmarkDetectClean1MBDecoded(b *testing.B)   { benchDetect(b, 1<<20, true) }

// BenchmarkDetectMarkerDeep100KB: a 100 KB document whose only marker is
// hidden at its end inside a doubly encoded string.
func BenchmarkDetectMarkerDeep100KB(b *testing.B) {
	raw := evidenceDoc(100 << 10)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		b.Fatal(err)
	}
	doc["zz"] = encodeN(map[string]any{"lane": "speculative"}, 2)
	raw, _ = json.Marshal(doc)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, found, _ := Detect(json.RawMessage(raw)); !found {
			b.Fatal("missed")
		}
	}
}

func BenchmarkDecodeExperimentSpec(b *testing.B) {
	doc := []byte(`{"claim_id":"c1","template_qid":"sensitivity_suite@1.0.0","scope_lock_id":"L1","params":{"vary":["pressure","salinity"],"levels":5,"relative_step":0.1},"assumptions":["iid samples"]}`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeExperimentSpec(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkExperimentHintsDigest(b *testing.B) {
	h := sampleHints()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Digest(); err != nil {
			b.Fatal(err)
		}
	}
}
