package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/canon"
)

// object is a decoded JSON object whose members are read one by one with
// strict types; every problem is collected as a violation, and members
// nobody asked for are reported as unknown.
type object struct {
	prefix  string
	members map[string]json.RawMessage
	seen    map[string]bool
	vs      *[]belief.Violation
}

// parseBody checks that body is one JSON object that canonicalises (no
// duplicate keys, valid UTF-8, no lone surrogates, integers within
// ±(2^53−1), nesting ≤ 512) and returns it for member-by-member reading.
// An empty body reads as {}.
func parseBody(body []byte, vs *[]belief.Violation) (*object, bool) {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	if _, err := canon.Transform(body); err != nil {
		*vs = append(*vs, belief.Violation{Path: "$", Message: err.Error()})
		return nil, false
	}
	return asObject("", json.RawMessage(body), vs)
}

func asObject(prefix string, raw json.RawMessage, vs *[]belief.Violation) (*object, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		*vs = append(*vs, belief.Violation{Path: pathOf(prefix, "$"), Message: "must be a JSON object"})
		return nil, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		*vs = append(*vs, belief.Violation{Path: pathOf(prefix, "$"), Message: err.Error()})
		return nil, false
	}
	return &object{prefix: prefix, members: m, seen: map[string]bool{}, vs: vs}, true
}

func pathOf(prefix, name string) string {
	if prefix == "" {
		return name
	}
	if name == "$" {
		return prefix
	}
	return prefix + "." + name
}

func (o *object) bad(name, msg string) {
	*o.vs = append(*o.vs, belief.Violation{Path: pathOf(o.prefix, name), Message: msg})
}

// get returns a member that is present and not null.
func (o *object) get(name string, required bool) (json.RawMessage, bool) {
	o.seen[name] = true
	raw, ok := o.members[name]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		if required {
			o.bad(name, "is required")
		}
		return nil, false
	}
	return bytes.TrimSpace(raw), true
}

func (o *object) str(name string, required bool) (string, bool) {
	raw, ok := o.get(name, required)
	if !ok {
		return "", false
	}
	var s string
	if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		o.bad(name, "must be a string")
		return "", false
	}
	return s, true
}

func (o *object) strList(name string, required bool) ([]string, bool) {
	raw, ok := o.get(name, required)
	if !ok {
		return nil, false
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		o.bad(name, "must be an array of strings")
		return nil, false
	}
	out := make([]string, len(items))
	good := true
	for i, it := range items {
		if len(it) == 0 || it[0] != '"' || json.Unmarshal(it, &out[i]) != nil {
			o.bad(fmt.Sprintf("%s[%d]", name, i), "must be a string")
			good = false
		}
	}
	return out, good
}

// obj returns an optional member that must be a JSON object (null is
// absent).
func (o *object) obj(name string) json.RawMessage {
	raw, ok := o.get(name, false)
	if !ok {
		return nil
	}
	if raw[0] != '{' {
		o.bad(name, "must be a JSON object")
		return nil
	}
	return raw
}

// integer reads a JSON integer literal (no fraction, no exponent).
func (o *object) integer(name string, required bool) (int64, bool) {
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
			o.bad(name, "must be an integer")
			return 0, false
		}
	}
	if digits == "" {
		o.bad(name, "must be an integer")
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		o.bad(name, "integer out of range")
		return 0, false
	}
	return v, true
}

// done reports every member that was not read.
func (o *object) done() {
	for k := range o.members {
		if !o.seen[k] {
			o.bad(k, "unknown field")
		}
	}
}

// pathSessionID checks an optional body session_id against the path.
func (o *object) pathSessionID(fromPath string) {
	if id, ok := o.str("session_id", false); ok && id != fromPath {
		o.bad("session_id", fmt.Sprintf("%q does not match the session id in the path", id))
	}
}

func decodeDeclare(body []byte) (belief.DeclareRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := parseBody(body, &vs)
	if !ok {
		return belief.DeclareRequest{}, vs
	}
	var req belief.DeclareRequest
	if raw, ok := o.get("ontology", true); ok {
		if on, ok := asObject("ontology", raw, &vs); ok {
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

func decodeEliminate(body []byte, sessionID string) (belief.EliminateRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := parseBody(body, &vs)
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

func decodeObligation(body []byte, sessionID string) (belief.ObligationRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := parseBody(body, &vs)
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

func decodeExit(body []byte, sessionID, obligationID string) (belief.ExitRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := parseBody(body, &vs)
	if !ok {
		return belief.ExitRequest{}, vs
	}
	req := belief.ExitRequest{ObligationID: obligationID}
	o.pathSessionID(sessionID)
	if id, ok := o.str("obligation_id", false); ok && id != obligationID {
		o.bad("obligation_id", fmt.Sprintf("%q does not match the obligation id in the path", id))
	}
	req.Context = o.obj("context")
	o.done()
	return req, vs
}

func decodeConclusion(body []byte, sessionID string) (belief.ConclusionRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := parseBody(body, &vs)
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

func decodeTermination(body []byte, sessionID string) (belief.TerminationRequest, []belief.Violation) {
	var vs []belief.Violation
	o, ok := parseBody(body, &vs)
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
				o.bad("context.force", "must be a JSON boolean")
			}
		}
	}
	o.done()
	return req, vs
}
