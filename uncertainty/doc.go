// Package uncertainty estimates how uncertain an AI agent is about a claim,
// and returns the estimate as the claims.Uncertainty value a ClaimBundle
// carries: the method, a value in [0, 1] (0 = certain), an interpretation
// a person can read, and a gate recommendation (EXECUTE, EXPLAIN, DEFER or
// REFUSE) for the claim gate chain.
//
// # Usage
//
// Sample and score a claim with semantic entropy (sampler wraps the host's
// LLM client, nli its entailment model):
//
//	res, err := uncertainty.SemanticEntropy(ctx, sampler, uncertainty.Bidirectional(nli),
//		question, uncertainty.SemanticEntropyOptions{})
//	if err != nil {
//		return err
//	}
//	claim.Uncertainty = res.Uncertainty
//
// Calibrate a classifier once on held-out data, then attach conformal
// uncertainty to each claim it supports:
//
//	pred, err := uncertainty.Calibrate(uncertainty.CalibrationSet{Probs: p, Labels: y},
//		uncertainty.ConformalOptions{Score: uncertainty.ScoreAPS, Alpha: 0.1})
//	...
//	set, err := pred.Predict(probs)
//	...
//	claim.Uncertainty, err = set.UncertaintyFor(claimedClass, uncertainty.DefaultThresholds())
//
// Before trusting a method, measure it: AUROC(values, wrong) on your own
// labelled answers. The package implements the four methods the
// specification names, each the way the literature defines it, plus the
// tools to check them on your own data.
//
// # Model access
//
// No model ships with the package. A host adapts its LLM client to Sampler
// (prompt → k answers at the requested temperatures, optionally with
// log-probabilities) and its natural-language-inference model to Entailer;
// Bidirectional turns an Entailer into the Equivalence judge the clustering
// needs (two answers mean the same when each entails the other, in the
// context of the question). SamplerFunc, EntailerFunc and EquivalenceFunc
// adapt plain functions. Everything else is pure computation: no clocks, no
// randomness, no global state. The one random ingredient conformal
// prediction can use, the tie-break u of randomised APS, is an input.
//
// # Semantic entropy
//
// SemanticEntropy follows Farquhar, Kossen, Kuhn & Gal, "Detecting
// hallucinations in large language models using semantic entropy", Nature
// 630 (2024) (the specification attributes it to "Wang et al."): sample
// k = 5 answers, cluster them greedily by bidirectional entailment
// (Cluster: each answer joins the first cluster whose first member is
// equivalent to it), and take the entropy, in nats, of the distribution
// over clusters. ClusterEntropy is the discrete estimator over cluster
// frequencies; LikelihoodEntropy the likelihood-weighted one, when the
// sampler returns log-probabilities (each answer's probability normalised
// over the k answers and summed per cluster). The claim value is the
// entropy divided by ln k, its maximum. Reference values: clusters [5] → 0,
// [1,1,1,1,1] → ln 5, [4,1] → 0.500402, [2,2,1] → 1.054920 nats.
//
// # Model disagreement
//
// ModelDisagreement samples one answer per temperature (0.8, 1.0, 1.2 by
// default), clusters them exactly as semantic entropy does and reports the
// pairwise disagreement (Disagreement): the share of answer pairs that mean
// different things. It is an empirical heuristic, as the specification
// says, with no probabilistic guarantee; it costs three generations
// instead of five.
//
// # Confidence score
//
// ConfidenceScore turns a model's stated confidence p into the value 1 − p.
// Stated confidences are often overconfident, so an optional Calibrator
// fitted on labelled data maps p to an observed frequency first:
// FitHistogram (histogram binning) or FitPlatt (Platt scaling; a Platt with
// B = 0 is temperature scaling). ECE measures expected calibration error,
// EvaluateCalibration compares raw and calibrated ECE on held-out data, and
// ConfidenceOptions.Report quotes the figures in the claim's
// interpretation.
//
// # Conformal prediction
//
// Calibrate implements split conformal classification (Vovk et al.;
// Angelopoulos & Bates, "A gentle introduction to conformal prediction"):
// the conformity score of each held-out calibration example at its true
// class — LAC, 1 − p̂_y, or APS, the probability mass of the classes at
// least as likely as y (optionally randomised) — and the threshold q̂, the
// ⌈(n+1)(1−α)⌉-th smallest of the n scores (ConformalRank,
// ConformalQuantile). Predict returns every class whose score is within
// q̂. When calibration and test data are exchangeable the set contains the
// true class with probability at least 1 − α, and at most 1 − α + 1/(n+1)
// when scores have no ties. ClassConditional (Mondrian) calibration keeps
// one threshold per class so that the guarantee holds for every class
// separately. When the calibration set is too small for α (⌈(n+1)(1−α)⌉ >
// n, i.e. n < ⌈1/α⌉ − 1) Calibrate refuses with ErrCalibrationTooSmall
// instead of returning a set without a guarantee.
//
// A prediction set maps to an uncertainty value (PredictionSet.Uncertainty)
// as follows: a set of m of K classes has value (m − 1)/(K − 1), so a single
// class is 0 and the full set 1, with the recommendation from Thresholds;
// the empty set is maximal uncertainty, value 1, with REFUSE, since no
// class is plausible at level α. UncertaintyFor(y) scores a claim that
// asserts class y: if y is outside the set the conformal test rejects the
// claim at level α, and the value is 1 with REFUSE.
//
// # From a value to a recommendation
//
// Recommend and Thresholds use the claim gate's defaults
// (DefaultThresholds: value ≤ 0.50 EXECUTE, ≤ 0.75 EXPLAIN, above DEFER).
// Specification 000 does not state these thresholds; they are Verity's
// choice, following the reference implementation's gate document (see
// claims.DefaultExecuteMax).
// Every estimator takes a *Thresholds in its options, nil meaning the
// defaults; ThresholdsFor(policy) reads them from a claims.Policy so that
// the recommendation agrees with the gate the claim will pass through.
//
// # Measuring a method
//
// AUROC (Mann–Whitney, ties counting half) and ECE let users evaluate any
// method on their own labelled answers. The specification quotes an AUROC
// of 0.78–0.81 for semantic entropy; that figure belongs to the paper's
// models and datasets, and yours must be measured.
//
// The guarantees and the tests that check them are listed at the top of
// each test file (entropy_test.go, semantic_test.go, conformal_test.go,
// confidence_test.go, metrics_test.go, claims_test.go, fuzz_test.go).
//
// # What it does not cover
//
//   - The quality of an estimate is bounded by the Sampler and the judge.
//     Semantic entropy detects confabulation (inconsistent answers); a
//     model that is consistently wrong has low semantic entropy.
//   - Model disagreement and the raw confidence score carry no formal
//     guarantee. Calibration is only as good as its labelled data and its
//     ECE is an estimate with binning bias.
//   - Conformal coverage is marginal over the draw of calibration and test
//     data and holds only under exchangeability: a distribution shift
//     between calibration and use voids it. It says nothing about a single
//     input's conditional coverage (Mondrian calibration gives per-class
//     coverage, not per-input).
//   - The package decides nothing: it returns values and recommendations;
//     the claims package's gate chain makes the decision.
package uncertainty
