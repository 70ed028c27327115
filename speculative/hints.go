package speculative

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
)

// PriorSuggestion is a prior an analogy suggests for one parameter.
type PriorSuggestion struct {
	Parameter    string             `json:"parameter"`
	Distribution string             `json:"distribution"`
	Params       map[string]float64 `json:"params,omitempty"`
	Source       string             `json:"source,omitempty"`
	Rationale    string             `json:"rationale,omitempty"`
}

// ExperimentHints is the context the speculative lane hands to experiment
// design, and nothing more: it is never persisted, only its Digest goes
// into the audit trail, and its epistemic status is always speculative:
// its JSON form says "epistemic_status": "speculative", so that Guard 1
// catches it wherever it leaks.
type ExperimentHints struct {
	ClaimID                   string            `json:"claim_id"`
	CandidateMechanisms       []string          `json:"candidate_mechanisms"`       // from alternatives
	DiscriminativePredictions []string          `json:"discriminative_predictions"` // testable predictions
	SensitivityAxes           []string          `json:"sensitivity_axes"`           // from edge cases
	PriorSuggestions          []PriorSuggestion `json:"prior_suggestions"`          // from analogies
	FalsificationCriteria     []string          `json:"falsification_criteria"`     // what would refute
}

// hintsWire is the JSON form: the fields plus the guard marker.
type hintsWire struct {
	ClaimID                   string            `json:"claim_id"`
	CandidateMechanisms       []string          `json:"candidate_mechanisms"`
	DiscriminativePredictions []string          `json:"discriminative_predictions"`
	SensitivityAxes           []string          `json:"sensitivity_axes"`
	PriorSuggestions          []PriorSuggestion `json:"prior_suggestions"`
	FalsificationCriteria     []string          `json:"falsification_criteria"`
	EpistemicStatus           string            `json:"epistemic_status"`
}

// MarshalJSON writes the hints with "epistemic_status": "speculative".
func (h ExperimentHints) MarshalJSON() ([]byte, error) {
	w := h.sorted(false)
	w.EpistemicStatus = "speculative"
	return json.Marshal(w)
}

// UnmarshalJSON reads the hints strictly (canonical JSON's rules, see
// internal/canon). Unknown fields are errors, and so is an
// epistemic_status other than speculative (absent is fine).
func (h *ExperimentHints) UnmarshalJSON(b []byte) error {
	var w hintsWire
	if err := canon.DecodeInto(b, &w, true); err != nil {
		return fmt.Errorf("%w: experiment hints: %v", ErrMalformed, err)
	}
	if w.EpistemicStatus != "" && !isSpeculativeValue(w.EpistemicStatus) {
		return fmt.Errorf("%w: experiment hints are always speculative, not %q", ErrMalformed, w.EpistemicStatus)
	}
	w.EpistemicStatus = ""
	*h = ExperimentHints{
		ClaimID: w.ClaimID, CandidateMechanisms: w.CandidateMechanisms,
		DiscriminativePredictions: w.DiscriminativePredictions, SensitivityAxes: w.SensitivityAxes,
		PriorSuggestions: w.PriorSuggestions, FalsificationCriteria: w.FalsificationCriteria,
	}
	return nil
}

// sorted returns a deep copy (as the wire type's field set) with every
// string list sorted when sort is true, and nil lists made empty.
func (h ExperimentHints) sorted(sort bool) hintsWire {
	list := func(s []string) []string {
		out := append([]string{}, s...)
		if sort {
			slices.Sort(out)
		}
		return out
	}
	ps := make([]PriorSuggestion, len(h.PriorSuggestions))
	for i, p := range h.PriorSuggestions {
		p.Params = clonePriorParams(p.Params)
		ps[i] = p
	}
	return hintsWire{
		ClaimID:                   h.ClaimID,
		CandidateMechanisms:       list(h.CandidateMechanisms),
		DiscriminativePredictions: list(h.DiscriminativePredictions),
		SensitivityAxes:           list(h.SensitivityAxes),
		PriorSuggestions:          ps,
		FalsificationCriteria:     list(h.FalsificationCriteria),
	}
}

func clonePriorParams(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// digestDocument returns the exact bytes Digest hashes (see Digest).
func (h ExperimentHints) digestDocument() ([]byte, error) {
	w := h.sorted(true)
	priors := make([]json.RawMessage, 0, len(w.PriorSuggestions))
	for i, p := range w.PriorSuggestions {
		obj := map[string]any{"parameter": p.Parameter, "distribution": p.Distribution}
		if len(p.Params) > 0 {
			params := make(map[string]any, len(p.Params))
			for k, v := range p.Params {
				params[k] = v
			}
			obj["params"] = params
		}
		if p.Source != "" {
			obj["source"] = p.Source
		}
		if p.Rationale != "" {
			obj["rationale"] = p.Rationale
		}
		b, err := canon.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("%w: experiment hints prior_suggestions[%d]: %v", ErrMalformed, i, err)
		}
		priors = append(priors, b)
	}
	slices.SortFunc(priors, func(a, b json.RawMessage) int { return bytes.Compare(a, b) })
	doc := map[string]any{
		"claim_id":                   h.ClaimID,
		"candidate_mechanisms":       w.CandidateMechanisms,
		"discriminative_predictions": w.DiscriminativePredictions,
		"sensitivity_axes":           w.SensitivityAxes,
		"falsification_criteria":     w.FalsificationCriteria,
		"prior_suggestions":          rawList(priors),
		"epistemic_status":           "speculative",
	}
	b, err := canon.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: experiment hints: %v", ErrMalformed, err)
	}
	return b, nil
}

func rawList(rs []json.RawMessage) []any {
	out := make([]any, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// Digest is the SHA-256 of the RFC 8785 canonical JSON of the hints'
// JSON form with every list sorted:
//
//	{"candidate_mechanisms":[…],"claim_id":"…","discriminative_predictions":[…],
//	 "epistemic_status":"speculative","falsification_criteria":[…],
//	 "prior_suggestions":[{…},…],"sensitivity_axes":[…]}
//
// Every string list is sorted by its UTF-8 bytes (duplicates kept), and
// prior_suggestions holds each suggestion as a whole object (params,
// source and rationale only when not empty, as in the JSON form), sorted
// by the canonical bytes of the objects; lists are always present (empty,
// never null). Strings must be valid UTF-8 and numbers finite.
//
// So the digest does not depend on the order of any list, and two hints
// that differ in anything else — a string, a duplicate, any field of any
// prior suggestion — have different digests (canonical JSON is
// injective). The digest, never the hints, goes into the audit trail.
// DESIGN.md lists test vectors.
func (h ExperimentHints) Digest() (trace.Hash, error) {
	b, err := h.digestDocument()
	if err != nil {
		return trace.Hash{}, err
	}
	return sha256.Sum256(b), nil
}

// Alternative is an alternative explanation from the speculative lane.
type Alternative struct {
	Mechanism  string `json:"mechanism"`
	Prediction string `json:"prediction,omitempty"` // what would tell it apart
	Falsifier  string `json:"falsifier,omitempty"`  // what would rule it out
}

// Analogy is an analogy from the speculative lane, possibly suggesting a
// prior for one parameter.
type Analogy struct {
	Domain       string             `json:"domain"`
	Parameter    string             `json:"parameter,omitempty"`
	Distribution string             `json:"distribution,omitempty"`
	Params       map[string]float64 `json:"params,omitempty"`
	Rationale    string             `json:"rationale,omitempty"`
}

// EdgeCase is an edge case from the speculative lane: an axis along which
// the claim might break.
type EdgeCase struct {
	Axis        string `json:"axis"`
	Description string `json:"description,omitempty"`
}

// Brainstorm is the output of the speculative lane for one claim.
type Brainstorm struct {
	ClaimID      string        `json:"claim_id"`
	Alternatives []Alternative `json:"alternatives"`
	Analogies    []Analogy     `json:"analogies"`
	EdgeCases    []EdgeCase    `json:"edge_cases"`
}

// ExtractHints turns a brainstorm into ExperimentHints: alternatives give
// candidate mechanisms, discriminative predictions and falsification
// criteria; edge cases give sensitivity axes; analogies that name a
// parameter and a distribution give prior suggestions (the analogy's
// domain becomes the suggestion's source). Blank entries are dropped;
// order is kept. The claim id must not be blank.
func ExtractHints(b Brainstorm) (ExperimentHints, error) {
	if strings.TrimSpace(b.ClaimID) == "" {
		return ExperimentHints{}, fmt.Errorf("%w: brainstorm has no claim id", ErrMalformed)
	}
	h := ExperimentHints{ClaimID: b.ClaimID}
	add := func(list []string, s string) []string {
		if strings.TrimSpace(s) == "" {
			return list
		}
		return append(list, strings.TrimSpace(s))
	}
	for _, a := range b.Alternatives {
		h.CandidateMechanisms = add(h.CandidateMechanisms, a.Mechanism)
		h.DiscriminativePredictions = add(h.DiscriminativePredictions, a.Prediction)
		h.FalsificationCriteria = add(h.FalsificationCriteria, a.Falsifier)
	}
	for _, e := range b.EdgeCases {
		h.SensitivityAxes = add(h.SensitivityAxes, e.Axis)
	}
	for _, a := range b.Analogies {
		if strings.TrimSpace(a.Parameter) == "" || strings.TrimSpace(a.Distribution) == "" {
			continue
		}
		h.PriorSuggestions = append(h.PriorSuggestions, PriorSuggestion{
			Parameter:    strings.TrimSpace(a.Parameter),
			Distribution: strings.TrimSpace(a.Distribution),
			Params:       clonePriorParams(a.Params),
			Source:       strings.TrimSpace(a.Domain),
			Rationale:    a.Rationale,
		})
	}
	return h, nil
}
