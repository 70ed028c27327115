package claims

//lint:file-ignore SA5008 internal/strictjson reads these structs: its tag option "optional" (a member that may be absent) is one staticcheck does not know, and strictjson refuses an unknown option itself

import (
	"encoding/base64"
	"errors"
	"math"
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
	return decodeAs[ClaimBundle, *bundleMembers](data, "claim bundle JSON", specForm)
}

// DecodeClaim decodes one Claim. Omitted defaults: id "", no evidence
// pointers, if_wrong_cost "".
func DecodeClaim(data []byte) (Claim, error) {
	return decodeAs[Claim, *claimMembers](data, "claim JSON", specForm)
}

// DecodeEvidencePointer decodes one EvidencePointer. An omitted
// retrieved_at is the zero time (which Validate rejects).
func DecodeEvidencePointer(data []byte) (EvidencePointer, error) {
	return decodeAs[EvidencePointer, *evidenceMembers](data, "evidence pointer JSON", specForm)
}

// DecodeUncertainty decodes one Uncertainty. Omitted defaults:
// interpretation "" and gate_recommendation EXECUTE.
func DecodeUncertainty(data []byte) (Uncertainty, error) {
	return decodeAs[Uncertainty, *uncertaintyMembers](data, "uncertainty JSON", specForm)
}

// DecodeApproval decodes one Approval. Only reason may be omitted.
func DecodeApproval(data []byte) (Approval, error) {
	return decodeAs[Approval, *approvalMembers](data, "approval JSON", specForm)
}

// form says which form a document is in: the specification's, or the
// record form (see Record), which also accepts the record's forms of
// values outside the specification and any value of an enum. The readers
// below get it as the strictjson context.
type form bool

const (
	specForm   form = false
	recordForm form = true
)

func formOf(d *strictjson.Decoder) form { f, _ := d.Context().(form); return f }

// members is the tagged struct a document is read into, and the value it
// stands for.
type members[T any, M any] interface {
	*M
	value() T
}

// decodeAs reads data into the members M strictly (internal/strictjson)
// and returns their value. The error is a *ValidationError about subject
// wrapping ErrMalformed, plus ErrUnknownValue for an unknown enum value
// and canon's error for text that is not strict JSON.
func decodeAs[T any, P members[T, M], M any](data []byte, subject string, f form) (T, error) {
	var m M
	if err := (strictjson.Options{Context: f}).Unmarshal(data, P(&m)); err != nil {
		var zero T
		return zero, decodeError(subject, err)
	}
	return P(&m).value(), nil
}

func decodeError(subject string, err error) error {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return invalid(subject, []Violation{{Rule: RuleSyntax, Message: err.Error()}}, ErrMalformed)
	}
	vs := se.Violations()
	wraps := []error{ErrMalformed}
	for i, v := range vs {
		switch v.Rule {
		case violation.RuleDuplicateKey:
			// A key twice is one of the ways a text is not strict JSON.
			vs[i].Rule = RuleSyntax
		case RuleEnum:
			wraps = append(wraps, ErrUnknownValue)
		}
	}
	var syn *canon.SyntaxError
	if errors.As(err, &syn) {
		wraps = append(wraps, syn)
	}
	return invalid(subject, vs, wraps...)
}

// text is a string; in the record form a string that is not valid UTF-8
// is {"bytes": base64}.
type text string

func (t *text) UnmarshalStrict(d *strictjson.Decoder) error {
	if d.Peek() == strictjson.Object && formOf(d) == recordForm {
		s, err := readBytesForm(d)
		*t = text(s)
		return err
	}
	s, err := d.ReadString()
	*t = text(s)
	return err
}

// readBytesForm reads the record form {"bytes": base64} of a string that
// is not valid UTF-8; its problems are reported.
func readBytesForm(d *strictjson.Decoder) (string, error) {
	var (
		out             string
		seen, validUTF8 bool
	)
	err := d.Object(func(key string) error {
		if key != "bytes" {
			d.Report(d.Errorf(RuleUnknownField, "unknown member"))
			return d.Skip()
		}
		seen = true
		if d.Peek() == strictjson.String {
			s, err := d.ReadString()
			if err != nil {
				return err
			}
			if b, err := base64.StdEncoding.Strict().DecodeString(s); err == nil {
				out, validUTF8 = string(b), utf8.Valid(b)
				return nil
			}
		} else if err := d.Skip(); err != nil {
			return err
		}
		d.Report(d.Errorf(RuleType, "want a string of standard base64"))
		return nil
	})
	if err != nil {
		return "", err
	}
	switch {
	case !seen:
		d.Report(d.ErrorfIn("bytes", RuleType, "want a string of standard base64"))
	case validUTF8:
		d.Report(d.Errorf(RuleType, "a string of valid UTF-8 is written as a JSON string"))
		out = ""
	}
	return out, nil
}

// strs are the items of a list of strings.
func strs(ts []text) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// opt returns *t, or "" for an absent or null member.
func opt(t *text) string {
	if t == nil {
		return ""
	}
	return string(*t)
}

// unit is a number in [0,1] (in the record form any finite number, or
// NaN, Infinity and -Infinity as strings).
type unit float64

func (u *unit) UnmarshalStrict(d *strictjson.Decoder) error {
	if d.Peek() == strictjson.String && formOf(d) == recordForm {
		start := d.Offset()
		s, err := d.ReadString()
		if err != nil {
			return err
		}
		if f, special := specialNumbers[s]; special {
			*u = unit(f)
			return nil
		}
		d.Rewind(start)
	}
	lit, _, err := d.ReadNumber()
	if err != nil {
		return err
	}
	n := string(lit)
	f, err := strconv.ParseFloat(n, 64)
	if formOf(d) == recordForm && err == nil {
		*u = unit(f) // any finite number
		return nil
	}
	if err != nil || !inUnit(f) || !exactlyInUnit(n, f) {
		return d.Errorf(RuleRange, "%s is outside [0,1]", n)
	}
	*u = unit(f)
	return nil
}

// timestamp is an RFC 3339 time, normalised to UTC (in the record form
// also "@…" for a time outside the years 0000-9999).
type timestamp struct{ t time.Time }

func (ts *timestamp) UnmarshalStrict(d *strictjson.Decoder) error {
	s, err := d.ReadString()
	if err != nil {
		return err
	}
	if formOf(d) == recordForm {
		if t, ok := parseUnixTime(s); ok {
			ts.t = t
			return nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !isRFC3339(s) {
		return d.Errorf(RuleTime, "%q is not an RFC 3339 timestamp", s)
	}
	t = t.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return d.Errorf(RuleTime, "%q falls outside the years 0000-9999 in UTC", s)
	}
	ts.t = t
	return nil
}

func optTime(ts *timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.t
}

// enumValue is a value of a closed enum, spelled exactly (in the record
// form any value).
type enumValue[T interface {
	~string
	Valid() bool
}] struct{ v T }

func (e *enumValue[T]) UnmarshalStrict(d *strictjson.Decoder) error {
	var s text
	if err := s.UnmarshalStrict(d); err != nil {
		return err
	}
	if !T(s).Valid() && formOf(d) == specForm {
		return d.Errorf(RuleEnum, "unknown value %q", string(s))
	}
	e.v = T(s)
	return nil
}

// or returns e's value, or def for an absent or null member.
func or[T interface {
	~string
	Valid() bool
}](e *enumValue[T], def T) T {
	if e == nil {
		return def
	}
	return e.v
}

type bundleMembers struct {
	ID                *text                `json:"id,optional"`
	Timestamp         *timestamp           `json:"timestamp,optional"`
	OriginAgent       text                 `json:"origin_agent"`
	Claims            []claimMembers       `json:"claims"`
	Decision          *enumValue[Decision] `json:"decision,optional"`
	Reason            *text                `json:"reason,optional"`
	RequiredApprovals *[]text              `json:"required_approvals,optional"`
	AuditTrail        *auditMembers        `json:"audit_trail,optional"`
}

func (m *bundleMembers) value() ClaimBundle {
	b := ClaimBundle{
		ID:                opt(m.ID),
		Timestamp:         optTime(m.Timestamp),
		OriginAgent:       string(m.OriginAgent),
		Claims:            values[Claim, *claimMembers](m.Claims),
		Decision:          or(m.Decision, DecisionDefer),
		Reason:            opt(m.Reason),
		RequiredApprovals: optStrs(m.RequiredApprovals),
	}
	if m.AuditTrail == nil {
		m.AuditTrail = &auditMembers{}
	}
	b.AuditTrail = m.AuditTrail.value()
	return b
}

func optStrs(ts *[]text) []string {
	if ts == nil {
		return []string{}
	}
	return strs(*ts)
}

// values returns the value of each member struct (an empty list for
// none).
func values[T any, P members[T, M], M any](ms []M) []T {
	out := make([]T, len(ms))
	for i := range ms {
		out[i] = P(&ms[i]).value()
	}
	return out
}

func optValues[T any, P members[T, M], M any](ms *[]M) []T {
	if ms == nil {
		return []T{}
	}
	return values[T, P](*ms)
}

type auditMembers struct {
	GatesPassed    *[]text            `json:"gates_passed,optional"`
	GatesFailed    *[]text            `json:"gates_failed,optional"`
	HumanApprovals *[]approvalMembers `json:"human_approvals,optional"`
	Caveats        *[]noteMembers     `json:"caveats,optional"`
	Flags          *[]noteMembers     `json:"flags,optional"`
}

func (m *auditMembers) value() AuditTrail {
	a := AuditTrail{
		GatesPassed:    optStrs(m.GatesPassed),
		GatesFailed:    optStrs(m.GatesFailed),
		HumanApprovals: optValues[Approval, *approvalMembers](m.HumanApprovals),
		Caveats:        optValues[Note, *noteMembers](m.Caveats),
		Flags:          optValues[Note, *noteMembers](m.Flags),
	}
	if len(a.Caveats) == 0 {
		a.Caveats = nil
	}
	if len(a.Flags) == 0 {
		a.Flags = nil
	}
	return a
}

type claimMembers struct {
	ID               *text                `json:"id,optional"`
	Statement        text                 `json:"statement"`
	ClaimType        enumValue[ClaimType] `json:"claim_type"`
	EvidencePointers *[]evidenceMembers   `json:"evidence_pointers,optional"`
	Uncertainty      uncertaintyMembers   `json:"uncertainty"`
	RiskTier         enumValue[RiskTier]  `json:"risk_tier"`
	IfWrongCost      *text                `json:"if_wrong_cost,optional"`
}

func (m *claimMembers) value() Claim {
	return Claim{
		ID:               opt(m.ID),
		Statement:        string(m.Statement),
		ClaimType:        m.ClaimType.v,
		EvidencePointers: optValues[EvidencePointer, *evidenceMembers](m.EvidencePointers),
		Uncertainty:      m.Uncertainty.value(),
		RiskTier:         m.RiskTier.v,
		IfWrongCost:      opt(m.IfWrongCost),
	}
}

type evidenceMembers struct {
	Source           text       `json:"source"`
	SourceConfidence unit       `json:"source_confidence"`
	EvidenceHash     text       `json:"evidence_hash"`
	RetrievedAt      *timestamp `json:"retrieved_at,optional"`
}

func (m *evidenceMembers) value() EvidencePointer {
	return EvidencePointer{
		Source:           string(m.Source),
		SourceConfidence: float64(m.SourceConfidence),
		EvidenceHash:     string(m.EvidenceHash),
		RetrievedAt:      optTime(m.RetrievedAt),
	}
}

type uncertaintyMembers struct {
	Method             enumValue[UncertaintyMethod]   `json:"method"`
	Value              unit                           `json:"value"`
	Interpretation     *text                          `json:"interpretation,optional"`
	GateRecommendation *enumValue[GateRecommendation] `json:"gate_recommendation,optional"`
}

func (m *uncertaintyMembers) value() Uncertainty {
	return Uncertainty{
		Method:             m.Method.v,
		Value:              float64(m.Value),
		Interpretation:     opt(m.Interpretation),
		GateRecommendation: or(m.GateRecommendation, RecommendExecute),
	}
}

type approvalMembers struct {
	Approver  text                        `json:"approver"`
	Timestamp timestamp                   `json:"timestamp"`
	Decision  enumValue[ApprovalDecision] `json:"decision"`
	Reason    *text                       `json:"reason,optional"`
}

func (m *approvalMembers) value() Approval {
	return Approval{
		Approver:  string(m.Approver),
		Timestamp: m.Timestamp.t,
		Decision:  m.Decision.v,
		Reason:    opt(m.Reason),
	}
}

type noteMembers struct {
	ClaimID *text `json:"claim_id,optional"`
	Gate    text  `json:"gate"`
	Text    text  `json:"text"`
}

func (m *noteMembers) value() Note {
	return Note{ClaimID: opt(m.ClaimID), Gate: string(m.Gate), Text: string(m.Text)}
}

type recordMembers struct {
	Actor     *text            `json:"actor,optional"`
	Clearance recordClearance  `json:"clearance"`
	Approval  *approvalMembers `json:"approval,optional"`
	Bundle    bundleMembers    `json:"bundle"`
}

func (m *recordMembers) value() Record {
	r := Record{Actor: opt(m.Actor), Clearance: RiskTier(m.Clearance), Bundle: m.Bundle.value()}
	if m.Approval != nil {
		a := m.Approval.value()
		r.Approval = &a
	}
	return r
}

// recordClearance is a record's risk tier, which must be valid in the record
// form too.
type recordClearance RiskTier

func (c *recordClearance) UnmarshalStrict(d *strictjson.Decoder) error {
	var s text
	if err := s.UnmarshalStrict(d); err != nil {
		return err
	}
	if !RiskTier(s).Valid() {
		return d.Errorf(RuleEnum, "unknown risk tier %q", string(s))
	}
	*c = recordClearance(s)
	return nil
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
