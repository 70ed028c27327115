package server

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/verity-go/verity/belief"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// The request bodies are read in one pass (internal/strictjson) into a
// tagged struct of members per request, then checked: a body that is not
// strict JSON (duplicate keys, invalid UTF-8, lone surrogates, an integer
// literal a double would read back as another number, nesting over 512,
// more than one value) is one syntax violation; otherwise every wrong
// type and unknown member is one violation, located by its JSON Pointer,
// and check adds what types cannot say (a required member missing or
// null, an id that disagrees with the path). An empty body reads as {}.

// decodeBody reads body into the members m (a pointer) and returns the
// violations, and whether the body was an object at all (only then is
// there more to check).
func decodeBody(body []byte, m any) ([]belief.Violation, bool) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		t = []byte("{}")
	}
	err := strictjson.Unmarshal(t, m)
	if err == nil {
		return nil, true
	}
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return []belief.Violation{{Rule: belief.RuleSyntax, Message: err.Error()}}, false
	}
	vs := se.Violations()
	whole := false
	for i := range vs {
		if vs[i].Rule == violation.RuleDuplicateKey {
			// A key twice is one of the ways a text is not strict JSON.
			vs[i].Rule = belief.RuleSyntax
		}
		whole = whole || vs[i].Path == ""
	}
	return vs, !whole
}

// member is an optional member: present is false when it is absent or
// null, true when it is there (even with a wrong value, which the reader
// reports); ok when it is there and read.
type member[T any] struct {
	v           T
	present, ok bool
}

func (m *member[T]) UnmarshalStrict(d *strictjson.Decoder) error {
	if d.Peek() == strictjson.Null {
		return d.ReadNull()
	}
	m.present = true
	err := d.Decode(&m.v)
	m.ok = err == nil
	return err
}

// required adds a violation for each required member that is absent or
// null.
func required(vs *[]belief.Violation, at string, members map[string]bool) {
	for name, present := range members {
		if !present {
			*vs = append(*vs, belief.Violation{Path: violation.Join(at, name), Rule: belief.RuleRequired, Message: "is required"})
		}
	}
}

// rawObject is a JSON object kept as written.
type rawObject json.RawMessage

func (r *rawObject) UnmarshalStrict(d *strictjson.Decoder) error {
	if k := d.Peek(); k != strictjson.Object {
		return d.Errorf(belief.RuleType, "%s", strictjson.WantMessage("an object", k))
	}
	raw, err := d.Raw()
	*r = rawObject(bytes.Clone(raw))
	return err
}

func (m member[T]) raw() json.RawMessage {
	if r, ok := any(m.v).(rawObject); ok && m.present {
		return json.RawMessage(r)
	}
	return nil
}

// integer is a JSON integer literal (no fraction, no exponent) in int64.
type integer int64

func (n *integer) UnmarshalStrict(d *strictjson.Decoder) error {
	if k := d.Peek(); k != strictjson.Number {
		return d.Errorf(belief.RuleType, "%s", strictjson.WantMessage("an integer", k))
	}
	lit, isInt, err := d.ReadNumber()
	if err != nil {
		return err
	}
	if !isInt {
		return d.Errorf(belief.RuleType, "%s", strictjson.WantMessage("an integer", strictjson.Number))
	}
	v, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		return d.Errorf(belief.RuleRange, "integer out of range")
	}
	*n = integer(v)
	return nil
}

// pathSessionID checks an optional body session_id against the path.
func pathSessionID(vs *[]belief.Violation, id member[string], fromPath string) {
	if id.ok && id.v != fromPath {
		*vs = append(*vs, belief.Violation{Path: "/session_id", Rule: belief.RulePathMismatch, Message: fmt.Sprintf("%q does not match the session id in the path", id.v)})
	}
}

type declareMembers struct {
	Ontology   member[ontologyMembers] `json:"ontology,optional"`
	Hypotheses member[[]string]        `json:"hypotheses,optional"`
	Metadata   member[rawObject]       `json:"metadata,optional"`
}

type ontologyMembers struct {
	HypothesisSpaceID  member[string] `json:"hypothesis_space_id,optional"`
	HypothesisVersion  member[string] `json:"hypothesis_version,optional"`
	CausalGraphRef     member[string] `json:"causal_graph_ref,optional"`
	CausalGraphVersion member[string] `json:"causal_graph_version,optional"`
}

func decodeDeclare(body []byte) (belief.DeclareRequest, []belief.Violation) {
	var m declareMembers
	vs, ok := decodeBody(body, &m)
	if !ok {
		return belief.DeclareRequest{}, vs
	}
	on := &m.Ontology.v
	if m.Ontology.present && !wrongTypeAt(vs, "/ontology") {
		required(&vs, "/ontology", map[string]bool{"hypothesis_space_id": on.HypothesisSpaceID.present,
			"hypothesis_version": on.HypothesisVersion.present, "causal_graph_ref": on.CausalGraphRef.present,
			"causal_graph_version": on.CausalGraphVersion.present})
	}
	required(&vs, "", map[string]bool{"ontology": m.Ontology.present, "hypotheses": m.Hypotheses.present})
	var req belief.DeclareRequest
	req.Ontology.HypothesisSpaceID = on.HypothesisSpaceID.v
	req.Ontology.HypothesisVersion = on.HypothesisVersion.v
	req.Ontology.CausalGraphRef = on.CausalGraphRef.v
	req.Ontology.CausalGraphVersion = on.CausalGraphVersion.v
	req.Hypotheses = m.Hypotheses.v
	req.Metadata = m.Metadata.raw()
	return req, vs
}

// wrongTypeAt reports whether the value at pointer at has the wrong type
// (so that nothing within it is checked).
func wrongTypeAt(vs []belief.Violation, at string) bool {
	for _, v := range vs {
		if v.Path == at && v.Rule == belief.RuleType {
			return true
		}
	}
	return false
}

type eliminateMembers struct {
	SessionID     member[string]    `json:"session_id,optional"`
	SourceID      member[string]    `json:"source_id,optional"`
	ObservationID member[string]    `json:"observation_id,optional"`
	Eliminated    member[[]string]  `json:"eliminated,optional"`
	Justification member[rawObject] `json:"justification,optional"`
}

func decodeEliminate(body []byte, sessionID string) (belief.EliminateRequest, []belief.Violation) {
	var m eliminateMembers
	vs, ok := decodeBody(body, &m)
	if !ok {
		return belief.EliminateRequest{}, vs
	}
	pathSessionID(&vs, m.SessionID, sessionID)
	required(&vs, "", map[string]bool{"source_id": m.SourceID.present, "observation_id": m.ObservationID.present,
		"eliminated": m.Eliminated.present})
	return belief.EliminateRequest{SourceID: m.SourceID.v, ObservationID: m.ObservationID.v,
		Eliminated: m.Eliminated.v, Justification: m.Justification.raw()}, vs
}

type obligationMembers struct {
	SessionID            member[string]  `json:"session_id,optional"`
	ObligationID         member[string]  `json:"obligation_id,optional"`
	MinTotalEliminations member[integer] `json:"min_total_eliminations,optional"`
}

func decodeObligation(body []byte, sessionID string) (belief.ObligationRequest, []belief.Violation) {
	var m obligationMembers
	vs, ok := decodeBody(body, &m)
	if !ok {
		return belief.ObligationRequest{}, vs
	}
	pathSessionID(&vs, m.SessionID, sessionID)
	required(&vs, "", map[string]bool{"obligation_id": m.ObligationID.present, "min_total_eliminations": m.MinTotalEliminations.present})
	return belief.ObligationRequest{ObligationID: m.ObligationID.v, MinTotalEliminations: int64(m.MinTotalEliminations.v)}, vs
}

type exitMembers struct {
	SessionID    member[string]    `json:"session_id,optional"`
	ObligationID member[string]    `json:"obligation_id,optional"`
	Context      member[rawObject] `json:"context,optional"`
}

func decodeExit(body []byte, sessionID, obligationID string) (belief.ExitRequest, []belief.Violation) {
	var m exitMembers
	vs, ok := decodeBody(body, &m)
	if !ok {
		return belief.ExitRequest{}, vs
	}
	pathSessionID(&vs, m.SessionID, sessionID)
	if m.ObligationID.ok && m.ObligationID.v != obligationID {
		vs = append(vs, belief.Violation{Path: "/obligation_id", Rule: belief.RulePathMismatch, Message: fmt.Sprintf("%q does not match the obligation id in the path", m.ObligationID.v)})
	}
	return belief.ExitRequest{ObligationID: obligationID, Context: m.Context.raw()}, vs
}

type conclusionMembers struct {
	SessionID    member[string]    `json:"session_id,optional"`
	ConclusionID member[string]    `json:"conclusion_id,optional"`
	Context      member[rawObject] `json:"context,optional"`
}

func decodeConclusion(body []byte, sessionID string) (belief.ConclusionRequest, []belief.Violation) {
	var m conclusionMembers
	vs, ok := decodeBody(body, &m)
	if !ok {
		return belief.ConclusionRequest{}, vs
	}
	pathSessionID(&vs, m.SessionID, sessionID)
	required(&vs, "", map[string]bool{"conclusion_id": m.ConclusionID.present})
	return belief.ConclusionRequest{ConclusionID: m.ConclusionID.v, Context: m.Context.raw()}, vs
}

type terminationMembers struct {
	SessionID member[string]    `json:"session_id,optional"`
	Context   member[rawObject] `json:"context,optional"`
}

func decodeTermination(body []byte, sessionID string) (belief.TerminationRequest, []belief.Violation) {
	var m terminationMembers
	vs, ok := decodeBody(body, &m)
	if !ok {
		return belief.TerminationRequest{}, vs
	}
	pathSessionID(&vs, m.SessionID, sessionID)
	req := belief.TerminationRequest{Context: m.Context.raw()}
	if req.Context != nil {
		var c map[string]json.RawMessage
		if json.Unmarshal(req.Context, &c) == nil {
			if f, ok := c["force"]; ok && string(f) != "true" && string(f) != "false" {
				vs = append(vs, belief.Violation{Path: "/context/force", Rule: belief.RuleType, Message: strictjson.WantMessage("a boolean", strictjson.KindOfJSON(f))})
			}
		}
	}
	return req, vs
}
