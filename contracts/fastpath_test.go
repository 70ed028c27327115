// Guarantees checked here: the fast path of a valid document changes
// nothing — every document gets the violations and the decoded value of
// the full path (canon.Decode, the schema library, fromTree), and the
// schemas compiled to shapes accept exactly the documents the schema
// library accepts, with and without SpecOnly: TestFastPathAgreesWithSchema
// (rapid: fixtures with members dropped, added, retyped, and values out of
// range, enum or pattern), FuzzFastPathAgrees; every valid fixture takes
// the fast path: TestValidFixturesTakeTheFastPath.

package contracts

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// tester is what the checks need of a *testing.T, *testing.F's T and a
// *rapid.T.
type tester interface {
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
}

// bothPaths decodes data by decode (the fast path first) and by
// decodeFull alone, and says whether the fast path took it.
func bothPaths(kind Kind, data []byte, cfg *config) (fast, full any, fastVs, fullVs []Violation, fastOK bool) {
	switch kind {
	case KindRunRecord:
		return paths(kind, data, cfg, checkRunRecord)
	case KindRCAReport:
		return paths(kind, data, cfg, checkRCAReport)
	case KindComplianceReport:
		return paths(kind, data, cfg, checkComplianceReport)
	case KindIncidentDossier:
		return paths(kind, data, cfg, checkIncidentDossier)
	case KindPolicyControl:
		return paths(kind, data, cfg, checkPolicyControl)
	case KindPolicyControlLibrary:
		return paths(kind, data, cfg, checkPolicyControlLibrary)
	case KindAnnotation:
		return paths(kind, data, cfg, checkAnnotation)
	}
	panic("unknown kind " + kind)
}

func paths[T any](kind Kind, data []byte, cfg *config, check func(*checker, *T)) (fast, full any, fastVs, fullVs []Violation, fastOK bool) {
	fv, fvs, err := decode(kind, data, cfg, check)
	if err != nil {
		panic(err)
	}
	gv, gvs, err := decodeFull(kind, data, cfg, check)
	if err != nil {
		panic(err)
	}
	_, fastOK = decodeFast(kind, data, cfg, check)
	return fv, gv, fvs, gvs, fastOK
}

// schemaAccepts says whether the schema library accepts data under cfg
// (false for a text canon.Decode refuses).
func schemaAccepts(t tester, kind Kind, data []byte, cfg *config) bool {
	tree, err := canon.Decode(data)
	nodes, _ := shapes()
	if err != nil || len(numbersTooLarge(nodes[kind], tree, "", nil)) > 0 {
		return false // the library would panic on such a number
	}
	vs, err := schemaViolations(kind, tree)
	require.NoError(t, err)
	return !slices.ContainsFunc(vs, func(v Violation) bool { return !cfg.skips(v.Rule) })
}

// agreement counts what the differential checks compared.
type agreement struct {
	docs, schemaValid, schemaInvalid, valid, fast int
}

// agree checks one document both ways, under both configurations.
func agree(t tester, kind Kind, data []byte, n *agreement) {
	for _, cfg := range []*config{newConfig(nil), newConfig([]Option{SpecOnly()})} {
		n.docs++
		want := schemaAccepts(t, kind, data, cfg)
		if got := shapeOK(kind, data, cfg); got != want {
			tree, err := canon.Decode(data)
			var vs []Violation
			if err == nil {
				vs, err = schemaViolations(kind, tree)
			}
			t.Fatalf("%s (spec only %v): shapes accept %v, schema library %v (%v %v):\n%s", kind, cfg.specOnly, got, want, vs, err, data)
		}
		if want {
			n.schemaValid++
		} else {
			n.schemaInvalid++
		}
		fast, full, fastVs, fullVs, fastOK := bothPaths(kind, data, cfg)
		if len(fullVs) == 0 && len(fastVs) == 0 {
			fullVs, fastVs = nil, nil // empty is empty, nil or not
		}
		if !assert.Equal(t, fullVs, fastVs, "%s: violations\n%s", kind, data) ||
			!assert.Equal(t, full, fast, "%s: decoded value\n%s", kind, data) {
			t.FailNow()
		}
		if fastOK {
			n.fast++
			if len(fullVs) > 0 {
				t.Fatalf("%s: the fast path accepts a document the full path refuses: %v\n%s", kind, fullVs, data)
			}
		}
		if len(fullVs) == 0 {
			n.valid++
			if !fastOK && !integerSpelledAsNumber(kind, data) {
				t.Fatalf("%s: a valid document missed the fast path:\n%s", kind, data)
			}
		}
	}
}

// integerSpelledAsNumber reports whether the document's only difference
// for strictjson is an integer member written with a fraction or an
// exponent (a rank of 1.0: valid, but strictjson reads integer members
// from integer literals only) or with more than 15 digits (fromTree reads
// it through its double): the two reasons a valid document takes the
// full path.
func integerSpelledAsNumber(kind Kind, data []byte) bool {
	if _, longInt := readShape(kind, data, newConfig(nil)); longInt {
		return true
	}
	v := reflect.New(kindTypes[kind])
	err := strictjson.Options{AllowUnknown: true}.Unmarshal(data, v.Interface())
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return false
	}
	for _, p := range se.Violations() {
		if p.Rule != violation.RuleType || !strings.HasPrefix(p.Message, "want an integer") {
			return false
		}
	}
	return true
}

var kindTypes = map[Kind]reflect.Type{
	KindRunRecord: reflect.TypeFor[RunRecord](), KindRCAReport: reflect.TypeFor[RCAReport](),
	KindComplianceReport: reflect.TypeFor[ComplianceReport](), KindIncidentDossier: reflect.TypeFor[IncidentDossier](),
	KindPolicyControl: reflect.TypeFor[PolicyControl](), KindPolicyControlLibrary: reflect.TypeFor[[]PolicyControl](),
	KindAnnotation: reflect.TypeFor[Annotation](),
}

func TestValidFixturesTakeTheFastPath(t *testing.T) {
	_, err := shapes()
	require.NoError(t, err, "every schema compiles to shapes")
	for _, f := range loadFixtures(t, "valid") {
		for _, cfg := range []*config{newConfig(nil), newConfig([]Option{SpecOnly()})} {
			_, _, _, _, fastOK := bothPaths(f.kind, f.data, cfg)
			assert.True(t, fastOK, f.path)
		}
	}
	for _, f := range loadFixtures(t, "invalid") {
		_, _, _, _, fastOK := bothPaths(f.kind, f.data, newConfig(nil))
		assert.False(t, fastOK, f.path)
	}
}

// Values the mutations put in a document: every enum value, the edges of
// the patterns, formats, ranges and integer literals.
var mutationValues = func() []any {
	vals := []any{
		nil, true, false, map[string]any{}, []any{}, []any{"x"}, []any{nil}, map[string]any{"a": json.Number("1")},
		"", "x", "é", "1.0.0", "1.4.2", "2.0.0", "0.9.0", "1.0", "01.0.0", "1.0.0-rc.1+build.5", "99999999999999999999.0.0",
		"2026-03-02T10:00:00Z", "2026-03-02T10:00:00.5Z", "2026-03-02T10:00:00+00:00", "2026-03-02T10:00:00-00:00",
		"2026-03-02t10:00:00z", "2026-06-30T23:59:60Z", "2026-02-30T10:00:00Z", "2026-03-02T10:00:00+01:00",
		"2026-03-02T24:00:00Z", "2026-03-02T10:00:00.Z", "2026-03-02 10:00:00Z",
		strings.Repeat("ab", 32), strings.Repeat("AB", 32), strings.Repeat("a", 63),
		"tool:00f067aa0ba902b7", "retrieval:00f067aa0ba902b7:0", "configdiff:" + strings.Repeat("0", 64), "00f067aa0ba902b7",
	}
	for _, lit := range []string{"0", "-0", "1", "-1", "2", "7", "0.5", "1.0", "0.0", "1.5", "1e0", "1e2", "10E-1", "-1e-400",
		"1e-400", "1e-10001", "-1e-99999999", "0e-99999", "1.00000000000000000001", "0.99999999999999999999", "-0.0", "9007199254740993.0", "1e20", "1e300",
		"123456789012345678", "-9223372036854775808", "180", "300000"} {
		vals = append(vals, json.Number(lit))
	}
	for _, e := range []any{
		SeverityCritical, SeverityLow, ControlVerdictPass, ControlVerdictFail, ControlVerdictNotApplicable, ControlVerdictInsufficientEvidence,
		AnnotatorKindLLM, AnnotatorKindHuman, AnnotatorKindCode, RunTypeRCA, RunTypePolicyCompliance, RunTypeIncidentDossier,
		RunStatusSucceeded, RunStatusFailed, RunStatusPartial, RunStatusTerminatedBudget, WritebackStatusPartial,
		ArtifactTypeRCAReport, ArtifactTypeComplianceReport, ArtifactTypeIncidentDossier, PrimaryLabelToolFailure,
		EvidenceKindSpan, EvidenceKindToolIO, EvidenceKindRetrievalChunk, EvidenceKindMessage, EvidenceKindConfigDiff,
		ChangeTypeConfig, ChangeTypeUnknown, PriorityP0, ActionTypeMitigation, OverallVerdictCompliant,
		OverallVerdictNonCompliant, OverallVerdictNeedsReview, "Critical", "P3",
	} {
		vals = append(vals, fmt.Sprint(e))
	}
	return vals
}()

// mutationStrings and mutationNumbers are the strings and the numbers of
// mutationValues.
var mutationStrings, mutationNumbers = func() (strs, nums []any) {
	for _, v := range mutationValues {
		switch v.(type) {
		case string:
			strs = append(strs, v)
		case json.Number:
			nums = append(nums, v)
		}
	}
	return strs, nums
}()

// pointers returns the JSON Pointer of every value of tree, sorted.
func pointers(tree any) []string {
	var out []string
	walk("", tree, func(p string, _ any) { out = append(out, p) })
	slices.Sort(out)
	return out
}

// at returns the value at pointer p.
func at(tree any, p string) any {
	v := tree
	for _, seg := range splitPointer(p) {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case []any:
			var i int
			fmt.Sscan(seg, &i)
			v = x[i]
		}
	}
	return v
}

func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return segs
}

// deepCopy copies a canon.Decode tree.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, c := range x {
			m[k] = deepCopy(c)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, c := range x {
			l[i] = deepCopy(c)
		}
		return l
	}
	return v
}

// mutate applies one drawn change at a drawn place of tree and returns
// the new tree.
func mutate(rt *rapid.T, tree any, names []string) any {
	ps := pointers(tree)
	p := rapid.SampledFrom(ps).Draw(rt, "at")
	segs := splitPointer(p)
	value := func() any {
		switch rapid.IntRange(0, 3).Draw(rt, "source") {
		case 0: // another part of the document
			return deepCopy(at(tree, rapid.SampledFrom(ps).Draw(rt, "copy_of")))
		case 1, 2: // a value of the same JSON type: an edge of its pattern, format, enum or range
			switch at(tree, p).(type) {
			case string:
				return rapid.SampledFrom(mutationStrings).Draw(rt, "string")
			case json.Number:
				return rapid.SampledFrom(mutationNumbers).Draw(rt, "number")
			}
		}
		return deepCopy(rapid.SampledFrom(mutationValues).Draw(rt, "value"))
	}
	op := rapid.IntRange(0, 4).Draw(rt, "op")
	if len(segs) == 0 {
		if op == 0 {
			return value()
		}
		op = 2
	}
	parentP := "/" + strings.Join(segs[:max(len(segs)-1, 0)], "/")
	if len(segs) <= 1 {
		parentP = ""
	}
	if op == 2 || op == 3 { // add a member or an element to the value itself
		switch x := at(tree, p).(type) {
		case map[string]any:
			x[rapid.SampledFrom(names).Draw(rt, "name")] = value()
			return tree
		case []any:
			if len(x) > 0 && op == 3 {
				x = append(x, deepCopy(x[rapid.IntRange(0, len(x)-1).Draw(rt, "elem")]))
			} else {
				x = append(x, value())
			}
			return setAt(tree, p, x)
		}
		op = 1
	}
	if len(segs) == 0 {
		return value()
	}
	last := segs[len(segs)-1]
	switch parent := at(tree, parentP).(type) {
	case map[string]any:
		if op == 0 {
			delete(parent, last)
		} else {
			parent[last] = value()
		}
	case []any:
		var i int
		fmt.Sscan(last, &i)
		if op == 0 {
			return setAt(tree, parentP, slices.Delete(parent, i, i+1))
		}
		parent[i] = value()
	}
	return tree
}

// setAt replaces the value at p.
func setAt(tree any, p string, v any) any {
	segs := splitPointer(p)
	if len(segs) == 0 {
		return v
	}
	last := segs[len(segs)-1]
	parentP := ""
	if len(segs) > 1 {
		parentP = "/" + strings.Join(segs[:len(segs)-1], "/")
	}
	switch parent := at(tree, parentP).(type) {
	case map[string]any:
		parent[last] = v
	case []any:
		var i int
		fmt.Sscan(last, &i)
		parent[i] = v
	}
	return tree
}

// TestFastPathAgreesWithSchema: valid fixtures with one to three drawn
// changes (a member dropped or added, a value replaced by another type, an
// enum value, a pattern's or a format's edge, a number out of range or an
// integer spelled 1.0, another part of the document) are checked by the
// compiled shapes and by the schema library, which must agree, and by
// decode and decodeFull, which must return the same violations and value.
// The changed documents also get their string values edited in place and
// are written indented or compact.
func TestFastPathAgreesWithSchema(t *testing.T) {
	fixtures := loadFixtures(t, "valid")
	var names []string
	for _, f := range fixtures {
		tree, err := canon.Decode(f.data)
		require.NoError(t, err)
		walk("", tree, func(p string, v any) {
			if m, ok := v.(map[string]any); ok {
				for k := range m {
					names = append(names, k)
				}
			}
		})
	}
	slices.Sort(names)
	names = append(slices.Compact(names), "extra", "")
	var n agreement
	rapid.Check(t, func(rt *rapid.T) {
		for _, f := range fixtures {
			tree, err := canon.Decode(f.data)
			require.NoError(rt, err)
			for range rapid.IntRange(1, 3).Draw(rt, "changes") {
				tree = mutate(rt, tree, names)
			}
			var data []byte
			if rapid.Bool().Draw(rt, "indent") {
				data, err = json.MarshalIndent(tree, "", "  ")
			} else {
				data, err = json.Marshal(tree)
			}
			require.NoError(rt, err)
			agree(rt, f.kind, data, &n)
		}
	})
	t.Logf("%d checks: schema valid %d, invalid %d; valid documents %d, of which on the fast path %d",
		n.docs, n.schemaValid, n.schemaInvalid, n.valid, n.fast)
	assert.Greater(t, n.schemaValid, n.docs/20, "too few documents the schema accepts")
	assert.Greater(t, n.schemaInvalid, n.docs/5, "too few documents the schema refuses")
}

// FuzzFastPathAgrees: for any bytes and kind, the compiled shapes accept
// exactly what the schema library accepts, and decode returns what
// decodeFull returns.
func FuzzFastPathAgrees(f *testing.F) {
	for _, dir := range []string{"valid", "invalid"} {
		for _, fx := range loadFixtures(f, dir) {
			f.Add(uint8(slices.Index(allKinds, fx.kind)), fx.data)
		}
	}
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		kind := allKinds[int(k)%len(allKinds)]
		var n agreement
		agree(t, kind, data, &n)
	})
}

// TestNumberBeyondTheSchemaIsRefused: a number whose decimal exponent the
// schema library cannot compare (it panicked on 1e-9999999 and took
// seconds on 1e-999999) is json.decode at its path, by both paths.
func TestNumberBeyondTheSchemaIsRefused(t *testing.T) {
	base := readFixture(t, "valid/run_record/succeeded.json")
	for _, lit := range []string{"1e-10001", "1e-9999999", "-1e-99999999999999999999999"} {
		doc := edit(t, base, "/runtime_ref/temperature", func(any) any { return json.Number(lit) })
		vs, err := Check(KindRunRecord, doc)
		require.NoError(t, err)
		require.Len(t, vs, 1, lit)
		assert.Equal(t, "/runtime_ref/temperature", vs[0].Path)
		assert.Equal(t, rule.Decode, vs[0].Rule)
	}
	doc := edit(t, base, "/runtime_ref/temperature", func(any) any { return json.Number("1e-10000") })
	vs, err := Check(KindRunRecord, doc)
	require.NoError(t, err)
	assert.Empty(t, vs, "a scale of 10000 is compared")
}
