package uncertainty

import (
	"context"
	"fmt"

	"github.com/verity-go/verity/claims"
)

// DefaultTemperatures returns the specification's sampling temperatures for
// model disagreement: 0.8, 1.0 and 1.2 (a fresh slice each call).
func DefaultTemperatures() []float64 { return []float64{0.8, 1.0, 1.2} }

// DisagreementOptions configure ModelDisagreement.
type DisagreementOptions struct {
	// Temperatures holds one sampling temperature per answer; nil means
	// DefaultTemperatures. At least 2.
	Temperatures []float64
	// Thresholds map the disagreement to a recommendation; nil means
	// DefaultThresholds().
	Thresholds *Thresholds
}

// DisagreementResult is a model-disagreement estimate and what it was
// computed from.
type DisagreementResult struct {
	Answers      []Answer   // the sampled answers, answer i at temperature i
	Clustering   Clustering // the answers grouped by meaning
	Disagreement float64    // pairwise disagreement (see Disagreement), in [0, 1]
	// Uncertainty is the claim-ready value: method model_disagreement,
	// value Disagreement, and the recommendation of the thresholds.
	Uncertainty claims.Uncertainty
}

// ModelDisagreement samples one answer per temperature (by default three,
// at 0.8, 1.0 and 1.2), clusters them by meaning with judge exactly as
// semantic entropy does, and returns the pairwise disagreement: the share of
// answer pairs that mean different things. With three answers it takes the
// values 0 (all agree), 2/3 (two agree) and 1 (none agree).
//
// This is an empirical heuristic, as the specification says: spreading
// temperatures is not a calibrated probability model, and the value carries
// no coverage or error-rate guarantee. It is cheaper than SemanticEntropy
// (3 generations instead of 5); measure it on your own labelled data with
// AUROC before relying on it.
func ModelDisagreement(ctx context.Context, s Sampler, judge Equivalence, prompt string, opts DisagreementOptions) (DisagreementResult, error) {
	temps := opts.Temperatures
	if temps == nil {
		temps = DefaultTemperatures()
	}
	if len(temps) < 2 || len(temps) > MaxAnswers {
		return DisagreementResult{}, invalid("Temperatures", -1, "%d temperatures; need 2 to %d", len(temps), MaxAnswers)
	}
	if _, err := resolve(opts.Thresholds); err != nil {
		return DisagreementResult{}, err
	}
	if judge == nil {
		return DisagreementResult{}, invalid("judge", -1, "nil Equivalence")
	}
	answers, err := sample(ctx, s, SampleRequest{Prompt: prompt, Temperatures: append([]float64(nil), temps...)})
	if err != nil {
		return DisagreementResult{}, err
	}
	return ModelDisagreementOf(ctx, judge, prompt, answers, opts)
}

// ModelDisagreementOf is ModelDisagreement for answers sampled elsewhere;
// opts.Temperatures is ignored.
func ModelDisagreementOf(ctx context.Context, judge Equivalence, question string, answers []Answer, opts DisagreementOptions) (DisagreementResult, error) {
	th, err := resolve(opts.Thresholds)
	if err != nil {
		return DisagreementResult{}, err
	}
	if len(answers) < 2 || len(answers) > MaxAnswers {
		return DisagreementResult{}, invalid("answers", -1, "%d answers; need 2 to %d", len(answers), MaxAnswers)
	}
	texts := make([]string, len(answers))
	for i, a := range answers {
		texts[i] = a.Text
	}
	cl, err := Cluster(ctx, judge, question, texts)
	if err != nil {
		return DisagreementResult{}, err
	}
	d, err := Disagreement(cl.Sizes)
	if err != nil {
		return DisagreementResult{}, err
	}
	out := make([]Answer, len(answers))
	copy(out, answers)
	return DisagreementResult{
		Answers:      out,
		Clustering:   cl,
		Disagreement: d,
		Uncertainty: claims.Uncertainty{
			Method: claims.MethodModelDisagreement,
			Value:  d,
			Interpretation: fmt.Sprintf("model disagreement %.3f (empirical heuristic): %d answers in %d meaning clusters",
				d, len(answers), len(cl.Sizes)),
			GateRecommendation: recommend(d, th),
		},
	}, nil
}
