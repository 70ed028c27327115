package uncertainty_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/uncertainty"
)

// TestErrorsPrefixedOnce walks the package's error-producing paths (bad
// input to every estimator and helper, calibration sets too small, a
// failing sampler and judge, errors passed up through the estimators) and
// checks that each message starts with "uncertainty: " and says it once.
func TestErrorsPrefixedOnce(t *testing.T) {
	ctx := context.Background()
	var errs []error
	add := func(err error) {
		t.Helper()
		require.Error(t, err)
		errs = append(errs, err)
	}
	second := func(_ any, err error) error { return err }
	nan := math.NaN()

	add(second(uncertainty.ClusterEntropy(nil)))
	add(second(uncertainty.ClusterEntropy([]int{1, -1})))
	add(second(uncertainty.NormalizedClusterEntropy([]int{0})))
	add(second(uncertainty.LikelihoodEntropy([]int{0}, []float64{nan})))
	add(second(uncertainty.NormalizedLikelihoodEntropy([]int{0, 1}, []float64{-1})))
	add(second(uncertainty.Disagreement(nil)))
	add(second(uncertainty.AUROC([]float64{0.5}, []bool{true, false})))
	add(second(uncertainty.AUROC([]float64{nan, 1}, []bool{true, false})))
	add(second(uncertainty.ECE([]float64{2}, []bool{true}, 10)))
	add(second(uncertainty.ECE([]float64{0.5}, []bool{true}, 0)))
	add(second(uncertainty.FitHistogram([]float64{0.5}, []bool{true}, uncertainty.MaxBins+1)))
	add(second(uncertainty.FitPlatt([]float64{0.5, nan}, []bool{true, false})))
	add(second(uncertainty.EvaluateCalibration(uncertainty.Platt{A: 1}, []float64{-1}, []bool{true}, 10)))
	add(second(uncertainty.ConfidenceScore(1.5, uncertainty.ConfidenceOptions{})))
	add(second(uncertainty.ConfidenceScore(0.5, uncertainty.ConfidenceOptions{Thresholds: &uncertainty.Thresholds{Execute: 0.9, Explain: 0.1}})))
	add(second(uncertainty.Recommend(nan, uncertainty.DefaultThresholds())))
	add(uncertainty.Thresholds{Execute: 2}.Validate())
	add(second(uncertainty.ConformalRank(0, 0.1)))
	add(second(uncertainty.ConformalRank(10, 0)))
	add(second(uncertainty.ConformalQuantile([]float64{0.1}, 0.1)))

	r := rand.New(rand.NewPCG(1, 2))
	cal := synthSet(r, 3, 40)
	add(second(uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.1, Score: uncertainty.Score(7)})))
	add(second(uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.1, Randomized: true})))
	add(second(uncertainty.Calibrate(uncertainty.CalibrationSet{}, uncertainty.ConformalOptions{Alpha: 0.1})))
	for i := range cal.Labels {
		cal.Labels[i] = 0 // classes 1 and 2 have no example
	}
	add(second(uncertainty.Calibrate(cal, uncertainty.ConformalOptions{Alpha: 0.1, ClassConditional: true})))
	pred, err := uncertainty.Calibrate(synthSet(r, 3, 40), uncertainty.ConformalOptions{Alpha: 0.1})
	require.NoError(t, err)
	add(second(pred.Predict([]float64{0.5, 0.5})))
	add(second(pred.PredictRandomized([]float64{0.2, 0.3, 0.5}, 0.5)))
	set, err := pred.Predict([]float64{0.2, 0.3, 0.5})
	require.NoError(t, err)
	add(second(set.Uncertainty(uncertainty.Thresholds{Execute: -1})))
	add(second(set.UncertaintyFor(9, uncertainty.DefaultThresholds())))

	judge := uncertainty.Bidirectional(&meaningJudge{})
	failing := uncertainty.EquivalenceFunc(func(context.Context, string, string, string) (bool, error) {
		return false, errors.New("judge unavailable")
	})
	add(second(uncertainty.SemanticEntropy(ctx, &scriptedSampler{texts: []string{"a"}, fail: true}, judge, "q", uncertainty.SemanticEntropyOptions{})))
	add(second(uncertainty.SemanticEntropy(ctx, &scriptedSampler{texts: []string{"a"}, short: true}, judge, "q", uncertainty.SemanticEntropyOptions{})))
	add(second(uncertainty.SemanticEntropy(ctx, &scriptedSampler{texts: []string{"a"}}, judge, "q", uncertainty.SemanticEntropyOptions{Likelihood: true})))
	add(second(uncertainty.SemanticEntropy(ctx, &scriptedSampler{texts: []string{"a", "b"}}, failing, "q", uncertainty.SemanticEntropyOptions{})))
	add(second(uncertainty.SemanticEntropy(ctx, &scriptedSampler{texts: []string{"a"}}, judge, "q", uncertainty.SemanticEntropyOptions{K: -1})))
	add(second(uncertainty.SemanticEntropyOf(ctx, judge, "q", nil, uncertainty.SemanticEntropyOptions{})))
	add(second(uncertainty.ModelDisagreement(ctx, &scriptedSampler{texts: []string{"a"}, fail: true}, judge, "q", uncertainty.DisagreementOptions{})))
	add(second(uncertainty.ModelDisagreement(ctx, &scriptedSampler{texts: []string{"a", "b"}}, failing, "q", uncertainty.DisagreementOptions{})))
	add(second(uncertainty.ModelDisagreementOf(ctx, judge, "q", []uncertainty.Answer{{Text: "a", Temperature: nan}}, uncertainty.DisagreementOptions{})))
	add(second(uncertainty.Cluster(ctx, failing, "q", []string{"a", "b"})))

	for _, err := range errs {
		msg := err.Error()
		require.True(t, strings.HasPrefix(msg, "uncertainty: "), "no prefix: %s", msg)
		require.Equal(t, 1, strings.Count(msg, "uncertainty: "), "prefix repeated: %s", msg)
	}
}
