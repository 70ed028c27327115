// Package doccheck holds a package's documentation to what its Examples
// print: a refusal that doc.go shows must be a line some Example prints
// (its // Output, which go test checks), so that the text a reader sees
// cannot drift from what the code says. The framework adapters
// (kernel/toolgate/adk, eino, mcp) run it from TestDocShowsWhatTheExamplePrints.
package doccheck

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// ShownIsPrinted fails t unless every indented line of the file doc
// that begins with `tool "` (a refusal, as the gate explains it) is
// part of a comment line of the file examples (an Example's Output), and
// unless doc shows at least one, so that the check checks something.
func ShownIsPrinted(t testing.TB, doc, examples string) {
	t.Helper()
	d, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile(examples)
	if err != nil {
		t.Fatal(err)
	}
	var printed []string // the comment lines of examples
	for _, l := range strings.Split(string(ex), "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "//"); ok {
			printed = append(printed, c)
		}
	}
	shown := 0
	for _, l := range strings.Split(string(d), "\n") {
		line, ok := strings.CutPrefix(l, "//\t")
		if !ok || !strings.HasPrefix(line, `tool "`) {
			continue
		}
		shown++
		if !slices.ContainsFunc(printed, func(p string) bool { return strings.Contains(p, line) }) {
			t.Errorf("%s shows %q, which no Example prints", doc, line)
		}
	}
	if shown == 0 {
		t.Errorf("%s shows no refusal: this check checks nothing", doc)
	}
}
