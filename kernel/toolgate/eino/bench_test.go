package eino_test

import (
	"context"
	"fmt"
	"testing"

	einotool "github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/verity-go/verity/kernel"
	"github.com/verity-go/verity/kernel/toolgate"
	"github.com/verity-go/verity/kernel/toolgate/eino"
)

func benchConfig() toolgate.Policy {
	return toolgate.Policy{Budget: kernel.Cost(1) << 50, MinCost: 1,
		Tools: []toolgate.Rule{{Match: "read_file", Cost: 1}, {Match: "measured", Cost: 10, Reserve: true}}}
}

// BenchmarkMiddleware is the gate's cost per call as the middleware
// pays it (Before, the tool, After; a memory log), without eino around it.
func BenchmarkMiddleware(b *testing.B) {
	for _, tc := range []struct{ name, tool string }{{"fixed", "read_file"}, {"reserved", "measured"}} {
		b.Run(tc.name, func(b *testing.B) {
			g, _ := newGate(b, benchConfig())
			ep := eino.Middleware(g).Invokable(func(ctx context.Context, in *compose.ToolInput) (*compose.ToolOutput, error) {
				eino.ReportCost(ctx, 5)
				return &compose.ToolOutput{Result: "ok"}, nil
			})
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				in := &compose.ToolInput{Name: tc.tool, Arguments: `{"path":"/etc/motd"}`, CallID: fmt.Sprint(i)}
				i++
				if out, err := ep(ctx, in); err != nil || out.Result != "ok" {
					b.Fatal(out, err)
				}
			}
		})
	}
}

// BenchmarkToolsNode is one message of four parallel calls through a
// ToolsNode, without and with the gate: the difference is the gate's
// overhead as an eino user sees it.
func BenchmarkToolsNode(b *testing.B) {
	for _, gated := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "gated"}[gated], func(b *testing.B) {
			read := &fakeTool{name: "read_file"}
			conf := &compose.ToolsNodeConfig{Tools: []einotool.BaseTool{read}}
			if gated {
				g, _ := newGate(b, benchConfig())
				conf.ToolCallMiddlewares = []compose.ToolMiddleware{eino.Middleware(g)}
			}
			tn, err := compose.NewToolNode(context.Background(), conf)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				var cs []schema.ToolCall
				for j := range 4 {
					cs = append(cs, call(fmt.Sprintf("%d-%d", i, j), "read_file", `{"path":"/etc/motd"}`))
				}
				i++
				if _, err := tn.Invoke(ctx, calls(cs...)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
