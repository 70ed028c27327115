// Command passthrough is the minimal MCP proxy that verity-mcp's cost is
// measured against (cmd/verity-mcp's BenchmarkProxyVsPassThrough): built
// with the same MCP Go SDK, it starts the upstream command as a child
// process over stdio, lists its tools once, and serves them to its own
// client over stdio, each call forwarded with the arguments as received
// and answered with the upstream's result. No gate, no log, no relay of
// the upstream's own requests: the two stdio hops and the SDK's work, and
// nothing else.
//
//	passthrough -- <upstream command and args>
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		log.Fatal("passthrough: no upstream command after --")
	}
	if err := run(context.Background(), argv); err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
}

func run(ctx context.Context, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	impl := &mcp.Implementation{Name: "passthrough", Version: "v1"}
	up, err := mcp.NewClient(impl, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("passthrough: starting the upstream: %w", err)
	}
	defer up.Close()
	srv := mcp.NewServer(impl, nil)
	for tool, err := range up.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("passthrough: listing the upstream's tools: %w", err)
		}
		srv.AddTool(tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			p := &mcp.CallToolParams{Name: req.Params.Name}
			if len(req.Params.Arguments) > 0 {
				p.Arguments = req.Params.Arguments
			}
			return up.CallTool(ctx, p)
		})
	}
	return srv.Run(ctx, &mcp.StdioTransport{})
}
