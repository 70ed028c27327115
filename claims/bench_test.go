package claims

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/verity-go/verity/trace"
)

// bench100 is a 100-claim bundle that passes every gate: facts with two
// evidence pointers, inferences and decisions over the auto-approved
// tiers, a third of them with caveats. The whole chain runs.
func bench100() ClaimBundle {
	var cs []Claim
	for i := range 100 {
		id := fmt.Sprintf("claim-%03d", i)
		u := 0.1 + float64(i%7)/10 // 0.1 … 0.7
		switch i % 3 {
		case 0:
			cs = append(cs, mkClaim(id, ClaimFact, TierReadOnly, u, RecommendExecute, ev(0.4), ev(0.9)))
		case 1:
			cs = append(cs, mkClaim(id, ClaimInference, TierWriteLimited, u, RecommendExecute, ev(0.7)))
		default:
			cs = append(cs, mkClaim(id, ClaimDecision, TierModify, u, RecommendExplain))
		}
	}
	return mkBundle(cs...)
}

func BenchmarkEvaluate100Claims(b *testing.B) {
	in := bench100()
	p := approverPolicy()
	c := clearance(TierModify)
	if ev, err := Evaluate(in, p, c); err != nil || ev.Decision != DecisionPublish {
		b.Fatalf("setup: %v %v %s", err, ev.Decision, ev.Reason)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Evaluate(in, p, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100, "ns/claim")
}

func BenchmarkValidate100Claims(b *testing.B) {
	in := bench100()
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBundle100Claims(b *testing.B) {
	data, err := json.Marshal(bench100())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeBundle(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionEvaluate100Claims: evaluation plus the canonical record
// appended to an in-memory log.
func BenchmarkSessionEvaluate100Claims(b *testing.B) {
	in := bench100()
	s, err := NewSession(context.Background(), trace.NewMemoryLog(), approverPolicy())
	if err != nil {
		b.Fatal(err)
	}
	c := clearance(TierModify)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Evaluate(context.Background(), in, c); err != nil {
			b.Fatal(err)
		}
	}
}
