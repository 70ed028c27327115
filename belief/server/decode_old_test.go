package server

// The request decoders the strict typed reader replaced: canon.DecodeInto
// into a map of raw members, read one by one. FuzzDecodersAgree checks
// that the decoders accept exactly what they accepted.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// object is a decoded JSON object whose members are read one by one with
// strict types; every problem is collected as a violation located by a
// JSON Pointer, and members nobody asked for are reported as unknown.
type oldObject struct {
	at      string // the object's JSON Pointer ("" for the body)
	members map[string]json.RawMessage
	seen    map[string]bool
	vs      *[]belief.Violation
}

// parseBody reads body strictly (canon.DecodeInto: no duplicate keys,
// valid UTF-8, no lone surrogates, no integer literal that a double would
// read back as a different number, nesting ≤ 512, one value) as one JSON object for member-by-member reading. An
// empty body reads as {}.
func oldParseBody(body []byte, vs *[]belief.Violation) (*oldObject, bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		t = []byte("{}")
	}
	var m map[string]json.RawMessage
	err := canon.DecodeInto(t, &m, false)
	var se *canon.SyntaxError
	switch {
	case errors.As(err, &se):
		*vs = append(*vs, belief.Violation{Rule: belief.RuleSyntax, Message: strings.TrimPrefix(se.Error(), "canon: ")})
		return nil, false
	case err != nil || m == nil: // valid JSON, but not an object (null included)
		*vs = append(*vs, belief.Violation{Rule: belief.RuleType, Message: strictjson.WantMessage("an object", strictjson.KindOfJSON(t))})
		return nil, false
	}
	return &oldObject{members: m, seen: map[string]bool{}, vs: vs}, true
}

// asObject reads a member already checked by parseBody as an object.
func oldAsObject(at string, raw json.RawMessage, vs *[]belief.Violation) (*oldObject, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		*vs = append(*vs, belief.Violation{Path: at, Rule: belief.RuleType, Message: strictjson.WantMessage("an object", strictjson.KindOfJSON(raw))})
		return nil, false
	}
	return &oldObject{at: at, members: m, seen: map[string]bool{}, vs: vs}, true
}

func (o *oldObject) bad(path, rule, msg string) {
	*o.vs = append(*o.vs, belief.Violation{Path: path, Rule: rule, Message: msg})
}

// badMember reports a violation at member name.
func (o *oldObject) badMember(name, rule, msg string) { o.bad(violation.Join(o.at, name), rule, msg) }

// get returns a member that is present and not null.
func (o *oldObject) get(name string, required bool) (json.RawMessage, bool) {
	o.seen[name] = true
	raw, ok := o.members[name]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		if required {
			o.badMember(name, belief.RuleRequired, "is required")
		}
		return nil, false
	}
	return bytes.TrimSpace(raw), true
}

func (o *oldObject) str(name string, required bool) (string, bool) {
	raw, ok := o.get(name, required)
	if !ok {
		return "", false
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		o.badMember(name, belief.RuleType, strictjson.WantMessage("a string", strictjson.KindOfJSON(raw)))
		return "", false
	}
	return s, true
}

func (o *oldObject) strList(name string, required bool) ([]string, bool) {
	raw, ok := o.get(name, required)
	if !ok {
		return nil, false
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		o.badMember(name, belief.RuleType, strictjson.WantMessage("an array of strings", strictjson.KindOfJSON(raw)))
		return nil, false
	}
	out := make([]string, len(items))
	good := true
	for i, it := range items {
		if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &out[i]) != nil {
			o.bad(violation.Index(violation.Join(o.at, name), i), belief.RuleType, strictjson.WantMessage("a string", strictjson.KindOfJSON(it)))
			good = false
		}
	}
	return out, good
}

// obj returns an optional member that must be a JSON object (null is
// absent).
func (o *oldObject) obj(name string) json.RawMessage {
	raw, ok := o.get(name, false)
	if !ok {
		return nil
	}
	if raw[0] != '{' {
		o.badMember(name, belief.RuleType, strictjson.WantMessage("an object", strictjson.KindOfJSON(raw)))
		return nil
	}
	return raw
}

// integer reads a JSON integer literal (no fraction, no exponent).
func (o *oldObject) integer(name string, required bool) (int64, bool) {
	raw, ok := o.get(name, required)
	if !ok {
		return 0, false
	}
	s := string(raw)
	digits := s
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			o.badMember(name, belief.RuleType, strictjson.WantMessage("an integer", strictjson.KindOfJSON(raw)))
			return 0, false
		}
	}
	if digits == "" {
		o.badMember(name, belief.RuleType, strictjson.WantMessage("an integer", strictjson.KindOfJSON(raw)))
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		o.badMember(name, belief.RuleRange, "integer out of range")
		return 0, false
	}
	return v, true
}

// done reports every member that was not read.
func (o *oldObject) done() {
	for k := range o.members {
		if !o.seen[k] {
			o.badMember(k, belief.RuleUnknownField, "unknown field")
		}
	}
}

// pathSessionID checks an optional body session_id against the path.
func (o *oldObject) pathSessionID(fromPath string) {
	if id, ok := o.str("session_id", false); ok && id != fromPath {
		o.badMember("session_id", belief.RulePathMismatch, fmt.Sprintf("%q does not match the session id in the path", id))
	}
}

func oldDecodeDeclare(body []byte) (belief.DeclareRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := oldParseBody(body, &vs)
	if !ok {
		return belief.DeclareRequest{}, vs
	}
	var req belief.DeclareRequest
	if raw, ok := o.get("ontology", true); ok {
		if on, ok := oldAsObject("/ontology", raw, &vs); ok {
			req.Ontology.HypothesisSpaceID, _ = on.str("hypothesis_space_id", true)
			req.Ontology.HypothesisVersion, _ = on.str("hypothesis_version", true)
			req.Ontology.CausalGraphRef, _ = on.str("causal_graph_ref", true)
			req.Ontology.CausalGraphVersion, _ = on.str("causal_graph_version", true)
			on.done()
		}
	}
	req.Hypotheses, _ = o.strList("hypotheses", true)
	req.Metadata = o.obj("metadata")
	o.done()
	return req, vs
}

func oldDecodeEliminate(body []byte, sessionID string) (belief.EliminateRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := oldParseBody(body, &vs)
	if !ok {
		return belief.EliminateRequest{}, vs
	}
	var req belief.EliminateRequest
	o.pathSessionID(sessionID)
	req.SourceID, _ = o.str("source_id", true)
	req.ObservationID, _ = o.str("observation_id", true)
	req.Eliminated, _ = o.strList("eliminated", true)
	req.Justification = o.obj("justification")
	o.done()
	return req, vs
}

func oldDecodeObligation(body []byte, sessionID string) (belief.ObligationRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := oldParseBody(body, &vs)
	if !ok {
		return belief.ObligationRequest{}, vs
	}
	var req belief.ObligationRequest
	o.pathSessionID(sessionID)
	req.ObligationID, _ = o.str("obligation_id", true)
	req.MinTotalEliminations, _ = o.integer("min_total_eliminations", true)
	o.done()
	return req, vs
}

func oldDecodeExit(body []byte, sessionID, obligationID string) (belief.ExitRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := oldParseBody(body, &vs)
	if !ok {
		return belief.ExitRequest{}, vs
	}
	req := belief.ExitRequest{ObligationID: obligationID}
	o.pathSessionID(sessionID)
	if id, ok := o.str("obligation_id", false); ok && id != obligationID {
		o.badMember("obligation_id", belief.RulePathMismatch, fmt.Sprintf("%q does not match the obligation id in the path", id))
	}
	req.Context = o.obj("context")
	o.done()
	return req, vs
}

func oldDecodeConclusion(body []byte, sessionID string) (belief.ConclusionRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := oldParseBody(body, &vs)
	if !ok {
		return belief.ConclusionRequest{}, vs
	}
	var req belief.ConclusionRequest
	o.pathSessionID(sessionID)
	req.ConclusionID, _ = o.str("conclusion_id", true)
	req.Context = o.obj("context")
	o.done()
	return req, vs
}

func oldDecodeTermination(body []byte, sessionID string) (belief.TerminationRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := oldParseBody(body, &vs)
	if !ok {
		return belief.TerminationRequest{}, vs
	}
	var req belief.TerminationRequest
	o.pathSessionID(sessionID)
	req.Context = o.obj("context")
	if req.Context != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(req.Context, &m) == nil {
			if f, ok := m["force"]; ok && string(f) != "true" && string(f) != "false" {
				o.bad("/context/force", belief.RuleType, strictjson.WantMessage("a boolean", strictjson.KindOfJSON(f)))
			}
		}
	}
	o.done()
	return req, vs
}
