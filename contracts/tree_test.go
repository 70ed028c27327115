// Guarantee checked here: reading the typed value from canon.Decode's tree
// gives what encoding/json gives from the document's canonical text, for
// every fixture (TestTreeDecodingMatchesEncodingJSON), and a value that
// does not fit is located at its own path (TestTreeDecodingLocatesFailure).

package contracts

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/verity-go/verity/contracts/rule"
	"github.com/verity-go/verity/internal/canon"
)

func TestTreeDecodingMatchesEncodingJSON(t *testing.T) {
	types := map[Kind]reflect.Type{
		KindRunRecord: reflect.TypeFor[RunRecord](), KindRCAReport: reflect.TypeFor[RCAReport](),
		KindComplianceReport: reflect.TypeFor[ComplianceReport](), KindIncidentDossier: reflect.TypeFor[IncidentDossier](),
		KindPolicyControl: reflect.TypeFor[PolicyControl](), KindPolicyControlLibrary: reflect.TypeFor[[]PolicyControl](),
		KindAnnotation: reflect.TypeFor[Annotation](),
	}
	n := 0
	for _, dir := range []string{"valid", "invalid"} {
		for _, f := range loadFixtures(t, dir) {
			canonical, err := canon.Transform(f.data)
			if err != nil {
				continue // json.syntax and json.duplicate_key fixtures
			}
			tree, err := canon.Decode(f.data)
			require.NoError(t, err)
			want := reflect.New(types[f.kind])
			jsonErr := json.Unmarshal(canonical, want.Interface())
			got := reflect.New(types[f.kind])
			var d treeDecoder
			d.value(tree, got.Elem())
			assert.Equal(t, jsonErr == nil, d.first == nil, "%s: encoding/json %v, tree %v", f.path, jsonErr, d.first)
			if jsonErr == nil {
				assert.Equal(t, want.Interface(), got.Interface(), f.path)
				n++
			}
		}
	}
	assert.Greater(t, n, 80)
}

func TestTreeDecodingLocatesFailure(t *testing.T) {
	var h []Hypothesis
	tree, err := canon.Decode([]byte(`[{"rank":1},{"rank":1.5,"statement":7}]`))
	require.NoError(t, err)
	v := fromTree(tree, &h)
	require.NotNil(t, v)
	assert.Equal(t, "/1/rank", v.Path)
	assert.Equal(t, rule.Decode, v.Rule)
	assert.Equal(t, int64(1), h[0].Rank)

	var ev TimelineEvent
	tree, err = canon.Decode([]byte(`{"timestamp":"2026-06-30T23:59:60Z"}`))
	require.NoError(t, err)
	v = fromTree(tree, &ev)
	require.NotNil(t, v)
	assert.Equal(t, "/timestamp", v.Path)
}

// TestIntegersReadAsTheirValue: an integer field reads a number by its
// value, as it reads in canonical JSON — 1.0, 1e0 and 10E-1 are the rank 1
// — and a number that is no integer is still json.decode.
func TestIntegersReadAsTheirValue(t *testing.T) {
	base := readFixture(t, "valid/incident_dossier/config_change.json")
	for _, lit := range []string{"1.0", "1e0", "10E-1", "0.1e1"} {
		doc := edit(t, base, "/hypotheses/0/rank", func(any) any { return json.Number(lit) })
		d, err := DecodeIncidentDossier(doc)
		require.NoError(t, err, lit)
		assert.Equal(t, int64(1), d.Hypotheses[0].Rank, lit)
	}
	doc := edit(t, base, "/hypotheses/0/rank", func(any) any { return json.Number("1.5") })
	vs, err := Check(KindIncidentDossier, doc)
	require.NoError(t, err)
	assert.NotEmpty(t, vs)
}
