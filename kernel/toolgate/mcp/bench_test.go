package mcp_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/verity-go/verity/kernel/toolgate"
)

// The Guard's cost per call, in-process: the SDK's client and server over
// in-memory transports, the same tool called with the Guard's middleware
// on the server (BenchmarkGuardedCall: the gate's decision and result on a
// memory log) and without (BenchmarkUnguardedCall). The difference is what
// the gate adds to a call, without any I/O; allocs/op count both sides.

func benchRig(b *testing.B, guarded bool) *sdk.ClientSession {
	cfg := toolgate.Policy{Budget: 1 << 50, MinCost: 1, Tools: []toolgate.Rule{{Match: "read_file", Cost: 1}}}
	r := newRig(b, cfg)
	if !guarded {
		srv := sdk.NewServer(&sdk.Implementation{Name: "tools", Version: "v1"}, nil)
		r.tools.add(srv, "read_file")
		r.srv = srv
	}
	cs, _ := r.connect(b, currentProtocol, nil, nil)
	return cs
}

func benchCalls(b *testing.B, cs *sdk.ClientSession) {
	p := &sdk.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt"}}
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		b.Fatalf("warm-up call: %v %v", err, res)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
	}
}

func BenchmarkUnguardedCall(b *testing.B) { benchCalls(b, benchRig(b, false)) }

func BenchmarkGuardedCall(b *testing.B) { benchCalls(b, benchRig(b, true)) }
