// The record form: the Session records exactly what the gate chain
// returns, and the tests that check it.
//
//   - For any bundle, policy, context and clock reading for which the core
//     returns a result (zero and unknown enum values, NaN, invalid UTF-8
//     and far times included), the Session returns that result and records
//     it, stamped with its clock reading, and likewise for approvals:
//     TestSessionRecordsExactlyWhatTheCoreReturns (rapid),
//     TestSessionRecordsRefusalOfZeroUncertainty,
//     TestEvaluatedBundleReadsBackAsItself.
//   - The record form is lossless and has one spelling per value:
//     TestRecordForm, TestDecodeRecordRejectsOtherForms, FuzzDecodeRecord.

package claims

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/trace"
	"pgregory.net/rapid"
)

// The generators below widen those of the gate tests to everything the
// gate chain accepts: zero values, enum values outside their enums, numbers
// outside [0,1] (NaN and the infinities included), strings that are not
// UTF-8, times outside the years 0000-9999 or in another zone than UTC,
// nil and empty lists.

var (
	genWildString = rapid.OneOf(
		rapid.String(),
		rapid.SampledFrom([]string{"", "\xff", "a\xc3", "\xed\xa0\x80"}), // invalid UTF-8, a lone surrogate
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
	)
	genWildFloat = rapid.OneOf(
		genUnit,
		rapid.SampledFrom([]float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1),
			-0.5, 1.5, -math.MaxFloat64, math.SmallestNonzeroFloat64, 1e21, 1e-7}),
		rapid.Float64(),
	)
	genWildTime = rapid.OneOf(
		rapid.Just(t0),
		rapid.Just(time.Time{}),
		rapid.Just(t0.In(time.FixedZone("UTC+13:45", 13*3600+45*60))),
		rapid.SampledFrom([]time.Time{
			time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(-1, 12, 31, 23, 59, 59, 999999999, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("west", -3600)),
			time.Unix(math.MaxInt64, 999999999), time.Unix(math.MinInt64, 0),
		}),
		rapid.Custom(func(t *rapid.T) time.Time {
			return time.Unix(rapid.Int64().Draw(t, "s"), rapid.Int64Range(0, 999999999).Draw(t, "ns"))
		}),
	)
)

func genWildEnum[T ~string](values ...T) *rapid.Generator[T] {
	return rapid.OneOf(
		rapid.SampledFrom(values),
		rapid.Map(rapid.SampledFrom(values), func(v T) T { return T(strings.ToLower(string(v))) }),
		rapid.Map(genWildString, func(s string) T { return T(s) }),
	)
}

// wild returns v or, one time in four, a value drawn from g.
func wild[T any](t *rapid.T, name string, v T, g *rapid.Generator[T]) T {
	if rapid.IntRange(0, 3).Draw(t, "wild "+name) == 0 {
		return g.Draw(t, name)
	}
	return v
}

func genWildNotes() *rapid.Generator[[]Note] {
	return rapid.Custom(func(t *rapid.T) []Note {
		if rapid.Bool().Draw(t, "nil notes") {
			return nil
		}
		return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Note {
			return Note{ClaimID: genWildString.Draw(t, "claim_id"), Gate: genWildString.Draw(t, "gate"), Text: genWildString.Draw(t, "text")}
		}), 0, 2).Draw(t, "notes")
	})
}

// genWildBundle draws bundles from genPassing, from genBundle, or from
// genBundle with any of their fields made wild.
func genWildBundle() *rapid.Generator[ClaimBundle] {
	return rapid.Custom(func(t *rapid.T) ClaimBundle {
		switch rapid.IntRange(0, 2).Draw(t, "kind") {
		case 0:
			return genPassing().Draw(t, "passing bundle").b
		case 1:
			return genBundle(0, 4).Draw(t, "bundle")
		}
		b := genBundle(0, 4).Draw(t, "bundle")
		b.ID = wild(t, "id", b.ID, genWildString)
		b.Timestamp = wild(t, "timestamp", b.Timestamp, genWildTime)
		b.OriginAgent = wild(t, "origin_agent", b.OriginAgent, genWildString)
		b.Decision = wild(t, "decision", b.Decision, genWildEnum(DecisionPublish, DecisionDefer, DecisionEscalate, DecisionRefuse))
		b.Reason = wild(t, "reason", b.Reason, genWildString)
		for i := range b.Claims {
			b.Claims[i] = wildClaim(t, b.Claims[i])
		}
		if len(b.Claims) == 0 && rapid.Bool().Draw(t, "nil claims") {
			b.Claims = nil
		}
		b.RequiredApprovals = wild(t, "required_approvals", b.RequiredApprovals, rapid.SliceOfN(genWildString, -1, 3))
		a := &b.AuditTrail
		for i := range a.HumanApprovals {
			h := &a.HumanApprovals[i]
			h.Approver = wild(t, "approver", h.Approver, genWildString)
			h.Timestamp = wild(t, "/approval time", h.Timestamp, genWildTime)
			h.Decision = wild(t, "approval decision", h.Decision, genWildEnum(ApprovalApproved, ApprovalRejected))
			h.Reason = wild(t, "approval reason", h.Reason, genWildString)
		}
		a.GatesPassed = wild(t, "gates_passed", a.GatesPassed, rapid.SliceOfN(genWildString, -1, 2))
		a.GatesFailed = wild(t, "gates_failed", a.GatesFailed, rapid.SliceOfN(genWildString, -1, 2))
		a.Caveats = wild(t, "caveats", a.Caveats, genWildNotes())
		a.Flags = wild(t, "flags", a.Flags, genWildNotes())
		return b
	})
}

func wildClaim(t *rapid.T, c Claim) Claim {
	c.ID = wild(t, "claim id", c.ID, genWildString)
	c.Statement = wild(t, "statement", c.Statement, genWildString)
	c.ClaimType = wild(t, "claim_type", c.ClaimType, genWildEnum(ClaimFact, ClaimInference, ClaimDecision))
	c.RiskTier = wild(t, "risk_tier", c.RiskTier, genWildEnum(allTiers...))
	c.IfWrongCost = wild(t, "if_wrong_cost", c.IfWrongCost, genWildString)
	if rapid.IntRange(0, 5).Draw(t, "zero uncertainty") == 0 {
		c.Uncertainty = Uncertainty{}
	}
	u := &c.Uncertainty
	u.Method = wild(t, "method", u.Method, genWildEnum(MethodSemanticEntropy, MethodModelDisagreement, MethodConfidenceScore, MethodConformalSet))
	u.Value = wild(t, "value", u.Value, genWildFloat)
	u.Interpretation = wild(t, "interpretation", u.Interpretation, genWildString)
	u.GateRecommendation = wild(t, "gate_recommendation", u.GateRecommendation, genWildEnum(RecommendExecute, RecommendDefer, RecommendRefuse, RecommendExplain))
	if len(c.EvidencePointers) == 0 && rapid.Bool().Draw(t, "nil evidence") {
		c.EvidencePointers = nil
	}
	for i := range c.EvidencePointers {
		e := &c.EvidencePointers[i]
		e.Source = wild(t, "source", e.Source, genWildString)
		e.SourceConfidence = wild(t, "source_confidence", e.SourceConfidence, genWildFloat)
		e.EvidenceHash = wild(t, "evidence_hash", e.EvidenceHash, genWildString)
		e.RetrievedAt = wild(t, "retrieved_at", e.RetrievedAt, genWildTime)
	}
	return c
}

// genWildPolicy draws the approver, default and zero policies, and others
// with any thresholds (some invalid) and a user gate with any verdict.
func genWildPolicy() *rapid.Generator[Policy] {
	return rapid.Custom(func(t *rapid.T) Policy {
		switch rapid.IntRange(0, 4).Draw(t, "policy") {
		case 0, 1:
			return approverPolicy()
		case 2:
			return DefaultPolicy()
		case 3:
			return Policy{}
		}
		p := approverPolicy()
		p.ExecuteMax = genUnit.Draw(t, "execute max")
		p.ExplainMax = wild(t, "explain max", max(p.ExecuteMax, genUnit.Draw(t, "explain max")), genWildFloat)
		if rapid.Bool().Draw(t, "user gate") {
			v := GateResult{
				Recommendation: genWildEnum(RecommendExecute, RecommendDefer, RecommendRefuse, RecommendExplain).Draw(t, "recommendation"),
				Reason:         genWildString.Draw(t, "gate reason"),
				Caveats:        genWildNotes().Draw(t, "gate caveats"),
			}
			p.Gates = []Gate{GateFunc("user", func(ClaimBundle, Context) GateResult { return v })}
		}
		return p
	})
}

func genWildContext() *rapid.Generator[Context] {
	return rapid.Custom(func(t *rapid.T) Context {
		return Context{
			Actor:     genWildString.Draw(t, "actor"),
			Clearance: wild(t, "clearance", rapid.SampledFrom(append(allTiers, TierPrivilege, TierPrivilege)).Draw(t, "clearance"), genWildEnum(allTiers...)),
		}
	})
}

// counter returns an id source giving id-1, id-2, …
func counter() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("id-%d", n) }
}

// requireSame compares exactly, in Go syntax: time zones, nil against
// empty lists, -0 against 0 and NaN against NaN are told apart as they
// should be (require.Equal takes NaN for unequal to itself).
func requireSame(t require.TestingT, want, got any, msg ...any) {
	require.Equal(t, fmt.Sprintf("%#v", want), fmt.Sprintf("%#v", got), msg...)
}

// recordable reports whether a trace entry can be stamped with t: not the
// zero time, and within the years 0000-9999 in UTC.
func recordable(t time.Time) bool {
	y := t.UTC().Year()
	return !t.IsZero() && y >= 0 && y <= 9999
}

// requireRecorded checks that the last of n entries on log is rec, under
// kind, stamped with at, and that the log verifies.
func requireRecorded(t *rapid.T, log *trace.Log, n int, at time.Time, kind string, rec Record) {
	var es []trace.Entry
	for e, err := range log.Entries(context.Background(), 0) {
		require.NoError(t, err)
		es = append(es, e)
	}
	require.Len(t, es, n)
	_, err := log.Verify(context.Background())
	require.NoError(t, err)
	e := es[n-1]
	require.Equal(t, kind, e.Kind)
	require.Equal(t, trace.Normalize(at), e.Time, "one clock stamps the record and the entry")
	back, err := DecodeRecord(e.Payload)
	require.NoError(t, err, "%s", e.Payload)
	requireSameRecord(t, rec, back)
	// One form per record: the payload is the record's canonical JSON.
	want, err := rec.MarshalJSON()
	require.NoError(t, err)
	require.Equal(t, string(want), string(e.Payload))
	// A valid bundle is recorded as the specification's JSON.
	if Validate(rec.Bundle) == nil {
		var members map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(e.Payload, &members))
		spec, err := json.Marshal(rec.Bundle)
		require.NoError(t, err)
		spec, err = canon.Transform(spec)
		require.NoError(t, err)
		require.Equal(t, string(spec), string(members["bundle"]))
	}
}

// requireInvalidBundleError checks the error the Session returns with ev:
// a *ValidationError with ev's violations if the validation gate refused
// the bundle, else none.
func requireInvalidBundleError(t *rapid.T, ev Evaluation, err error) {
	if ev.StoppedAt != GateValidation || len(ev.Violations) == 0 {
		require.NoError(t, err)
		return
	}
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.ErrorIs(t, err, ErrInvalid)
	require.Equal(t, ev.Violations, ve.Violations)
}

// TestSessionRecordsExactlyWhatTheCoreReturns: for any bundle, policy and
// context for which Evaluate returns an evaluation, Session.Evaluate returns
// that same evaluation and records it — the log verifies and the entry
// decodes back to the same bundle — and likewise for Session.Approve and
// RecordApproval followed by Evaluate. Where the core returns an error,
// so does the Session, and it records nothing.
func TestSessionRecordsExactlyWhatTheCoreReturns(t *testing.T) {
	var runs, invalid, validationRefused, published, approved int
	// Four passes of rapid's checks, so that the rarest outcome counted
	// below (publication, about 1 run in 20) is reached often enough for
	// the coverage floor to hold on every seed, not on most.
	property := func(t *rapid.T) {
		ctx := context.Background()
		b := genWildBundle().Draw(t, "bundle")
		p := genWildPolicy().Draw(t, "policy")
		c := genWildContext().Draw(t, "ctx")
		now := genWildTime.Draw(t, "now")
		log := trace.NewMemoryLog()
		store := NewMemoryPending()
		s, err := NewSession(context.Background(), log, p, WithClock(func() time.Time { return now }), WithIDs(counter()), WithPending(store))
		if p.Validate() != nil {
			require.ErrorIs(t, err, ErrInvalidPolicy)
			return
		}
		require.NoError(t, err)
		runs++

		in := b.Complete(counter(), now)
		if Validate(in) != nil {
			invalid++
		}
		want, coreErr := Evaluate(in, p, c)
		got, err := s.Evaluate(ctx, b, c)
		if coreErr != nil || !recordable(now) {
			if coreErr != nil {
				require.Equal(t, coreErr, err)
			} else {
				// One clock stamps the bundle and the entry: an instant
				// no entry can hold is an error.
				require.ErrorIs(t, err, trace.ErrMalformed)
			}
			requireSame(t, Evaluation{}, got)
			h, err := log.Verify(ctx)
			require.NoError(t, err)
			require.Zero(t, h.Size, "nothing recorded")
			return
		}
		requireSame(t, want, got)
		requireInvalidBundleError(t, want, err)
		if err != nil {
			validationRefused++
		}
		if got.Decision == DecisionPublish {
			published++
		}
		requireRecorded(t, log, 1, now, KindEvaluate, Record{Actor: c.Actor, Clearance: c.Clearance, Bundle: want.Bundle})

		// An approval on the evaluated bundle, or on the wild one as it was
		// drawn.
		target := want.Bundle
		if rapid.Bool().Draw(t, "approve the drawn bundle") {
			target = b
		}
		candidates := append(slices.Clone(target.RequiredApprovals), "mallory")
		if undecided := slices.DeleteFunc(slices.Clone(target.RequiredApprovals), func(r string) bool {
			return slices.ContainsFunc(target.AuditTrail.HumanApprovals, func(a Approval) bool { return a.Approver == r })
		}); len(undecided) > 0 && rapid.Bool().Draw(t, "undecided") {
			candidates = undecided
		}
		approver := wild(t, "approver", rapid.SampledFrom(candidates).Draw(t, "approver"), genWildString)
		d := wild(t, "approval", rapid.SampledFrom([]ApprovalDecision{ApprovalApproved, ApprovalRejected}).Draw(t, "approval"), genWildEnum(ApprovalApproved, ApprovalRejected))
		reason := wild(t, "reason", rapid.String().Draw(t, "reason"), genWildString)
		a := Approval{Approver: approver, Timestamp: now.UTC(), Decision: d, Reason: reason}
		nb, coreErr := RecordApproval(target, a)
		// The target waits, whatever its decision: what is checked here
		// is the record (TestApproveOnlyWhatWaits checks the waiting).
		require.NoError(t, store.Put(ctx, Pending{Bundle: target, Context: c}))
		got, err = s.Approve(ctx, target, c, approver, d, reason)
		if coreErr != nil {
			require.Equal(t, coreErr, err)
			requireSame(t, Evaluation{}, got)
			h, err := log.Verify(ctx)
			require.NoError(t, err)
			require.Equal(t, uint64(1), h.Size, "the approval is not recorded")
			return
		}
		want, coreErr = Evaluate(nb, p, c)
		require.NoError(t, coreErr)
		approved++
		want.Seq = 1 // the approval's entry, after the evaluation's (0)
		requireSame(t, want, got)
		requireInvalidBundleError(t, want, err)
		requireRecorded(t, log, 2, now, KindApprove, Record{Actor: c.Actor, Clearance: c.Clearance, Approval: &a, Bundle: want.Bundle})
	}
	for range 4 {
		rapid.Check(t, property)
	}
	// The property says something only if the generators reach invalid
	// bundles, refusals by the validation gate and recorded approvals.
	require.Greater(t, invalid*4, runs, "%d of %d bundles invalid", invalid, runs)
	require.Greater(t, (runs-invalid)*5, runs, "%d of %d bundles invalid", invalid, runs)
	require.Greater(t, validationRefused*10, runs, "%d of %d refused by validation", validationRefused, runs)
	require.Greater(t, published*100, runs, "%d of %d published", published, runs)
	require.Greater(t, approved*50, runs, "%d of %d approvals recorded", approved, runs)
	t.Logf("%d runs: %d invalid bundles, %d refused by validation, %d published, %d approvals recorded",
		runs, invalid, validationRefused, published, approved)
}

// TestSessionRecordsRefusalOfZeroUncertainty: a claim whose Uncertainty is
// the zero value is refused by the validation gate, and that REFUSE is on
// the log; the Session returns it with a *ValidationError naming the path.
func TestSessionRecordsRefusalOfZeroUncertainty(t *testing.T) {
	ctx := context.Background()
	log := trace.NewMemoryLog()
	s, err := NewSession(context.Background(), log, DefaultPolicy(), WithClock(fixedClock()))
	require.NoError(t, err)
	c := fact("a")
	c.Uncertainty = Uncertainty{}
	ev, err := s.Evaluate(ctx, mkBundle(c), clearance(TierReadOnly))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []Violation{{Path: "/claims/0/uncertainty/method", Rule: RuleRequired, Message: "must not be empty"}}, ve.Violations)
	assert.Equal(t, DecisionRefuse, ev.Decision)
	assert.Equal(t, GateValidation, ev.StoppedAt)

	es := entries(t, log)
	require.Len(t, es, 1)
	rec, err := DecodeRecord(es[0].Payload)
	require.NoError(t, err)
	assert.Equal(t, ev.Bundle, rec.Bundle)
	assert.Equal(t, DecisionRefuse, rec.Bundle.Decision)
	assert.Contains(t, string(es[0].Payload), `"method":""`)
}

// TestEvaluatedBundleReadsBackAsItself: the evaluated bundle is in the one
// form JSON reads back as — times in UTC, the specification's lists not
// nil, no empty caveats or flags, no negative zero — whatever form the
// input had.
func TestEvaluatedBundleReadsBackAsItself(t *testing.T) {
	zone := time.FixedZone("x", 3600)
	c := mkClaim("a", ClaimFact, TierReadOnly, math.Copysign(0, -1), RecommendExecute, ev(0.9))
	c.EvidencePointers[0].RetrievedAt = t0.In(zone)
	d := mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute)
	d.EvidencePointers = nil
	in := mkBundle(c, d)
	in.Timestamp = time.Now() // with a monotonic clock reading
	in.RequiredApprovals = []string{"dba"}
	in.AuditTrail = AuditTrail{HumanApprovals: []Approval{{Approver: "dba", Timestamp: t0.In(zone), Decision: ApprovalApproved}}, Caveats: []Note{}}
	for _, start := range []Decision{DecisionDefer, DecisionRefuse} {
		in.Decision = start
		e, err := Evaluate(in, approverPolicy(), clearance(TierDelete))
		require.NoError(t, err)
		data, err := json.Marshal(e.Bundle)
		require.NoError(t, err)
		back, err := DecodeBundle(data)
		require.NoError(t, err)
		requireSame(t, back, e.Bundle, start)
		assert.False(t, math.Signbit(e.Bundle.Claims[0].Uncertainty.Value))
	}
}

func TestRecordForm(t *testing.T) {
	c := mkClaim("\xff", "fact", "", math.NaN(), "", ev(math.Inf(1)), ev(-0.5), ev(math.Copysign(0, -1)))
	c.EvidencePointers[0].RetrievedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	c.EvidencePointers[1].RetrievedAt = time.Date(-1, 1, 1, 0, 0, 0, 1, time.UTC)
	c.Uncertainty.Method = ""
	rec := Record{Actor: "a\xc3", Clearance: TierReadOnly, Bundle: mkBundle(c)}
	data, err := rec.MarshalJSON()
	require.NoError(t, err)
	for _, want := range []string{
		`"actor":{"bytes":"YcM="}`, `"id":{"bytes":"/w=="}`, `"claim_type":"fact"`, `"risk_tier":""`,
		`"value":"NaN"`, `"source_confidence":"Infinity"`, `"source_confidence":-0.5`, `"source_confidence":"-0"`,
		`"retrieved_at":"@253402300800s+0ns"`, `"retrieved_at":"@-62198755200s+1ns"`, `"method":""`,
	} {
		assert.Contains(t, string(data), want)
	}
	back, err := DecodeRecord(data)
	require.NoError(t, err)
	requireSameRecord(t, rec, back)
	// The specification's decoder does not take the record's forms.
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(data, &members))
	_, err = DecodeBundle(members["bundle"])
	require.ErrorIs(t, err, ErrMalformed)
}

// requireSameRecord is requireSame for records, whose approval is a
// pointer.
func requireSameRecord(t require.TestingT, want, got Record) {
	requireSame(t, want.Approval == nil, got.Approval == nil)
	if want.Approval != nil {
		requireSame(t, *want.Approval, *got.Approval)
	}
	want.Approval, got.Approval = nil, nil
	requireSame(t, want, got)
}

func TestDecodeRecordRejectsOtherForms(t *testing.T) {
	rec := `{"actor":%s,"clearance":"READ_ONLY","bundle":{"origin_agent":"a","claims":[{"statement":"s","claim_type":"FACT","risk_tier":"READ_ONLY","uncertainty":{"method":"semantic_entropy","value":%s}}],"timestamp":%s}}`
	ok := []string{`"a"`, `0.5`, `"2026-01-01T00:00:00Z"`}
	for i, bad := range [][]string{
		{`{"bytes":"YQ=="}`, ``, ``},       // valid UTF-8 as bytes
		{`{"bytes":"YcM"}`, ``, ``},        // unpadded base64
		{`{"bytes":"*"}`, ``, ``},          // not base64
		{`{"bytes":1}`, ``, ``},            // not a string
		{`{"bytes":"YcM=","x":1}`, ``, ``}, // an unknown member
		{`{}`, ``, ``},
		{``, `"0.5"`, ``}, // a finite number as a string
		{``, `"nan"`, ``},
		{``, `1e400`, ``},
		{``, ``, `"@0s+0ns"`}, // 1970 is written in RFC 3339
		{``, ``, `"@253402300800s+01ns"`},
		{``, ``, `"@253402300800s+1000000000ns"`},
		{``, ``, `"@+253402300800s+0ns"`},
		{``, ``, `"@253402300800s"`},
	} {
		args := make([]any, 3)
		for j := range args {
			args[j] = ok[j]
			if bad[j] != "" {
				args[j] = bad[j]
			}
		}
		in := fmt.Sprintf(rec, args[0], args[1], args[2])
		_, err := DecodeRecord([]byte(in))
		var de *ValidationError
		if assert.ErrorAs(t, err, &de, "%d: %s", i, in) {
			assert.True(t, de.Has(RuleSyntax) || de.Violations[0].Path != "", in)
		}
	}
	r, err := DecodeRecord(fmt.Appendf(nil, rec, ok[0], ok[1], `"@253402300800s+0ns"`))
	require.NoError(t, err)
	assert.Equal(t, 10000, r.Bundle.Timestamp.Year())
}

// FuzzDecodeRecord: DecodeRecord never panics, reports every problem in a
// *ValidationError, and what it accepts is written in the record form and read
// back as the same record, and written again as the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(`{"actor":"x","clearance":"MODIFY","bundle":` + s + `}`))
	}
	evaluated, err := Evaluate(mkBundle(fact("f"), mkClaim("d", ClaimDecision, TierDelete, 0.1, RecommendExecute)), approverPolicy(), clearance(TierPrivilege))
	require.NoError(f, err)
	for _, rec := range []Record{
		{Actor: "a", Clearance: TierPrivilege, Bundle: evaluated.Bundle},
		{Actor: "\xff", Clearance: TierReadOnly, Approval: &Approval{Approver: "dba", Timestamp: t0, Decision: ApprovalApproved},
			Bundle: mkBundle(mkClaim("\xfe", "", "x", math.Inf(-1), "", ev(math.NaN())))},
	} {
		data, err := rec.MarshalJSON()
		require.NoError(f, err)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRecord(data)
		if err != nil {
			var de *ValidationError
			if !errors.As(err, &de) || len(de.Violations) == 0 || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error without violations: %v", err)
			}
			return
		}
		out, err := r.MarshalJSON()
		require.NoError(t, err)
		back, err := DecodeRecord(out)
		require.NoError(t, err, "%s", out)
		requireSameRecord(t, r, back)
		again, err := back.MarshalJSON()
		require.NoError(t, err)
		require.Equal(t, string(out), string(again))
	})
}
