package claims

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
)

// Record is the payload of a KindEvaluate or KindApprove trace entry: who
// acted with which clearance, the approval (KindApprove only) and the
// evaluated bundle, whose audit trail holds the decision, reason, gates,
// caveats and flags.
//
// A record holds whatever Evaluate was given, so its JSON (the record
// form) extends the specification's: a value the specification can hold
// is written exactly as ClaimBundle.MarshalJSON writes it, and so a
// record of a valid bundle holds the specification's JSON of that bundle;
// the values it cannot hold are written without loss:
//
//   - a string that is not valid UTF-8 as {"bytes": B}, B the standard
//     base64 (padded) of its bytes;
//   - an enum value outside its enum, the empty string included, as that
//     string;
//   - a number outside [0,1] as itself; NaN, the infinities and negative
//     zero as the strings "NaN", "Infinity", "-Infinity" and "-0";
//   - a time whose UTC year lies outside 0000-9999 as the string
//     "@<s>s+<ns>ns", where time.Unix(s, ns) gives it back.
//
// Times are written in UTC: the instant is kept, the location is not
// (evaluated bundles hold UTC times only). Every value has one record form,
// and the payload is canonical JSON (RFC 8785).
type Record struct {
	Actor     string      `json:"actor"`
	Clearance RiskTier    `json:"clearance"`
	Approval  *Approval   `json:"approval,omitempty"`
	Bundle    ClaimBundle `json:"bundle"`
}

// MarshalJSON writes r in the record form, as canonical JSON. It fails for
// no record. (json.Marshal escapes <, > and & in what it returns, which
// keeps the value but not the canonical bytes.)
func (r Record) MarshalJSON() ([]byte, error) { return canon.Marshal(r.value()) }

// DecodeRecord decodes the payload of a claims trace entry: a record form
// (see Record) with exact member names, no unknown or duplicate members
// and a valid clearance, the bundle and approval decoded as DecodeBundle
// and DecodeApproval decode them except that they also accept the
// record's forms of values outside the specification. A value written in
// another form than its record form (a valid UTF-8 string as bytes, a
// time of the years 0000-9999 as "@…", a finite number as a string) is
// rejected. Every problem is reported, with its path, in one
// *ValidationError wrapping ErrMalformed.
func DecodeRecord(payload []byte) (Record, error) {
	return decodeAs[Record, *recordMembers](payload, "claims record", recordForm)
}

func (r Record) value() map[string]any {
	m := map[string]any{
		"actor":     stringValue(r.Actor),
		"clearance": stringValue(string(r.Clearance)),
		"bundle":    bundleValue(r.Bundle),
	}
	if r.Approval != nil {
		m["approval"] = approvalValue(*r.Approval)
	}
	return m
}

func bundleValue(b ClaimBundle) any {
	return map[string]any{
		"id":                 stringValue(b.ID),
		"timestamp":          timeValue(b.Timestamp),
		"origin_agent":       stringValue(b.OriginAgent),
		"claims":             listValue(b.Claims, claimValue),
		"decision":           stringValue(string(b.Decision)),
		"reason":             stringValue(b.Reason),
		"required_approvals": listValue(b.RequiredApprovals, stringValue),
		"audit_trail":        auditTrailValue(b.AuditTrail),
	}
}

func claimValue(c Claim) any {
	return map[string]any{
		"id":                stringValue(c.ID),
		"statement":         stringValue(c.Statement),
		"claim_type":        stringValue(string(c.ClaimType)),
		"evidence_pointers": listValue(c.EvidencePointers, evidenceValue),
		"uncertainty": map[string]any{
			"method":              stringValue(string(c.Uncertainty.Method)),
			"value":               numberValue(c.Uncertainty.Value),
			"interpretation":      stringValue(c.Uncertainty.Interpretation),
			"gate_recommendation": stringValue(string(c.Uncertainty.GateRecommendation)),
		},
		"risk_tier":     stringValue(string(c.RiskTier)),
		"if_wrong_cost": stringValue(c.IfWrongCost),
	}
}

func evidenceValue(e EvidencePointer) any {
	return map[string]any{
		"source":            stringValue(e.Source),
		"source_confidence": numberValue(e.SourceConfidence),
		"evidence_hash":     stringValue(e.EvidenceHash),
		"retrieved_at":      timeValue(e.RetrievedAt),
	}
}

func auditTrailValue(a AuditTrail) any {
	m := map[string]any{
		"gates_passed":    listValue(a.GatesPassed, stringValue),
		"gates_failed":    listValue(a.GatesFailed, stringValue),
		"human_approvals": listValue(a.HumanApprovals, approvalValue),
	}
	if len(a.Caveats) > 0 {
		m["caveats"] = listValue(a.Caveats, noteValue)
	}
	if len(a.Flags) > 0 {
		m["flags"] = listValue(a.Flags, noteValue)
	}
	return m
}

func approvalValue(a Approval) any {
	return map[string]any{
		"approver":  stringValue(a.Approver),
		"timestamp": timeValue(a.Timestamp),
		"decision":  stringValue(string(a.Decision)),
		"reason":    stringValue(a.Reason),
	}
}

func noteValue(n Note) any {
	m := map[string]any{"gate": stringValue(n.Gate), "text": stringValue(n.Text)}
	if n.ClaimID != "" {
		m["claim_id"] = stringValue(n.ClaimID)
	}
	return m
}

func listValue[T any](xs []T, value func(T) any) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = value(x)
	}
	return out
}

// stringValue is the record form of s: s itself, or {"bytes": base64} if s
// is not valid UTF-8.
func stringValue(s string) any {
	if utf8.ValidString(s) {
		return s
	}
	return map[string]any{"bytes": base64.StdEncoding.EncodeToString([]byte(s))}
}

// specialNumbers are the record forms of the float64 values JSON numbers
// cannot write (canonical JSON writes -0 as 0).
var specialNumbers = map[string]float64{
	"NaN":       math.NaN(),
	"Infinity":  math.Inf(1),
	"-Infinity": math.Inf(-1),
	"-0":        math.Copysign(0, -1),
}

func numberValue(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0 && math.Signbit(f):
		return "-0"
	}
	return f
}

// timeValue is the record form of t: RFC 3339 in UTC as encoding/json
// writes it for the years 0000-9999, "@<s>s+<ns>ns" beyond.
func timeValue(t time.Time) string {
	t = t.UTC()
	if y := t.Year(); y >= 0 && y <= 9999 {
		return t.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("@%ds+%dns", t.Unix(), t.Nanosecond())
}

// parseUnixTime reads the "@<s>s+<ns>ns" form of timeValue; it accepts
// only the form timeValue writes, so not for the years 0000-9999.
func parseUnixTime(s string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(s, "@")
	rest, ok2 := strings.CutSuffix(rest, "ns")
	secs, nanos, ok3 := strings.Cut(rest, "s+")
	if !ok || !ok2 || !ok3 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(secs, 10, 64)
	nsec, err2 := strconv.ParseInt(nanos, 10, 64)
	if err != nil || err2 != nil || nsec < 0 || nsec >= 1e9 {
		return time.Time{}, false
	}
	t := time.Unix(sec, nsec).UTC()
	return t, timeValue(t) == s
}
