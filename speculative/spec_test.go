package speculative

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const validSpec = `{"claim_id":"c1","template_qid":"numeric_consistency@1.0.0","scope_lock_id":"L1","params":{"n":1000,"dist":"normal"},"assumptions":["iid samples"]}`

func TestDecodeExperimentSpecValid(t *testing.T) {
	spec, err := DecodeExperimentSpec([]byte(validSpec))
	require.NoError(t, err)
	assert.Equal(t, "c1", spec.ClaimID)
	assert.Equal(t, "numeric_consistency@1.0.0", spec.TemplateQID)
	assert.Equal(t, "L1", spec.ScopeLockID)
	assert.Equal(t, "normal", spec.Params["dist"])
	assert.Equal(t, []string{"iid samples"}, spec.Assumptions)
	require.NoError(t, spec.validate())
	_, err = DecodeExperimentSpec([]byte(`{"claim_id":"c1","template_qid":"t@0.0.0","scope_lock_id":"L"}`))
	require.NoError(t, err, "params and assumptions are optional")
}

func specWith(field, value string) []byte {
	return []byte(strings.Replace(validSpec, `"scope_lock_id":"L1"`, `"scope_lock_id":"L1",`+field+`:`+value, 1))
}

func TestTemplateQIDPattern(t *testing.T) {
	for qid, ok := range map[string]bool{
		"numeric_consistency@1.0.0": true,
		"a@0.0.0":                   true,
		"x2_y@10.20.30":             true,
		"Numeric@1.0.0":             false,
		"numeric-consistency@1.0.0": false,
		"numeric@1.0":               false,
		"numeric@1.0.0-rc1":         false,
		"numeric@1.0.0\n":           false,
		"@1.0.0":                    false,
		"numeric@v1.0.0":            false,
		"numeric@1.0.0 ":            false,
		"numeric@١.0.0":             false, // Arabic-Indic digit
		"":                          false,
	} {
		doc := strings.Replace(validSpec, "numeric_consistency@1.0.0", strings.ReplaceAll(strings.ReplaceAll(qid, "\n", `\n`), `"`, `\"`), 1)
		_, err := DecodeExperimentSpec([]byte(doc))
		if ok {
			assert.NoError(t, err, qid)
		} else {
			assert.ErrorIs(t, err, ErrInvalidSpec, qid)
		}
	}
}

func TestDecodeExperimentSpecRejections(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      error
		path      string
	}{
		{"blank scope lock", strings.Replace(validSpec, `"L1"`, `"  "`, 1), ErrInvalidSpec, "/scope_lock_id"},
		{"missing scope lock", strings.Replace(validSpec, `"scope_lock_id":"L1",`, ``, 1), ErrInvalidSpec, "/scope_lock_id"},
		{"scope lock not string", strings.Replace(validSpec, `"L1"`, `7`, 1), ErrInvalidSpec, "/scope_lock_id"},
		{"blank claim", strings.Replace(validSpec, `"c1"`, `""`, 1), ErrInvalidSpec, "/claim_id"},
		{"unknown field", string(specWith(`"notes"`, `"x"`)), ErrInvalidSpec, "/notes"},
		{"params not object", strings.Replace(validSpec, `{"n":1000,"dist":"normal"}`, `[1]`, 1), ErrInvalidSpec, "/params"},
		{"assumptions not strings", strings.Replace(validSpec, `["iid samples"]`, `[1]`, 1), ErrInvalidSpec, "/assumptions"},
		{"not an object", `[1,2]`, ErrMalformed, ""},
		{"syntax", `{"claim_id":`, ErrMalformed, ""},
		{"duplicate key", `{"claim_id":"c1","claim_id":"c2","template_qid":"t@1.0.0","scope_lock_id":"L"}`, ErrMalformed, ""},
		{"hints at top", string(specWith(`"experiment_hints"`, `{}`)), ErrResidue, "/experiment_hints"},
		{"status any value", string(specWith(`"epistemic_status"`, `"grounded"`)), ErrResidue, "/epistemic_status"},
		{"lane in params", strings.Replace(validSpec, `"dist":"normal"`, `"dist":{"lane":"Speculative"}`, 1), ErrResidue, "/params/dist/lane"},
		{"camel residue", strings.Replace(validSpec, `"dist":"normal"`, `"edgeCases":[]`, 1), ErrResidue, "/params/edgeCases"},
		{"json string residue", strings.Replace(validSpec, `"dist":"normal"`, `"dist":"{\"analogies\":[]}"`, 1), ErrResidue, "/params/dist/analogies"},
		{"quoted token", strings.Replace(validSpec, `"iid samples"`, `"an \"alternatives\" list"`, 1), ErrResidue, "/assumptions/0"},
		{"context in assumptions", strings.Replace(validSpec, `"iid samples"`, `"{\"speculativeContext\":1}"`, 1), ErrResidue, "/assumptions/0/speculativeContext"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeExperimentSpec([]byte(tc.doc))
			require.ErrorIs(t, err, tc.want)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			var paths []string
			for _, v := range ve.Violations {
				paths = append(paths, v.Path)
			}
			assert.Contains(t, paths, tc.path)
		})
	}
}

func TestDecodeExperimentSpecReportsAllViolationsSorted(t *testing.T) {
	doc := `{"template_qid":"Bad","scope_lock_id":"","zeta":1,"params":{"b":{"alternatives":1},"a":{"analogies":2}}}`
	_, err := DecodeExperimentSpec([]byte(doc))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	var got []string
	for _, v := range ve.Violations {
		got = append(got, v.Path+" "+v.Rule)
	}
	assert.Equal(t, []string{
		"/claim_id required",
		"/params/a/analogies residue",
		"/params/b/alternatives residue",
		"/scope_lock_id blank",
		"/template_qid pattern",
		"/zeta unknown-field",
	}, got)
	assert.True(t, errors.Is(err, ErrResidue) && errors.Is(err, ErrInvalidSpec))
}

func TestDecodeExperimentSpecLimits(t *testing.T) {
	big := `{"claim_id":"c1","template_qid":"t@1.0.0","scope_lock_id":"L","params":{"x":"` + strings.Repeat("a", maxSpecBytes) + `"}}`
	_, err := DecodeExperimentSpec([]byte(big))
	require.ErrorIs(t, err, ErrLimit)
	deep := `{"claim_id":"c1","template_qid":"t@1.0.0","scope_lock_id":"L","params":` + nest(MaxDepth, "1") + `}`
	_, err = DecodeExperimentSpec([]byte(deep))
	require.Error(t, err)
}
