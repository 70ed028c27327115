package uncertainty_test

// Bad input (NaN, probabilities outside [0, 1], mismatched lengths) is an
// *InputError wrapping ErrInvalidInput, never a panic: the Reject tests of
// each file and the Fuzz targets here (FuzzConformal, FuzzCalibration,
// FuzzAUROC, FuzzConformalQuantile, FuzzClusterEntropy,
// FuzzLikelihoodEntropy, FuzzSemanticEntropyOf). Every error says
// "uncertainty: " once: TestErrorsPrefixedOnce (errors_test.go).

import (
	"context"
	"encoding/binary"
	"math"
	"testing"

	"github.com/verity-go/verity/uncertainty"
)

// floats decodes fuzz bytes: with raw set, every 8 bytes are the bits of a
// float64 (so NaN, ±Inf, subnormals and huge values all occur); otherwise
// every byte b is the value b/250 (mostly in [0, 1], a few just above).
func floats(b []byte, raw bool) []float64 {
	var out []float64
	if raw {
		for len(b) >= 8 {
			out = append(out, math.Float64frombits(binary.LittleEndian.Uint64(b)))
			b = b[8:]
		}
		return out
	}
	for _, c := range b {
		out = append(out, float64(c)/250)
	}
	return out
}

func bools(b []byte) []bool {
	out := make([]bool, len(b))
	for i, c := range b {
		out[i] = c&1 == 1
	}
	return out
}

func inUnit(v float64) bool { return v >= 0 && v <= 1 }

func FuzzClusterEntropy(f *testing.F) {
	f.Add([]byte{5})
	f.Add([]byte{1, 1, 1, 1, 1})
	f.Add([]byte{4, 1})
	f.Add([]byte{2, 2, 1})
	f.Add([]byte{0, 0})
	f.Add([]byte{})
	f.Add([]byte{200, 0, 255, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		sizes := make([]int, len(b))
		k := 0
		for i, c := range b {
			sizes[i] = int(int8(c)) // negatives included
			k += sizes[i]
		}
		h, err := uncertainty.ClusterEntropy(sizes)
		if err == nil && (h < 0 || h > math.Log(float64(k))) {
			t.Fatalf("SE %v outside [0, ln %d]", h, k)
		}
		n, err := uncertainty.NormalizedClusterEntropy(sizes)
		if err == nil && !inUnit(n) {
			t.Fatalf("normalised %v", n)
		}
		d, err := uncertainty.Disagreement(sizes)
		if err == nil && !inUnit(d) {
			t.Fatalf("disagreement %v", d)
		}
	})
}

func FuzzLikelihoodEntropy(f *testing.F) {
	f.Add([]byte{0, 1, 0}, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}, true)
	f.Add([]byte{0, 1}, []byte{10, 200}, false)
	f.Add([]byte{}, []byte{}, false)
	f.Fuzz(func(t *testing.T, ids, lp []byte, raw bool) {
		clusters := make([]int, len(ids))
		for i, c := range ids {
			clusters[i] = int(int8(c))
		}
		lps := floats(lp, raw)
		if !raw {
			for i := range lps {
				lps[i] = -20 * lps[i]
			}
		}
		h, err := uncertainty.LikelihoodEntropy(clusters, lps)
		if err == nil && (h < 0 || h > math.Log(float64(len(lps)))+1e-12) {
			t.Fatalf("likelihood SE %v for %d answers", h, len(lps))
		}
		n, err := uncertainty.NormalizedLikelihoodEntropy(clusters, lps)
		if err == nil && !inUnit(n) {
			t.Fatalf("normalised %v", n)
		}
	})
}

func FuzzCalibration(f *testing.F) {
	f.Add([]byte{10, 100, 200, 250, 251}, []byte{1, 0, 1, 1, 0}, 10, false, 0.7)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, []byte{1}, 3, true, math.NaN())
	f.Add([]byte{}, []byte{}, 0, false, 2.0)
	f.Fuzz(func(t *testing.T, cb, yb []byte, bins int, raw bool, c float64) {
		conf := floats(cb, raw)
		correct := bools(yb)
		if e, err := uncertainty.ECE(conf, correct, bins); err == nil && !inUnit(e) {
			t.Fatalf("ECE %v", e)
		}
		if len(conf) >= 2 {
			th := uncertainty.Thresholds{Execute: conf[0], Explain: conf[1]}
			r, err := uncertainty.Recommend(c, th)
			if err == nil && (!r.Valid() || r == "REFUSE") {
				t.Fatalf("Recommend(%v, %+v) = %q", c, th, r)
			}
			if err == nil && (c <= th.Execute) != (r == "EXECUTE") {
				t.Fatalf("Recommend(%v, %+v) = %q", c, th, r)
			}
		}
		h, errH := uncertainty.FitHistogram(conf, correct, bins)
		p, errP := uncertainty.FitPlatt(conf, correct)
		for _, cal := range []struct {
			c   uncertainty.Calibrator
			err error
		}{{h, errH}, {p, errP}} {
			if cal.err != nil {
				continue
			}
			if v := cal.c.Calibrate(c); !math.IsNaN(c) && !inUnit(v) {
				t.Fatalf("%s(%v) = %v", cal.c.Method(), c, v)
			}
			rep, err := uncertainty.EvaluateCalibration(cal.c, conf, correct, bins)
			if err == nil && (!inUnit(rep.Raw) || !inUnit(rep.Calibrated)) {
				t.Fatalf("report %+v", rep)
			}
			u, err := uncertainty.ConfidenceScore(c, uncertainty.ConfidenceOptions{Calibrator: cal.c})
			if err == nil && (!inUnit(u.Value) || !u.GateRecommendation.Valid() || !u.Method.Valid()) {
				t.Fatalf("uncertainty %+v", u)
			}
		}
	})
}

func FuzzAUROC(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4}, []byte{0, 1, 0, 1}, false)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 0, 0, 0, 0, 0, 0, 0xf0, 0xff}, []byte{0, 1}, true)
	f.Fuzz(func(t *testing.T, sb, pb []byte, raw bool) {
		a, err := uncertainty.AUROC(floats(sb, raw), bools(pb))
		if err == nil && !inUnit(a) {
			t.Fatalf("AUROC %v", a)
		}
	})
}

func FuzzConformalQuantile(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.1, false, 9)
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, 0.5, true, 0)
	f.Add([]byte{}, math.NaN(), false, -1)
	f.Fuzz(func(t *testing.T, sb []byte, alpha float64, raw bool, n int) {
		scores := floats(sb, raw)
		q, err := uncertainty.ConformalQuantile(scores, alpha)
		if err == nil {
			k, err := uncertainty.ConformalRank(len(scores), alpha)
			if err != nil || k < 1 || k > len(scores) {
				t.Fatalf("quantile %v but rank %d, %v", q, k, err)
			}
			below := 0
			for _, s := range scores {
				if s <= q {
					below++
				}
			}
			if below < k {
				t.Fatalf("only %d scores ≤ q̂, rank %d", below, k)
			}
		}
		if k, err := uncertainty.ConformalRank(n, alpha); err == nil && (k < 1 || k > n) {
			t.Fatalf("rank %d for n=%d", k, n)
		}
	})
}

// FuzzConformal drives Calibrate and Predict with arbitrary rows: k classes
// per row, optional normalisation (so that valid input is common), any α.
func FuzzConformal(f *testing.F) {
	f.Add([]byte{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120}, []byte{0, 1, 2, 0}, uint8(3), 0.25, uint8(0), false, true, []byte{30, 30, 40})
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1}, []byte{0, 1, 0, 1}, uint8(2), 0.5, uint8(1), true, true, []byte{1, 1})
	f.Add([]byte{255, 0, 0, 255}, []byte{0, 1}, uint8(2), 0.5, uint8(2), false, false, []byte{3, 3})
	f.Fuzz(func(t *testing.T, pb, lb []byte, k uint8, alpha float64, mode uint8, mondrian, normalize bool, test []byte) {
		kk := int(k%12) + 1
		vals := floats(pb, false)
		norm := func(row []float64) {
			if !normalize {
				return
			}
			var s float64
			for _, v := range row {
				s += v
			}
			if s > 0 {
				for i := range row {
					row[i] /= s
				}
			}
		}
		var data uncertainty.CalibrationSet
		for i := 0; i+kk <= len(vals) && i/kk < len(lb); i += kk {
			row := vals[i : i+kk]
			norm(row)
			data.Probs = append(data.Probs, row)
			data.Labels = append(data.Labels, int(int8(lb[i/kk]))%(kk+1))
		}
		opts := uncertainty.ConformalOptions{Alpha: alpha, ClassConditional: mondrian}
		switch mode % 4 {
		case 1:
			opts.Score = uncertainty.ScoreAPS
		case 2:
			opts.Score = uncertainty.ScoreAPS
			opts.Randomized = true
			for i := range data.Probs {
				data.U = append(data.U, float64(i%7)/6)
			}
		case 3:
			opts.Score = uncertainty.Score(mode)
		}
		p, err := uncertainty.Calibrate(data, opts)
		if err != nil {
			return
		}
		probs := floats(test, false)
		norm(probs)
		var set uncertainty.PredictionSet
		if opts.Randomized {
			set, err = p.PredictRandomized(probs, 0.5)
		} else {
			set, err = p.Predict(probs)
		}
		if err != nil {
			return
		}
		for i, y := range set.Labels {
			if y < 0 || y >= kk || (i > 0 && y <= set.Labels[i-1]) {
				t.Fatalf("bad set %v for %d classes", set.Labels, kk)
			}
		}
		u, err := set.Uncertainty(uncertainty.DefaultThresholds())
		if err != nil || !inUnit(u.Value) || !u.GateRecommendation.Valid() {
			t.Fatalf("uncertainty %+v, %v", u, err)
		}
		if (set.Size() == 0) != (u.GateRecommendation == "REFUSE") {
			t.Fatalf("empty set %v mapped to %v", set.Labels, u.GateRecommendation)
		}
	})
}

func FuzzSemanticEntropyOf(f *testing.F) {
	f.Add("Paris|a\nparis|b\nLyon", []byte{10, 20, 30}, true)
	f.Add("", []byte{}, false)
	f.Add("a\na\na\na\na", []byte{0}, false)
	f.Fuzz(func(t *testing.T, texts string, lp []byte, likelihood bool) {
		var answers []uncertainty.Answer
		start := 0
		for i := 0; i <= len(texts); i++ {
			if i == len(texts) || texts[i] == '\n' {
				a := uncertainty.Answer{Text: texts[start:i]}
				if len(answers) < len(lp) {
					a.LogProb, a.HasLogProb = -float64(lp[len(answers)])/10, true
				}
				answers = append(answers, a)
				start = i + 1
			}
		}
		// Clustering costs k·m judge calls; keep k small so the fuzzer
		// explores contents rather than size.
		answers = answers[:min(len(answers), 40)]
		res, err := uncertainty.SemanticEntropyOf(context.Background(), uncertainty.Bidirectional(&meaningJudge{}), "q", answers,
			uncertainty.SemanticEntropyOptions{Likelihood: likelihood})
		if err != nil {
			return
		}
		if !inUnit(res.Normalized) || res.Entropy < 0 || res.Entropy > math.Log(float64(len(answers)))+1e-12 {
			t.Fatalf("entropy %v normalised %v for %d answers", res.Entropy, res.Normalized, len(answers))
		}
		if !res.Uncertainty.GateRecommendation.Valid() || res.Uncertainty.Value != res.Normalized {
			t.Fatalf("uncertainty %+v", res.Uncertainty)
		}
		dis, err := uncertainty.ModelDisagreementOf(context.Background(), uncertainty.Bidirectional(&meaningJudge{}), "q", answers, uncertainty.DisagreementOptions{})
		if err != nil || !inUnit(dis.Disagreement) {
			t.Fatalf("disagreement %v, %v", dis.Disagreement, err)
		}
	})
}
