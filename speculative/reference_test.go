package speculative

import (
	"encoding/json"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// specReference is the specification's is_speculative, translated line by
// line, with the key and value normalisation of normalizeKey and
// strings.TrimSpace/ToLower and the artifact keys added. Detection must
// flag everything it flags (the converse does not hold: the package's
// vocabulary is wider).
func specReference(obj any, depth int) bool {
	if depth > 200 {
		return false
	}
	switch x := obj.(type) {
	case string:
		s := strings.TrimSpace(x)
		if (strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}")) || (strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]")) {
			var v any
			if json.Unmarshal([]byte(s), &v) == nil {
				return specReference(v, depth+1)
			}
		}
		l := strings.ToLower(s)
		return strings.Contains(l, `"speculative"`) || strings.Contains(l, `"epistemic_status"`) ||
			strings.Contains(l, `"epistemic-status"`) || strings.Contains(l, `"speculative_context"`) ||
			strings.Contains(l, `"speculative-context"`)
	case map[string]any:
		for k, v := range x {
			n := normalizeKey(k)
			if (n == "epistemic_status" || n == "lane") && isString(v) && strings.ToLower(strings.TrimSpace(v.(string))) == "speculative" {
				return true
			}
			switch n {
			case "speculative_context", "experiment_hints", "alternatives", "analogies", "edge_cases":
				return true
			}
		}
		for _, v := range x {
			if specReference(v, depth+1) {
				return true
			}
		}
	case []any:
		for _, v := range x {
			if specReference(v, depth+1) {
				return true
			}
		}
	}
	return false
}

func isString(v any) bool { _, ok := v.(string); return ok }

// TestDetectCoversSpecReference: whatever the specification's algorithm
// flags, Detect flags.
func TestDetectCoversSpecReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genNode(t, 0, 0, "root").render(true)
		if specReference(v, 0) && !isSpeculative(v) {
			b, _ := json.Marshal(v)
			t.Fatalf("reference flags, detection does not: %s", b)
		}
	})
}
