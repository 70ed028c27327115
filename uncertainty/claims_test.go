package uncertainty_test

// Every estimator's value is a valid claims.Uncertainty that survives the
// claims decoder: TestUncertaintyPlugsIntoClaims.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/claims"
	"github.com/verity-go/verity/uncertainty"
)

// Every estimator's value is a valid claims.Uncertainty: it survives the
// claims package's strict JSON decoder unchanged.
func TestUncertaintyPlugsIntoClaims(t *testing.T) {
	ctx := context.Background()
	judge := uncertainty.Bidirectional(&meaningJudge{})
	var values []claims.Uncertainty

	se, err := uncertainty.SemanticEntropy(ctx, &scriptedSampler{texts: []string{"a", "b", "a|2"}}, judge, "q", uncertainty.SemanticEntropyOptions{})
	require.NoError(t, err)
	values = append(values, se.Uncertainty)
	md, err := uncertainty.ModelDisagreement(ctx, &scriptedSampler{texts: []string{"a", "b"}}, judge, "q", uncertainty.DisagreementOptions{})
	require.NoError(t, err)
	values = append(values, md.Uncertainty)
	cs, err := uncertainty.ConfidenceScore(0.8, uncertainty.ConfidenceOptions{Calibrator: uncertainty.Platt{A: 1.3, B: -0.2}})
	require.NoError(t, err)
	values = append(values, cs)
	for _, labels := range [][]int{{}, {1}, {0, 2}} {
		set := uncertainty.PredictionSet{Labels: labels, Classes: 3, Alpha: 0.05}
		u, err := set.Uncertainty(uncertainty.DefaultThresholds())
		require.NoError(t, err)
		values = append(values, u)
		u, err = set.UncertaintyFor(1, uncertainty.DefaultThresholds())
		require.NoError(t, err)
		values = append(values, u)
	}
	for _, u := range values {
		b, err := json.Marshal(u)
		require.NoError(t, err)
		back, err := claims.DecodeUncertainty(b)
		require.NoError(t, err, "%s", b)
		assert.Equal(t, u, back)
		assert.True(t, u.Method.Valid() && u.GateRecommendation.Valid())
		assert.NotEmpty(t, u.Interpretation)
	}
}
