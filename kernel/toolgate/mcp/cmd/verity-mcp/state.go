package main

import (
	"bytes"

	"flag"
	"fmt"
	"os"
	"runtime"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gatemcp "github.com/verity-go/verity/kernel/toolgate/mcp"
)

// stateConfig is how the proxy seals the request state of the
// input-required results by which it asks for approvals (MCP
// 2026-07-28, multi round-trip requests; gatemcp.Options.StateKey and
// StateTTL), read by -state-key and -state-ttl.
type stateConfig struct {
	keyFile string
	ttl     time.Duration
	key     []byte // loaded by load; nil: a random key for this process
}

// minStateKeyLen is the shortest key -state-key accepts.
const minStateKeyLen = 32

func addStateFlags(fs *flag.FlagSet, c *stateConfig) {
	fs.StringVar(&c.keyFile, "state-key", "", "a file of at least 32 random bytes (e.g. head -c 32 /dev/urandom), readable by its owner only, whose key seals the request state of approvals asked by input-required results; replicas that serve one another's retries share it (default: a random key for each process, so a retry reaching a restarted or another proxy is asked anew)")
	fs.DurationVar(&c.ttl, "state-ttl", 0, "how long such a request state may be echoed back (default 15m, never beyond the policy's approval_ttl); each is accepted once")
}

// load reads -state-key: a file others may read, or shorter than
// minStateKeyLen, is a configuration error.
func (c *stateConfig) load() error {
	if c.ttl < 0 {
		return fmt.Errorf("-state-ttl %s is negative", c.ttl)
	}
	if c.keyFile == "" {
		return nil
	}
	fi, err := os.Stat(c.keyFile)
	if err != nil {
		return fmt.Errorf("-state-key: %w", err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("-state-key: %s is readable by others (mode %v): chmod 600 it", c.keyFile, fi.Mode().Perm())
	}
	b, err := os.ReadFile(c.keyFile)
	if err != nil {
		return fmt.Errorf("-state-key: %w", err)
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) < minStateKeyLen {
		return fmt.Errorf("-state-key: %s holds %d bytes, at least %d are needed (head -c 32 /dev/urandom > FILE)", c.keyFile, len(b), minStateKeyLen)
	}
	c.key = b
	return nil
}

// serverOptions are the options of the proxy's server: the protocol
// versions it serves (gatemcp.ProtocolVersions, both eras: eras.go), and
// the Tasks extension, whose methods it relays and polices
// (Proxy.ServeTasks; "Server to client, in response to server/discover …
// capabilities.extensions"), whatever the upstream — an upstream without
// tasks never makes one, and a tasks/get of an unknown task is -32602.
func serverOptions() *sdk.ServerOptions {
	return &sdk.ServerOptions{SupportedProtocolVersions: gatemcp.ProtocolVersions(), Capabilities: &sdk.ServerCapabilities{Extensions: map[string]any{gatemcp.TasksExtension: map[string]any{}}}}
}
