package uncertainty

import (
	"context"
	"fmt"
	"math"
)

// Answer is one sampled answer to a prompt.
type Answer struct {
	// Text is the answer as the model wrote it.
	Text string
	// Temperature is the sampling temperature the answer was drawn at.
	Temperature float64
	// LogProb is the log-likelihood of Text under the model (finite, ≤ 0),
	// meaningful only when HasLogProb is set. Farquhar et al. use the mean
	// per-token log-probability; whichever is used, use it consistently.
	LogProb float64
	// HasLogProb reports whether the sampler supplied LogProb.
	HasLogProb bool
}

// SampleRequest asks a Sampler for one answer per entry of Temperatures.
type SampleRequest struct {
	// Prompt is the question or task given to the model.
	Prompt string
	// Temperatures holds the sampling temperature of each requested
	// answer, in order; its length is the number of answers k.
	Temperatures []float64
	// LogProbs asks for each answer's log-likelihood (Answer.LogProb).
	LogProbs bool
}

// Sampler is the model access the estimators need: given a prompt, return
// k answers drawn at the requested temperatures, answer i at
// req.Temperatures[i], with log-probabilities when req.LogProbs is set.
// Verity ships no model; hosts adapt their LLM client to this interface.
// Implementations must be safe for the concurrency the host uses them with;
// the estimators call Sample once per estimate.
type Sampler interface {
	Sample(ctx context.Context, req SampleRequest) ([]Answer, error)
}

// SamplerFunc adapts a function to the Sampler interface.
type SamplerFunc func(ctx context.Context, req SampleRequest) ([]Answer, error)

// Sample calls f(ctx, req).
func (f SamplerFunc) Sample(ctx context.Context, req SampleRequest) ([]Answer, error) {
	return f(ctx, req)
}

// Equivalence judges whether two answers to the same question mean the same
// thing. Semantic entropy needs it to be (close to) an equivalence relation:
// the clustering is greedy and trusts the judge.
type Equivalence interface {
	Equivalent(ctx context.Context, question, a, b string) (bool, error)
}

// EquivalenceFunc adapts a function to the Equivalence interface.
type EquivalenceFunc func(ctx context.Context, question, a, b string) (bool, error)

// Equivalent calls f(ctx, question, a, b).
func (f EquivalenceFunc) Equivalent(ctx context.Context, question, a, b string) (bool, error) {
	return f(ctx, question, a, b)
}

// Entailer decides whether premise entails hypothesis when both answer
// question: the natural-language-inference (NLI) step of semantic entropy.
type Entailer interface {
	Entails(ctx context.Context, question, premise, hypothesis string) (bool, error)
}

// EntailerFunc adapts a function to the Entailer interface.
type EntailerFunc func(ctx context.Context, question, premise, hypothesis string) (bool, error)

// Entails calls f(ctx, question, premise, hypothesis).
func (f EntailerFunc) Entails(ctx context.Context, question, premise, hypothesis string) (bool, error) {
	return f(ctx, question, premise, hypothesis)
}

// Bidirectional returns the equivalence judge of Farquhar et al.: two
// answers are equivalent when each entails the other in the context of the
// question. The second direction is asked only when the first holds.
func Bidirectional(e Entailer) Equivalence {
	return bidirectional{e}
}

type bidirectional struct{ e Entailer }

func (b bidirectional) Equivalent(ctx context.Context, question, x, y string) (bool, error) {
	ok, err := b.e.Entails(ctx, question, x, y)
	if err != nil || !ok {
		return false, err
	}
	return b.e.Entails(ctx, question, y, x)
}

// Clustering groups answers by meaning.
type Clustering struct {
	// Assignment[i] is the cluster of answer i. Clusters are numbered
	// 0, 1, … in order of their first member.
	Assignment []int
	// Sizes[c] is the number of answers in cluster c.
	Sizes []int
}

// Cluster groups answers by meaning with the greedy algorithm of Farquhar
// et al.: each answer, in order, joins the first existing cluster whose
// first member the judge finds equivalent to it, or else starts a new
// cluster. Identical strings are equivalent without asking the judge. It
// makes at most k·m judge calls for k answers in m clusters. When the judge
// is an equivalence relation the partition does not depend on the order of
// the answers. A judge error is returned wrapped in ErrJudge; so is a
// cancelled ctx.
func Cluster(ctx context.Context, judge Equivalence, question string, answers []string) (Clustering, error) {
	if judge == nil {
		return Clustering{}, invalid("judge", -1, "nil Equivalence")
	}
	if len(answers) == 0 {
		return Clustering{}, invalid("answers", -1, "no answers")
	}
	assign := make([]int, len(answers))
	var reps []int // index of the first member of each cluster
	var sizes []int
	for i, a := range answers {
		c := -1
		for j, r := range reps {
			if answers[r] == a {
				c = j
				break
			}
		}
		for j := 0; c < 0 && j < len(reps); j++ {
			if err := ctx.Err(); err != nil {
				return Clustering{}, fmt.Errorf("%w: %w", ErrJudge, err)
			}
			ok, err := judge.Equivalent(ctx, question, answers[reps[j]], a)
			if err != nil {
				return Clustering{}, fmt.Errorf("%w: answers %d and %d: %w", ErrJudge, reps[j], i, err)
			}
			if ok {
				c = j
			}
		}
		if c < 0 {
			c = len(reps)
			reps = append(reps, i)
			sizes = append(sizes, 0)
		}
		assign[i] = c
		sizes[c]++
	}
	return Clustering{Assignment: assign, Sizes: sizes}, nil
}

// sample asks s for one answer per temperature and checks the reply.
func sample(ctx context.Context, s Sampler, req SampleRequest) ([]Answer, error) {
	if s == nil {
		return nil, invalid("sampler", -1, "nil Sampler")
	}
	for i, t := range req.Temperatures {
		if math.IsNaN(t) || math.IsInf(t, 0) || t < 0 {
			return nil, invalid("temperatures", i, "temperature %v is not a finite non-negative number", t)
		}
	}
	answers, err := s.Sample(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSampler, err)
	}
	if len(answers) != len(req.Temperatures) {
		return nil, fmt.Errorf("%w: %d answers for %d temperatures", ErrSampler, len(answers), len(req.Temperatures))
	}
	if req.LogProbs {
		for i, a := range answers {
			if !a.HasLogProb {
				return nil, fmt.Errorf("%w: answer %d has no log-probability", ErrSampler, i)
			}
			if math.IsNaN(a.LogProb) || math.IsInf(a.LogProb, 0) || a.LogProb > 0 {
				return nil, fmt.Errorf("%w: answer %d has log-probability %v, not a finite number ≤ 0", ErrSampler, i, a.LogProb)
			}
		}
	}
	out := make([]Answer, len(answers))
	copy(out, answers)
	return out, nil
}
