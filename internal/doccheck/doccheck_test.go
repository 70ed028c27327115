package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// recorder is a testing.TB that keeps what it is told.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestShownIsPrinted: a shown refusal that an Example prints passes; one
// that none prints, and a doc that shows none, fail.
func TestShownIsPrinted(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ex := write("example_test.go", "func Example() {\n\t// Output:\n\t// tool \"rm\" (rule #1, effect): refused\n}\n")
	for _, tc := range []struct {
		doc  string
		errs int
	}{
		{"// Refused:\n//\n//\ttool \"rm\" (rule #1, effect): refused\npackage x\n", 0},
		{"// Refused:\n//\n//\ttool \"rm\" (rule #2, effect): refused\npackage x\n", 1},
		{"// Nothing shown.\npackage x\n", 1},
	} {
		r := &recorder{TB: t}
		ShownIsPrinted(r, write("doc.go", tc.doc), ex)
		assert.Len(t, r.errs, tc.errs, "%s: %v", tc.doc, r.errs)
	}
}
