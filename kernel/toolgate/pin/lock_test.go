package pin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"pgregory.net/rapid"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/kernel/toolgate/pin"
)

const goodHash = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// lockSchema compiles pins.schema.json on its own, as another program
// would.
var lockSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	c.LoadURL = func(u string) (io.ReadCloser, error) { return nil, fmt.Errorf("no loading %s", u) }
	if err := c.AddResource(pin.LockSchemaID, bytes.NewReader(pin.LockSchema())); err != nil {
		return nil, err
	}
	return c.Compile(pin.LockSchemaID)
})

// schemaAccepts reports whether pins.schema.json accepts data (false
// when data is not JSON canonical form accepts).
func schemaAccepts(t interface{ Fatal(...any) }, data []byte) bool {
	tree, err := canon.Decode(data)
	if err != nil {
		return false
	}
	s, err := lockSchema()
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(tree) == nil
}

// badLocks are lock files ParseLock refuses, each with the words its one
// line must hold; schema says whether pins.schema.json refuses it too
// (it cannot compare a definition with its hash).
var badLocks = []struct {
	name, doc, says string
	schema          bool
}{
	{"unknown member", `{"version":1,"servers":{"s":{"tools":{}}},"extra":1}`, "/extra: unknown member", true},
	{"unknown server member", `{"version":1,"servers":{"s":{"tools":{},"tool":{}}}}`, "/servers/s/tool: unknown member", true},
	{"bad hash", `{"version":1,"servers":{"s":{"tools":{"a":"sha256:ABC"}}}}`, "/servers/s/tools/a", true},
	{"md5 hash", `{"version":1,"servers":{"s":{"tools":{"a":"md5:0123456789abcdef0123456789abcdef"}}}}`, "not sha256:", true},
	{"bad instructions hash", `{"version":1,"servers":{"s":{"instructions":"x","tools":{}}}}`, "/servers/s/instructions", true},
	{"duplicate tool", `{"version":1,"servers":{"s":{"tools":{"a":"` + goodHash + `","a":"` + goodHash + `"}}}}`, "duplicate", true},
	{"duplicate server", `{"version":1,"servers":{"s":{"tools":{}},"s":{"tools":{}}}}`, "duplicate", true},
	{"version 2", `{"version":2,"servers":{"s":{"tools":{}}}}`, "/version", true},
	{"no version", `{"servers":{"s":{"tools":{}}}}`, "/version", true},
	{"no servers", `{"version":1,"servers":{}}`, "/servers", true},
	{"no tools", `{"version":1,"servers":{"s":{}}}`, "/servers/s/tools", true},
	{"empty tool name", `{"version":1,"servers":{"s":{"tools":{"":"` + goodHash + `"}}}}`, "empty name", true},
	{"null", `null`, "", true},
	{"not JSON", `{"version":1,`, "", true},
	{"definition of an unpinned tool", `{"version":1,"servers":{"s":{"tools":{},"definitions":{"a":{"name":"a"}}}}}`, "/servers/s/definitions/a", false},
	{"definition with another hash", `{"version":1,"servers":{"s":{"tools":{"a":"` + goodHash + `"},"definitions":{"a":{"name":"a"}}}}}`, "hashes to", false},
	{"definition of another name", `{"version":1,"servers":{"s":{"tools":{"a":"` + goodHash + `"},"definitions":{"a":{"name":"b"}}}}}`, "named", false},
}

// TestParseLockRefusesBadLocks: a malformed or tampered lock file is
// refused with one line naming where, and pins.schema.json refuses what
// a schema can say.
func TestParseLockRefusesBadLocks(t *testing.T) {
	for _, c := range badLocks {
		t.Run(c.name, func(t *testing.T) {
			_, err := pin.ParseLock([]byte(c.doc))
			if err == nil {
				t.Fatal("accepted")
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, c.says) {
				t.Fatalf("error %q: want one line with %q", msg, c.says)
			}
			if c.schema && schemaAccepts(t, []byte(c.doc)) {
				t.Fatal("the schema accepts it")
			}
		})
	}
}

// listingGen draws listings of distinct servers, with definitions that
// hold invisible and look-alike characters too.
func listingGen() *rapid.Generator[[]pin.Listing] {
	return rapid.Custom(func(t *rapid.T) []pin.Listing {
		names := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z~/][a-z0-9~/-]{0,8}`), 1, 3, func(s string) string { return s }).Draw(t, "servers")
		var out []pin.Listing
		for _, s := range names {
			l := pin.Listing{Server: s}
			if rapid.Bool().Draw(t, "instructions") {
				l.Instructions = pin.HashInstructions(rapid.String().Draw(t, "instructions text"), true)
			}
			tools := rapid.SliceOfNDistinct(rapid.StringMatching(`[a-z_][a-z0-9_.~/-]{0,10}`), 0, 4, func(s string) string { return s }).Draw(t, "tools")
			for _, name := range tools {
				desc := rapid.StringOf(rapid.SampledFrom([]rune("ab \u200b\u202e\U000E0041\u0430\"\\\n"))).Draw(t, "description")
				raw, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
				_, h, err := pin.HashDefinition(raw)
				if err != nil {
					t.Fatal(err)
				}
				l.Tools = append(l.Tools, pin.Tool{Name: name, Hash: h, Definition: raw})
			}
			out = append(out, l)
		}
		return out
	})
}

// TestLockRoundTrips: a lock written by Encode reads back as the same
// lock, is accepted by pins.schema.json, and is written again to the
// same bytes; its text shows no invisible character.
func TestLockRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := pin.LockOf(listingGen().Draw(t, "listings")...)
		text := l.Encode()
		back, err := pin.ParseLock(text)
		if err != nil {
			t.Fatalf("%v\n%s", err, text)
		}
		if !schemaAccepts(t, text) {
			t.Fatalf("the schema refuses\n%s", text)
		}
		if again := back.Encode(); !bytes.Equal(again, text) {
			t.Fatalf("written twice, two texts:\n%s\n%s", text, again)
		}
		if back.Digest() != l.Digest() {
			t.Fatal("the digest changed")
		}
		for name, sl := range l.Servers {
			if !maps.Equal(sl.Tools, back.Servers[name].Tools) || sl.Instructions != back.Servers[name].Instructions {
				t.Fatalf("server %q: %v, read back %v", name, sl, back.Servers[name])
			}
		}
		for _, line := range strings.Split(string(text), "\n") {
			if v := pin.Visible(line); v != line {
				t.Fatalf("the lock file hides characters: %s", v)
			}
		}
	})
}

// FuzzParseLock: any input is a lock or one line of error, never a
// panic; a lock read back is written and read again to the same lock,
// and the schema accepts it.
func FuzzParseLock(f *testing.F) {
	for _, c := range badLocks {
		f.Add([]byte(c.doc))
	}
	def := `{"name":"a","description":"x\u200b"}`
	_, h, _ := pin.HashDefinition([]byte(def))
	f.Add([]byte(`{"$schema":"x","version":1,"servers":{"s":{"instructions":"` + goodHash + `","tools":{"a":"` + h + `"},"definitions":{"a":` + def + `}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := pin.ParseLock(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a two-line error: %q", err)
			}
			return
		}
		text := l.Encode()
		back, err := pin.ParseLock(text)
		if err != nil {
			t.Fatalf("written back, refused: %v\n%s", err, text)
		}
		if !bytes.Equal(back.Encode(), text) {
			t.Fatal("not stable")
		}
		if !schemaAccepts(t, data) {
			t.Fatalf("ParseLock accepts what the schema refuses: %s", data)
		}
	})
}
