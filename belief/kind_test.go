package belief

import (
	"strings"
	"testing"
)

// TestVerbKind checks the precomputed trace kinds against their
// definition: "belief." followed by the verb in lower case.
func TestVerbKind(t *testing.T) {
	for _, v := range []Verb{VerbDeclareSession, VerbEliminate, VerbEnterObligation, VerbRequestExit, VerbDeclareConclusion, VerbRequestTermination, "X_Y"} {
		if got, want := v.Kind(), "belief."+strings.ToLower(string(v)); got != want {
			t.Errorf("%s.Kind() = %q, want %q", v, got, want)
		}
	}
}
