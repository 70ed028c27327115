// The acceptance checks of specification 002 (Formal Contracts) and the
// tests that carry them out:
//
//	1 every contract fixture parses and validates   TestAcceptance1ContractFixturesParseAndValidate
//	2 invalid enum values fail                      TestAcceptance2InvalidEnumValuesFail
//	  (and the zero value of every enum fails)       TestEnumZeroValuesFailClosed
//	3 missing required evidence fields fail         TestAcceptance3MissingRequiredEvidenceFieldsFail
//	4 a wrong id format fails                       TestAcceptance4WrongIDFormatFails
//	5 a RunRecord is required on failure            TestAcceptance5RunRecordRequiredOnFailure
//
// The package's other guarantees are listed at the top of the test file
// that checks them: fixtures_test.go, rules_test.go, speconly_test.go,
// build_test.go, fuzz_test.go, errors_test.go, and ids/ids_test.go and
// versioning/versioning_test.go for the sub-packages.

package contracts

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/violation"
)

// decodeAny runs the typed decoder of kind and returns the value and error.
func decodeAny(kind Kind, data []byte, opts ...Option) (any, error) {
	switch kind {
	case KindRunRecord:
		return DecodeRunRecord(data, opts...)
	case KindRCAReport:
		return DecodeRCAReport(data, opts...)
	case KindComplianceReport:
		return DecodeComplianceReport(data, opts...)
	case KindIncidentDossier:
		return DecodeIncidentDossier(data, opts...)
	case KindPolicyControl:
		return DecodePolicyControl(data, opts...)
	case KindPolicyControlLibrary:
		return DecodePolicyControlLibrary(data, opts...)
	case KindAnnotation:
		return DecodeAnnotation(data, opts...)
	}
	panic("unknown kind " + kind)
}

// walk calls f for every value of a decoded JSON document with its string.
func walk(p string, v any, f func(p string, v any)) {
	f(p, v)
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			walk(violation.Join(p, k), c, f)
		}
	case []any:
		for i, c := range x {
			walk(violation.Index(p, i), c, f)
		}
	}
}

// edit returns a copy of doc with the value at p replaced by fn(old); fn
// returning deleteMarker removes the member.
var deleteMarker = &struct{}{}

func edit(t testing.TB, data []byte, p string, fn func(any) any) []byte {
	t.Helper()
	var doc any
	require.NoError(t, json.Unmarshal(data, &doc))
	segs := strings.Split(p, "/")[1:]
	var rec func(v any, segs []string) any
	rec = func(v any, segs []string) any {
		if len(segs) == 0 {
			return fn(v)
		}
		s := strings.ReplaceAll(strings.ReplaceAll(segs[0], "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			nv := rec(x[s], segs[1:])
			if nv == deleteMarker {
				delete(x, s)
			} else {
				x[s] = nv
			}
		case []any:
			var i int
			require.NoError(t, json.Unmarshal([]byte(s), &i))
			x[i] = rec(x[i], segs[1:])
		}
		return v
	}
	out, err := json.Marshal(rec(doc, segs))
	require.NoError(t, err)
	return out
}

func generic(t testing.TB, data []byte) any {
	t.Helper()
	var doc any
	require.NoError(t, json.Unmarshal(data, &doc))
	return doc
}

// TestAcceptance1ContractFixturesParseAndValidate: every valid fixture
// decodes into its Go type without violation, and writing the value back
// gives a document that validates again.
func TestAcceptance1ContractFixturesParseAndValidate(t *testing.T) {
	fixtures := loadFixtures(t, "valid")
	seen := map[Kind]bool{}
	for _, f := range fixtures {
		seen[f.kind] = true
		v, err := decodeAny(f.kind, f.data)
		require.NoError(t, err, f.path)
		again, err := Marshal(v)
		require.NoError(t, err)
		assert.NoError(t, Validate(f.kind, again), f.path)
	}
	for _, k := range Kinds() {
		assert.True(t, seen[k], "no valid fixture for %s", k)
	}
}

var enumKeys = []string{"primary_label", "kind", "status", "run_type", "engine_type", "pass_fail", "severity",
	"annotator_kind", "change_type", "priority", "type", "overall_verdict", "writeback_status", "artifact_type"}

// TestAcceptance2InvalidEnumValuesFail replaces, one at a time, every value
// of every closed vocabulary in every valid fixture by a near miss, and
// expects a schema.enum violation at that place.
func TestAcceptance2InvalidEnumValuesFail(t *testing.T) {
	n := 0
	for _, f := range loadFixtures(t, "valid") {
		var targets []string
		walk("", generic(t, f.data), func(p string, v any) {
			s, ok := v.(string)
			last := string(p[strings.LastIndexByte(p, '/')+1:])
			inList := strings.HasSuffix(p, "/annotator_kinds/"+last)
			if ok && s != "" && (slices.Contains(enumKeys, last) || inList) {
				targets = append(targets, p)
			}
		})
		for _, p := range targets {
			for _, bad := range []string{"x", "BOGUS"} {
				doc := edit(t, f.data, p, func(v any) any { return v.(string) + bad })
				vs, err := Check(f.kind, doc)
				require.NoError(t, err)
				assert.True(t, slices.ContainsFunc(vs, func(v Violation) bool { return v.Path == p && v.Rule == "schema.enum" }),
					"%s %s: %v", f.path, p, vs)
				n++
			}
		}
	}
	assert.Greater(t, n, 100)
}

var evidenceKeys = []string{"evidence_refs", "evidence", "excerpt_hash", "diff_ref", "span_ids", "artifact_ids",
	"trace_ids", "excerpt_hashes", "missing_evidence", "required_evidence", "representative_traces", "ref"}

// TestAcceptance3MissingRequiredEvidenceFieldsFail deletes, one at a time,
// every evidence field of every valid fixture and expects a violation at or
// under the deleted field.
func TestAcceptance3MissingRequiredEvidenceFieldsFail(t *testing.T) {
	n := 0
	for _, f := range loadFixtures(t, "valid") {
		var targets []string
		walk("", generic(t, f.data), func(p string, v any) {
			last := string(p[strings.LastIndexByte(p, '/')+1:])
			if slices.Contains(evidenceKeys, last) {
				targets = append(targets, p)
			}
		})
		for _, p := range targets {
			doc := edit(t, f.data, p, func(any) any { return deleteMarker })
			vs, err := Check(f.kind, doc)
			require.NoError(t, err)
			require.NotEmpty(t, vs, "%s without %s", f.path, p)
			assert.True(t, slices.ContainsFunc(vs, func(v Violation) bool { return underOrAt(v.Path, p) }),
				"%s without %s: %v", f.path, p, vs)
			n++
		}
	}
	assert.Greater(t, n, 50)
	// Emptying the lists the rules need non-empty fails as well.
	for _, c := range []struct {
		kind Kind
		file string
		p    string
		rule string
	}{
		{KindRCAReport, "valid/rca_report/tool_failure.json", "/evidence_refs", rule.RCAEvidenceNonEmpty},
		{KindIncidentDossier, "valid/incident_dossier/config_change.json", "/representative_traces", rule.RepresentativeTraces},
		{KindPolicyControl, "valid/policy_control/pii.json", "/required_evidence", rule.RequiredEvidence},
	} {
		doc := edit(t, readFixture(t, c.file), c.p, func(any) any { return []any{} })
		vs, err := Check(c.kind, doc)
		require.NoError(t, err)
		assert.Equal(t, []Violation{{Path: string(c.p), Rule: c.rule, Message: vs[0].Message}}, vs)
	}
}

// TestAcceptance4WrongIDFormatFails puts malformed ids into every ref and
// artifact id of every valid fixture.
func TestAcceptance4WrongIDFormatFails(t *testing.T) {
	bad := []string{"", "tool:", "tool:a:b", "retrieval:s1:01:doc", "retrieval:s1:x:doc", "retrieval:s1:1",
		"retrieval:s1:1:doc:chunk=", "configdiff:abc", "configdiff:" + strings.Repeat("A", 64),
		"compliance:c1:" + strings.Repeat("0", 63), "compliance::" + strings.Repeat("0", 64), "http://x", "tool:a\x00"}
	n := 0
	for _, f := range loadFixtures(t, "valid") {
		var targets []string
		walk("", generic(t, f.data), func(p string, v any) {
			s := p
			if strings.HasSuffix(s, "/ref") || strings.Contains(s, "/artifact_ids/") {
				targets = append(targets, p)
			}
		})
		for _, p := range targets {
			for _, id := range bad {
				doc := edit(t, f.data, p, func(any) any { return id })
				vs, err := Check(f.kind, doc)
				require.NoError(t, err)
				assert.True(t, slices.ContainsFunc(vs, func(v Violation) bool {
					return v.Path == p && (v.Rule == rule.RefFormat || v.Rule == rule.ArtifactFormat || v.Rule == rule.RefKind || v.Rule == rule.RefSpan || v.Rule == rule.IDNonEmpty)
				}), "%s %s=%q: %v", f.path, p, id, vs)
				// The specification's own rules catch every one of them.
				vs, err = Check(f.kind, doc, SpecOnly())
				require.NoError(t, err)
				assert.True(t, slices.ContainsFunc(vs, func(v Violation) bool {
					return v.Path == p && (v.Rule == rule.RefFormat || v.Rule == rule.ArtifactFormat)
				}), "SpecOnly: %s %s=%q: %v", f.path, p, id, vs)
				n++
			}
		}
	}
	assert.Greater(t, n, 100)
}

// TestAcceptance5RunRecordRequiredOnFailure: a failed run must carry error,
// a succeeded run its artifact path; the outcome builders enforce the same.
func TestAcceptance5RunRecordRequiredOnFailure(t *testing.T) {
	failed := readFixture(t, "valid/run_record/failed.json")
	require.NoError(t, Validate(KindRunRecord, failed))
	for _, mut := range []func(any) any{
		func(any) any { return deleteMarker },
		func(any) any { return nil },
	} {
		vs, err := Check(KindRunRecord, edit(t, failed, "/error", mut))
		require.NoError(t, err)
		assert.Equal(t, []string{rule.RunErrorOnFailure}, rulesOf(vs))
	}
	// An incomplete error object is a shape violation.
	vs, err := Check(KindRunRecord, edit(t, failed, "/error/code", func(any) any { return deleteMarker }))
	require.NoError(t, err)
	assert.Equal(t, []Violation{{Path: "/error/code", Rule: "schema.required", Message: `missing required property "code"`}}, vs)

	succeeded := readFixture(t, "valid/run_record/succeeded.json")
	vs, err = Check(KindRunRecord, edit(t, succeeded, "/output_ref/artifact_path", func(any) any { return nil }))
	require.NoError(t, err)
	assert.Equal(t, []string{rule.RunArtifactOnSuccess}, rulesOf(vs))
	// error is not needed by the other statuses.
	assert.NoError(t, Validate(KindRunRecord, edit(t, succeeded, "/error", func(any) any { return nil })))

	run := sampleRun()
	rec, err := run.Failed(RunError{Code: "E_TIMEOUT", Message: "timed out", Stage: "collect", Retryable: true})
	require.NoError(t, err)
	require.NotNil(t, rec.Error)
	_, err = run.Failed(RunError{}) // an error needs a code
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "/error/code", ve.Violations[0].Path)
	_, err = run.Succeeded("")
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []string{rule.RunArtifactOnSuccess}, rulesOf(ve.Violations))
}

// TestEnumZeroValuesFailClosed: the zero value of every closed vocabulary,
// "", is no member of it. In a document every enum value set to "" is a
// schema.enum violation at that place; in Go a zero ControlVerdict gives no
// overall verdict, a zero Kind, RunType or EvidenceKind names no contract,
// engine or id form.
func TestEnumZeroValuesFailClosed(t *testing.T) {
	n := 0
	for _, f := range loadFixtures(t, "valid") {
		var targets []string
		walk("", generic(t, f.data), func(p string, v any) {
			s, ok := v.(string)
			last := p[strings.LastIndexByte(p, '/')+1:]
			if ok && s != "" && (slices.Contains(enumKeys, last) || strings.HasSuffix(p, "/annotator_kinds/"+last)) {
				targets = append(targets, p)
			}
		})
		for _, p := range targets {
			doc := edit(t, f.data, p, func(any) any { return "" })
			vs, err := Check(f.kind, doc)
			require.NoError(t, err)
			assert.True(t, slices.ContainsFunc(vs, func(v Violation) bool { return v.Path == p && v.Rule == "schema.enum" }),
				"%s %s: %v", f.path, p, vs)
			n++
		}
	}
	assert.Greater(t, n, 50)

	_, ok := DeriveOverallVerdict([]ControlFinding{{ControlID: "c"}})
	assert.False(t, ok, "a zero ControlVerdict derives no overall verdict")
	_, err := ParseKind("")
	assert.ErrorIs(t, err, ErrUnknownKind)
	_, err = Check("", []byte(`{}`))
	assert.ErrorIs(t, err, ErrUnknownKind)
	_, ok = KindForEngine("")
	assert.False(t, ok)
	_, ok = formForKind("")
	assert.False(t, ok)
}
