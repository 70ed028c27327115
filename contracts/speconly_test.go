// Guarantees checked here: every rule names its source; SpecOnly leaves
// out exactly the extensions (each extension fixture is valid under it,
// every other fixture reports the same violations) and still checks what
// an extension flagged: TestRuleSources,
// TestSpecOnlyLeavesOutExactlyTheExtensions,
// TestSpecOnlyStillChecksWhatAnExtensionFlagged,
// TestSpecOnlyReportsDefaultMinusExtensions (rapid).

package contracts

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/contracts/rule"
	"pgregory.net/rapid"
)

// TestRuleSources checks the rule table's attributions: every rule names
// its source; an extension is Verity's choice, every other rule comes from
// specification 002 (or is how the document is read).
func TestRuleSources(t *testing.T) {
	for _, r := range rule.All() {
		if r.Extension {
			assert.True(t, strings.HasPrefix(r.Source, "Verity's choice"), "%s: %s", r.Name, r.Source)
			continue
		}
		assert.True(t, strings.HasPrefix(r.Source, "spec, ") || strings.HasPrefix(r.Source, "reading the document: spec, "),
			"%s: %s", r.Name, r.Source)
	}
}

// TestSpecOnlyLeavesOutExactlyTheExtensions runs every fixture with
// SpecOnly: valid fixtures stay valid; an invalid fixture named for an
// extension rule (which TestFixtures shows is reported by default) is
// valid, since its one change breaks only that rule; an invalid fixture
// named for any other rule reports exactly the violations it reports by
// default. Every extension rule has such a fixture.
func TestSpecOnlyLeavesOutExactlyTheExtensions(t *testing.T) {
	for _, f := range loadFixtures(t, "valid") {
		vs, err := Check(f.kind, f.data, SpecOnly())
		require.NoError(t, err)
		assert.Empty(t, vs, f.path)
	}
	covered := map[string]bool{}
	for _, f := range loadFixtures(t, "invalid") {
		t.Run(string(f.kind)+"/"+f.name, func(t *testing.T) {
			strict, err := Check(f.kind, f.data)
			require.NoError(t, err)
			spec, err := Check(f.kind, f.data, SpecOnly())
			require.NoError(t, err)
			if isExtension(f.rule) {
				covered[f.rule] = true
				assert.Equal(t, []string{f.rule}, rulesOf(strict))
				assert.Empty(t, spec)
				return
			}
			assert.NotEmpty(t, spec)
			assert.Equal(t, strict, spec)
		})
	}
	for _, r := range rule.All() {
		if r.Extension {
			assert.True(t, covered[r.Name], "extension %s has no invalid fixture", r.Name)
		}
	}
}

// TestSpecOnlyStillChecksWhatAnExtensionFlagged: leaving an extension out
// must not leave out a specification rule that looks at the same value.
func TestSpecOnlyStillChecksWhatAnExtensionFlagged(t *testing.T) {
	dossier := readFixture(t, "valid/incident_dossier/config_change.json")
	// A diff_ref of the wrong kind whose ref is no canonical id: the
	// kind is an extension, the ref's form is the specification's.
	bad := edit(t, dossier, "/suspected_change/diff_ref", func(v any) any {
		r := v.(map[string]any)
		r["kind"], r["ref"] = "TOOL_IO", "tool:"
		return r
	})
	vs, err := Check(KindIncidentDossier, bad, SpecOnly())
	require.NoError(t, err)
	assert.Equal(t, []string{rule.RefFormat}, rulesOf(vs), "%v", vs)
	vs, err = Check(KindIncidentDossier, bad)
	require.NoError(t, err)
	assert.Equal(t, []string{rule.RefFormat, rule.DiffRefKind}, rulesOf(vs), "%v", vs)

	// A ref of the wrong form for its kind still has to be known.
	rca := edit(t, readFixture(t, "valid/rca_report/tool_failure.json"), "/evidence_refs/0/kind",
		func(any) any { return string(EvidenceKindRetrievalChunk) })
	none := WithResolver(KnownIDs([]string{fxTrace}, []string{fxSpanTool, fxSpanMessage}, nil))
	vs, err = Check(KindRCAReport, rca, none, SpecOnly())
	require.NoError(t, err)
	assert.Equal(t, []string{rule.UnknownArtifact}, rulesOf(vs), "%v", vs)

	// An empty id is still no canonical id.
	vs, err = Check(KindRCAReport, edit(t, readFixture(t, "valid/rca_report/tool_failure.json"), "/evidence_refs/0/ref",
		func(any) any { return "" }), SpecOnly())
	require.NoError(t, err)
	assert.Equal(t, []string{rule.RefFormat}, rulesOf(vs), "%v", vs)

	// RFC 3339 UTC: ±00:00 is UTC, any other offset is not.
	run := readFixture(t, "valid/run_record/succeeded.json")
	for ts, want := range map[string][]string{
		"2026-03-02T10:20:00+00:00": nil,
		"2026-03-02T10:20:00-00:00": nil,
		"2026-03-02T11:20:00+01:00": {"schema.pattern"},
	} {
		vs, err := Check(KindRunRecord, edit(t, run, "/started_at", func(any) any { return ts }), SpecOnly())
		require.NoError(t, err)
		assert.Equal(t, want, rulesOf(vs), "%s: %v", ts, vs)
	}
}

// TestSpecOnlyReportsDefaultMinusExtensions is the guarantee as a property
// over random edits of the fixtures: with SpecOnly no extension is
// reported, every other violation of the default is still reported, and
// anything reported only with SpecOnly lies at or under a value where the
// default reported an extension (which hid it there).
func TestSpecOnlyReportsDefaultMinusExtensions(t *testing.T) {
	fixtures := append(loadFixtures(t, "valid"), loadFixtures(t, "invalid")...)
	values := []any{nil, "", "x", "unknown", "fail", "insufficient_evidence", "compliant", "CONFIG_DIFF",
		"2026-03-02T10:20:00+00:00", "2026-03-02T10:20:00-05:00", "2026-03-02T09:00:00Z", "ABC123",
		"tool:" + fxSpanTool, fxSpanTool, "configdiff:" + fxDiff, -1, 0, 0.5, 2, []any{}, []any{"x"},
		map[string]any{}, "1.1.0"}
	fromDefault := func(v Violation) bool {
		if isExtension(v.Rule) {
			return true
		}
		// An annotation reports its explanation's violations, extensions
		// among them, under its own rule.
		if v.Rule == rule.Explanation {
			for _, r := range rule.All() {
				if r.Extension && strings.Contains(v.Message, ": "+r.Name+": ") {
					return true
				}
			}
		}
		return false
	}
	rapid.Check(t, func(rt *rapid.T) {
		f := rapid.SampledFrom(fixtures).Draw(rt, "fixture")
		doc := f.data
		if f.rule != "json" && !strings.HasPrefix(f.rule, "json.") {
			for range rapid.IntRange(0, 3).Draw(rt, "edits") {
				var paths []string
				walk("", generic(t, doc), func(p string, _ any) {
					if p != "" {
						paths = append(paths, p)
					}
				})
				if len(paths) == 0 {
					break
				}
				slices.Sort(paths)
				p := rapid.SampledFrom(paths).Draw(rt, "path")
				v := rapid.SampledFrom(values).Draw(rt, "value")
				doc = edit(t, doc, p, func(any) any { return v })
			}
		}
		strict, err := Check(f.kind, doc)
		require.NoError(rt, err)
		spec, err := Check(f.kind, doc, SpecOnly())
		require.NoError(rt, err)
		var hidden []string
		for _, v := range strict {
			if fromDefault(v) {
				hidden = append(hidden, v.Path)
				continue
			}
			assert.Contains(rt, spec, v, "a non-extension violation is left out")
		}
		for _, v := range spec {
			assert.False(rt, isExtension(v.Rule), "SpecOnly reports extension %v", v)
			if slices.Contains(strict, v) {
				continue
			}
			assert.True(rt, slices.ContainsFunc(hidden, func(h string) bool { return underOrAt(v.Path, h) }),
				"%v is reported only with SpecOnly, under no extension violation of the default %v", v, strict)
		}
	})
}
