// Package gateway reads a gateway file: the upstream MCP servers one
// verity-mcp serves behind one address (stdio commands and remote
// streamable HTTP servers), how it authenticates to each, and the one
// policy that governs all their tools, which clients see namespaced by
// server (Separator).
//
// # The file
//
//	{
//	  "version": 1,
//	  "policy": "policy.json",
//	  "servers": [
//	    {"name": "files", "command": ["mcp-files", "/srv/data"], "env": ["PATH", "HOME"]},
//	    {"name": "github", "url": "https://mcp.example.com/github",
//	     "auth": {"kind": "header", "header": "Authorization", "value": {"file": "secrets/github"}},
//	     "call_timeout": "20s", "restart": {"policy": "always", "max_backoff": "30s"}}
//	  ]
//	}
//
// A server is a command started over stdio or a URL, never both. Its name
// prefixes its tools' names ("github__create_issue"), names it on the log
// and lets a policy rule match it ("server": "github"). Relative paths
// resolve against the file's directory: Load and Parse return them
// joined to it, and fill in every default, so the File they return says
// everything there is to know and File.Hash is the same for two files
// that say the same thing.
//
// # Strict reading
//
// The file is read as the policy is, by the strict JSON reader every
// Verity decoder uses: at most MaxFileSize bytes, one strict JSON text,
// no member twice, no member the format does not define, and every
// problem reported at once, as a Violation with a JSON Pointer into the
// file and a rule (see Parse for the list). gateway.schema.json (Schema)
// is published for editors and other programs; Parse does not run it but
// says what it says, and a property test holds the two to the same
// acceptance.
//
// # Secrets
//
// Secrets never live in the file. A Secret names where one is read from,
// a file or an environment variable of verity-mcp's own; Secret.Read
// reads it (a regular file only, so a named pipe cannot block the
// gateway, at most MaxSecretSize bytes). Server.ReadSecret and
// File.CheckSecrets report a secret that cannot be read in one line
// naming the server and the member: "server github: auth.value: file
// /etc/verity/secrets/github: no such file or directory". URLs may not
// carry user information either.
//
// # A command's environment
//
// A stdio server gets no part of verity-mcp's environment but what its
// "env" names, plus the variables "set_env" reads from secrets:
// Server.Environ builds that list, sorted, and never nil (exec.Cmd reads
// a nil Env as "inherit everything").
//
// # What it does not do
//
// The package reads, checks and describes; it starts nothing and connects
// to nothing. Starting and restarting servers, merging their tools/list,
// routing calls and fetching tokens are verity-mcp's (its gateway mode);
// `verity policy check -config` checks a file against every live
// upstream's tools.
package gateway
