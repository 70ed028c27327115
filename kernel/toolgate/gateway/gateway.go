package gateway

import "time"

// Separator joins a server's name and one of its tools' names into the
// name the gateway's clients see and its policy matches: server "github"
// and tool "create_issue" make "github__create_issue". Server names may
// not contain "_" (see Server.Name), so the first Separator of a name
// splits it back unambiguously.
const Separator = "__"

// File is a gateway file: the upstream MCP servers one verity-mcp serves
// behind one address, and the one policy it applies to all of them.
// Paths in it (Policy, Server.Dir, Server.CAFile, Secret.File, Pins) are
// relative to the file's directory.
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

	// Command ("command") is the program and its arguments.
	Command []string
	// Env ("env") names the variables of verity-mcp's own environment
	// passed on to the command (an allow-list: no other is), and
	// SetEnv ("set_env") sets variables from secrets.
	Env    []string
	SetEnv map[string]Secret
	// Dir ("dir") is the command's working directory.
	Dir string

	// URL ("url") is a streamable HTTP endpoint: https, or http only to a
	// loopback address.
	URL string
	// CAFile ("ca_file") is a PEM file of the CAs that verify the
	// server's certificate instead of the system's.
	CAFile string
	// Auth ("auth") is how the gateway authenticates to the server; the
	// client's own token is never forwarded.
	Auth *Auth

	// StartTimeout ("start_timeout", a Go duration) bounds starting or
	// connecting and the first tools/list (default 30s).
	StartTimeout time.Duration
	// CallTimeout ("call_timeout") bounds each call on this server when
	// the policy's rule sets no "timeout" (default: the policy's).
	CallTimeout time.Duration
	// Restart ("restart") is what happens when the server exits or its
	// connection is lost.
	Restart Restart
	// Pins ("pins") is how its tool definitions are pinned: "first-use"
	// (the default), "off", or a lock file (`verity pin`).
	Pins string
}

// Restart is a server's restart policy.
type Restart struct {
	// Policy ("policy"): "always" (the default: restart with backoff) or
	// "never" (the server stays down; its tools leave the list).
	Policy string
	// MinBackoff ("min_backoff", default 100ms) is the first wait, doubled
	// after each restart that ran less than a minute, up to MaxBackoff
	// ("max_backoff", default 10s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// Auth is how the gateway authenticates to a remote server, one of:
//
//   - Kind "header": the header Header set to the secret Value;
//   - Kind "client_credentials": an OAuth 2.0 client credentials grant
//     (RFC 6749 §4.4) at TokenURL as ClientID/ClientSecret, with Scopes
//     and Audience/Resource when given;
//   - Kind "token_exchange": an RFC 8693 token exchange at TokenURL of
//     the caller's own token for one whose audience is Audience (and
//     resource Resource), the gateway authenticating as
//     ClientID/ClientSecret.
//
// Tokens are cached until shortly before they expire.
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

// Secret is where a secret is read from, never the secret itself: a file
// ("file") or an environment variable ("env"), exactly one of the two.
type Secret struct {
	File string
	Env  string
}
