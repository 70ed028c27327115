// Guarantee checked here: every error message of the package starts with
// "contracts: " and says it once: TestErrorsPrefixedOnce.

package contracts

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestErrorsPrefixedOnce walks the package's error-producing paths — every
// invalid fixture through Validate and its Decode function, a major
// version, an unknown kind, builders refusing their input, Marshal refusing
// a value — and checks each message starts with "contracts: " and says it
// only once: wrapped errors and violation messages add context, not
// another prefix.
func TestErrorsPrefixedOnce(t *testing.T) {
	var errs []error
	for _, f := range loadFixtures(t, "invalid") {
		errs = append(errs, Validate(f.kind, f.data))
		_, err := decodeAny(f.kind, f.data)
		errs = append(errs, err)
	}
	_, err := ParseKind("rca")
	errs = append(errs, err)
	_, err = Schema("rca")
	errs = append(errs, err)
	errs = append(errs, Validate("rca", []byte(`{}`)))
	errs = append(errs, Validate(KindRCAReport, []byte(`{"schema_version":"2.0.0"}`)))
	errs = append(errs, Validate(KindRCAReport, []byte(`{"a":1,"a":2}`)))
	_, err = NewEvidenceRef(EvidenceInput{Kind: EvidenceKindToolIO})
	errs = append(errs, err)
	_, err = NewRCAReport(RCAReport{})
	errs = append(errs, err)
	_, err = NewAnnotation(AnnotationInput{}, (*RCAReport)(nil))
	errs = append(errs, err)
	_, err = NewAnnotation(AnnotationInput{}, 42)
	errs = append(errs, err)
	_, err = Run{}.Failed(RunError{})
	errs = append(errs, err)
	_, err = Marshal(math.NaN())
	errs = append(errs, err)
	for _, err := range errs {
		if assert.Error(t, err) {
			msg := err.Error()
			assert.True(t, strings.HasPrefix(msg, "contracts: "), msg)
			assert.Equal(t, 1, strings.Count(msg, "contracts: "), msg)
		}
	}
}
