package contracts

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/verity-go/verity/internal/violation"
)

// schemaBase is the absolute $id prefix of every embedded schema.
const schemaBase = "https://github.com/verity-go/verity/contracts/schemas/"

//go:embed schemas/*.schema.json
var schemaFS embed.FS

// Schema returns the JSON Schema text of a kind (or "defs" for the shared
// definitions), as published in contracts/schemas/.
func Schema(name string) ([]byte, error) {
	if name != "defs" {
		if _, err := ParseKind(name); err != nil {
			return nil, err
		}
	}
	return schemaFS.ReadFile("schemas/" + name + ".schema.json")
}

// SchemaFS returns the embedded schema files (schemas/*.schema.json).
func SchemaFS() fs.FS { return schemaFS }

// eachSchema calls f with the $id and the text of every embedded schema,
// in file name order, and stops at the first error.
func eachSchema(f func(id string, text []byte) error) error {
	entries, err := fs.ReadDir(schemaFS, "schemas")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := schemaFS.ReadFile(path.Join("schemas", e.Name()))
		if err != nil {
			return err
		}
		if err := f(schemaBase+e.Name(), b); err != nil {
			return err
		}
	}
	return nil
}

// newCompiler returns a draft 2020-12 compiler that knows every embedded
// schema under its $id, asserts formats, and refuses to load anything
// else: LoadURL is never the package default (which reads files), so a
// $ref to a file:, http: or any other URL fails with ErrRefused.
func newCompiler(extra map[string]string) (*jsonschema.Compiler, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.AssertFormat = true
	c.LoadURL = func(u string) (io.ReadCloser, error) {
		return nil, fmt.Errorf("%w: %s", ErrRefused, u)
	}
	if err := eachSchema(func(id string, b []byte) error {
		return c.AddResource(id, bytes.NewReader(b))
	}); err != nil {
		return nil, err
	}
	for u, text := range extra {
		if err := c.AddResource(u, strings.NewReader(text)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// compiled holds one compiled schema per kind. It is built once and only
// read afterwards (compiled schemas are safe for concurrent use).
var compiled = sync.OnceValues(func() (map[Kind]*jsonschema.Schema, error) {
	c, err := newCompiler(nil)
	if err != nil {
		return nil, err
	}
	out := make(map[Kind]*jsonschema.Schema, len(allKinds))
	for _, k := range allKinds {
		s, err := c.Compile(k.SchemaID())
		if err != nil {
			return nil, fmt.Errorf("contracts: compiling %s: %w", k, err)
		}
		out[k] = s
	}
	return out, nil
})

// schemaViolations validates a decoded JSON value (json.Number numbers)
// against the kind's schema and returns one violation per failing keyword.
func schemaViolations(k Kind, v any) ([]Violation, error) {
	schemas, err := compiled()
	if err != nil {
		return nil, err
	}
	err = schemas[k].Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		out = append(out, leafViolations(e)...)
	}
	walk(ve)
	return out, nil
}

// leafViolations turns one failing keyword into violations. A "required"
// failure is split into one violation per missing property, located at the
// property, so that a missing key points where it should have been.
func leafViolations(e *jsonschema.ValidationError) []Violation {
	kw := e.KeywordLocation
	if i := strings.LastIndexByte(kw, '/'); i >= 0 {
		kw = kw[i+1:]
	}
	rule := "schema." + kw
	node := schemaNode(e.AbsoluteKeywordLocation)
	if r, ok := node["x-verity-rule"].(string); ok {
		rule = r // a keyword Verity adds to the specification's shape
	}
	if kw == "required" {
		if names := missingProperties(e.Message); len(names) > 0 {
			out := make([]Violation, 0, len(names))
			for _, n := range names {
				out = append(out, Violation{
					Path:    string(violation.Join(e.InstanceLocation, n)),
					Rule:    rule,
					Message: "missing required property " + quote(n),
				})
			}
			return out
		}
	}
	msg := e.Message
	if d, _ := node["description"].(string); d != "" {
		msg += " (" + d + ")"
	}
	return []Violation{{Path: e.InstanceLocation, Rule: rule, Message: msg}}
}

// schemaDocs holds every embedded schema decoded, by $id.
var schemaDocs = sync.OnceValue(func() map[string]any {
	docs := map[string]any{}
	entries, _ := fs.ReadDir(schemaFS, "schemas")
	for _, e := range entries {
		b, err := schemaFS.ReadFile(path.Join("schemas", e.Name()))
		if err != nil {
			continue
		}
		var doc any
		if json.Unmarshal(b, &doc) == nil {
			docs[schemaBase+e.Name()] = doc
		}
	}
	return docs
})

// schemaNode returns the schema object that holds the failing keyword
// (absolute keyword location "<$id>#<pointer>/<keyword>"), or nil. Its
// description says what a pattern is for ("does not match pattern" alone
// does not), and its x-verity-rule names the extension rule of an object
// that holds only keywords Verity adds to the specification's shape.
func schemaNode(absLoc string) map[string]any {
	u, ptr, ok := strings.Cut(absLoc, "#")
	if !ok {
		return nil
	}
	node := schemaDocs()[u]
	segs := strings.Split(ptr, "/")
	if len(segs) < 2 {
		return nil
	}
	for _, seg := range segs[1 : len(segs)-1] {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return nil
		}
		node = m[seg]
	}
	m, _ := node.(map[string]any)
	return m
}

// missingProperties extracts the names from the library's message
// "missing properties: 'a', 'b'".
func missingProperties(msg string) []string {
	_, list, ok := strings.Cut(msg, "missing properties: ")
	if !ok {
		return nil
	}
	var names []string
	for _, part := range strings.Split(list, ", ") {
		if len(part) >= 2 && part[0] == '\'' && part[len(part)-1] == '\'' {
			names = append(names, part[1:len(part)-1])
		}
	}
	slices.Sort(names)
	return names
}

func quote(s string) string { return "\"" + s + "\"" }
