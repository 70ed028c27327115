// Strict, lossless JSON: the guarantees of the decoders and encoders, and
// the tests in this file that check them.
//
//   - The decoders reject everything the specification does not allow
//     (syntax, duplicate keys, invalid UTF-8, unknown members, unknown or
//     mis-cased enum values, numbers outside [0,1], wrong types, missing
//     members, timestamps that are not RFC 3339), every problem at once
//     with its JSON Pointer: TestDecodeRejects, TestDecodeUnitBoundaries.
//   - The specification's examples decode and its defaults fill omitted
//     members; times are normalised to UTC: TestDecodeSpecExamples,
//     TestDecodeDefaults, TestDecodeNormalisesTimesToUTC.
//   - Decode* is the one reading route: TestDecodeIsTheOnlyReadingRoute.
//   - Marshalling writes the specification's shape and refuses unknown enum
//     values: TestMarshalShape, TestMarshalRefusesUnknownEnums; an evaluated
//     bundle reads back as itself: TestRoundTripEvaluatedBundle (and the
//     rapid property TestJSONRoundTripLossless in property_test.go).
//   - The decoders never panic, and whatever they accept marshals and
//     decodes back to the same value and bytes: FuzzDecodeBundle,
//     FuzzDecodeClaim, FuzzDecodeEvidencePointer, FuzzDecodeUncertainty,
//     FuzzDecodeApproval. The gate chain never panics on a decoded bundle,
//     is deterministic and never publishes an empty or invalid one:
//     FuzzEvaluate.

package claims

import (
	"encoding"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/internal/canon"
)

// The two examples of the specification, verbatim.
const specExample1 = `{
  "id": "claim-001",
  "statement": "Semantic entropy AUROC >= 0.78 for hallucination detection",
  "claim_type": "FACT",
  "evidence_pointers": [
    {
      "source": "https://nature.com/articles/s41586-024-07421-0",
      "source_confidence": 0.95,
      "evidence_hash": "bd24c2aaef2ef37ae95f0f9e5f7d9e7c",
      "retrieved_at": "2025-12-28T19:30:00Z"
    }
  ],
  "uncertainty": {
    "method": "semantic_entropy",
    "value": 0.15,
    "interpretation": "Strong empirical validation",
    "gate_recommendation": "EXECUTE"
  },
  "risk_tier": "READ_ONLY",
  "if_wrong_cost": "Claim is verifiable against published literature"
}`

const specExample2 = `{
  "id": "decision-001",
  "statement": "Escalate novel attack pattern to security team",
  "claim_type": "DECISION",
  "evidence_pointers": [],
  "uncertainty": {
    "method": "model_disagreement",
    "value": 0.82,
    "interpretation": "Anomaly detection models disagreed",
    "gate_recommendation": "DEFER"
  },
  "risk_tier": "PRIVILEGE",
  "if_wrong_cost": "Security incident could be missed; false positive wastes team time"
}`

func bundleJSON(claims ...string) string {
	return `{"id":"b-1","timestamp":"2025-12-28T19:30:00Z","origin_agent":"researcher","claims":[` +
		strings.Join(claims, ",") + `]}`
}

func TestDecodeSpecExamples(t *testing.T) {
	c1, err := DecodeClaim([]byte(specExample1))
	require.NoError(t, err)
	assert.Equal(t, Claim{
		ID:        "claim-001",
		Statement: "Semantic entropy AUROC >= 0.78 for hallucination detection",
		ClaimType: ClaimFact,
		EvidencePointers: []EvidencePointer{{
			Source:           "https://nature.com/articles/s41586-024-07421-0",
			SourceConfidence: 0.95,
			EvidenceHash:     "bd24c2aaef2ef37ae95f0f9e5f7d9e7c",
			RetrievedAt:      time.Date(2025, 12, 28, 19, 30, 0, 0, time.UTC),
		}},
		Uncertainty: Uncertainty{Method: MethodSemanticEntropy, Value: 0.15, Interpretation: "Strong empirical validation", GateRecommendation: RecommendExecute},
		RiskTier:    TierReadOnly,
		IfWrongCost: "Claim is verifiable against published literature",
	}, c1)
	// The example's evidence_hash has 32 hex digits: an MD5-sized value, not
	// the SHA-256 the specification requires. It decodes, and Validate
	// reports exactly that.
	vs := violationsOf(t, ValidateClaim(c1))
	assert.Equal(t, []string{"/evidence_pointers/0/evidence_hash evidence_hash"}, pathsRules(vs))

	b, err := DecodeBundle([]byte(bundleJSON(specExample1, specExample2)))
	require.NoError(t, err)
	assert.Equal(t, []string{"/claims/0/evidence_pointers/0/evidence_hash evidence_hash"}, pathsRules(violationsOf(t, Validate(b))))
	ev, err := Evaluate(b, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionRefuse, ev.Decision, "an invalid hash is refused")

	// With a real SHA-256 the first example publishes, and the second is
	// deferred by its own recommendation.
	fixed := strings.Replace(specExample1, "bd24c2aaef2ef37ae95f0f9e5f7d9e7c", hashOf, 1)
	b, err = DecodeBundle([]byte(bundleJSON(fixed)))
	require.NoError(t, err)
	require.NoError(t, Validate(b))
	ev, err = Evaluate(b, DefaultPolicy(), clearance(TierReadOnly))
	require.NoError(t, err)
	assert.Equal(t, DecisionPublish, ev.Decision)

	b, err = DecodeBundle([]byte(bundleJSON(fixed, specExample2)))
	require.NoError(t, err)
	ev, err = Evaluate(b, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	assert.Equal(t, DecisionDefer, ev.Decision)
	assert.Equal(t, GateUncertainty, ev.StoppedAt)
}

func TestDecodeDefaults(t *testing.T) {
	b, err := DecodeBundle([]byte(`{"origin_agent":"a","claims":[{"statement":"s","claim_type":"DECISION",` +
		`"uncertainty":{"method":"confidence_score","value":0.2},"risk_tier":"READ_ONLY"}]}`))
	require.NoError(t, err)
	assert.Equal(t, ClaimBundle{
		OriginAgent: "a",
		Claims: []Claim{{Statement: "s", ClaimType: ClaimDecision, EvidencePointers: []EvidencePointer{},
			Uncertainty: Uncertainty{Method: MethodConfidenceScore, Value: 0.2, GateRecommendation: RecommendExecute}, RiskTier: TierReadOnly}},
		Decision:          DecisionDefer,
		RequiredApprovals: []string{},
		AuditTrail:        AuditTrail{GatesPassed: []string{}, GatesFailed: []string{}, HumanApprovals: []Approval{}},
	}, b)
	// null stands for the default where the reference implementation has one.
	b2, err := DecodeBundle([]byte(`{"origin_agent":"a","id":null,"decision":null,"required_approvals":null,"audit_trail":null,` +
		`"claims":[{"statement":"s","claim_type":"DECISION","evidence_pointers":null,` +
		`"uncertainty":{"method":"confidence_score","value":0.2,"gate_recommendation":null},"risk_tier":"READ_ONLY"}]}`))
	require.NoError(t, err)
	assert.Equal(t, b, b2)
	// The defaults equal NewBundle's.
	nb := NewBundle("", time.Time{}, "a", b.Claims...)
	assert.Equal(t, nb, b)
}

func TestDecodeRejects(t *testing.T) {
	okClaim := `{"id":"c","statement":"s","claim_type":"FACT","evidence_pointers":[{"source":"x","source_confidence":0.9,"evidence_hash":"h","retrieved_at":"2025-01-01T00:00:00Z"}],"uncertainty":{"method":"semantic_entropy","value":0.1},"risk_tier":"READ_ONLY"}`
	withClaim := func(old, new string) string { return bundleJSON(strings.Replace(okClaim, old, new, 1)) }
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"not JSON", `{"origin_agent":`, []string{" syntax"}},
		{"trailing data", bundleJSON(okClaim) + ` {}`, []string{" syntax"}},
		{"duplicate key", `{"origin_agent":"a","origin_agent":"b","claims":[]}`, []string{" syntax"}},
		{"invalid UTF-8", "{\"origin_agent\":\"\xff\",\"claims\":[]}", []string{" syntax"}},
		{"lone surrogate", `{"origin_agent":"\ud800","claims":[]}`, []string{" syntax"}},
		{"not an object", `[]`, []string{" type"}},
		{"null bundle", `null`, []string{" type"}},
		{"unknown field", `{"origin_agent":"a","claims":[],"extra":1}`, []string{"/extra unknown_field"}},
		{"field names are case-sensitive", `{"Origin_Agent":"a","claims":[]}`, []string{"/Origin_Agent unknown_field", "/origin_agent required"}},
		{"missing required", `{}`, []string{"/claims required", "/origin_agent required"}},
		{"claims null", `{"origin_agent":"a","claims":null}`, []string{"/claims type"}},
		{"wrong types", `{"origin_agent":1,"claims":{},"id":true,"reason":[]}`,
			[]string{"/claims type", "/id type", "/origin_agent type", "/reason type"}},
		{"bad timestamp", `{"origin_agent":"a","claims":[],"timestamp":"2025-12-28 19:30"}`, []string{"/timestamp time"}},
		{"timestamp without zone", `{"origin_agent":"a","claims":[],"timestamp":"2025-12-28T19:30:00"}`, []string{"/timestamp time"}},
		{"timestamp before year 0 in UTC", `{"origin_agent":"a","claims":[],"timestamp":"0000-01-01T00:00:00+01:00"}`, []string{"/timestamp time"}},
		{"timestamp after year 9999 in UTC", `{"origin_agent":"a","claims":[],"timestamp":"9999-12-31T23:59:59-01:00"}`, []string{"/timestamp time"}},
		{"lower-case t and z", `{"origin_agent":"a","claims":[],"timestamp":"2025-12-28t19:30:00z"}`, []string{"/timestamp time"}},
		// time.Parse accepts these; RFC 3339 does not.
		{"one-digit hour", `{"origin_agent":"a","claims":[],"timestamp":"2025-12-28T9:30:00Z"}`, []string{"/timestamp time"}},
		{"comma before the fraction", `{"origin_agent":"a","claims":[],"timestamp":"2025-12-28T19:30:00,5Z"}`, []string{"/timestamp time"}},
		{"offset hour 24", `{"origin_agent":"a","claims":[],"timestamp":"2025-12-28T19:30:00+24:00"}`, []string{"/timestamp time"}},
		{"offset minute 60", `{"origin_agent":"a","claims":[],"timestamp":"2025-12-28T19:30:00+01:60"}`, []string{"/timestamp time"}},
		{"evidence one-digit hour", withClaim(`2025-01-01T00:00:00Z`, `2025-01-01T0:00:00Z`), []string{"/claims/0/evidence_pointers/0/retrieved_at time"}},
		{"approval comma fraction", `{"origin_agent":"a","claims":[],"audit_trail":{"human_approvals":[{"approver":"x","timestamp":"2025-01-01T00:00:00,1Z","decision":"APPROVED"}]}}`,
			[]string{"/audit_trail/human_approvals/0/timestamp time"}},
		{"decision lower-case", `{"origin_agent":"a","claims":[],"decision":"publish"}`, []string{"/decision enum"}},
		{"unknown decision", `{"origin_agent":"a","claims":[],"decision":"APPROVE"}`, []string{"/decision enum"}},
		{"claim type lower-case", withClaim(`"FACT"`, `"fact"`), []string{"/claims/0/claim_type enum"}},
		{"risk tier unknown", withClaim(`"READ_ONLY"`, `"READONLY"`), []string{"/claims/0/risk_tier enum"}},
		{"method unknown", withClaim(`"semantic_entropy"`, `"Semantic_Entropy"`), []string{"/claims/0/uncertainty/method enum"}},
		{"recommendation unknown", withClaim(`"value":0.1`, `"value":0.1,"gate_recommendation":"ALLOW"`),
			[]string{"/claims/0/uncertainty/gate_recommendation enum"}},
		{"value above 1", withClaim(`"value":0.1`, `"value":1.0000001`), []string{"/claims/0/uncertainty/value range"}},
		{"value below 0", withClaim(`"value":0.1`, `"value":-1e-9`), []string{"/claims/0/uncertainty/value range"}},
		{"value overflows", withClaim(`"value":0.1`, `"value":1e400`), []string{" syntax"}},
		{"value above 1 that rounds to 1", withClaim(`"value":0.1`, `"value":1.00000000000000001`), []string{"/claims/0/uncertainty/value range"}},
		{"value above 1 with exponent", withClaim(`"value":0.1`, `"value":0.100000000000000000001e1`), []string{"/claims/0/uncertainty/value range"}},
		{"negative value that rounds to -0", withClaim(`"value":0.1`, `"value":-1e-400`), []string{"/claims/0/uncertainty/value range"}},
		{"negative confidence that rounds to -0", withClaim(`0.9`, "-0."+strings.Repeat("0", 400)+"1"),
			[]string{"/claims/0/evidence_pointers/0/source_confidence range"}},
		{"value as string", withClaim(`"value":0.1`, `"value":"0.1"`), []string{"/claims/0/uncertainty/value type"}},
		{"NaN is not JSON", withClaim(`"value":0.1`, `"value":NaN`), []string{" syntax"}},
		{"confidence above 1", withClaim(`0.9`, `90`), []string{"/claims/0/evidence_pointers/0/source_confidence range"}},
		{"evidence unknown field", withClaim(`"source":"x"`, `"source":"x","url":"y"`), []string{"/claims/0/evidence_pointers/0/url unknown_field"}},
		{"evidence missing hash", withClaim(`,"evidence_hash":"h"`, ``), []string{"/claims/0/evidence_pointers/0/evidence_hash required"}},
		{"evidence bad time", withClaim(`2025-01-01T00:00:00Z`, `yesterday`), []string{"/claims/0/evidence_pointers/0/retrieved_at time"}},
		{"uncertainty missing", withClaim(`"uncertainty":{"method":"semantic_entropy","value":0.1},`, ``), []string{"/claims/0/uncertainty required"}},
		{"uncertainty null", withClaim(`{"method":"semantic_entropy","value":0.1}`, `null`), []string{"/claims/0/uncertainty type"}},
		{"audit trail unknown field", `{"origin_agent":"a","claims":[],"audit_trail":{"gates":[]}}`, []string{"/audit_trail/gates unknown_field"}},
		{"approval decision lower-case", `{"origin_agent":"a","claims":[],"audit_trail":{"human_approvals":[{"approver":"x","timestamp":"2025-01-01T00:00:00Z","decision":"approved"}]}}`,
			[]string{"/audit_trail/human_approvals/0/decision enum"}},
		{"approval missing time", `{"origin_agent":"a","claims":[],"audit_trail":{"human_approvals":[{"approver":"x","decision":"APPROVED"}]}}`,
			[]string{"/audit_trail/human_approvals/0/timestamp required"}},
		{"required approvals not strings", `{"origin_agent":"a","claims":[],"required_approvals":["a",1]}`, []string{"/required_approvals/1 type"}},
		{"many problems at once", `{"origin_agent":"a","claims":[{"claim_type":"fact","uncertainty":{"value":2,"method":"x"},"risk_tier":"x"}, 5]}`,
			[]string{"/claims/0/claim_type enum", "/claims/0/risk_tier enum", "/claims/0/statement required",
				"/claims/0/uncertainty/method enum", "/claims/0/uncertainty/value range", "/claims/1 type"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := DecodeBundle([]byte(tc.in))
			require.Error(t, err)
			assert.Equal(t, ClaimBundle{}, b)
			var de *ValidationError
			require.ErrorAs(t, err, &de)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.NotErrorIs(t, err, ErrInvalid)
			var got []string
			for _, v := range de.Violations {
				got = append(got, v.Path+" "+v.Rule)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, de.Has(RuleEnum), errors.Is(err, ErrUnknownValue))
			assert.Equal(t, de.Has(RuleSyntax), errors.As(err, new(*canon.SyntaxError)))
		})
	}
}

func TestDecodeNormalisesTimesToUTC(t *testing.T) {
	p, err := DecodeEvidencePointer([]byte(`{"source":"s","source_confidence":1,"evidence_hash":"h","retrieved_at":"2025-12-28T20:30:00.5+01:00"}`))
	require.NoError(t, err)
	assert.Equal(t, time.Date(2025, 12, 28, 19, 30, 0, 500_000_000, time.UTC), p.RetrievedAt)
	out, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"source":"s","source_confidence":1,"evidence_hash":"h","retrieved_at":"2025-12-28T19:30:00.5Z"}`, string(out))
}

// TestDecodeIsTheOnlyReadingRoute: the Decode functions are the one way to
// read the package's JSON; no type has an UnmarshalJSON or UnmarshalText
// that would be a second, differently checked route.
func TestDecodeIsTheOnlyReadingRoute(t *testing.T) {
	for _, v := range []any{new(ClaimBundle), new(Claim), new(EvidencePointer), new(Uncertainty), new(Approval),
		new(AuditTrail), new(Note), new(Record), new(ClaimType), new(UncertaintyMethod), new(GateRecommendation),
		new(RiskTier), new(Decision), new(ApprovalDecision)} {
		_, isJSON := v.(json.Unmarshaler)
		_, isText := v.(encoding.TextUnmarshaler)
		assert.False(t, isJSON || isText, "%T", v)
	}
}

func TestMarshalRefusesUnknownEnums(t *testing.T) {
	b := mkBundle(fact("a"))
	b.Claims[0].RiskTier = "ROOT"
	_, err := json.Marshal(b)
	assert.ErrorIs(t, err, ErrUnknownValue)
	b = mkBundle(fact("a"))
	b.Decision = ""
	_, err = json.Marshal(b)
	assert.ErrorIs(t, err, ErrUnknownValue)
	for _, v := range []any{ClaimType("fact"), UncertaintyMethod(""), GateRecommendation("Execute"), Decision("x"), ApprovalDecision("OK")} {
		_, err := json.Marshal(v)
		assert.ErrorIs(t, err, ErrUnknownValue, "%v", v)
	}
}

func TestMarshalShape(t *testing.T) {
	b := NewBundle("b", t0, "agent")
	out, err := json.Marshal(b)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"b","timestamp":"2026-01-02T03:04:05Z","origin_agent":"agent","claims":[],"decision":"DEFER",`+
		`"reason":"","required_approvals":[],"audit_trail":{"gates_passed":[],"gates_failed":[],"human_approvals":[]}}`, string(out))
	// nil lists are written as [] too.
	out2, err := json.Marshal(ClaimBundle{ID: "b", Timestamp: t0, OriginAgent: "agent", Decision: DecisionDefer})
	require.NoError(t, err)
	assert.Equal(t, string(out), string(out2))
	c := fact("a")
	c.EvidencePointers = nil
	out, err = json.Marshal(c)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"evidence_pointers":[]`)
}

func TestRoundTripEvaluatedBundle(t *testing.T) {
	in := mkBundle(fact("f"), mkClaim("m", ClaimInference, TierModify, 0.6, RecommendExplain), mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute))
	ev, err := Evaluate(in, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	b, err := RecordApproval(ev.Bundle, Approval{Approver: "dba", Timestamp: t0.Add(time.Nanosecond), Decision: ApprovalApproved, Reason: "ok"})
	require.NoError(t, err)
	ev, err = Evaluate(b, approverPolicy(), clearance(TierPrivilege))
	require.NoError(t, err)
	require.Equal(t, DecisionPublish, ev.Decision)
	require.NotEmpty(t, ev.Bundle.AuditTrail.Caveats)
	require.NotEmpty(t, ev.Bundle.AuditTrail.Flags)
	data, err := json.Marshal(ev.Bundle)
	require.NoError(t, err)
	back, err := DecodeBundle(data)
	require.NoError(t, err)
	assert.Equal(t, ev.Bundle, back)
	again, err := json.Marshal(back)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))
}

// fuzzSeeds are shared by the decoder fuzz targets.
var fuzzSeeds = []string{
	specExample1, specExample2, bundleJSON(specExample1, specExample2), bundleJSON(),
	`{"method":"semantic_entropy","value":0.5,"interpretation":"x","gate_recommendation":"EXPLAIN"}`,
	`{"source":"s","source_confidence":0.6,"evidence_hash":"` + hashOf + `","retrieved_at":"2025-12-28T19:30:00Z"}`,
	`{"approver":"x","timestamp":"2025-01-01T00:00:00Z","decision":"APPROVED","reason":"r"}`,
	`{"origin_agent":"a","claims":[],"audit_trail":{"caveats":[{"gate":"g","text":"t"}],"flags":[{"claim_id":"c","gate":"g","text":"t"}]}}`,
	`{"approver":"x","timestamp":"0000-01-01T00:00:00+01:00","decision":"APPROVED"}`,
	`{"approver":"x","timestamp":"9999-12-31T23:59:59.999999999+00:00","decision":"REJECTED"}`,
	`{"value":1e400}`, `{"value":-0}`, `[]`, `null`, `"FACT"`, `{"a":1,"a":2}`, "{\"\xff\":1}",
}

// fuzzRoundTrip checks that a decoder never panics and that whatever it
// accepts marshals and decodes back to the same value and the same bytes.
func fuzzRoundTrip[T any](f *testing.F, decode func([]byte) (T, error)) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := decode(data)
		if err != nil {
			var de *ValidationError
			if !errors.As(err, &de) || len(de.Violations) == 0 || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without violations: %v", err)
			}
			return
		}
		out, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("accepted value does not marshal: %v", err)
		}
		back, err := decode(out)
		if err != nil {
			t.Fatalf("own output rejected: %v\n%s", err, out)
		}
		assert.Equal(t, v, back)
		out2, err := json.Marshal(back)
		require.NoError(t, err)
		if string(out) != string(out2) {
			t.Fatalf("not idempotent:\n%s\n%s", out, out2)
		}
	})
}

func FuzzDecodeBundle(f *testing.F)          { fuzzRoundTrip(f, DecodeBundle) }
func FuzzDecodeClaim(f *testing.F)           { fuzzRoundTrip(f, DecodeClaim) }
func FuzzDecodeUncertainty(f *testing.F)     { fuzzRoundTrip(f, DecodeUncertainty) }
func FuzzDecodeEvidencePointer(f *testing.F) { fuzzRoundTrip(f, DecodeEvidencePointer) }
func FuzzDecodeApproval(f *testing.F)        { fuzzRoundTrip(f, DecodeApproval) }

// FuzzEvaluate feeds decoded bundles to Validate and the gate chain: no
// panics, deterministic, never PUBLISH without claims or with a violation.
func FuzzEvaluate(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), uint8(5))
	}
	f.Add([]byte(bundleJSON(strings.Replace(specExample1, "bd24c2aaef2ef37ae95f0f9e5f7d9e7c", hashOf, 1))), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, tier uint8) {
		b, err := DecodeBundle(data)
		if err != nil {
			return
		}
		tiers := []RiskTier{TierReadOnly, TierWriteLimited, TierModify, TierDelete, TierPrivilege}
		c := clearance(tiers[int(tier)%len(tiers)])
		valid := Validate(b)
		e1, err := Evaluate(b, approverPolicy(), c)
		require.NoError(t, err)
		e2, err := Evaluate(b, approverPolicy(), c)
		require.NoError(t, err)
		assert.Equal(t, e1, e2)
		if e1.Decision == DecisionPublish {
			assert.NotEmpty(t, b.Claims)
			assert.NoError(t, valid)
		}
		if valid == nil {
			assert.NoError(t, Validate(e1.Bundle))
		}
	})
}

// Numbers are judged by their exact decimal value, not by the float64 they
// round to: what rounds into [0,1] from outside is rejected, and every
// spelling of a value inside it is accepted.
func TestDecodeUnitBoundaries(t *testing.T) {
	for in, want := range map[string]float64{
		"0": 0, "-0": 0, "-0.0e5": 0, "1": 1, "1.0": 1, "1.000e0": 1, "0.1e1": 1, "100e-2": 1,
		"10000000000000000000e-19": 1, "0.00001e5": 1, "0.99999999999999999999": 1, "1e-400": 0,
		"0.6": 0.6, "6e-1": 0.6, "0.5": 0.5,
	} {
		u, err := DecodeUncertainty([]byte(`{"method":"semantic_entropy","value":` + in + `}`))
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, u.Value, in)
		}
	}
}
