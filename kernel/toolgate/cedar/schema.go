package cedar

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	cedargo "github.com/cedar-policy/cedar-go"
	xast "github.com/cedar-policy/cedar-go/x/exp/ast"
	"github.com/cedar-policy/cedar-go/x/exp/schema"
	"github.com/cedar-policy/cedar-go/x/exp/schema/validate"
)

// Tool is a tool as an MCP server lists it: its name and the JSON Schema
// of its arguments (inputSchema).
type Tool struct {
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// maxSchemaDepth bounds how deep an inputSchema's objects and arrays are
// followed; deeper members are left out of the Cedar schema.
const maxSchemaDepth = 16

// Schema writes the Cedar schema of the entity model for tools: the
// entity types Principal (in Group, with tags String), Group and Server,
// and one action per tool, named as the tool, whose context's arguments
// record is typed from the tool's inputSchema. A property whose type
// Cedar cannot say (no type, several types, null, a number that is not
// an integer) is left out, so that Cedar's validator refuses a policy
// that reads it; a property not in required is optional (name?). Tools
// are written sorted by name; two tools with one name are an error.
func Schema(tools []Tool) ([]byte, error) {
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString("// The entity model of verity-cedar: see kernel/toolgate/cedar.\n")
	b.WriteString("entity Group;\n")
	b.WriteString("entity Server;\n")
	b.WriteString("entity Principal in [Group] {\n  issuer: String,\n  subject: String,\n  groups: Set<String>,\n  scopes: Set<String>\n} tags String;\n")
	for i, t := range tools {
		if t.Name == "" {
			return nil, errors.New("cedar: a tool without a name")
		}
		if i > 0 && tools[i-1].Name == t.Name {
			return nil, fmt.Errorf("cedar: two tools are named %q", t.Name)
		}
		var s map[string]any
		if len(t.InputSchema) > 0 {
			d := json.NewDecoder(strings.NewReader(string(t.InputSchema)))
			d.UseNumber()
			if err := d.Decode(&s); err != nil {
				return nil, fmt.Errorf("cedar: tool %q: inputSchema is not a JSON object: %v", t.Name, err)
			}
		}
		args := "{}"
		if s != nil {
			args = recordType(s, 1, "    ")
		}
		fmt.Fprintf(&b, "action %s appliesTo {\n  principal: [Principal],\n  resource: [Server],\n  context: {\n    arguments: %s,\n    labels: Set<String>,\n    spent: Long,\n    remaining: Long\n  }\n};\n", quote(t.Name), args)
	}
	return []byte(b.String()), nil
}

// recordType is the Cedar record type of an object schema's properties.
func recordType(s map[string]any, depth int, indent string) string {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	slices.Sort(names)
	var lines []string
	for _, n := range names {
		ps, ok := props[n].(map[string]any)
		if !ok {
			continue
		}
		t, ok := cedarType(ps, depth+1, indent+"  ")
		if !ok {
			continue
		}
		opt := "?"
		if required[n] {
			opt = ""
		}
		lines = append(lines, indent+"  "+quote(n)+opt+": "+t)
	}
	if len(lines) == 0 {
		return "{}"
	}
	return "{\n" + strings.Join(lines, ",\n") + "\n" + indent + "}"
}

// cedarType is the Cedar type of a property's schema, false when Cedar
// cannot say it.
func cedarType(s map[string]any, depth int, indent string) (string, bool) {
	if depth > maxSchemaDepth {
		return "", false
	}
	switch s["type"] {
	case "string":
		return "String", true
	case "boolean":
		return "Bool", true
	case "integer":
		return "Long", true
	case "array":
		items, ok := s["items"].(map[string]any)
		if !ok {
			return "", false
		}
		t, ok := cedarType(items, depth+1, indent)
		if !ok {
			return "", false
		}
		return "Set<" + t + ">", true
	case "object":
		return recordType(s, depth, indent), true
	}
	return "", false
}

// quote writes s as a Cedar string literal.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == 0xfffd:
			b.WriteString(`\u{` + strconv.FormatInt(int64(r), 16) + `}`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Validator is Cedar's validator over a schema.
type Validator struct {
	v *validate.Validator
}

// NewValidator reads a Cedar schema (its text; name is its file name in
// errors) for Check.
func NewValidator(name string, text []byte) (*Validator, error) {
	var s schema.Schema
	s.SetFilename(name)
	if err := s.UnmarshalCedar(text); err != nil {
		return nil, fmt.Errorf("cedar: schema %s does not parse: %w", name, err)
	}
	r, err := s.Resolve()
	if err != nil {
		return nil, fmt.Errorf("cedar: schema %s: %w", name, err)
	}
	return &Validator{v: validate.New(r)}, nil
}

// Check validates Cedar policy text (name is its file name, or the
// JSON Pointer of a rule's when text) against the schema with Cedar's
// own validator (strict mode): every problem, each "name:line:col:"
// (where the policy starts) and Cedar's message naming the policy, in
// the text's order; none for a valid text. Text
// that does not parse is one problem, Cedar's parse error.
func (v *Validator) Check(name string, text []byte) []error {
	list, err := cedargo.NewPolicyListFromBytes(name, text)
	if err != nil {
		return []error{fmt.Errorf("%s: Cedar does not parse it: %w", name, err)}
	}
	var out []error
	for i, p := range list {
		id := "policy" + strconv.Itoa(i)
		if a, ok := p.Annotations()["id"]; ok {
			id = string(a)
		}
		if err := v.v.Policy(id, (*xast.Policy)(p.AST())); err != nil {
			pos := p.Position()
			for _, e := range unjoin(err) {
				if strings.Contains(e.Error(), "for policy `"+id+"`") {
					out = append(out, fmt.Errorf("%s:%d:%d: %v", name, pos.Line, pos.Column, e))
				} else {
					out = append(out, fmt.Errorf("%s:%d:%d: policy %s: %v", name, pos.Line, pos.Column, id, e))
				}
			}
		}
	}
	return out
}

// unjoin splits an errors.Join.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
