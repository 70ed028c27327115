package adk_test

import (
	"testing"

	"github.com/verity-go/verity/internal/doccheck"
)

// TestDocShowsWhatTheExamplePrints holds the refusals doc.go shows to
// what the package's Examples print (doccheck.ShownIsPrinted).
func TestDocShowsWhatTheExamplePrints(t *testing.T) {
	doccheck.ShownIsPrinted(t, "doc.go", "example_test.go")
}
