package eino_test

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestDocShowsWhatTheExamplePrints holds the refusals doc.go shows to
// what the package's Example prints (its Output, checked by go test):
// every indented line of doc.go that begins with `tool "` is printed
// in an Output block of example_test.go.
func TestDocShowsWhatTheExamplePrints(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var printed []string // the comment lines of example_test.go
	for _, l := range strings.Split(string(ex), "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "//"); ok {
			printed = append(printed, c)
		}
	}
	shown := 0
	for _, l := range strings.Split(string(doc), "\n") {
		line, ok := strings.CutPrefix(l, "//\t")
		if !ok || !strings.HasPrefix(line, `tool "`) {
			continue
		}
		shown++
		if !slices.ContainsFunc(printed, func(p string) bool { return strings.Contains(p, line) }) {
			t.Errorf("doc.go shows %q, which no Example prints", line)
		}
	}
	if shown == 0 {
		t.Error("doc.go shows no refusal: this test checks nothing")
	}
}
