package uncertainty

import (
	"context"
	"fmt"

	"github.com/verity-go/verity/claims"
)

// MaxAnswers bounds the number of answers one estimate may request, so that
// a bad option cannot ask a sampler for millions of generations.
const MaxAnswers = 1000

// SemanticEntropyOptions configure SemanticEntropy.
type SemanticEntropyOptions struct {
	// K is the number of answers to sample; 0 means 5, the
	// specification's k. At least 2.
	K int
	// Temperature is the sampling temperature of every answer; 0 means 1.0.
	Temperature float64
	// Likelihood selects the likelihood-weighted estimator
	// (LikelihoodEntropy); the sampler is then asked for log-probabilities
	// and must supply them. Otherwise the discrete estimator over cluster
	// frequencies (ClusterEntropy) is used.
	Likelihood bool
	// Thresholds map the normalised entropy to a recommendation; nil means
	// DefaultThresholds().
	Thresholds *Thresholds
}

// SemanticEntropyResult is a semantic-entropy estimate and what it was
// computed from.
type SemanticEntropyResult struct {
	Answers    []Answer   // the sampled answers, in sampling order
	Clustering Clustering // the answers grouped by meaning
	Entropy    float64    // semantic entropy in nats, in [0, ln k]
	Normalized float64    // Entropy / ln k, in [0, 1]
	// Uncertainty is the claim-ready value: method semantic_entropy, value
	// Normalized, and the recommendation of the thresholds.
	Uncertainty claims.Uncertainty
}

// SemanticEntropy estimates how uncertain a model is about the meaning of
// its answer to prompt (Farquhar, Kossen, Kuhn & Gal, "Detecting
// hallucinations in large language models using semantic entropy", Nature
// 630, 2024): it samples k answers, clusters them by bidirectional
// entailment with judge (Cluster), and returns the entropy of the
// distribution over meanings. High semantic entropy flags confabulation:
// the model says different things each time it is asked. The Uncertainty
// value is the entropy normalised by ln k.
func SemanticEntropy(ctx context.Context, s Sampler, judge Equivalence, prompt string, opts SemanticEntropyOptions) (SemanticEntropyResult, error) {
	k := opts.K
	if k == 0 {
		k = 5
	}
	if k < 2 || k > MaxAnswers {
		return SemanticEntropyResult{}, invalid("K", -1, "%d answers; need 2 to %d", k, MaxAnswers)
	}
	if _, err := resolve(opts.Thresholds); err != nil {
		return SemanticEntropyResult{}, err
	}
	if judge == nil {
		return SemanticEntropyResult{}, invalid("judge", -1, "nil Equivalence")
	}
	temp := opts.Temperature
	if temp == 0 {
		temp = 1
	}
	temps := make([]float64, k)
	for i := range temps {
		temps[i] = temp
	}
	answers, err := sample(ctx, s, SampleRequest{Prompt: prompt, Temperatures: temps, LogProbs: opts.Likelihood})
	if err != nil {
		return SemanticEntropyResult{}, err
	}
	return SemanticEntropyOf(ctx, judge, prompt, answers, opts)
}

// SemanticEntropyOf is SemanticEntropy for answers sampled elsewhere: it
// clusters them with judge and computes the entropy. opts.K and
// opts.Temperature are ignored; with opts.Likelihood every answer must carry
// a log-probability.
func SemanticEntropyOf(ctx context.Context, judge Equivalence, question string, answers []Answer, opts SemanticEntropyOptions) (SemanticEntropyResult, error) {
	th, err := resolve(opts.Thresholds)
	if err != nil {
		return SemanticEntropyResult{}, err
	}
	if len(answers) < 2 || len(answers) > MaxAnswers {
		return SemanticEntropyResult{}, invalid("answers", -1, "%d answers; need 2 to %d", len(answers), MaxAnswers)
	}
	texts := make([]string, len(answers))
	for i, a := range answers {
		texts[i] = a.Text
	}
	cl, err := Cluster(ctx, judge, question, texts)
	if err != nil {
		return SemanticEntropyResult{}, err
	}
	var h, norm float64
	how := "cluster frequencies"
	if opts.Likelihood {
		lps := make([]float64, len(answers))
		for i, a := range answers {
			if !a.HasLogProb {
				return SemanticEntropyResult{}, invalid("answers", i, "no log-probability for the likelihood-weighted estimator")
			}
			lps[i] = a.LogProb
		}
		if err := checkLikelihood(cl.Assignment, lps); err != nil {
			return SemanticEntropyResult{}, err
		}
		h = likelihoodEntropy(cl.Assignment, lps)
		how = "answer likelihoods"
	} else {
		h = clusterEntropy(cl.Sizes, len(answers), len(cl.Sizes))
	}
	norm = normalize(h, len(answers))
	out := make([]Answer, len(answers))
	copy(out, answers)
	return SemanticEntropyResult{
		Answers:    out,
		Clustering: cl,
		Entropy:    h,
		Normalized: norm,
		Uncertainty: claims.Uncertainty{
			Method: claims.MethodSemanticEntropy,
			Value:  norm,
			Interpretation: fmt.Sprintf("semantic entropy %.4f nats (%.3f of the maximum ln %d) from %s: %d answers in %d meaning clusters",
				h, norm, len(answers), how, len(answers), len(cl.Sizes)),
			GateRecommendation: recommend(norm, th),
		},
	}, nil
}
