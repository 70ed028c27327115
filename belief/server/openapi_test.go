// The OpenAPI document is the handler, and the tests that check it.
//
//   - Paths, methods and statuses are the route table: TestOpenAPIMatchesRoutes.
//   - Request members and required members are the decoders':
//     TestOpenAPIRequestSchemas.
//   - Responses, the error envelope and each violation (path, rule,
//     message; the rule enum is belief's rules) are as documented:
//     TestOpenAPIResponseSchemas.

package server

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/verity-go/verity/belief"
)

// The OpenAPI document is written in a small YAML subset — block
// mappings, flow lists ([a, b]), "- " list items and "|" block scalars —
// and read here by yamlKeys, which builds the tree of mapping keys with
// their inline values and skips list items and block scalars. That is all
// the checks below need, and it keeps YAML libraries out of the module.

type ynode struct {
	value    string
	children map[string]*ynode
}

var keyLine = regexp.MustCompile(`^( *)("[^"]*"|'[^']*'|[^\s"'#-][^:]*|\$ref|-[^ ][^:]*):(?: +(.*))?$`)

func yamlKeys(t *testing.T, text string) *ynode {
	t.Helper()
	root := &ynode{children: map[string]*ynode{}}
	type frame struct {
		indent int
		n      *ynode
	}
	stack := []frame{{-1, root}}
	skipAbove := -1 // ignore lines indented more than this (inside a list item or block scalar)
	for no, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		if skipAbove >= 0 {
			if indent > skipAbove {
				continue
			}
			skipAbove = -1
		}
		for stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		if strings.HasPrefix(trimmed, "- ") || trimmed == "-" {
			skipAbove = indent
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		require.NotNil(t, m, "line %d is outside the YAML subset: %q", no+1, line)
		key := strings.Trim(m[2], `"'`)
		n := &ynode{value: m[3], children: map[string]*ynode{}}
		parent := stack[len(stack)-1].n
		_, dup := parent.children[key]
		require.False(t, dup, "line %d: duplicate key %q", no+1, key)
		parent.children[key] = n
		if m[3] == "|" || m[3] == ">" {
			skipAbove = indent
			continue
		}
		stack = append(stack, frame{indent, n})
	}
	return root
}

func (n *ynode) get(t *testing.T, path ...string) *ynode {
	t.Helper()
	cur := n
	for _, p := range path {
		next, ok := cur.children[p]
		require.True(t, ok, "missing %q in %v", p, path)
		cur = next
	}
	return cur
}

func (n *ynode) keys() []string {
	out := make([]string, 0, len(n.children))
	for k := range n.children {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func flowList(v string) []string {
	v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "["), "]")
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.Trim(strings.TrimSpace(s), `"'`); s != "" {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func loadSpec(t *testing.T) *ynode {
	b, err := os.ReadFile("api/openapi.yaml")
	require.NoError(t, err)
	return yamlKeys(t, string(b))
}

// TestOpenAPIMatchesRoutes: the document's paths, methods and response
// statuses are exactly the handler's route table (which builds the mux
// and whose statuses TestHTTPStatusCoverage shows are all produced).
func TestOpenAPIMatchesRoutes(t *testing.T) {
	spec := loadSpec(t)
	assert.Equal(t, "3.1.0", spec.get(t, "openapi").value)
	paths := spec.get(t, "paths")
	var want, got []string
	for _, rt := range routes {
		for _, s := range rt.statuses {
			want = append(want, fmt.Sprintf("%s %s %d", rt.method, rt.path, s))
		}
	}
	for _, p := range paths.keys() {
		for _, m := range paths.children[p].keys() {
			for _, s := range paths.get(t, p, m, "responses").keys() {
				_, err := strconv.Atoi(s)
				require.NoError(t, err, "%s %s: response key %q is not a status", p, m, s)
				got = append(got, fmt.Sprintf("%s %s %s", strings.ToUpper(m), p, s))
			}
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	assert.Equal(t, want, got)
	assert.Contains(t, spec.get(t, "info", "description").value, "|")
	text, _ := os.ReadFile("api/openapi.yaml")
	assert.Contains(t, string(text), strconv.Itoa(DefaultMaxBodyBytes), "the body limit is documented")
	assert.Contains(t, string(text), fmt.Sprintf("up to %d MiB more for up to %d seconds", drainBytes>>20, int(drainTime.Seconds())),
		"the drain after a 413 is documented")
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	assert.Contains(t, string(doc), fmt.Sprintf("at most %d MiB for at most %d seconds", drainBytes>>20, int(drainTime.Seconds())),
		"the package doc gives the same figures")
}

// TestOpenAPIRequestSchemas: every documented request member is accepted
// by the decoder (no "unknown member"), a member that is not documented is
// rejected, and the documented required members are the ones the decoder
// requires.
func TestOpenAPIRequestSchemas(t *testing.T) {
	spec := loadSpec(t)
	decoders := map[string]func([]byte) []belief.Violation{
		"DeclareRequest": func(b []byte) []belief.Violation { _, vs := decodeDeclare(b); return vs },
		"EliminateRequest": func(b []byte) []belief.Violation {
			_, vs := decodeEliminate(b, "sid")
			return vs
		},
		"ObligationRequest": func(b []byte) []belief.Violation {
			_, vs := decodeObligation(b, "sid")
			return vs
		},
		"ExitRequest": func(b []byte) []belief.Violation {
			_, vs := decodeExit(b, "sid", "ob")
			return vs
		},
		"ConclusionRequest": func(b []byte) []belief.Violation {
			_, vs := decodeConclusion(b, "sid")
			return vs
		},
		"TerminationRequest": func(b []byte) []belief.Violation {
			_, vs := decodeTermination(b, "sid")
			return vs
		},
	}
	// Every member name any request schema or the protocol uses, to probe
	// each decoder with.
	candidates := map[string]bool{"force": true, "metadata": true, "justification": true}
	for name := range decoders {
		for _, p := range spec.get(t, "components", "schemas", name, "properties").keys() {
			candidates[p] = true
		}
	}
	for name, decode := range decoders {
		schema := spec.get(t, "components", "schemas", name)
		props := schema.get(t, "properties").keys()
		var required []string
		if r, ok := schema.children["required"]; ok {
			required = flowList(r.value)
		}
		assert.Equal(t, "false", schema.get(t, "additionalProperties").value, name)
		for _, r := range required {
			assert.Contains(t, props, r, "%s: required member is not a property", name)
		}
		for c := range candidates {
			b, _ := json.Marshal(map[string]any{c: nil})
			unknown := slices.Contains(decode(b), belief.Violation{Path: "/" + c, Rule: belief.RuleUnknownField, Message: "unknown member"})
			assert.Equal(t, !slices.Contains(props, c), unknown, "%s: member %q documented=%v but decoder unknown=%v", name, c, slices.Contains(props, c), unknown)
		}
		// Every member null: only "is required" complaints, for exactly the required ones.
		body := map[string]any{}
		for _, p := range props {
			body[p] = nil
		}
		b, _ := json.Marshal(body)
		var missing []string
		for _, v := range decode(b) {
			assert.Equal(t, belief.RuleRequired, v.Rule, "%s: %s", name, v.Path)
			assert.Equal(t, "is required", v.Message, "%s: %s", name, v.Path)
			missing = append(missing, strings.TrimPrefix(v.Path, "/"))
		}
		slices.Sort(missing)
		assert.Equal(t, required, missing, name)
		// An undocumented member is rejected.
		body["undocumented"] = 1
		b, _ = json.Marshal(body)
		assert.Contains(t, decode(b), belief.Violation{Path: "/undocumented", Rule: belief.RuleUnknownField, Message: "unknown member"}, name)
	}
}

// TestOpenAPIResponseSchemas: the members of real responses are the
// documented properties (all required ones present, nothing undocumented).
func TestOpenAPIResponseSchemas(t *testing.T) {
	spec := loadSpec(t)
	e := newEnv(t, belief.Policy{})
	checkKeys := func(schema string, obj map[string]any) {
		t.Helper()
		s := spec.get(t, "components", "schemas", schema)
		props := s.get(t, "properties").keys()
		required := flowList(s.get(t, "required").value)
		for k := range obj {
			assert.Contains(t, props, k, "%s: undocumented member", schema)
		}
		for _, k := range required {
			assert.Contains(t, obj, k, "%s: required member missing", schema)
		}
	}
	decl := e.do("POST", "/v1/sessions", `{`+ontoJSON+`,"hypotheses":["a","b"]}`, nil)
	checkKeys("DeclareResponse", decl.body)
	checkKeys("BeliefSnapshot", decl.body["snapshot"].(map[string]any))
	checkKeys("OntologyBundle", decl.body["snapshot"].(map[string]any)["ontology"].(map[string]any))
	el := e.mustPost("/v1/sessions/{sid}/eliminate", elimA)
	checkKeys("EliminateResponse", el.body)
	ob := e.mustPost("/v1/sessions/{sid}/obligations", `{"obligation_id":"ob","min_total_eliminations":0}`)
	checkKeys("ObligationResponse", ob.body)
	ex := e.mustPost("/v1/sessions/{sid}/obligations/ob/exit", ``)
	checkKeys("DecisionResponse", ex.body)
	co := e.mustPost("/v1/sessions/{sid}/conclusions", `{"conclusion_id":"c"}`)
	checkKeys("ConclusionResponse", co.body)
	te := e.mustPost("/v1/sessions/{sid}/terminate", ``)
	checkKeys("DecisionResponse", te.body)
	au := e.do("GET", "/v1/sessions/{sid}/audit", "", nil)
	checkKeys("AuditResponse", au.body)
	for _, ev := range au.body["events"].([]any) {
		checkKeys("AuditEntry", ev.(map[string]any))
	}
	nf := e.do("GET", "/v1/sessions/nope", "", nil)
	checkKeys("Error", nf.body)
	// An INVALID_REQUEST: every violation is path, rule and message, and
	// the documented rules are exactly belief's.
	bad := e.do("POST", "/v1/sessions", `{"ontology":[],"hypotheses":["a",1],"x":1}`, nil)
	checkKeys("Error", bad.body)
	details := bad.body["error"].(map[string]any)["details"].(map[string]any)
	assert.Equal(t, []string{"violations"}, spec.get(t, "components", "schemas", "Error", "properties", "error", "properties", "details", "properties").keys())
	assert.Equal(t, "#/components/schemas/Violation", strings.Trim(spec.get(t, "components", "schemas", "Error", "properties", "error",
		"properties", "details", "properties", "violations", "items", "$ref").value, `'"`))
	require.NotEmpty(t, details["violations"])
	for _, v := range details["violations"].([]any) {
		checkKeys("Violation", v.(map[string]any))
	}
	rules := []string{belief.RuleSyntax, belief.RuleType, belief.RuleRequired, belief.RuleRange, belief.RuleUTF8,
		belief.RuleUnknownField, belief.RulePathMismatch, belief.RuleDuplicate}
	slices.Sort(rules)
	assert.Equal(t, rules, flowList(spec.get(t, "components", "schemas", "Violation", "properties", "rule", "enum").value))
	codes := flowList(spec.get(t, "components", "schemas", "Error", "properties", "error", "properties", "code", "enum").value)
	for _, c := range []belief.Code{belief.CodeInvalidRequest, belief.CodeInvalidHypothesisID, belief.CodeSessionNotFound,
		belief.CodeSessionTerminated, belief.CodeObligationNotFound, belief.CodeEventNotFound, belief.CodeConflict,
		belief.CodeInternal, CodeNotFound, CodeMethodNotAllowed, CodeContentTooLarge} {
		assert.Contains(t, codes, string(c))
	}
}
