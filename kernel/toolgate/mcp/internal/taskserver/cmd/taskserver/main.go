// Command taskserver runs the task-running test server
// (kernel/toolgate/mcp/internal/taskserver) over stdio, its tasks kept in
// a file so that the server restarted with it still knows them:
//
//	taskserver -state FILE [-ttl 1h]
//
// The tests of verity-mcp run it as the upstream of tasks.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate/mcp/internal/taskserver"
)

func main() {
	stateFile := flag.String("state", "", "the file the tasks are kept in (required)")
	ttl := flag.Duration("ttl", 0, "the tasks' time to live (0: unlimited)")
	flag.Parse()
	if *stateFile == "" {
		fmt.Fprintln(os.Stderr, "taskserver: -state is required")
		os.Exit(2)
	}
	s := taskserver.New(*ttl)
	if err := s.SetStateFile(*stateFile); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := s.MCP().Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
