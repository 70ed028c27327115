package pin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/kernel/toolgate/gatelog"
)

// ErrDefinition: a tool definition or a tools/list result that cannot be
// hashed — not JSON canonical form accepts, not an object, no name, two
// tools of one name.
var ErrDefinition = errors.New("pin: malformed tool definition")

// MaxDefinition bounds one tool definition (1 MiB): a larger one is
// refused rather than hashed, stored and shown.
const MaxDefinition = 1 << 20

// Tool is one tool as a server listed it: its name, its definition as
// forwarded (the raw JSON object, every member) and that definition's
// Hash.
type Tool struct {
	Name       string
	Hash       string
	Definition []byte
}

// HashDefinition returns the hash of a tool's definition: "sha256:" and
// the lower-case hex SHA-256 of the RFC 8785 canonical form of def, the
// whole JSON object as the server sent it — name, title, description,
// inputSchema, outputSchema, annotations, icons, _meta and any other
// member. Member order and whitespace do not change it; any member's
// value does. A "$ref" is a string like any other: nothing is fetched or
// followed. It also returns the tool's name.
func HashDefinition(def []byte) (name, hash string, err error) {
	if len(def) > MaxDefinition {
		return "", "", fmt.Errorf("%w: %d bytes, at most %d", ErrDefinition, len(def), MaxDefinition)
	}
	c, err := canon.Transform(def)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrDefinition, err)
	}
	if len(c) == 0 || c[0] != '{' {
		return "", "", fmt.Errorf("%w: not a JSON object", ErrDefinition)
	}
	var head struct {
		Name string `json:"name"`
	}
	if err := (strictjson.Options{AllowUnknown: true}).Unmarshal(c, &head); err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrDefinition, err)
	}
	if head.Name == "" {
		return "", "", fmt.Errorf("%w: no name", ErrDefinition)
	}
	return head.Name, digest(c), nil
}

// HashInstructions returns the hash of a server's instructions (from its
// initialize result): "sha256:" and the hex SHA-256 of the instructions
// as a canonical JSON string, so that "" hashes too. A server that gives
// none is "" (no hash).
func HashInstructions(instructions string, given bool) string {
	if !given {
		return ""
	}
	return digest(canon.AppendString(nil, instructions))
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ValidHash reports whether h is a hash as this package writes it:
// "sha256:" and 64 lower-case hex digits.
func ValidHash(h string) bool { return gatelog.ValidHash(h) }

// ParseTools reads the tools of a tools/list result — bare
// ({"tools": [...], "nextCursor": ...}) as the result member of a
// JSON-RPC response holds it — and hashes each one (HashDefinition). Two
// tools of one name are refused: the set a model sees must be one way.
// Other members of the result (nextCursor, _meta) are ignored.
func ParseTools(result []byte) ([]Tool, error) {
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := (strictjson.Options{AllowUnknown: true}).Unmarshal(result, &doc); err != nil {
		return nil, fmt.Errorf("%w: not a tools/list result: %w", ErrDefinition, err)
	}
	if doc.Tools == nil {
		return nil, fmt.Errorf(`%w: not a tools/list result: no "tools" array`, ErrDefinition)
	}
	out := make([]Tool, 0, len(doc.Tools))
	seen := make(map[string]bool, len(doc.Tools))
	for i, raw := range doc.Tools {
		name, h, err := HashDefinition(raw)
		if err != nil {
			return nil, fmt.Errorf("tools/%d: %w", i, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: tools/%d: a second tool named %q", ErrDefinition, i, name)
		}
		seen[name] = true
		out = append(out, Tool{Name: name, Hash: h, Definition: raw})
	}
	return out, nil
}
