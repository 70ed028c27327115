package uncertainty_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/uncertainty"
)

func ExampleClusterEntropy() {
	for _, sizes := range [][]int{{5}, {4, 1}, {2, 2, 1}, {1, 1, 1, 1, 1}} {
		h, _ := uncertainty.ClusterEntropy(sizes)
		n, _ := uncertainty.NormalizedClusterEntropy(sizes)
		fmt.Printf("%v: %.6f nats, normalised %.3f\n", sizes, h, n)
	}
	// Output:
	// [5]: 0.000000 nats, normalised 0.000
	// [4 1]: 0.500402 nats, normalised 0.311
	// [2 2 1]: 1.054920 nats, normalised 0.655
	// [1 1 1 1 1]: 1.609438 nats, normalised 1.000
}

// A host adapts its model client to Sampler and its NLI model to Entailer.
// Here both are stand-ins: the "model" gives the scripted answers and
// "entailment" compares the city named in each answer.
func ExampleSemanticEntropy() {
	sampler := uncertainty.SamplerFunc(func(_ context.Context, req uncertainty.SampleRequest) ([]uncertainty.Answer, error) {
		script := []string{"Paris.", "It is Paris.", "Lyon.", "Paris, of course.", "paris"}
		out := make([]uncertainty.Answer, len(req.Temperatures))
		for i, t := range req.Temperatures {
			out[i] = uncertainty.Answer{Text: script[i%len(script)], Temperature: t}
		}
		return out, nil
	})
	city := func(s string) string {
		s = strings.ToLower(s)
		for _, c := range []string{"paris", "lyon"} {
			if strings.Contains(s, c) {
				return c
			}
		}
		return s
	}
	nli := uncertainty.EntailerFunc(func(_ context.Context, _, premise, hypothesis string) (bool, error) {
		return city(premise) == city(hypothesis), nil
	})

	res, err := uncertainty.SemanticEntropy(context.Background(), sampler, uncertainty.Bidirectional(nli),
		"What is the capital of France?", uncertainty.SemanticEntropyOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Clustering.Sizes)
	fmt.Println(res.Uncertainty.Value < 0.5, res.Uncertainty.GateRecommendation)
	fmt.Println(res.Uncertainty.Interpretation)

	// The value plugs straight into a claim.
	claim := claims.Claim{Statement: "The capital of France is Paris", ClaimType: claims.ClaimInference,
		Uncertainty: res.Uncertainty, RiskTier: claims.TierReadOnly}
	fmt.Println(claim.Uncertainty.Method)
	// Output:
	// [4 1]
	// true EXECUTE
	// semantic entropy 0.5004 nats (0.311 of the maximum ln 5) from cluster frequencies: 5 answers in 2 meaning clusters
	// semantic_entropy
}

func ExampleModelDisagreement() {
	// Three answers at temperatures 0.8, 1.0 and 1.2; two of them agree.
	sampler := uncertainty.SamplerFunc(func(_ context.Context, req uncertainty.SampleRequest) ([]uncertainty.Answer, error) {
		texts := map[float64]string{0.8: "yes", 1.0: "yes", 1.2: "no"}
		var out []uncertainty.Answer
		for _, t := range req.Temperatures {
			out = append(out, uncertainty.Answer{Text: texts[t], Temperature: t})
		}
		return out, nil
	})
	same := uncertainty.EquivalenceFunc(func(_ context.Context, _, a, b string) (bool, error) { return a == b, nil })
	res, err := uncertainty.ModelDisagreement(context.Background(), sampler, same, "Is the patch safe?", uncertainty.DisagreementOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.3f %s\n", res.Uncertainty.Value, res.Uncertainty.GateRecommendation)
	// Output: 0.667 EXPLAIN
}

func ExampleConfidenceScore() {
	// Labelled history of a model that says 0.9 but is right 6 times in 10,
	// and says 0.6 and is right 6 times in 10.
	var conf []float64
	var correct []bool
	for i := range 10 {
		conf = append(conf, 0.9, 0.6)
		correct = append(correct, i < 6, i < 6)
	}
	h, _ := uncertainty.FitHistogram(conf, correct, 10)
	rep, _ := uncertainty.EvaluateCalibration(h, conf, correct, 10)

	u, _ := uncertainty.ConfidenceScore(0.9, uncertainty.ConfidenceOptions{Calibrator: h, Report: &rep})
	fmt.Printf("%.2f %s\n", u.Value, u.GateRecommendation)
	fmt.Println(u.Interpretation)
	// Output:
	// 0.40 EXECUTE
	// stated confidence 0.900, 0.600 after histogram binning; ECE 0.150 raw, 0.000 calibrated (20 labelled examples, 10 bins)
}

func ExampleCalibrate() {
	// Calibration data: the model's class probabilities on held-out
	// examples and their true classes (here 3 classes, 19 examples).
	var data uncertainty.CalibrationSet
	for i := range 19 {
		p := 0.35 + 0.03*float64(i) // true-class probability 0.35 … 0.89
		data.Probs = append(data.Probs, []float64{p, (1 - p) / 2, (1 - p) / 2})
		data.Labels = append(data.Labels, 0)
	}
	pred, err := uncertainty.Calibrate(data, uncertainty.ConformalOptions{Score: uncertainty.ScoreLAC, Alpha: 0.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("threshold %.3f from %d scores\n", pred.Threshold(), pred.N())

	for _, probs := range [][]float64{{0.8, 0.1, 0.1}, {0.5, 0.45, 0.05}, {0.34, 0.33, 0.33}} {
		set, _ := pred.Predict(probs)
		u, _ := set.Uncertainty(uncertainty.DefaultThresholds())
		fmt.Printf("%v → %v, %.2f %s\n", probs, set.Labels, u.Value, u.GateRecommendation)
	}

	// Too little calibration data for α is refused, not papered over.
	_, err = uncertainty.Calibrate(data, uncertainty.ConformalOptions{Alpha: 0.01})
	fmt.Println(err)
	// Output:
	// threshold 0.620 from 19 scores
	// [0.8 0.1 0.1] → [0], 0.00 EXECUTE
	// [0.5 0.45 0.05] → [0 1], 0.50 EXECUTE
	// [0.34 0.33 0.33] → [], 1.00 REFUSE
	// uncertainty: calibration set too small for alpha: 19 calibration scores, alpha 0.01 needs at least 99
}

func ExampleAUROC() {
	// Semantic entropy of six answers, and whether each answer was wrong.
	entropy := []float64{0.05, 0.9, 0.3, 1.2, 0.1, 0.7}
	wrong := []bool{false, true, false, true, false, false}
	auc, _ := uncertainty.AUROC(entropy, wrong)
	fmt.Printf("AUROC %.3f\n", auc)
	// Output: AUROC 1.000
}

func ExampleECE() {
	conf := []float64{0.95, 0.9, 0.85, 0.9}
	correct := []bool{true, false, true, false}
	e, _ := uncertainty.ECE(conf, correct, 10)
	fmt.Printf("ECE %.3f\n", e)
	// Output: ECE 0.475
}

func ExampleRecommend() {
	for _, v := range []float64{0.2, 0.5, 0.6, 0.9} {
		r, _ := uncertainty.Recommend(v, uncertainty.DefaultThresholds())
		fmt.Println(v, r)
	}
	// Output:
	// 0.2 EXECUTE
	// 0.5 EXECUTE
	// 0.6 EXPLAIN
	// 0.9 DEFER
}

func ExampleLikelihoodEntropy() {
	// Three answers in two meaning clusters; the stray answer is unlikely
	// under the model, so it weighs less than its frequency of 1/3.
	clusters := []int{0, 1, 0}
	logProbs := []float64{-0.2, -3.0, -0.4}
	h, _ := uncertainty.LikelihoodEntropy(clusters, logProbs)
	d, _ := uncertainty.ClusterEntropy([]int{2, 1})
	fmt.Printf("likelihood-weighted %.4f, discrete %.4f nats\n", h, d)
	// Output: likelihood-weighted 0.1428, discrete 0.6365 nats
}

func ExampleFitPlatt() {
	// A model that states 0.9 but is right 70% of the time, and states 0.6
	// and is right 50% of the time.
	var conf []float64
	var correct []bool
	for i := range 100 {
		conf = append(conf, 0.9, 0.6)
		correct = append(correct, i < 70, i < 50)
	}
	p, _ := uncertainty.FitPlatt(conf, correct)
	fmt.Printf("0.9 → %.2f, 0.6 → %.2f\n", p.Calibrate(0.9), p.Calibrate(0.6))
	// Output: 0.9 → 0.70, 0.6 → 0.50
}

func ExampleConformalRank() {
	for _, n := range []int{8, 9, 99, 1000} {
		k, err := uncertainty.ConformalRank(n, 0.1)
		fmt.Println(n, k, err)
	}
	// Output:
	// 8 0 uncertainty: calibration set too small for alpha: 8 calibration scores, alpha 0.1 needs at least 9
	// 9 9 <nil>
	// 99 90 <nil>
	// 1000 901 <nil>
}

func ExamplePredictionSet_UncertaintyFor() {
	set := uncertainty.PredictionSet{Labels: []int{2, 7}, Classes: 10, Alpha: 0.1}
	for _, claimed := range []int{7, 3} {
		u, _ := set.UncertaintyFor(claimed, uncertainty.DefaultThresholds())
		fmt.Printf("class %d: %.3f %s (%s)\n", claimed, u.Value, u.GateRecommendation, u.Interpretation)
	}
	// Output:
	// class 7: 0.111 EXECUTE (conformal set of 2 of 10 classes at 90% coverage)
	// class 3: 1.000 REFUSE (class 3 is outside the conformal set (2 of 10 classes) at 90% coverage)
}
