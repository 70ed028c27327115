package verity_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReferenceListsEveryPackage holds REFERENCE.md's package tables to
// the packages of the checkout, nested modules included: every directory
// with a Go file that is not a test (outside testdata and examples, whose
// programs have a table of their own) is named there as `DIR`.
func TestReferenceListsEveryPackage(t *testing.T) {
	ref, err := os.ReadFile("REFERENCE.md")
	if err != nil {
		t.Fatal(err)
	}
	root := repoRoot(t)
	var missing []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || rel == "examples") {
			return filepath.SkipDir
		}
		if rel == "." || !hasPackage(t, path) {
			return nil
		}
		if !strings.Contains(string(ref), "| `"+rel+"` |") {
			missing = append(missing, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("REFERENCE.md's package tables have no row for %s: add \"| `%s` | what it does |\"", m, m)
	}
}

// hasPackage reports whether dir holds a Go file that is not a test.
func hasPackage(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}
