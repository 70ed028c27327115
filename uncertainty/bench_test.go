package uncertainty_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/verity-go/verity/uncertainty"
)

// BenchmarkConformalQuantile is conformal calibration on 100,000 scores:
// the finite-sample quantile by selection.
func BenchmarkConformalQuantile(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	scores := make([]float64, 100_000)
	for i := range scores {
		scores[i] = r.Float64()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := uncertainty.ConformalQuantile(scores, 0.1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(scores)), "ns/score")
}

// BenchmarkCalibrate is Calibrate end to end on 100,000 examples of 10
// classes: validation, scoring and the quantile.
func BenchmarkCalibrate(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	data := synthSet(r, 10, 100_000)
	for _, score := range []uncertainty.Score{uncertainty.ScoreLAC, uncertainty.ScoreAPS} {
		for _, mondrian := range []bool{false, true} {
			name := score.String()
			if mondrian {
				name += "-mondrian"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := uncertainty.Calibrate(data, uncertainty.ConformalOptions{Score: score, Alpha: 0.1, ClassConditional: mondrian}); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(data.Probs)), "ns/example")
			})
		}
	}
}

// BenchmarkPredict is one prediction set over 1,000 classes.
func BenchmarkPredict(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	const k = 1000
	data := synthSet(r, k, 2000)
	probs, _ := synthExample(r, k)
	for _, score := range []uncertainty.Score{uncertainty.ScoreLAC, uncertainty.ScoreAPS} {
		p, err := uncertainty.Calibrate(data, uncertainty.ConformalOptions{Score: score, Alpha: 0.1})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(score.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Predict(probs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/k, "ns/class")
		})
	}
}

// BenchmarkSemanticEntropyClustering clusters k answers with a judge that
// answers instantly, so the figure is the library's own overhead; in
// production the judge's model calls dominate, and judge-calls/op says how
// many there are.
func BenchmarkSemanticEntropyClustering(b *testing.B) {
	for _, tc := range []struct{ k, meanings int }{{5, 2}, {5, 5}, {20, 4}, {100, 10}} {
		answers := make([]uncertainty.Answer, tc.k)
		for i := range answers {
			answers[i] = uncertainty.Answer{Text: fmt.Sprintf("meaning %d|phrasing %d", i%tc.meanings, i)}
		}
		b.Run(fmt.Sprintf("k=%d/meanings=%d", tc.k, tc.meanings), func(b *testing.B) {
			j := &meaningJudge{}
			judge := uncertainty.Bidirectional(j)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := uncertainty.SemanticEntropyOf(ctx, judge, "q", answers, uncertainty.SemanticEntropyOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(j.calls)/float64(b.N), "judge-calls/op")
		})
	}
}

// BenchmarkAUROC evaluates a method on 100,000 labelled answers.
func BenchmarkAUROC(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 4))
	scores := make([]float64, 100_000)
	wrong := make([]bool, len(scores))
	for i := range scores {
		wrong[i] = r.IntN(3) == 0
		scores[i] = r.NormFloat64()
		if wrong[i] {
			scores[i] += 1
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := uncertainty.AUROC(scores, wrong); err != nil {
			b.Fatal(err)
		}
	}
}
