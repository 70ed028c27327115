package pin_test

import (
	"os"
	"strings"
	"testing"

	"github.com/verity-go/verity/kernel/toolgate/pin"
)

// TestReferenceShowsTheSchema: the schema REFERENCE.md shows is
// pins.schema.json, as LockSchema returns it.
func TestReferenceShowsTheSchema(t *testing.T) {
	b, err := os.ReadFile("../../../REFERENCE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "<!-- pins.schema.json -->\n```json\n")
	if !ok {
		t.Fatal("REFERENCE.md shows no pins.schema.json")
	}
	shown, _, ok := strings.Cut(after, "```\n")
	if !ok || shown != string(pin.LockSchema()) {
		t.Fatalf("REFERENCE.md shows another schema than pins.schema.json:\n%s", shown)
	}
}
