package uncertainty_test

import (
	"context"
	"errors"
	"strings"

	"github.com/verity-go/verity/uncertainty"
)

// meaningJudge is a deterministic stand-in for an NLI model: every answer
// has a hidden meaning (the text before a '|', or the whole text), and one
// answer entails another exactly when their meanings are equal. It counts
// its calls.
type meaningJudge struct {
	calls int
}

func meaning(s string) string {
	m, _, _ := strings.Cut(s, "|")
	return strings.ToLower(strings.TrimSpace(m))
}

func (j *meaningJudge) Entails(_ context.Context, _, premise, hypothesis string) (bool, error) {
	j.calls++
	return meaning(premise) == meaning(hypothesis), nil
}

// oneWay is an entailer where each listed premise entails its hypothesis
// but not the other way round ("Paris, France" entails "in France").
type oneWay map[[2]string]bool

func (o oneWay) Entails(_ context.Context, _, premise, hypothesis string) (bool, error) {
	return o[[2]string{premise, hypothesis}], nil
}

var errModelDown = errors.New("model unavailable")

// scriptedSampler returns the scripted answers in order for every request,
// one per requested temperature, with log-probabilities from logProbs when
// asked. It records the requests.
type scriptedSampler struct {
	texts    []string
	logProbs []float64
	requests []uncertainty.SampleRequest
	fail     bool
	short    bool
}

func (s *scriptedSampler) Sample(_ context.Context, req uncertainty.SampleRequest) ([]uncertainty.Answer, error) {
	s.requests = append(s.requests, req)
	if s.fail {
		return nil, errModelDown
	}
	n := len(req.Temperatures)
	if s.short {
		n--
	}
	out := make([]uncertainty.Answer, n)
	for i := range out {
		out[i] = uncertainty.Answer{Text: s.texts[i%len(s.texts)], Temperature: req.Temperatures[i]}
		if req.LogProbs && s.logProbs != nil {
			out[i].LogProb = s.logProbs[i%len(s.logProbs)]
			out[i].HasLogProb = true
		}
	}
	return out, nil
}
