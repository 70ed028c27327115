package gateway

import (
	"errors"
	"time"

	"github.com/verity-go/verity/internal/violation"
)

// Separator joins a server's name and one of its tools' names into the
// name the gateway's clients see and its policy matches: server "github"
// and tool "create_issue" make "github__create_issue". Server names may
// not contain "_" (see Server.Name), so the first Separator of a name
// splits it back unambiguously.
const Separator = "__"

// File is a gateway file: the upstream MCP servers one verity-mcp serves
// behind one address, and the one policy it applies to all of them.
// Paths in it (Policy, Server.Dir, Server.CAFile, Secret.File, Pins) are
// relative to the file's directory: Parse and Load resolve them, so a
// File they return holds them joined to it.
//
// Parse and Load fill in the defaults the members below name, so a File
// they return says everything: two files that differ only in defaults
// spelled out or left out read as equal Files with one Hash.
type File struct {
	// Version ("version", required) is the format's version: 1.
	Version int
	// Policy ("policy", required) is the policy file (toolgate.LoadPolicy)
	// for every server's tools, which its rules match by their namespaced
	// names (Separator) and, with a rule's "server", by server.
	Policy string
	// Servers ("servers", required, at least one) are the upstreams, in
	// the order the file lists them.
	Servers []Server
}

// Server is one upstream: a command started over stdio (Command) or a
// remote streamable HTTP server (URL), exactly one of the two.
type Server struct {
	// Name ("name", required) names the server in tool names, on the log
	// and in the policy: `^[a-z0-9][a-z0-9-]{0,31}$`, unique in the file.
	Name string

	// Command ("command") is the program and its arguments. The program
	// is found as exec.Command finds it (on PATH, unless it holds a
	// slash).
	Command []string
	// Env ("env") names the variables of verity-mcp's own environment
	// passed on to the command (an allow-list: no other is), and
	// SetEnv ("set_env") sets variables from secrets; a name is in one
	// of the two at most. Server.Environ makes the command's environment.
	Env    []string
	SetEnv map[string]Secret
	// Dir ("dir") is the command's working directory.
	Dir string

	// URL ("url") is a streamable HTTP endpoint: https, or http only to a
	// loopback address (localhost, 127.0.0.0/8, ::1); no user
	// information (credentials go in Auth) and no fragment.
	URL string
	// CAFile ("ca_file") is a PEM file of the CAs that verify the
	// server's certificate instead of the system's.
	CAFile string
	// Auth ("auth") is how the gateway authenticates to the server; the
	// client's own token is never forwarded. Nil: no credentials.
	Auth *Auth

	// StartTimeout ("start_timeout", a Go duration in [1ms, 24h]) bounds
	// starting or connecting and the first tools/list (default 30s).
	StartTimeout time.Duration
	// CallTimeout ("call_timeout", a Go duration in [1ms, 24h]) bounds
	// each call on this server when the policy's rule sets no "timeout"
	// (zero, the default: the policy's).
	CallTimeout time.Duration
	// Restart ("restart") is what happens when the server exits or its
	// connection is lost.
	Restart Restart
	// Pins ("pins") is how its tool definitions are pinned: PinsFirstUse
	// (the default), PinsOff, or a lock file (`verity pin`), whose path
	// ends in ".json".
	Pins string
}

// Restart is a server's restart policy.
type Restart struct {
	// Policy ("policy"): RestartAlways (the default: restart with
	// backoff) or RestartNever (the server stays down; its tools leave
	// the list).
	Policy string
	// MinBackoff ("min_backoff", a Go duration in [1ms, 1h], default
	// 100ms) is the first wait, doubled after each restart that ran less
	// than a minute, up to MaxBackoff ("max_backoff", in [MinBackoff,
	// 1h], default 10s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// The restart policies (Restart.Policy).
const (
	RestartAlways = "always"
	RestartNever  = "never"
)

// The pinning modes of Server.Pins besides a lock file's path.
const (
	PinsFirstUse = "first-use"
	PinsOff      = "off"
)

// Auth is how the gateway authenticates to a remote server, one of:
//
//   - Kind AuthHeader ("header"): the header Header ("header") set to
//     the secret Value ("value");
//   - Kind AuthClientCredentials ("client_credentials"): an OAuth 2.0
//     client credentials grant (RFC 6749 §4.4) at TokenURL ("token_url")
//     as ClientID/ClientSecret ("client_id", "client_secret"), with
//     Scopes ("scopes"), Audience ("audience") and Resource ("resource",
//     RFC 8707) when given;
//   - Kind AuthTokenExchange ("token_exchange"): an RFC 8693 token
//     exchange at TokenURL of the caller's own token for one whose
//     audience is Audience (required) and resource Resource, with Scopes,
//     the gateway authenticating as ClientID/ClientSecret.
//
// A member another kind has is refused. Tokens are cached until shortly
// before they expire.
type Auth struct {
	Kind         string
	Header       string
	Value        *Secret
	TokenURL     string
	ClientID     string
	ClientSecret *Secret
	Scopes       []string
	Audience     string
	Resource     string
}

// The kinds of Auth.
const (
	AuthHeader            = "header"
	AuthClientCredentials = "client_credentials"
	AuthTokenExchange     = "token_exchange"
)

// Secret is where a secret is read from, never the secret itself: a file
// ("file") or an environment variable ("env"), exactly one of the two.
// Secret.Read reads it.
type Secret struct {
	File string
	Env  string
}

// ErrInvalid is wrapped by the *ValidationError of a refused gateway
// file.
var ErrInvalid = errors.New("gateway: invalid gateway file")

// Violation is one problem of a gateway file: a JSON Pointer into it, a
// rule and a message.
type Violation = violation.Violation

// ValidationError is every problem of a refused gateway file, sorted by
// path; it wraps ErrInvalid.
type ValidationError = violation.ValidationError
