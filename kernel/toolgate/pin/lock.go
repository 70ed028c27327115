package pin

import (
	"bytes"
	_ "embed" // the lock file's schema
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/strictjson"
)

// LockSchemaID is the $id of pins.schema.json, and the "$schema" a lock
// file written by Lock.Encode names.
const LockSchemaID = "https://github.com/verity-go/verity/kernel/toolgate/pin/pins.schema.json"

// LockVersion is the lock file format's version.
const LockVersion = 1

// MaxLock bounds a lock file ParseLock reads (64 MiB).
const MaxLock = 64 << 20

//go:embed pins.schema.json
var lockSchema []byte

// LockSchema returns pins.schema.json, the JSON Schema (draft 2020-12) of
// a lock file (its $id is LockSchemaID).
func LockSchema() []byte { return bytes.Clone(lockSchema) }

// ErrLock: a lock file ParseLock refuses.
var ErrLock = errors.New("pin: invalid lock file")

// Lock is a lock file, pins.json: the definitions a team reviewed and
// committed, by server. `verity pin -- UPSTREAM…` writes one from a live
// server; a host loads it with State.LockLoaded.
//
//	{
//	  "$schema": "https://github.com/verity-go/verity/kernel/toolgate/pin/pins.schema.json",
//	  "version": 1,
//	  "servers": {
//	    "files": {
//	      "instructions": "sha256:…",
//	      "tools": {"read_file": "sha256:…"},
//	      "definitions": {"read_file": {"name": "read_file", "description": "…", "inputSchema": {…}}}
//	    }
//	  }
//	}
type Lock struct {
	Schema  string                `json:"$schema,omitempty"`
	Version int                   `json:"version"`
	Servers map[string]ServerLock `json:"servers"`
}

// ServerLock is one server's pins in a lock file: its instructions' hash
// (HashInstructions, absent when it gives none), each tool's definition
// hash by name (HashDefinition), and, optionally, the definitions
// themselves, for review and for the diff shown when one changes (each
// must hash to its tool's pin).
type ServerLock struct {
	Instructions string                     `json:"instructions,omitempty"`
	Tools        map[string]string          `json:"tools"`
	Definitions  map[string]json.RawMessage `json:"definitions,omitempty"`
}

// LockOf returns the lock file of listings, definitions included.
func LockOf(listings ...Listing) Lock {
	l := Lock{Schema: LockSchemaID, Version: LockVersion, Servers: make(map[string]ServerLock, len(listings))}
	for _, li := range listings {
		sl := ServerLock{Instructions: li.Instructions, Tools: make(map[string]string, len(li.Tools)),
			Definitions: make(map[string]json.RawMessage, len(li.Tools))}
		for _, t := range li.Tools {
			sl.Tools[t.Name] = t.Hash
			sl.Definitions[t.Name] = json.RawMessage(bytes.Clone(t.Definition))
		}
		l.Servers[li.Server] = sl
	}
	return l
}

// ParseLock reads a lock file strictly: one JSON object as
// pins.schema.json describes it, no unknown or duplicate member (a tool
// named twice is a duplicate member), version 1, at least one server,
// every hash "sha256:" and 64 lower-case hex digits, and every
// definition a tool object of that name that hashes to its pin. The error
// is one line naming the first problem and where it is.
func ParseLock(data []byte) (Lock, error) {
	if len(data) > MaxLock {
		return Lock{}, fmt.Errorf("%w: %d bytes, at most %d", ErrLock, len(data), MaxLock)
	}
	var l Lock
	if err := strictjson.Unmarshal(data, &l); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			if vs := se.Violations(); len(vs) > 0 {
				v := vs[0]
				return Lock{}, fmt.Errorf("%w: %s: %s", ErrLock, cmpPointer(v.Path), v.Message)
			}
		}
		return Lock{}, fmt.Errorf("%w: %v", ErrLock, err)
	}
	if err := l.check(); err != nil {
		return Lock{}, fmt.Errorf("%w: %v", ErrLock, err)
	}
	return l, nil
}

func cmpPointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// check says what types cannot: the version, the hashes, the definitions.
func (l Lock) check() error {
	if l.Version != LockVersion {
		return fmt.Errorf("/version: %d is not a lock file version this reader knows (1)", l.Version)
	}
	if len(l.Servers) == 0 {
		return errors.New("/servers: no server: a lock file pins at least one")
	}
	for _, name := range slices.Sorted(maps.Keys(l.Servers)) {
		sl := l.Servers[name]
		at := "/servers/" + token(name)
		if name == "" {
			return fmt.Errorf("%s: a server with an empty name", at)
		}
		if sl.Instructions != "" && !ValidHash(sl.Instructions) {
			return fmt.Errorf("%s/instructions: %.80q is not sha256: and 64 lower-case hex digits", at, sl.Instructions)
		}
		if sl.Tools == nil {
			return fmt.Errorf("%s/tools: missing", at)
		}
		for _, tool := range slices.Sorted(maps.Keys(sl.Tools)) {
			if tool == "" {
				return fmt.Errorf("%s/tools: a tool with an empty name", at)
			}
			if h := sl.Tools[tool]; !ValidHash(h) {
				return fmt.Errorf("%s/tools/%s: %.80q is not sha256: and 64 lower-case hex digits", at, token(tool), h)
			}
		}
		for _, tool := range slices.Sorted(maps.Keys(sl.Definitions)) {
			dat := at + "/definitions/" + token(tool)
			pinned, ok := sl.Tools[tool]
			if !ok {
				return fmt.Errorf("%s: a definition of a tool the lock does not pin", dat)
			}
			name, h, err := HashDefinition(sl.Definitions[tool])
			if err != nil {
				return fmt.Errorf("%s: %v", dat, err)
			}
			if name != tool {
				return fmt.Errorf("%s: the definition is named %q", dat, name)
			}
			if h != pinned {
				return fmt.Errorf("%s: the definition hashes to %s, the lock pins %s", dat, h, pinned)
			}
		}
	}
	return nil
}

// token escapes a member name as an RFC 6901 reference token.
func token(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Encode returns the lock file's text: members and tools in a stable
// (sorted) order, two-space indented, definitions in their canonical
// form, ending with a new line — the same lock, the same bytes, so that a
// review sees only what changed.
func (l Lock) Encode() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	if l.Schema != "" {
		fmt.Fprintf(&b, "  \"$schema\": %s,\n", canon.AppendString(nil, l.Schema))
	}
	fmt.Fprintf(&b, "  \"version\": %d,\n  \"servers\": {", l.Version)
	for i, name := range slices.Sorted(maps.Keys(l.Servers)) {
		sl := l.Servers[name]
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "\n    %s: {\n", canon.AppendString(nil, name))
		if sl.Instructions != "" {
			fmt.Fprintf(&b, "      \"instructions\": %s,\n", canon.AppendString(nil, sl.Instructions))
		}
		b.WriteString("      \"tools\": {")
		for j, tool := range slices.Sorted(maps.Keys(sl.Tools)) {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "\n        %s: %s", canon.AppendString(nil, tool), canon.AppendString(nil, sl.Tools[tool]))
		}
		if len(sl.Tools) > 0 {
			b.WriteString("\n      ")
		}
		b.WriteByte('}')
		if len(sl.Definitions) > 0 {
			b.WriteString(",\n      \"definitions\": {")
			for j, tool := range slices.Sorted(maps.Keys(sl.Definitions)) {
				if j > 0 {
					b.WriteByte(',')
				}
				def, err := canon.Transform(sl.Definitions[tool])
				if err != nil { // not JSON: written as a string, which ParseLock refuses
					def = canon.AppendString(nil, sl.Definitions[tool])
				} else {
					def = escapeHidden(def)
				}
				fmt.Fprintf(&b, "\n        %s: %s", canon.AppendString(nil, tool), def)
			}
			b.WriteString("\n      }")
		}
		b.WriteString("\n    }")
	}
	if len(l.Servers) > 0 {
		b.WriteString("\n  ")
	}
	b.WriteString("}\n}\n")
	return b.Bytes()
}

// escapeHidden writes the invisible and look-alike characters of a
// canonical JSON text (which holds non-ASCII characters only in strings)
// as \u escapes, so that a review of the lock file sees them: the text
// reads back as the same value, with the same hash.
func escapeHidden(c []byte) []byte {
	look := lookalikes(string(c))
	var out []byte
	for i := 0; i < len(c); {
		r, n := utf8.DecodeRune(c[i:])
		if r >= 0x80 && (look[i] || hidden(r)) {
			if out == nil {
				out = append(make([]byte, 0, len(c)+32), c[:i]...)
			}
			for _, u := range utf16.Encode([]rune{r}) {
				out = fmt.Appendf(out, `\u%04x`, u)
			}
		} else if out != nil {
			out = append(out, c[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return c
	}
	return out
}

// Digest returns "sha256:" and the hex SHA-256 of the lock's canonical
// form: what a pin entry of source "lock" names it by.
func (l Lock) Digest() string {
	b, err := canon.Transform(l.Encode())
	if err != nil {
		return digest(l.Encode())
	}
	return digest(b)
}
