package speculative

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/violation"
)

// maxSpecBytes is the largest ExperimentSpec document DecodeExperimentSpec
// reads: 1 MiB.
const maxSpecBytes = 1 << 20

// maxResidueFindings caps how many residue violations one decode reports.
const maxResidueFindings = 64

// templateQID is the form of a template's qualified id: name@major.minor.patch.
var templateQID = regexp.MustCompile(`^[a-z0-9_]+@\d+\.\d+\.\d+$`)

// ExperimentSpec is what the grounded lane executes: a template, its
// parameters, and the scope lock it runs under. It carries nothing from
// the speculative lane.
type ExperimentSpec struct {
	ClaimID     string         `json:"claim_id"`
	TemplateQID string         `json:"template_qid"`
	ScopeLockID string         `json:"scope_lock_id"`
	Params      map[string]any `json:"params,omitempty"`
	Assumptions []string       `json:"assumptions,omitempty"`
}

var specFields = map[string]bool{
	"claim_id": true, "template_qid": true, "scope_lock_id": true, "params": true, "assumptions": true,
}

// DecodeExperimentSpec reads an ExperimentSpec from JSON and returns it, or
// a *ValidationError listing every violation sorted by path:
//
//   - the document is at most 1 MiB and one JSON object that
//     canonical JSON accepts (no duplicate keys, no lone surrogates, no
//     integers beyond ±(2^53−1));
//   - residue (ErrResidue): no speculative marker at any depth, with the
//     vocabulary of Detect — including inside strings that hold JSON —
//     and, stricter than Detect, no epistemic_status key with any value;
//     each violation names the marker's JSON Pointer
//     (/params/l/0/alternatives);
//   - no top-level field other than claim_id, template_qid,
//     scope_lock_id, params, assumptions;
//   - claim_id and scope_lock_id are strings that are not blank;
//   - template_qid is a string matching ^[a-z0-9_]+@\d+\.\d+\.\d+$;
//   - params, when present, is an object; assumptions, when present, an
//     array of strings.
func DecodeExperimentSpec(b []byte) (ExperimentSpec, error) {
	const subject = "experiment spec"
	var vs violations
	if len(b) > maxSpecBytes {
		vs.add("", "size", ErrLimit, "document is %d bytes, more than %d", len(b), maxSpecBytes)
		return ExperimentSpec{}, vs.err(subject)
	}
	tree, err := canon.Decode(b)
	if err != nil {
		vs.add("", "json", ErrMalformed, "%v", err)
		return ExperimentSpec{}, vs.err(subject)
	}
	findings, err := detectAll(json.RawMessage(b), true, maxResidueFindings)
	if err != nil {
		path := ""
		var le *LimitError
		if errors.As(err, &le) {
			path = le.Path
		}
		vs.add(path, "limit", err, "%s", detail(err))
	}
	for _, f := range findings {
		vs.add(f.Path, "residue", ErrResidue, "%s", f.what()+f.layers())
	}
	top, ok := tree.(map[string]any)
	if !ok {
		vs.add("", "json", ErrMalformed, "an experiment spec is a JSON object")
		return ExperimentSpec{}, vs.err(subject)
	}
	for k := range top {
		if !specFields[k] {
			vs.add(violation.Join("", k), "unknown-field", ErrInvalidSpec, "unknown field %q", k)
		}
	}
	var spec ExperimentSpec
	str := func(key string, dst *string) {
		v, present := top[key]
		if !present {
			vs.add("/"+key, "required", ErrInvalidSpec, "%s is required", key)
			return
		}
		s, isString := v.(string)
		switch {
		case !isString:
			vs.add("/"+key, "type", ErrInvalidSpec, "%s must be a string", key)
		case key != "template_qid" && strings.TrimSpace(s) == "":
			vs.add("/"+key, "blank", ErrInvalidSpec, "%s is blank", key)
		case key == "template_qid" && !templateQID.MatchString(s):
			vs.add("/"+key, "pattern", ErrInvalidSpec, "%q does not match %s", s, templateQID)
		}
		*dst = s
	}
	str("claim_id", &spec.ClaimID)
	str("template_qid", &spec.TemplateQID)
	str("scope_lock_id", &spec.ScopeLockID)
	if v, present := top["params"]; present {
		params, isObject := v.(map[string]any)
		if !isObject {
			vs.add("/params", "type", ErrInvalidSpec, "params must be an object")
		}
		spec.Params = params
	}
	if v, present := top["assumptions"]; present {
		list, isArray := v.([]any)
		for _, a := range list {
			s, isString := a.(string)
			isArray = isArray && isString
			spec.Assumptions = append(spec.Assumptions, s)
		}
		if !isArray {
			vs.add("/assumptions", "type", ErrInvalidSpec, "assumptions must be an array of strings")
		}
	}
	if err := vs.err(subject); err != nil {
		return ExperimentSpec{}, err
	}
	// Empty and absent are the same spec; keep one form so that decoding
	// what Marshal wrote gives the same value back.
	if len(spec.Params) == 0 {
		spec.Params = nil
	}
	if len(spec.Assumptions) == 0 {
		spec.Assumptions = nil
	}
	return spec, nil
}

// validate applies the rules of DecodeExperimentSpec to a spec value.
func (s ExperimentSpec) validate() error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("%w: experiment spec: %v", ErrMalformed, err)
	}
	_, err = DecodeExperimentSpec(b)
	return err
}
