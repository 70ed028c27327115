package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayVsFlags: the same upstream (testserver's echo) behind
// verity-mcp with today's flags (-policy … -- command) and behind a
// one-server gateway file (-config), each a process with its log on
// tmpfs (or the disk without /dev/shm), called in turns in one run so
// that the machine's load weighs on both alike. It reports each one's
// p50 latency (flags-p50-ns, gateway-p50-ns) and their ratio
// (gateway-x-flags; 1 is no difference).
//
//	go test -run '^$' -bench GatewayVsFlags -benchtime 2000x ./cmd/verity-mcp
func BenchmarkGatewayVsFlags(b *testing.B) {
	dir := shmDir(b)
	if dir == "" {
		dir = b.TempDir()
	}
	bin := proxyBinary(b)
	pol := benchGatewayPolicy(b)
	flags := commandClient(b, append([]string{bin, "-policy", pol, "-log", filepath.Join(dir, "flags.log"), "--"}, newUpstream(b).argv()...))
	gwPath := filepath.Join(filepath.Dir(pol), "gateway.json")
	if err := os.WriteFile(gwPath, []byte(`{"version": 1, "policy": "policy.json", "servers": [{"name": "files", "command": `+
		jsonArray(newUpstream(b).argv()...)+`}]}`), 0o600); err != nil {
		b.Fatal(err)
	}
	gw := commandClient(b, []string{bin, "-config", gwPath, "-log", filepath.Join(dir, "gateway.log")})
	clients := []struct {
		cs   *sdk.ClientSession
		tool string
	}{{flags, "echo"}, {gw, "files__echo"}}
	call := func(cs *sdk.ClientSession, tool string) {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": "ping"}})
		switch {
		case err != nil:
			b.Fatalf("call: %v", err)
		case res.IsError:
			b.Fatalf("call refused: %v", res.Content)
		}
	}
	for _, c := range clients {
		call(c.cs, c.tool) // the first decision starts the caller's kernel session
	}
	lat := make([][]time.Duration, len(clients))
	round := 0
	for b.Loop() {
		for k := range clients {
			i := (round + k) % len(clients)
			start := time.Now()
			call(clients[i].cs, clients[i].tool)
			lat[i] = append(lat[i], time.Since(start))
		}
		round++
	}
	f, g := float64(median(lat[0]).Nanoseconds()), float64(median(lat[1]).Nanoseconds())
	b.ReportMetric(f, "flags-p50-ns")
	b.ReportMetric(g, "gateway-p50-ns")
	if f > 0 {
		b.ReportMetric(g/f, "gateway-x-flags")
	}
	b.ReportMetric(0, "ns/op")
}

// benchGatewayPolicy is a policy of echo under both names.
func benchGatewayPolicy(b *testing.B) string {
	pol := filepath.Join(b.TempDir(), "policy.json")
	text := `{"version": 1, "budget": "1000000000", "min_cost": "0.001", "tools": [{"match": "echo", "cost": "0.001"}, {"match": "files__echo", "cost": "0.001"}]}`
	if err := os.WriteFile(pol, []byte(text), 0o600); err != nil {
		b.Fatal(err)
	}
	return pol
}
