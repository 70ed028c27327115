package uncertainty_test

// The guarantees of the sampling estimators:
//
//   - Clustering is greedy by bidirectional entailment:
//     TestClusterGreedyByBidirectionalEntailment,
//     TestBidirectionalNeedsBothDirections.
//   - The default thresholds are the claim gate's:
//     TestDefaultThresholdsMatchTheClaimGate.

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/uncertainty"
)

func TestClusterGreedyByBidirectionalEntailment(t *testing.T) {
	j := &meaningJudge{}
	answers := []string{"Paris|a", "Lyon|b", "paris|c", "Paris|a", "Rome|d", "lyon|e"}
	cl, err := uncertainty.Cluster(context.Background(), uncertainty.Bidirectional(j), "capital of France?", answers)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 0, 0, 2, 1}, cl.Assignment)
	assert.Equal(t, []int{3, 2, 1}, cl.Sizes)
	// Each answer is compared with the first member of each cluster until
	// one matches, and identical strings skip the judge. Entailment calls:
	// one per rejected pair, two per equivalent pair. Lyon vs Paris → 1;
	// paris vs Paris → 2; the repeated "Paris|a" → 0; Rome vs Paris and
	// Lyon → 2; lyon vs Paris → 1, vs Lyon → 2.
	assert.Equal(t, 8, j.calls)
}

func TestBidirectionalNeedsBothDirections(t *testing.T) {
	e := oneWay{{"Paris, France", "in France"}: true}
	judge := uncertainty.Bidirectional(e)
	ok, err := judge.Equivalent(context.Background(), "q", "Paris, France", "in France")
	require.NoError(t, err)
	assert.False(t, ok, "one-way entailment is not equivalence")
	e[[2]string{"in France", "Paris, France"}] = true
	ok, err = judge.Equivalent(context.Background(), "q", "Paris, France", "in France")
	require.NoError(t, err)
	assert.True(t, ok)

	cl, err := uncertainty.Cluster(context.Background(), uncertainty.Bidirectional(oneWay{{"a", "b"}: true}), "q", []string{"a", "b"})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 1}, cl.Sizes)
}

func TestClusterErrors(t *testing.T) {
	ctx := context.Background()
	_, err := uncertainty.Cluster(ctx, nil, "q", []string{"a"})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	_, err = uncertainty.Cluster(ctx, uncertainty.Bidirectional(&meaningJudge{}), "q", nil)
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)

	failing := uncertainty.EquivalenceFunc(func(context.Context, string, string, string) (bool, error) {
		return false, errModelDown
	})
	_, err = uncertainty.Cluster(ctx, failing, "q", []string{"a", "b"})
	assert.ErrorIs(t, err, uncertainty.ErrJudge)
	assert.ErrorIs(t, err, errModelDown)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = uncertainty.Cluster(cancelled, uncertainty.Bidirectional(&meaningJudge{}), "q", []string{"a", "b"})
	assert.ErrorIs(t, err, uncertainty.ErrJudge)
	assert.ErrorIs(t, err, context.Canceled)
	// A single answer needs no judge call, so a cancelled context is moot.
	cl, err := uncertainty.Cluster(cancelled, uncertainty.Bidirectional(&meaningJudge{}), "q", []string{"a"})
	require.NoError(t, err)
	assert.Equal(t, []int{1}, cl.Sizes)
}

func TestSemanticEntropyEstimator(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		texts []string
		want  float64 // entropy in nats
		rec   claims.GateRecommendation
	}{
		{"consistent", []string{"Paris|1", "paris|2", "Paris|3", "PARIS|4", "paris|5"}, 0, claims.RecommendExecute},
		{"one stray", []string{"Paris|1", "paris|2", "Lyon|3", "PARIS|4", "paris|5"}, 0.500402, claims.RecommendExecute},
		{"split", []string{"Paris|1", "Lyon|2", "Rome|3", "paris|4", "lyon|5"}, 1.054920, claims.RecommendExplain},
		{"confabulating", []string{"Paris", "Lyon", "Rome", "Nice", "Oslo"}, math.Log(5), claims.RecommendDefer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scriptedSampler{texts: tc.texts}
			res, err := uncertainty.SemanticEntropy(ctx, s, uncertainty.Bidirectional(&meaningJudge{}), "capital of France?", uncertainty.SemanticEntropyOptions{})
			require.NoError(t, err)
			require.Len(t, s.requests, 1)
			assert.Equal(t, []float64{1, 1, 1, 1, 1}, s.requests[0].Temperatures, "k = 5 at temperature 1 by default")
			assert.False(t, s.requests[0].LogProbs)
			assert.Len(t, res.Answers, 5)
			assert.InDelta(t, tc.want, res.Entropy, 5e-7)
			assert.InDelta(t, tc.want/math.Log(5), res.Normalized, 5e-7)
			assert.Equal(t, claims.MethodSemanticEntropy, res.Uncertainty.Method)
			assert.Equal(t, res.Normalized, res.Uncertainty.Value)
			assert.Equal(t, tc.rec, res.Uncertainty.GateRecommendation)
			assert.Contains(t, res.Uncertainty.Interpretation, "semantic entropy")
		})
	}
}

func TestSemanticEntropyLikelihoodVariant(t *testing.T) {
	s := &scriptedSampler{
		texts:    []string{"Paris|1", "Lyon|2", "paris|3"},
		logProbs: []float64{-0.2, -3, -0.4},
	}
	res, err := uncertainty.SemanticEntropy(context.Background(), s, uncertainty.Bidirectional(&meaningJudge{}), "q",
		uncertainty.SemanticEntropyOptions{K: 3, Temperature: 0.7, Likelihood: true})
	require.NoError(t, err)
	assert.True(t, s.requests[0].LogProbs)
	assert.Equal(t, []float64{0.7, 0.7, 0.7}, s.requests[0].Temperatures)
	want, err := uncertainty.LikelihoodEntropy([]int{0, 1, 0}, []float64{-0.2, -3, -0.4})
	require.NoError(t, err)
	assert.Equal(t, want, res.Entropy)
	discrete, _ := uncertainty.ClusterEntropy([]int{2, 1})
	assert.Less(t, res.Entropy, discrete, "the unlikely stray answer weighs less than its frequency")
}

func TestSemanticEntropyErrors(t *testing.T) {
	ctx := context.Background()
	judge := uncertainty.Bidirectional(&meaningJudge{})
	ok := &scriptedSampler{texts: []string{"a"}}
	for name, tc := range map[string]struct {
		s    uncertainty.Sampler
		opts uncertainty.SemanticEntropyOptions
		want error
	}{
		"k too small":       {ok, uncertainty.SemanticEntropyOptions{K: 1}, uncertainty.ErrInvalidInput},
		"k negative":        {ok, uncertainty.SemanticEntropyOptions{K: -3}, uncertainty.ErrInvalidInput},
		"k too large":       {ok, uncertainty.SemanticEntropyOptions{K: uncertainty.MaxAnswers + 1}, uncertainty.ErrInvalidInput},
		"NaN temperature":   {ok, uncertainty.SemanticEntropyOptions{Temperature: math.NaN()}, uncertainty.ErrInvalidInput},
		"bad thresholds":    {ok, uncertainty.SemanticEntropyOptions{Thresholds: &uncertainty.Thresholds{Execute: 0.9, Explain: 0.2}}, uncertainty.ErrInvalidInput},
		"nil sampler":       {nil, uncertainty.SemanticEntropyOptions{}, uncertainty.ErrInvalidInput},
		"sampler fails":     {&scriptedSampler{fail: true}, uncertainty.SemanticEntropyOptions{}, errModelDown},
		"too few answers":   {&scriptedSampler{texts: []string{"a"}, short: true}, uncertainty.SemanticEntropyOptions{}, uncertainty.ErrSampler},
		"no log-probs":      {&scriptedSampler{texts: []string{"a"}}, uncertainty.SemanticEntropyOptions{Likelihood: true}, uncertainty.ErrSampler},
		"positive log-prob": {&scriptedSampler{texts: []string{"a", "b"}, logProbs: []float64{-1, 2}}, uncertainty.SemanticEntropyOptions{Likelihood: true}, uncertainty.ErrSampler},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := uncertainty.SemanticEntropy(ctx, tc.s, judge, "q", tc.opts)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	s := &scriptedSampler{texts: []string{"a"}}
	_, err := uncertainty.SemanticEntropy(ctx, s, nil, "q", uncertainty.SemanticEntropyOptions{})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	_, err = uncertainty.ModelDisagreement(ctx, s, nil, "q", uncertainty.DisagreementOptions{})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	assert.Empty(t, s.requests, "a nil judge is caught before the model is asked")
	_, err = uncertainty.SemanticEntropyOf(ctx, judge, "q", []uncertainty.Answer{{Text: "a", LogProb: -1, HasLogProb: true}, {Text: "b", LogProb: 1, HasLogProb: true}},
		uncertainty.SemanticEntropyOptions{Likelihood: true})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "a positive log-probability is not a probability")
	_, err = uncertainty.SemanticEntropyOf(ctx, judge, "q", []uncertainty.Answer{{Text: "a"}}, uncertainty.SemanticEntropyOptions{})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "one answer is not enough")
	_, err = uncertainty.SemanticEntropyOf(ctx, judge, "q", []uncertainty.Answer{{Text: "a", HasLogProb: true}, {Text: "b"}},
		uncertainty.SemanticEntropyOptions{Likelihood: true})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
}

func TestModelDisagreementEstimator(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		texts []string
		want  float64
		rec   claims.GateRecommendation
	}{
		{"agree", []string{"yes|1", "YES|2", "yes|3"}, 0, claims.RecommendExecute},
		{"two of three", []string{"yes|1", "no|2", "yes|3"}, 2.0 / 3, claims.RecommendExplain},
		{"none", []string{"yes", "no", "maybe"}, 1, claims.RecommendDefer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scriptedSampler{texts: tc.texts}
			res, err := uncertainty.ModelDisagreement(ctx, s, uncertainty.Bidirectional(&meaningJudge{}), "q", uncertainty.DisagreementOptions{})
			require.NoError(t, err)
			assert.Equal(t, []float64{0.8, 1.0, 1.2}, s.requests[0].Temperatures)
			for i, a := range res.Answers {
				assert.Equal(t, s.requests[0].Temperatures[i], a.Temperature)
			}
			assert.InDelta(t, tc.want, res.Disagreement, 1e-15)
			assert.Equal(t, claims.MethodModelDisagreement, res.Uncertainty.Method)
			assert.Equal(t, res.Disagreement, res.Uncertainty.Value)
			assert.Equal(t, tc.rec, res.Uncertainty.GateRecommendation)
			assert.Contains(t, res.Uncertainty.Interpretation, "heuristic")
		})
	}
	s := &scriptedSampler{texts: []string{"a", "b"}}
	_, err := uncertainty.ModelDisagreement(ctx, s, uncertainty.Bidirectional(&meaningJudge{}), "q",
		uncertainty.DisagreementOptions{Temperatures: []float64{0.5, 0.9, 1.3, 1.7}})
	require.NoError(t, err)
	assert.Equal(t, []float64{0.5, 0.9, 1.3, 1.7}, s.requests[0].Temperatures)
	_, err = uncertainty.ModelDisagreement(ctx, s, uncertainty.Bidirectional(&meaningJudge{}), "q",
		uncertainty.DisagreementOptions{Temperatures: []float64{1}})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	_, err = uncertainty.ModelDisagreement(ctx, s, uncertainty.Bidirectional(&meaningJudge{}), "q",
		uncertainty.DisagreementOptions{Temperatures: []float64{1, -1}})
	assert.ErrorIs(t, err, uncertainty.ErrInvalidInput)
	_, err = uncertainty.ModelDisagreement(ctx, &scriptedSampler{fail: true}, uncertainty.Bidirectional(&meaningJudge{}), "q",
		uncertainty.DisagreementOptions{})
	assert.True(t, errors.Is(err, uncertainty.ErrSampler) && errors.Is(err, errModelDown))
}

func TestDefaultTemperaturesIsACopy(t *testing.T) {
	a := uncertainty.DefaultTemperatures()
	a[0] = 99
	assert.Equal(t, []float64{0.8, 1.0, 1.2}, uncertainty.DefaultTemperatures())
}

func TestRecommendThresholds(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		th   uncertainty.Thresholds
		want claims.GateRecommendation
	}{
		{0, uncertainty.DefaultThresholds(), claims.RecommendExecute},
		{0.50, uncertainty.DefaultThresholds(), claims.RecommendExecute},
		{math.Nextafter(0.50, 1), uncertainty.DefaultThresholds(), claims.RecommendExplain},
		{0.75, uncertainty.DefaultThresholds(), claims.RecommendExplain},
		{math.Nextafter(0.75, 1), uncertainty.DefaultThresholds(), claims.RecommendDefer},
		{1, uncertainty.DefaultThresholds(), claims.RecommendDefer},
		{0.3, uncertainty.Thresholds{Execute: 0.2, Explain: 0.4}, claims.RecommendExplain},
		{0.3, uncertainty.Thresholds{Execute: 0.1, Explain: 0.1}, claims.RecommendDefer},
		{1, uncertainty.Thresholds{Execute: 0.1, Explain: 1}, claims.RecommendExplain},
		{0, uncertainty.Thresholds{}, claims.RecommendExecute},
		{0.01, uncertainty.Thresholds{}, claims.RecommendDefer},
		{0.6, uncertainty.ThresholdsFor(claims.DefaultPolicy()), claims.RecommendExplain},
	} {
		got, err := uncertainty.Recommend(tc.v, tc.th)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v with %+v", tc.v, tc.th)
	}
	for _, bad := range []struct {
		v  float64
		th uncertainty.Thresholds
	}{
		{math.NaN(), uncertainty.DefaultThresholds()},
		{-0.1, uncertainty.DefaultThresholds()},
		{1.1, uncertainty.DefaultThresholds()},
		{0.5, uncertainty.Thresholds{Execute: 0.6, Explain: 0.5}},
		{0.5, uncertainty.Thresholds{Execute: math.NaN(), Explain: 0.5}},
		{0.5, uncertainty.Thresholds{Execute: 0.2, Explain: 1.5}},
	} {
		_, err := uncertainty.Recommend(bad.v, bad.th)
		assert.ErrorIs(t, err, uncertainty.ErrInvalidInput, "%v %+v", bad.v, bad.th)
	}
}

func TestDefaultThresholdsMatchTheClaimGate(t *testing.T) {
	assert.Equal(t, uncertainty.ThresholdsFor(claims.DefaultPolicy()), uncertainty.DefaultThresholds())
	assert.Equal(t, uncertainty.Thresholds{Execute: 0.2, Explain: 0.9},
		uncertainty.ThresholdsFor(claims.Policy{ExecuteMax: 0.2, ExplainMax: 0.9}))
}
