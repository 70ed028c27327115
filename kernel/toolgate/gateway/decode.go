package gateway

import (
	"bytes"
	_ "embed" // the gateway file's schema
	"errors"
	"fmt"
	"math/big"
	"path/filepath"
	"slices"
	"strings"

	"github.com/verity-go/verity/internal/canon"
	"github.com/verity-go/verity/internal/osfile"
	"github.com/verity-go/verity/internal/strictjson"
	"github.com/verity-go/verity/internal/violation"
)

// MaxFileSize is the largest gateway file Parse and Load read.
const MaxFileSize = 1 << 20

// The rules a refused file's violations name. The first group is what
// gateway.schema.json says too; the second is what a schema cannot say.
const (
	ruleSize         = "size"                     // over MaxFileSize
	ruleSyntax       = violation.RuleSyntax       // not one strict JSON text
	ruleDuplicateKey = violation.RuleDuplicateKey // a member twice in one object
	ruleType         = violation.RuleType         // the wrong JSON type
	ruleUnknown      = violation.RuleUnknownField // a member the format does not define
	ruleRequired     = violation.RuleRequired     // a required member missing, an empty string, list or map
	ruleVersion      = "version"                  // version is not 1
	ruleEnum         = "enum"                     // auth.kind, restart.policy
	ruleName         = "name"                     // a server's name does not match its pattern

	ruleDuplicateName = "duplicate_name" // two servers of one name
	ruleTransport     = "transport"      // not exactly one of command and url, or a member of the other transport
	ruleURL           = "url"            // url or token_url: not https, nor http to loopback
	ruleDuration      = "duration"       // not a Go duration, or out of bounds
	ruleAuth          = "auth"           // a member the auth kind needs is missing, or one it has not is there
	ruleHeader        = "header"         // not an HTTP header name, or one the transport sets
	ruleSecret        = "secret"         // a secret names not exactly one of file and env
	ruleEnvName       = "env_name"       // not an environment variable's name
	ruleDuplicateEnv  = "duplicate_env"  // a variable named twice in env and set_env
	rulePins          = "pins"           // neither first-use, off, nor a lock file's .json path
)

//go:embed gateway.schema.json
var schemaText []byte

// SchemaID is the $id of gateway.schema.json.
const SchemaID = "https://github.com/verity-go/verity/kernel/toolgate/gateway/gateway.schema.json"

// Schema returns gateway.schema.json, the JSON Schema (draft 2020-12) of
// gateway files. It says the shape of a file (types, members, required
// ones, enums, the version and server names); Parse says that too, and
// what a schema cannot (TestReaderAgreesWithSchema holds the two to the
// same acceptance).
func Schema() []byte { return bytes.Clone(schemaText) }

// Load reads the gateway file at path (see Parse), resolving its
// relative paths against path's directory. A path that is not a regular
// file (a named pipe, a device) is refused without blocking; a refused
// file is a *ValidationError wrapping ErrInvalid whose message names the
// path.
func Load(path string) (File, error) {
	data, err := osfile.ReadFile(path, MaxFileSize)
	if errors.Is(err, osfile.ErrTooLarge) {
		return File{}, violation.New("gateway", "gateway file "+path, []Violation{sizeViolation}, ErrInvalid)
	}
	if err != nil {
		return File{}, fmt.Errorf("gateway: reading gateway file: %w", err)
	}
	dir := filepath.Dir(path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return parse(data, dir, "gateway file "+path)
}

var sizeViolation = Violation{Rule: ruleSize, Message: fmt.Sprintf("the file is over %d bytes", MaxFileSize)}

// Parse reads a gateway file whose relative paths resolve against dir
// ("" leaves them relative, to the working directory). Nothing is
// guessed: a file is refused with every problem it has, as one
// *ValidationError wrapping ErrInvalid, each Violation naming where (a
// JSON Pointer into the file) and which rule:
//
//   - The text: at most MaxFileSize bytes (size); one strict JSON text
//     (syntax: valid UTF-8, a leading byte order mark skipped, nothing
//     after it, no integer a double would round, nesting at most 512
//     deep); no member twice in one object (duplicate_key). These refuse
//     the file as a whole.
//   - The shape, which gateway.schema.json says too: JSON types (type), no
//     member the format does not define (unknown_field), required
//     members and no empty string, list or map (required), version 1
//     (version), auth.kind and restart.policy spelled exactly (enum), a
//     server's name `^[a-z0-9][a-z0-9-]{0,31}$` (name).
//   - What a schema cannot say: server names unique (duplicate_name);
//     exactly one of command and url, and env, set_env and dir only with
//     a command, ca_file and auth only with a url (transport); url and
//     token_url absolute, https or http to a loopback host, without user
//     information or fragment (url); durations Go durations, the
//     timeouts in [1ms, 24h], the backoffs in [1ms, 1h], min_backoff at
//     most max_backoff (duration); each auth kind's members, no more, no
//     less (auth); a header an HTTP header name the transport does not
//     set itself (header); each secret exactly one of file and env
//     (secret); environment variable names `^[A-Za-z_][A-Za-z0-9_]*$`
//     (env_name), each once across env and set_env (duplicate_env);
//     pins "first-use", "off" or the path of a lock file ending in
//     ".json", so that a misspelt mode is not taken for a path (pins).
//
// A problem inside a member already wrong is not reported again.
func Parse(data []byte, dir string) (File, error) {
	return parse(data, dir, "gateway file")
}

func parse(data []byte, dir, subject string) (File, error) {
	f, vs := check(data)
	if len(vs) > 0 {
		return File{}, violation.New("gateway", subject, vs, ErrInvalid)
	}
	f.resolve(dir)
	return f, nil
}

var bom = []byte("\xef\xbb\xbf")

// check reads data and returns the file with every violation found,
// sorted; the file is meaningful only without violations.
func check(data []byte) (File, []Violation) {
	if len(data) > MaxFileSize {
		return File{}, []Violation{sizeViolation}
	}
	var w fileWire
	var decoded []Violation
	if err := strictjson.Unmarshal(bytes.TrimPrefix(data, bom), &w); err != nil {
		var se *strictjson.Error
		if !errors.As(err, &se) { // unreachable: w is a pointer to a struct
			return File{}, []Violation{{Rule: ruleSyntax, Message: err.Error()}}
		}
		decoded = se.Violations()
		var syn *canon.SyntaxError
		if errors.As(err, &syn) {
			return File{}, decoded
		}
	}
	c := checker{}
	f := w.file(&c)
	all := decoded
	for _, v := range c.vs {
		if !slices.ContainsFunc(decoded, func(u Violation) bool { return under(u.Path, v.Path) }) {
			all = append(all, v)
		}
	}
	violation.Sort(all)
	return f, slices.Compact(all)
}

// under reports whether pointer p is at or under pointer at.
func under(at, p string) bool {
	return p == at || at == "" || strings.HasPrefix(p, at+"/")
}

// The file's members as read. A member that may be absent is an opt;
// the strict reader reports types, unknown and missing members.
type fileWire struct {
	Schema  opt[string]  `json:"$schema,omitzero"`
	Version versionWire  `json:"version"`
	Policy  string       `json:"policy"`
	Servers []serverWire `json:"servers"`
}

type serverWire struct {
	Name         string                          `json:"name"`
	Command      opt[[]string]                   `json:"command,omitzero"`
	Env          opt[[]string]                   `json:"env,omitzero"`
	SetEnv       opt[map[string]opt[secretWire]] `json:"set_env,omitzero"`
	Dir          opt[string]                     `json:"dir,omitzero"`
	URL          opt[string]                     `json:"url,omitzero"`
	CAFile       opt[string]                     `json:"ca_file,omitzero"`
	Auth         opt[authWire]                   `json:"auth,omitzero"`
	StartTimeout opt[string]                     `json:"start_timeout,omitzero"`
	CallTimeout  opt[string]                     `json:"call_timeout,omitzero"`
	Restart      opt[restartWire]                `json:"restart,omitzero"`
	Pins         opt[string]                     `json:"pins,omitzero"`
}

type restartWire struct {
	Policy     opt[string] `json:"policy,omitzero"`
	MinBackoff opt[string] `json:"min_backoff,omitzero"`
	MaxBackoff opt[string] `json:"max_backoff,omitzero"`
}

type authWire struct {
	Kind         string          `json:"kind"`
	Header       opt[string]     `json:"header,omitzero"`
	Value        opt[secretWire] `json:"value,omitzero"`
	TokenURL     opt[string]     `json:"token_url,omitzero"`
	ClientID     opt[string]     `json:"client_id,omitzero"`
	ClientSecret opt[secretWire] `json:"client_secret,omitzero"`
	Scopes       opt[[]string]   `json:"scopes,omitzero"`
	Audience     opt[string]     `json:"audience,omitzero"`
	Resource     opt[string]     `json:"resource,omitzero"`
}

type secretWire struct {
	File opt[string] `json:"file,omitzero"`
	Env  opt[string] `json:"env,omitzero"`
}

// opt is a member that may be absent: Set says it was there.
type opt[T any] struct {
	V   T
	Set bool
}

func (o *opt[T]) UnmarshalStrict(d *strictjson.Decoder) error {
	o.Set = true
	return d.Decode(&o.V)
}

// versionWire is the format's version; ok when it is 1 (as JSON Schema
// compares numbers: 1.0 and 1e0 are 1).
type versionWire struct{ ok bool }

func (v *versionWire) UnmarshalStrict(d *strictjson.Decoder) error {
	if d.Peek() != strictjson.Number {
		if err := d.Skip(); err != nil {
			return err
		}
		return d.Errorf(ruleVersion, "this package reads version 1")
	}
	lit, _, err := d.ReadNumber()
	if err != nil {
		return err
	}
	if len(lit) <= 100 && (!bytes.ContainsAny(lit, "eE") || exponentSmall(lit)) {
		if r, ok := new(big.Rat).SetString(string(lit)); ok && r.Cmp(big.NewRat(1, 1)) == 0 {
			v.ok = true
			return nil
		}
	}
	return d.Errorf(ruleVersion, "this package reads version 1, got %s", show(string(lit)))
}

// exponentSmall reports whether a number literal's exponent is within
// ±1000, so that reading it exactly is cheap.
func exponentSmall(lit []byte) bool {
	n := 0
	for _, c := range lit[bytes.IndexAny(lit, "eE")+1:] {
		if '0' <= c && c <= '9' {
			if n = n*10 + int(c-'0'); n > 1000 {
				return false
			}
		}
	}
	return true
}

// show writes a value briefly for a message.
func show(s string) string {
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return fmt.Sprintf("%q", s)
}
