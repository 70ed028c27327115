package speculative

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/verity-go/verity/internal/canon"
)

// MaxSpecBytes is the largest ExperimentSpec document DecodeExperimentSpec
// reads.
const MaxSpecBytes = 1 << 20

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
//   - the document is at most MaxSpecBytes and one JSON object that
//     canonical JSON accepts (no duplicate keys, no lone surrogates, no
//     integers beyond ±(2^53−1));
//   - residue (ErrResidue): no speculative marker at any depth, with the
//     vocabulary of IsSpeculative — including inside strings that hold
//     JSON — and, stricter than IsSpeculative, no epistemic_status key
//     with any value; each violation names the path
//     (params.l[0].alternatives);
//   - no top-level field other than claim_id, template_qid,
//     scope_lock_id, params, assumptions;
//   - claim_id and scope_lock_id are strings that are not blank;
//   - template_qid is a string matching ^[a-z0-9_]+@\d+\.\d+\.\d+$;
//   - params, when present, is an object; assumptions, when present, an
//     array of strings.
func DecodeExperimentSpec(b []byte) (ExperimentSpec, error) {
	var vs []Violation
	bad := func(path, rule string, err error, format string, args ...any) {
		vs = append(vs, Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...), err: err})
	}
	if len(b) > MaxSpecBytes {
		bad("", "size", ErrLimit, "document is %d bytes, more than %d", len(b), MaxSpecBytes)
		return ExperimentSpec{}, newValidationError("experiment spec", vs)
	}
	if _, err := canon.Transform(b); err != nil {
		bad("", "json", ErrMalformed, "%v", err)
		return ExperimentSpec{}, newValidationError("experiment spec", vs)
	}
	findings, err := detectAll(json.RawMessage(b), true, maxResidueFindings)
	if err != nil {
		path := ""
		var le *LimitError
		if errors.As(err, &le) {
			path = le.Path
		}
		vs = append(vs, Violation{Path: path, Rule: "limit", Message: err.Error(), err: err})
	}
	for _, f := range findings {
		bad(f.Path, "residue", ErrResidue, "%s", f.String())
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil || top == nil {
		bad("", "json", ErrMalformed, "an experiment spec is a JSON object")
		return ExperimentSpec{}, newValidationError("experiment spec", vs)
	}
	for k := range top {
		if !specFields[k] {
			bad(string(appendPath(nil, []seg{{kind: segString, str: k}})), "unknown-field", ErrInvalidSpec, "unknown field %q", k)
		}
	}
	var spec ExperimentSpec
	str := func(key string, dst *string) {
		raw, ok := top[key]
		if !ok {
			bad(key, "required", ErrInvalidSpec, "%s is required", key)
			return
		}
		if json.Unmarshal(raw, dst) != nil {
			bad(key, "type", ErrInvalidSpec, "%s must be a string", key)
		}
	}
	str("claim_id", &spec.ClaimID)
	str("template_qid", &spec.TemplateQID)
	str("scope_lock_id", &spec.ScopeLockID)
	if _, ok := top["claim_id"]; ok && strings.TrimSpace(spec.ClaimID) == "" {
		bad("claim_id", "blank", ErrInvalidSpec, "claim_id is blank")
	}
	if _, ok := top["scope_lock_id"]; ok && strings.TrimSpace(spec.ScopeLockID) == "" {
		bad("scope_lock_id", "blank", ErrInvalidSpec, "scope_lock_id is blank")
	}
	if _, ok := top["template_qid"]; ok && !templateQID.MatchString(spec.TemplateQID) {
		bad("template_qid", "pattern", ErrInvalidSpec, "%q does not match %s", spec.TemplateQID, templateQID)
	}
	if raw, ok := top["params"]; ok {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var params map[string]any
		if dec.Decode(&params) != nil || params == nil {
			bad("params", "type", ErrInvalidSpec, "params must be an object")
		} else {
			spec.Params = params
		}
	}
	if raw, ok := top["assumptions"]; ok {
		if json.Unmarshal(raw, &spec.Assumptions) != nil || spec.Assumptions == nil {
			bad("assumptions", "type", ErrInvalidSpec, "assumptions must be an array of strings")
		}
	}
	if err := newValidationError("experiment spec", vs); err != nil {
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

// Validate applies the rules of DecodeExperimentSpec to a spec value.
func (s ExperimentSpec) Validate() error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("%w: experiment spec: %v", ErrMalformed, err)
	}
	_, err = DecodeExperimentSpec(b)
	return err
}
