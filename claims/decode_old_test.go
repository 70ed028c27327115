package claims

// The decoder the strict typed reader replaced: canon.Decode into a
// generic tree, then a walk per type. The differential fuzz targets
// (FuzzDecodersAgree) check that the decoders accept exactly what it
// accepted.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// decodeWith decodes data with walk; recordForm selects the record form
// (see Record) instead of the specification's. The error is a
// *ValidationError about subject wrapping ErrMalformed, plus
// ErrUnknownValue for an unknown enum value and canon's error for text
// that is not strict JSON.
func oldDecodeWith[T any](data []byte, subject string, recordForm bool, walk func(*oldDecoder, string, any) T) (T, error) {
	var zero T
	// canon rejects what encoding/json would silently accept or alter:
	// duplicate keys, invalid UTF-8, lone surrogates, excessive nesting.
	tree, err := canon.Decode(data)
	if err != nil {
		vs := []Violation{{Rule: RuleSyntax, Message: strings.TrimPrefix(err.Error(), "canon: ")}}
		return zero, invalid(subject, vs, ErrMalformed, err)
	}
	d := &oldDecoder{recordForm: recordForm}
	v := walk(d, "", tree)
	if len(d.vs) > 0 {
		var unknown error
		if slices.ContainsFunc(d.vs, func(v Violation) bool { return v.Rule == RuleEnum }) {
			unknown = ErrUnknownValue
		}
		return zero, invalid(subject, d.vs, ErrMalformed, unknown)
	}
	return v, nil
}

type oldDecoder struct {
	vs []Violation
	// recordForm accepts the record form of values outside the
	// specification (see Record) and any value of an enum.
	recordForm bool
}

func (d *oldDecoder) add(path, rule, format string, args ...any) {
	d.vs = append(d.vs, Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// object checks that v is an object holding only the allowed members.
func (d *oldDecoder) object(path string, v any, allowed ...string) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		d.add(path, RuleType, "%s", strictjson.WantMessage("an object", strictjson.KindOf(v)))
		return nil, false
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			d.add(violation.Join(path, k), RuleUnknownField, "unknown field %q", k)
		}
	}
	return m, true
}

// member returns m[key]; a missing required member is reported. A member
// with a default counts as absent when it is null.
func (d *oldDecoder) member(m map[string]any, path, key string, required bool) (any, bool) {
	v, ok := m[key]
	if required && !ok {
		d.add(violation.Join(path, key), RuleRequired, "missing required field")
		return nil, false
	}
	if !required && v == nil {
		return nil, false
	}
	return v, ok
}

func (d *oldDecoder) str(m map[string]any, path, key string, required bool) string {
	v, ok := d.member(m, path, key, required)
	if !ok {
		return ""
	}
	s, _ := d.text(violation.Join(path, key), v)
	return s
}

// text returns the string v is, reporting any other JSON type. In the
// record form a string that is not valid UTF-8 is {"bytes": base64}.
func (d *oldDecoder) text(path string, v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case map[string]any:
		if d.recordForm {
			return d.invalidUTF8(path, x)
		}
	}
	d.add(path, RuleType, "%s", strictjson.WantMessage("a string", strictjson.KindOf(v)))
	return "", false
}

// invalidUTF8 decodes the record form {"bytes": base64} of a string that
// is not valid UTF-8.
func (d *oldDecoder) invalidUTF8(path string, v map[string]any) (string, bool) {
	m, _ := d.object(path, v, "bytes")
	b64, isStr := m["bytes"].(string)
	b, err := base64.StdEncoding.Strict().DecodeString(b64)
	switch {
	case !isStr || err != nil:
		d.add(violation.Join(path, "bytes"), RuleType, "want a string of standard base64")
	case utf8.Valid(b):
		d.add(path, RuleType, "a string of valid UTF-8 is written as a JSON string")
	default:
		return string(b), true
	}
	return "", false
}

func (d *oldDecoder) unit(m map[string]any, path, key string) float64 {
	v, ok := d.member(m, path, key, true)
	if !ok {
		return 0
	}
	p := violation.Join(path, key)
	if s, isStr := v.(string); isStr && d.recordForm {
		if f, special := specialNumbers[s]; special {
			return f
		}
	}
	n, isNum := v.(json.Number)
	if !isNum {
		d.add(p, RuleType, "%s", strictjson.WantMessage("a number", strictjson.KindOf(v)))
		return 0
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if d.recordForm && err == nil {
		return f // any finite number
	}
	if err != nil || !inUnit(f) || !exactlyInUnit(string(n), f) {
		d.add(p, RuleRange, "%s is outside [0,1]", n)
		return 0
	}
	return f
}

func (d *oldDecoder) time(m map[string]any, path, key string, required bool) time.Time {
	v, ok := d.member(m, path, key, required)
	if !ok {
		return time.Time{}
	}
	p := violation.Join(path, key)
	s, isStr := v.(string)
	if !isStr {
		d.add(p, RuleType, "%s", strictjson.WantMessage("a string", strictjson.KindOf(v)))
		return time.Time{}
	}
	if d.recordForm {
		if t, ok := parseUnixTime(s); ok {
			return t
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !isRFC3339(s) {
		d.add(p, RuleTime, "%q is not an RFC 3339 timestamp", s)
		return time.Time{}
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		d.add(p, RuleTime, "%q falls outside the years 0000-9999 in UTC", s)
		return time.Time{}
	}
	return t
}

func oldEnum[T ~string](d *oldDecoder, m map[string]any, path, key string, valid func(T) bool, def T) T {
	required := def == ""
	v, ok := d.member(m, path, key, required)
	if !ok {
		return def
	}
	s, isStr := d.text(violation.Join(path, key), v)
	if !isStr {
		return def
	}
	if !valid(T(s)) && !d.recordForm {
		d.add(violation.Join(path, key), RuleEnum, "unknown value %q", s)
		return def
	}
	return T(s)
}

// array returns the elements of an array member; null or missing give nil
// when the member has a default.
func (d *oldDecoder) array(m map[string]any, path, key string, required bool) []any {
	v, ok := d.member(m, path, key, required)
	if !ok {
		return nil
	}
	a, isArr := v.([]any)
	if !isArr {
		d.add(violation.Join(path, key), RuleType, "%s", strictjson.WantMessage("an array", strictjson.KindOf(v)))
		return nil
	}
	return a
}

func oldDecodeList[T any](d *oldDecoder, m map[string]any, path, key string, required bool, walk func(*oldDecoder, string, any) T) []T {
	items := d.array(m, path, key, required)
	out := make([]T, len(items))
	for i, it := range items {
		out[i] = walk(d, violation.Index(violation.Join(path, key), i), it)
	}
	return out
}

func (d *oldDecoder) strings(m map[string]any, path, key string) []string {
	items := d.array(m, path, key, false)
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = d.text(violation.Index(violation.Join(path, key), i), it)
	}
	return out
}

func (d *oldDecoder) bundle(path string, v any) ClaimBundle {
	m, ok := d.object(path, v, "id", "timestamp", "origin_agent", "claims", "decision",
		"reason", "required_approvals", "audit_trail")
	if !ok {
		return ClaimBundle{}
	}
	b := ClaimBundle{
		ID:                d.str(m, path, "id", false),
		Timestamp:         d.time(m, path, "timestamp", false),
		OriginAgent:       d.str(m, path, "origin_agent", true),
		Claims:            oldDecodeList(d, m, path, "claims", true, (*oldDecoder).claim),
		Decision:          oldEnum(d, m, path, "decision", Decision.Valid, DecisionDefer),
		Reason:            d.str(m, path, "reason", false),
		RequiredApprovals: d.strings(m, path, "required_approvals"),
	}
	if at, present := d.member(m, path, "audit_trail", false); present {
		b.AuditTrail = d.auditTrail(violation.Join(path, "audit_trail"), at)
	} else {
		b.AuditTrail = d.auditTrail(violation.Join(path, "audit_trail"), map[string]any{})
	}
	return b
}

func (d *oldDecoder) auditTrail(path string, v any) AuditTrail {
	m, ok := d.object(path, v, "gates_passed", "gates_failed", "human_approvals", "caveats", "flags")
	if !ok {
		return AuditTrail{}
	}
	a := AuditTrail{
		GatesPassed:    d.strings(m, path, "gates_passed"),
		GatesFailed:    d.strings(m, path, "gates_failed"),
		HumanApprovals: oldDecodeList(d, m, path, "human_approvals", false, (*oldDecoder).approval),
		Caveats:        oldDecodeList(d, m, path, "caveats", false, (*oldDecoder).note),
		Flags:          oldDecodeList(d, m, path, "flags", false, (*oldDecoder).note),
	}
	if len(a.Caveats) == 0 {
		a.Caveats = nil
	}
	if len(a.Flags) == 0 {
		a.Flags = nil
	}
	return a
}

func (d *oldDecoder) claim(path string, v any) Claim {
	m, ok := d.object(path, v, "id", "statement", "claim_type", "evidence_pointers",
		"uncertainty", "risk_tier", "if_wrong_cost")
	if !ok {
		return Claim{}
	}
	c := Claim{
		ID:               d.str(m, path, "id", false),
		Statement:        d.str(m, path, "statement", true),
		ClaimType:        oldEnum(d, m, path, "claim_type", ClaimType.Valid, ""),
		EvidencePointers: oldDecodeList(d, m, path, "evidence_pointers", false, (*oldDecoder).evidence),
		RiskTier:         oldEnum(d, m, path, "risk_tier", RiskTier.Valid, ""),
		IfWrongCost:      d.str(m, path, "if_wrong_cost", false),
	}
	if u, present := d.member(m, path, "uncertainty", true); present {
		c.Uncertainty = d.uncertainty(violation.Join(path, "uncertainty"), u)
	}
	return c
}

func (d *oldDecoder) evidence(path string, v any) EvidencePointer {
	m, ok := d.object(path, v, "source", "source_confidence", "evidence_hash", "retrieved_at")
	if !ok {
		return EvidencePointer{}
	}
	return EvidencePointer{
		Source:           d.str(m, path, "source", true),
		SourceConfidence: d.unit(m, path, "source_confidence"),
		EvidenceHash:     d.str(m, path, "evidence_hash", true),
		RetrievedAt:      d.time(m, path, "retrieved_at", false),
	}
}

func (d *oldDecoder) uncertainty(path string, v any) Uncertainty {
	m, ok := d.object(path, v, "method", "value", "interpretation", "gate_recommendation")
	if !ok {
		return Uncertainty{}
	}
	return Uncertainty{
		Method:             oldEnum(d, m, path, "method", UncertaintyMethod.Valid, ""),
		Value:              d.unit(m, path, "value"),
		Interpretation:     d.str(m, path, "interpretation", false),
		GateRecommendation: oldEnum(d, m, path, "gate_recommendation", GateRecommendation.Valid, RecommendExecute),
	}
}

func (d *oldDecoder) approval(path string, v any) Approval {
	m, ok := d.object(path, v, "approver", "timestamp", "decision", "reason")
	if !ok {
		return Approval{}
	}
	return Approval{
		Approver:  d.str(m, path, "approver", true),
		Timestamp: d.time(m, path, "timestamp", true),
		Decision:  oldEnum(d, m, path, "decision", ApprovalDecision.Valid, ""),
		Reason:    d.str(m, path, "reason", false),
	}
}

func (d *oldDecoder) note(path string, v any) Note {
	m, ok := d.object(path, v, "claim_id", "gate", "text")
	if !ok {
		return Note{}
	}
	return Note{
		ClaimID: d.str(m, path, "claim_id", false),
		Gate:    d.str(m, path, "gate", true),
		Text:    d.str(m, path, "text", true),
	}
}

func (d *oldDecoder) record(path string, v any) Record {
	m, ok := d.object(path, v, "actor", "clearance", "approval", "bundle")
	if !ok {
		return Record{}
	}
	r := Record{
		Actor:     d.str(m, path, "actor", false),
		Clearance: oldEnum(d, m, path, "clearance", RiskTier.Valid, ""),
	}
	if _, present := m["clearance"]; present && !r.Clearance.Valid() {
		d.add(violation.Join(path, "clearance"), RuleEnum, "unknown risk tier %q", string(r.Clearance))
	}
	if a, present := d.member(m, path, "approval", false); present {
		approval := d.approval(violation.Join(path, "approval"), a)
		r.Approval = &approval
	}
	if b, present := d.member(m, path, "bundle", true); present {
		r.Bundle = d.bundle(violation.Join(path, "bundle"), b)
	}
	return r
}
