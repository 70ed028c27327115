package server

import (
	"strings"
	"testing"
)

// BenchmarkDecodeRequest: the request decoders on typical bodies (a
// declaration of 50 hypotheses with metadata, an elimination).
func BenchmarkDecodeRequest(b *testing.B) {
	hyps := make([]string, 50)
	for i := range hyps {
		hyps[i] = `"hypothesis-` + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + `"`
	}
	declare := []byte(`{` + ontoJSON + `,"hypotheses":[` + strings.Join(hyps, ",") + `],"metadata":{"owner":"ops","ticket":"INC-4312"}}`)
	eliminate := []byte(`{"session_id":"sid","source_id":"log-scan","observation_id":"obs-17","eliminated":["hypothesis-a","hypothesis-xb"],"justification":{"evidence":"sha256:0f3c","note":"ruled out by the trace"}}`)
	b.Run("declare", func(b *testing.B) {
		b.SetBytes(int64(len(declare)))
		b.ReportAllocs()
		for b.Loop() {
			if _, vs := decodeDeclare(declare); len(vs) > 0 {
				b.Fatal(vs)
			}
		}
	})
	b.Run("eliminate", func(b *testing.B) {
		b.SetBytes(int64(len(eliminate)))
		b.ReportAllocs()
		for b.Loop() {
			if _, vs := decodeEliminate(eliminate, "sid"); len(vs) > 0 {
				b.Fatal(vs)
			}
		}
	})
}
