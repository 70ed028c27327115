// Package gateway reads a gateway file: the upstream MCP servers one
// verity-mcp serves behind one address (stdio commands and remote
// streamable HTTP servers), how it authenticates to each, and the one
// policy that governs all their tools, which clients see namespaced by
// server (Separator).
package gateway
