package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The proxy's added latency: one harness, one client, the same upstream
// tool (echo, which journals its execution), called over stdio either
// directly (client → testserver process) or through the proxy (client →
// verity-mcp process → testserver process). The difference between the
// two ns/op is what the proxy adds per forwarded call: a second stdio hop
// and the gate's decision and result, each on the log. allocs/op count
// the client's side only (the processes are separate).
//
//	go test -run '^$' -bench 'DirectCall|ProxiedCall' ./cmd/verity-mcp
//
// ProxiedCall runs with the log in the test's temporary directory (group
// commit, the default: two fsyncs a call alone) and, where /dev/shm exists, on
// tmpfs (where fsync costs nothing) to show how much of the cost is the
// disk.

const benchPolicy = `{
  "version": 1,
  "budget": "1000000000",
  "min_cost": "0.001",
  "tools": [{"match": "echo", "cost": "0.001"}]
}`

func BenchmarkDirectCall(b *testing.B) {
	up := newUpstream(b)
	callLoop(b, commandClient(b, up.argv()))
}

func BenchmarkProxiedCall(b *testing.B) {
	bin := proxyBinary(b)
	dirs := map[string]string{"disk": b.TempDir()}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		shm, err := os.MkdirTemp("/dev/shm", "verity-mcp-bench")
		if err == nil {
			b.Cleanup(func() { _ = os.RemoveAll(shm) })
			dirs["tmpfs"] = shm
		}
	}
	for _, name := range []string{"disk", "tmpfs"} {
		dir, ok := dirs[name]
		if !ok {
			continue
		}
		b.Run("log="+name, func(b *testing.B) {
			up := newUpstream(b)
			pol := filepath.Join(b.TempDir(), "policy.json")
			if err := os.WriteFile(pol, []byte(benchPolicy), 0o600); err != nil {
				b.Fatal(err)
			}
			logPath := filepath.Join(dir, fmt.Sprintf("trace-%d.log", b.N))
			argv := append([]string{bin, "-policy", pol, "-log", logPath, "--"}, up.argv()...)
			callLoop(b, commandClient(b, argv))
		})
	}
}

// commandClient starts argv as an MCP server process and connects to it
// over its stdio (mcp.CommandTransport).
func commandClient(b *testing.B, argv []string) *sdk.ClientSession {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = nil // the proxy's slog lines are not the benchmark's output
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "v1"}, nil).
		Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	return cs
}

func callLoop(b *testing.B, cs *sdk.ClientSession) {
	ctx := context.Background()
	p := &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ping"}}
	// One call first: the first decision starts the caller's kernel session.
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		b.Fatalf("warm-up call: %v %v", err, res)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if res.IsError {
			b.Fatalf("call refused: %v", res.Content)
		}
	}
}
