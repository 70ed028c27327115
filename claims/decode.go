package claims

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// The decoders are strict: the text must be one JSON value without
// duplicate keys, invalid UTF-8 or lone surrogates; every object may hold
// only the members the specification defines (matched case-sensitively);
// enum strings must be spelled exactly; numbers must lie in [0,1];
// timestamps must be RFC 3339 (they are normalised to UTC, keeping the
// instant). Members with a default in the specification's reference
// implementation may be omitted or null; the others are required. Every
// problem is reported, with its path, in one *ValidationError wrapping
// ErrMalformed.
//
// Decoding checks shape, not the rules of Validate: the specification's
// own example with a 32-hex-digit evidence_hash decodes, and Validate
// reports the hash.

// DecodeBundle decodes a ClaimBundle. Omitted defaults: id "" and a zero
// timestamp (see ClaimBundle.Complete), decision DEFER, reason "", no
// required approvals and an empty audit trail.
func DecodeBundle(data []byte) (ClaimBundle, error) {
	return decodeWith(data, "claim bundle JSON", false, (*decoder).bundle)
}

// DecodeClaim decodes one Claim. Omitted defaults: id "", no evidence
// pointers, if_wrong_cost "".
func DecodeClaim(data []byte) (Claim, error) {
	return decodeWith(data, "claim JSON", false, (*decoder).claim)
}

// DecodeEvidencePointer decodes one EvidencePointer. An omitted
// retrieved_at is the zero time (which Validate rejects).
func DecodeEvidencePointer(data []byte) (EvidencePointer, error) {
	return decodeWith(data, "evidence pointer JSON", false, (*decoder).evidence)
}

// DecodeUncertainty decodes one Uncertainty. Omitted defaults:
// interpretation "" and gate_recommendation EXECUTE.
func DecodeUncertainty(data []byte) (Uncertainty, error) {
	return decodeWith(data, "uncertainty JSON", false, (*decoder).uncertainty)
}

// DecodeApproval decodes one Approval. Only reason may be omitted.
func DecodeApproval(data []byte) (Approval, error) {
	return decodeWith(data, "approval JSON", false, (*decoder).approval)
}

// decodeWith decodes data with walk; recordForm selects the record form
// (see Record) instead of the specification's. The error is a
// *ValidationError about subject wrapping ErrMalformed, plus
// ErrUnknownValue for an unknown enum value and canon's error for text
// that is not strict JSON.
func decodeWith[T any](data []byte, subject string, recordForm bool, walk func(*decoder, string, any) T) (T, error) {
	var zero T
	// canon rejects what encoding/json would silently accept or alter:
	// duplicate keys, invalid UTF-8, lone surrogates, excessive nesting.
	tree, err := canon.Decode(data)
	if err != nil {
		vs := []Violation{{Rule: RuleSyntax, Message: strings.TrimPrefix(err.Error(), "canon: ")}}
		return zero, invalid(subject, vs, ErrMalformed, err)
	}
	d := &decoder{recordForm: recordForm}
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

type decoder struct {
	vs []Violation
	// recordForm accepts the record form of values outside the
	// specification (see Record) and any value of an enum.
	recordForm bool
}

func (d *decoder) add(path, rule, format string, args ...any) {
	d.vs = append(d.vs, Violation{Path: path, Rule: rule, Message: fmt.Sprintf(format, args...)})
}

// object checks that v is an object holding only the allowed members.
func (d *decoder) object(path string, v any, allowed ...string) (map[string]any, bool) {
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
func (d *decoder) member(m map[string]any, path, key string, required bool) (any, bool) {
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

func (d *decoder) str(m map[string]any, path, key string, required bool) string {
	v, ok := d.member(m, path, key, required)
	if !ok {
		return ""
	}
	s, _ := d.text(violation.Join(path, key), v)
	return s
}

// text returns the string v is, reporting any other JSON type. In the
// record form a string that is not valid UTF-8 is {"bytes": base64}.
func (d *decoder) text(path string, v any) (string, bool) {
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
func (d *decoder) invalidUTF8(path string, v map[string]any) (string, bool) {
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

func (d *decoder) unit(m map[string]any, path, key string) float64 {
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

func inUnit(f float64) bool { return f >= 0 && f <= 1 && !math.IsNaN(f) }

// exactlyInUnit reports whether the JSON number s, which ParseFloat rounded
// to f in [0,1], lies in [0,1] itself: -1e-400 rounds to -0 and
// 1.00000000000000001 to 1. Rounding is monotone and 0 and 1 are exact, so
// only f = 0 and f = 1 need a look at the digits.
func exactlyInUnit(s string, f float64) bool {
	if f != 0 && f != 1 {
		return true
	}
	mant, exp, _ := strings.Cut(strings.ToLower(s), "e")
	neg := strings.HasPrefix(mant, "-")
	intPart, frac, _ := strings.Cut(strings.TrimPrefix(mant, "-"), ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if f == 0 {
		return !neg || digits == ""
	}
	// f = 1: the value is 0.d₁d₂… × 10^point with d₁ ≠ 0; it exceeds 1
	// unless point ≤ 0 (below 1) or it is exactly 0.1 × 10^1.
	point := int64(len(intPart)) - int64(len(intPart+frac)-len(digits))
	x, err := strconv.ParseInt(exp, 10, 64)
	if exp != "" && err != nil {
		// An exponent beyond int64 with f = 1 cannot happen for a text
		// that fits in memory; refuse it rather than guess.
		return false
	}
	point += x
	if point <= 0 {
		return true
	}
	return point == 1 && strings.TrimRight(digits, "0") == "1"
}

func (d *decoder) time(m map[string]any, path, key string, required bool) time.Time {
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

// isRFC3339 reports whether s has the syntax of an RFC 3339 date-time
// (section 5.6) with upper-case T and Z: time.Parse alone also accepts a
// one-digit hour, a comma before the fraction and offsets such as +24:00.
// Field ranges (month, day, hour, …) are left to time.Parse.
func isRFC3339(s string) bool {
	const base = "0000-00-00T00:00:00"
	if len(s) < len(base)+1 {
		return false
	}
	for i := range len(base) {
		if c := base[i]; c == '0' {
			if s[i] < '0' || s[i] > '9' {
				return false
			}
		} else if s[i] != c {
			return false
		}
	}
	rest := s[len(base):]
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	if rest == "Z" {
		return true
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
		return false
	}
	for _, i := range []int{1, 2, 4, 5} {
		if rest[i] < '0' || rest[i] > '9' {
			return false
		}
	}
	return rest[1:3] < "24" && rest[4:6] < "60"
}

func enum[T ~string](d *decoder, m map[string]any, path, key string, valid func(T) bool, def T) T {
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
func (d *decoder) array(m map[string]any, path, key string, required bool) []any {
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

func decodeList[T any](d *decoder, m map[string]any, path, key string, required bool, walk func(*decoder, string, any) T) []T {
	items := d.array(m, path, key, required)
	out := make([]T, len(items))
	for i, it := range items {
		out[i] = walk(d, violation.Index(violation.Join(path, key), i), it)
	}
	return out
}

func (d *decoder) strings(m map[string]any, path, key string) []string {
	items := d.array(m, path, key, false)
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = d.text(violation.Index(violation.Join(path, key), i), it)
	}
	return out
}

func (d *decoder) bundle(path string, v any) ClaimBundle {
	m, ok := d.object(path, v, "id", "timestamp", "origin_agent", "claims", "decision",
		"reason", "required_approvals", "audit_trail")
	if !ok {
		return ClaimBundle{}
	}
	b := ClaimBundle{
		ID:                d.str(m, path, "id", false),
		Timestamp:         d.time(m, path, "timestamp", false),
		OriginAgent:       d.str(m, path, "origin_agent", true),
		Claims:            decodeList(d, m, path, "claims", true, (*decoder).claim),
		Decision:          enum(d, m, path, "decision", Decision.Valid, DecisionDefer),
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

func (d *decoder) auditTrail(path string, v any) AuditTrail {
	m, ok := d.object(path, v, "gates_passed", "gates_failed", "human_approvals", "caveats", "flags")
	if !ok {
		return AuditTrail{}
	}
	a := AuditTrail{
		GatesPassed:    d.strings(m, path, "gates_passed"),
		GatesFailed:    d.strings(m, path, "gates_failed"),
		HumanApprovals: decodeList(d, m, path, "human_approvals", false, (*decoder).approval),
		Caveats:        decodeList(d, m, path, "caveats", false, (*decoder).note),
		Flags:          decodeList(d, m, path, "flags", false, (*decoder).note),
	}
	if len(a.Caveats) == 0 {
		a.Caveats = nil
	}
	if len(a.Flags) == 0 {
		a.Flags = nil
	}
	return a
}

func (d *decoder) claim(path string, v any) Claim {
	m, ok := d.object(path, v, "id", "statement", "claim_type", "evidence_pointers",
		"uncertainty", "risk_tier", "if_wrong_cost")
	if !ok {
		return Claim{}
	}
	c := Claim{
		ID:               d.str(m, path, "id", false),
		Statement:        d.str(m, path, "statement", true),
		ClaimType:        enum(d, m, path, "claim_type", ClaimType.Valid, ""),
		EvidencePointers: decodeList(d, m, path, "evidence_pointers", false, (*decoder).evidence),
		RiskTier:         enum(d, m, path, "risk_tier", RiskTier.Valid, ""),
		IfWrongCost:      d.str(m, path, "if_wrong_cost", false),
	}
	if u, present := d.member(m, path, "uncertainty", true); present {
		c.Uncertainty = d.uncertainty(violation.Join(path, "uncertainty"), u)
	}
	return c
}

func (d *decoder) evidence(path string, v any) EvidencePointer {
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

func (d *decoder) uncertainty(path string, v any) Uncertainty {
	m, ok := d.object(path, v, "method", "value", "interpretation", "gate_recommendation")
	if !ok {
		return Uncertainty{}
	}
	return Uncertainty{
		Method:             enum(d, m, path, "method", UncertaintyMethod.Valid, ""),
		Value:              d.unit(m, path, "value"),
		Interpretation:     d.str(m, path, "interpretation", false),
		GateRecommendation: enum(d, m, path, "gate_recommendation", GateRecommendation.Valid, RecommendExecute),
	}
}

func (d *decoder) approval(path string, v any) Approval {
	m, ok := d.object(path, v, "approver", "timestamp", "decision", "reason")
	if !ok {
		return Approval{}
	}
	return Approval{
		Approver:  d.str(m, path, "approver", true),
		Timestamp: d.time(m, path, "timestamp", true),
		Decision:  enum(d, m, path, "decision", ApprovalDecision.Valid, ""),
		Reason:    d.str(m, path, "reason", false),
	}
}

func (d *decoder) note(path string, v any) Note {
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

func (d *decoder) record(path string, v any) Record {
	m, ok := d.object(path, v, "actor", "clearance", "approval", "bundle")
	if !ok {
		return Record{}
	}
	r := Record{
		Actor:     d.str(m, path, "actor", false),
		Clearance: enum(d, m, path, "clearance", RiskTier.Valid, ""),
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
