package gateway_test

import (
	"testing"

	"github.com/verity-go/verity/internal/surface"
)

// maxExported bounds the package's exported surface (its exported
// top-level names and the exported methods of its exported types).
const maxExported = 34

// TestExportedSurface keeps the exported identifiers at most maxExported
// and lists them in testdata/exported.txt. After an intended change, run
// go test -run TestExportedSurface -args -update-surface.
func TestExportedSurface(t *testing.T) {
	surface.Check(t, ".", "testdata/exported.txt", maxExported)
}
