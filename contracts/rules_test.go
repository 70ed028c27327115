// Guarantees checked here:
//
//   - Every named rule has a valid and an invalid case: TestRuleTable.
//   - Timeline order is by instant, not by string: TestTimelineSortedByInstant.
//   - The overall verdict follows the reference implementation's
//     derivation: TestOverallVerdictRule.
//   - Violations are complete, sorted and deterministic:
//     TestViolationsAreSortedAndDeterministic, TestSortViolationsOrder,
//     TestConcurrentValidation.
//   - A major version mismatch is rejected, a newer minor accepted:
//     TestMajorVersionMismatchIsAClearError,
//     TestMajorVersionBeyondUint64IsAMismatch (and versioning's
//     TestCompatibilityMajorOnly, TestVersioningRules).
//   - No schema outside the embedded set is loaded:
//     TestSchemaRefusesExternalRefs.

package contracts

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/contracts/ids"
	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/violation"
	"pgregory.net/rapid"
)

// knownIDsOf collects every trace, span and artifact id a document names.
func knownIDsOf(t testing.TB, data []byte) (traces, spans, artifacts []string) {
	walk("", generic(t, data), func(p string, v any) {
		s, ok := v.(string)
		if !ok {
			return
		}
		path := p
		last := path[strings.LastIndexByte(path, '/')+1:]
		parent := path[:max(strings.LastIndexByte(path, '/'), 0)]
		switch {
		case last == "trace_id" || strings.HasSuffix(parent, "/trace_ids"):
			traces = append(traces, s)
		case last == "span_id" || last == "target_span_id" || strings.HasSuffix(parent, "/span_ids"):
			spans = append(spans, s)
		case last == "ref":
			// a span-form ref is the EvidenceRef's span_id, asked about once
			if id, err := ids.Parse(s); err == nil && id.Form != ids.FormSpan {
				artifacts = append(artifacts, s)
			}
		case strings.HasSuffix(parent, "/artifact_ids"):
			if id, err := ids.Parse(s); err == nil && id.Form == ids.FormSpan {
				spans = append(spans, s)
			} else {
				artifacts = append(artifacts, s)
			}
		}
	})
	return traces, spans, artifacts
}

func without(idList []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(idList), func(s string) bool { return s == drop })
}

// TestRuleTable checks, for every named rule, a valid document and an
// invalid one. Most rules have invalid fixture files named after them (run
// by TestFixtures); the rules that need an option are exercised here.
func TestRuleTable(t *testing.T) {
	covered := map[string]bool{}
	for _, f := range loadFixtures(t, "invalid") {
		covered[f.rule] = true
	}
	dossier := readFixture(t, "valid/incident_dossier/config_change.json")
	traces, spans, artifacts := knownIDsOf(t, dossier)
	require.NotEmpty(t, traces)
	require.NotEmpty(t, spans)
	require.NotEmpty(t, artifacts)
	all := WithResolver(KnownIDs(traces, spans, artifacts))
	compliance := readFixture(t, "valid/compliance_report/three_controls.json")

	cases := []struct {
		rule    string
		kind    Kind
		doc     []byte
		valid   []Option
		invalid []Option
	}{
		{rule.UnknownTrace, KindIncidentDossier, dossier, []Option{all},
			[]Option{WithResolver(KnownIDs(without(traces, "0af7651916cd43dd8448eb211c80319c"), spans, artifacts))}},
		{rule.UnknownSpan, KindIncidentDossier, dossier, []Option{all},
			[]Option{WithResolver(KnownIDs(traces, without(spans, "b7ad6b7169203331"), artifacts))}},
		{rule.UnknownArtifact, KindIncidentDossier, dossier, []Option{all},
			[]Option{WithResolver(KnownIDs(traces, spans, without(artifacts, "tool:00f067aa0ba902b7")))}},
		{rule.ControlMissing, KindComplianceReport, compliance,
			[]Option{WithApplicableControls("CTRL-001", "CTRL-002", "CTRL-003")},
			[]Option{WithApplicableControls("CTRL-001", "CTRL-002", "CTRL-003", "CTRL-004")}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			covered[c.rule] = true
			vs, err := Check(c.kind, c.doc, c.valid...)
			require.NoError(t, err)
			assert.Empty(t, vs)
			vs, err = Check(c.kind, c.doc, c.invalid...)
			require.NoError(t, err)
			require.NotEmpty(t, vs)
			assert.Equal(t, []string{c.rule}, rulesOf(vs), "%v", vs)
			// These are rules of the specification: SpecOnly keeps them.
			spec, err := Check(c.kind, c.doc, append(c.invalid, SpecOnly())...)
			require.NoError(t, err)
			assert.Equal(t, vs, spec)
		})
	}
	for _, r := range rule.All() {
		assert.True(t, covered[r.Name], "rule %s has no invalid fixture or table case", r.Name)
	}
}

func TestResolverSeesEveryPointer(t *testing.T) {
	// Every id of every valid fixture is asked about: with an empty
	// resolver, each one is reported. (An annotation's explanation is
	// reported under annotation.explanation_json; walk does not enter
	// the explanation_json string.)
	for _, f := range loadFixtures(t, "valid") {
		traces, spans, artifacts := knownIDsOf(t, f.data)
		vs, err := Check(f.kind, f.data, WithResolver(KnownIDs(nil, nil, nil)))
		require.NoError(t, err)
		count := func(rule string) int {
			n := 0
			for _, v := range vs {
				if v.Rule == rule {
					n++
				}
			}
			return n
		}
		assert.Equal(t, len(traces), count(rule.UnknownTrace), f.path)
		assert.Equal(t, len(spans), count(rule.UnknownSpan), f.path)
		assert.Equal(t, len(artifacts), count(rule.UnknownArtifact), f.path)
	}
}

func TestMajorVersionMismatchIsAClearError(t *testing.T) {
	doc := edit(t, readFixture(t, "valid/rca_report/tool_failure.json"), "/schema_version", func(any) any { return "2.0.0" })
	err := Validate(KindRCAReport, doc)
	require.ErrorIs(t, err, ErrMajorVersion)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "major version 2, this library reads major version 1")

	// A newer minor (with a field this library does not know) and a newer
	// patch are accepted.
	for _, v := range []string{"1.1.0", "1.7.3", "1.0.1", "1.0.0-rc.1"} {
		doc := edit(t, readFixture(t, "valid/rca_report/tool_failure.json"), "/schema_version", func(any) any { return v })
		doc = edit(t, doc, "/added_in_a_later_minor", func(any) any { return "optional" })
		assert.NoError(t, Validate(KindRCAReport, doc), v)
	}
}

func TestUnknownKind(t *testing.T) {
	err := Validate("run", []byte(`{}`))
	assert.ErrorIs(t, err, ErrUnknownKind)
	_, err = Check("", nil)
	assert.ErrorIs(t, err, ErrUnknownKind)
	for _, k := range Kinds() {
		got, err := ParseKind(string(k))
		require.NoError(t, err)
		assert.Equal(t, k, got)
		b, err := Schema(string(k))
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(b, &doc))
		assert.Equal(t, k.SchemaID(), doc["$id"])
		assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", doc["$schema"])
	}
}

// TestSchemaRefusesExternalRefs: the compiler knows only the embedded
// schemas; a $ref to anything else (a remote URL, a file) is refused
// instead of fetched or read.
func TestSchemaRefusesExternalRefs(t *testing.T) {
	for _, ref := range []string{
		"https://example.com/evil.schema.json",
		"file:///etc/passwd",
		"http://127.0.0.1:1/x.json",
		"https://github.com/verity-go/verity/contracts/schemas/not_embedded.schema.json",
	} {
		c, err := newCompiler(map[string]string{
			"https://github.com/verity-go/verity/contracts/schemas/test.schema.json": `{"$schema":"https://json-schema.org/draft/2020-12/schema","$ref":"` + ref + `"}`,
		})
		require.NoError(t, err)
		_, err = c.Compile("https://github.com/verity-go/verity/contracts/schemas/test.schema.json")
		require.Error(t, err, ref)
		assert.ErrorIs(t, err, ErrRefused, ref)
	}
	// Embedded $ids resolve.
	c, err := newCompiler(nil)
	require.NoError(t, err)
	_, err = c.Compile(KindRunRecord.SchemaID())
	assert.NoError(t, err)
	_, err = c.Compile("file:///etc/passwd")
	assert.ErrorIs(t, err, ErrRefused)
}

func TestViolationsAreSortedAndDeterministic(t *testing.T) {
	base := readFixture(t, "valid/compliance_report/ten_controls.json")
	doc := base
	for _, i := range []string{"9", "1", "10", "2"} {
		idx := i
		if idx == "10" {
			idx = "0"
		}
		doc = edit(t, doc, "/controls_evaluated/"+idx+"/severity", func(any) any { return "urgent" })
		doc = edit(t, doc, "/controls_evaluated/"+idx+"/confidence", func(any) any { return 7 })
	}
	doc = edit(t, doc, "/overall_verdict", func(any) any { return "compliant" })
	first, err := Check(KindComplianceReport, doc)
	require.NoError(t, err)
	for range 20 {
		again, err := Check(KindComplianceReport, doc)
		require.NoError(t, err)
		require.Equal(t, first, again)
	}
	var paths []string
	for _, v := range first {
		paths = append(paths, v.Path)
	}
	assert.Equal(t, []string{
		"/controls_evaluated/0/confidence", "/controls_evaluated/0/severity",
		"/controls_evaluated/1/confidence", "/controls_evaluated/1/severity",
		"/controls_evaluated/2/confidence", "/controls_evaluated/2/severity",
		"/controls_evaluated/9/confidence", "/controls_evaluated/9/severity",
		"/overall_verdict",
	}, paths)
	assert.True(t, slices.IsSortedFunc(first, violation.Compare))
}

func TestSortViolationsOrder(t *testing.T) {
	vs := sortViolations([]Violation{
		{Path: "/a/10", Rule: "r"}, {Path: "/a/2", Rule: "r"}, {Path: "", Rule: "z"},
		{Path: "/a", Rule: "b"}, {Path: "/a", Rule: "a"}, {Path: "/a/2", Rule: "r"}, {Path: "/a/x", Rule: "r"},
	})
	assert.Equal(t, []Violation{
		{Path: "", Rule: "z"}, {Path: "/a", Rule: "a"}, {Path: "/a", Rule: "b"},
		{Path: "/a/2", Rule: "r"}, {Path: "/a/10", Rule: "r"}, {Path: "/a/x", Rule: "r"},
	}, vs)
}

// TestTimelineSortedByInstant: the rule fires exactly when some event is
// earlier, as an instant, than the one before it, whatever the spelling
// (fractional digits change the string order).
func TestTimelineSortedByInstant(t *testing.T) {
	base := readFixture(t, "valid/incident_dossier/twenty_events.json")
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "n")
		var times []time.Time
		var doc any
		require.NoError(t, json.Unmarshal(base, &doc))
		events := doc.(map[string]any)["timeline"].([]any)[:n]
		for i := range n {
			ts := t0.Add(time.Duration(rapid.IntRange(0, 3000).Draw(t, "ms")) * time.Millisecond)
			times = append(times, ts)
			layout := rapid.SampledFrom([]string{time.RFC3339Nano, "2006-01-02T15:04:05.000000Z07:00", "2006-01-02T15:04:05.000Z07:00"}).Draw(t, "layout")
			events[i].(map[string]any)["timestamp"] = ts.Format(layout)
		}
		doc.(map[string]any)["timeline"] = events
		b, err := json.Marshal(doc)
		require.NoError(t, err)
		vs, err := Check(KindIncidentDossier, b)
		require.NoError(t, err)
		want := 0
		for i := 1; i < n; i++ {
			if times[i].Before(times[i-1]) {
				want++
			}
		}
		got := 0
		for _, v := range vs {
			if v.Rule == rule.TimelineSorted {
				got++
			} else {
				t.Fatalf("unexpected violation %v", v)
			}
		}
		if got != want {
			t.Fatalf("%d timeline violations, want %d (%v)", got, want, times)
		}
	})
}

// TestOverallVerdictRule compares OverallVerdict with a direct reading of
// the reference implementation's derivation (its compliance engine's
// if/elif chain) over random findings.
func TestOverallVerdictRule(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		pfs := rapid.SliceOfN(rapid.SampledFrom([]ControlVerdict{ControlVerdictPass, ControlVerdictFail, ControlVerdictNotApplicable, ControlVerdictInsufficientEvidence}), 0, 8).Draw(t, "pfs")
		var fs []ControlFinding
		count := map[ControlVerdict]int{}
		for _, p := range pfs {
			fs = append(fs, ControlFinding{PassFail: p})
			count[p]++
		}
		var want OverallVerdict
		if count[ControlVerdictFail] > 0 {
			want = OverallVerdictNonCompliant
		} else if count[ControlVerdictInsufficientEvidence] > 0 || count[ControlVerdictNotApplicable] == len(pfs) {
			want = OverallVerdictNeedsReview
		} else {
			want = OverallVerdictCompliant
		}
		got, ok := DeriveOverallVerdict(fs)
		if !ok || got != want {
			t.Fatalf("OverallVerdict(%v) = %v, %v; want %v", pfs, got, ok, want)
		}
	})
	_, ok := DeriveOverallVerdict([]ControlFinding{{PassFail: "maybe"}})
	assert.False(t, ok)
}

func TestUsageWithinBudgetExemptions(t *testing.T) {
	run := sampleRun()
	run.Runtime.Usage.ToolCalls = 500
	run.Runtime.Usage.TokensIn = 400000
	_, err := run.Succeeded("a.json")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []string{rule.RunUsageWithinBudget}, rulesOf(ve.Violations))
	assert.Len(t, ve.Violations, 2)
	_, err = run.Failed(RunError{Code: "E", Message: "m", Stage: "s"})
	require.ErrorAs(t, err, &ve)
	rec, err := run.TerminatedBudget()
	require.NoError(t, err)
	assert.Equal(t, RunStatusTerminatedBudget, rec.Status)
	rec, err = run.Partial("partial.json")
	require.NoError(t, err)
	assert.Equal(t, ArtifactTypeRCAReport, *rec.OutputRef.ArtifactType)
	// No token limit, a cost limit.
	run = sampleRun()
	run.Runtime.Budget.MaxTokensTotal = nil
	run.Runtime.Usage.TokensIn = 1 << 40
	limit := 0.01
	run.Runtime.Budget.MaxCostUSD = &limit
	_, err = run.Succeeded("a.json")
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []Violation{{Path: "/runtime_ref/usage/cost_usd", Rule: rule.RunUsageWithinBudget, Message: ve.Violations[0].Message}}, ve.Violations)
}

func TestDefaultRunBudget(t *testing.T) {
	b := DefaultRunBudget()
	assert.Equal(t, int64(40), b.MaxIterations)
	assert.Equal(t, int64(2), b.MaxDepth)
	assert.Equal(t, int64(200), b.MaxToolCalls)
	assert.Equal(t, int64(80), b.MaxSubcalls)
	require.NotNil(t, b.MaxTokensTotal)
	assert.Equal(t, int64(300000), *b.MaxTokensTotal)
	assert.Nil(t, b.MaxCostUSD)
	assert.Nil(t, b.SamplingSeed)
	assert.Equal(t, int64(180), b.MaxWallTimeSec)
	// Each call returns its own value.
	*b.MaxTokensTotal = 1
	assert.Equal(t, int64(300000), *DefaultRunBudget().MaxTokensTotal)
	j, err := Marshal(DefaultRunBudget())
	require.NoError(t, err)
	assert.JSONEq(t, `{"max_iterations":40,"max_depth":2,"max_tool_calls":200,"max_subcalls":80,"max_tokens_total":300000,"max_cost_usd":null,"sampling_seed":null,"max_wall_time_sec":180}`, string(j))
}

func TestConcurrentValidation(t *testing.T) {
	fixtures := append(loadFixtures(t, "valid"), loadFixtures(t, "invalid")...)
	want := make([][]Violation, len(fixtures))
	for i, f := range fixtures {
		want[i], _ = Check(f.kind, f.data)
	}
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range fixtures {
				f := fixtures[(i+w)%len(fixtures)]
				got, _ := Check(f.kind, f.data)
				assert.Equal(t, want[(i+w)%len(fixtures)], got)
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// TestMajorVersionBeyondUint64IsAMismatch: the schema's semver pattern
// accepts components of any size, so a major version too large for
// versioning.Parse must still be rejected as another major, not let through.
func TestMajorVersionBeyondUint64IsAMismatch(t *testing.T) {
	for _, v := range []string{"99999999999999999999.0.0", "18446744073709551616.0.0-rc.1"} {
		doc := edit(t, readFixture(t, "valid/rca_report/tool_failure.json"), "/schema_version", func(any) any { return v })
		err := Validate(KindRCAReport, doc)
		require.ErrorIs(t, err, ErrMajorVersion, v)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, "/schema_version", ve.Violations[0].Path)
	}
	// A major of 1 with a minor too large for uint64 is still major 1.
	doc := edit(t, readFixture(t, "valid/rca_report/tool_failure.json"), "/schema_version", func(any) any { return "1.99999999999999999999.0" })
	assert.NoError(t, Validate(KindRCAReport, doc))
}
