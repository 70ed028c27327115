package toolgate_test

import (
	"testing"

	"github.com/verity-go/verity/internal/surface"
)

// maxExported bounds the package's exported surface: its exported
// top-level names plus the exported methods of its exported types (fields
// are not counted). The gate's log vocabulary (entry kinds and payloads,
// refusal conditions and answer reasons) lives in gatelog, counted there.
const maxExported = 134 // 127, Gate.RecordTask and OpenTasks (task.go), Gate.Reload and ErrReload (reload.go), SharedLabels, WithSharedLabels and LabelClear (labels_shared.go)

// TestExportedSurface keeps the package's exported identifiers at most
// maxExported and lists them in testdata/exported.txt, so that every
// addition or removal shows up as a diff of that file. After an intended
// change, run go test -run TestExportedSurface -args -update-surface.
func TestExportedSurface(t *testing.T) {
	surface.Check(t, ".", "testdata/exported.txt", maxExported)
}
